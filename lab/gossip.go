package lab

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
	"unsafe"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
	"github.com/cohort-go/cohort/wire"
)

// GossipLoad is the gossip family's default workload for dissemination:
// one Put of Key at Node at time At, half a round before the first round,
// so that round i's exchanges (at i·Period) are over by At + i·Period. It
// watches the outputs as they happen — which node adopted the update
// when, how many nodes are still mongering it — so that the family's
// metrics need no trace (a million-node run keeps none), and it ends the
// run when every present node holds the newest version and no rumor is
// hot any more (or, with UntilCold, as soon as no rumor is hot: pull
// rumor mongering without backup never falls silent by itself).
type GossipLoad struct {
	Key, Value string
	Node       proc.ID
	At         time.Duration
	// Params are the algorithm's: the round length and fanout for the
	// metrics and the theory.
	Params    epidemic.Params
	UntilCold bool

	n        int
	version  uint64
	first    []int64 // per node: true time it first adopted the newest version; −1: never
	has      []bool  // per node: holds the newest version now
	have     int
	hotBy    []int32
	hot      int
	injected bool
	missing  []proc.ID // nodes that may lack the newest version (a superset)
	changes  int
	calls    int
	replay   bool       // rebuilt from a trace: rounds count from the newest write
	meter    *wireMeter // the bytes sent, if the processes are metered
}

// NewGossipLoad is the family's default dissemination workload under
// params p: key "x" written at p0, half a round into the run.
func NewGossipLoad(p epidemic.Params) *GossipLoad {
	return &GossipLoad{Key: "x", Value: "v1", Node: 0, At: period(p) / 2, Params: p, UntilCold: p.Pull && !p.Backup}
}

func period(p epidemic.Params) time.Duration {
	if p.Period > 0 {
		return p.Period
	}
	return epidemic.DefaultPeriod
}

func fanout(p epidemic.Params) int { return max(p.Fanout, 1) }

func (w *GossipLoad) init(n int) {
	w.n = n
	w.first = make([]int64, n)
	for i := range w.first {
		w.first[i] = -1
	}
	w.has = make([]bool, n)
	w.hotBy = make([]int32, n)
	w.missing = make([]proc.ID, n)
	for i := range w.missing {
		w.missing[i] = proc.ID(i)
	}
}

// Init schedules the Put.
func (w *GossipLoad) Init(c sim.Control) {
	w.init(c.N())
	c.Schedule(w.At-c.Now(), w.Node, epidemic.Put{Key: w.Key, Value: w.Value})
}

// Observe follows the update's spread.
func (w *GossipLoad) Observe(c sim.Control, node proc.ID, o proc.Output) {
	w.observe(int64(c.Now()), node, o)
}

func (w *GossipLoad) observe(now int64, node proc.ID, o proc.Output) {
	switch o := o.(type) {
	case epidemic.Applied:
		if o.Key != w.Key {
			return
		}
		w.injected = true
		if o.Version > w.version { // a newer write: nobody holds it yet
			w.version = o.Version
			if w.replay {
				w.At = time.Duration(now)
			}
			clear(w.has)
			w.have = 0
			for i := range w.first {
				w.first[i] = -1
			}
			w.missing = w.missing[:0]
			for i := range w.n {
				w.missing = append(w.missing, proc.ID(i))
			}
		}
		if o.Version == w.version && !w.has[node] {
			w.has[node] = true
			w.have++
			w.changes++
			if w.first[node] < 0 {
				w.first[node] = now
			}
		}
	case epidemic.Infective:
		w.hotBy[node]++
		w.hot++
	case epidemic.Removed:
		w.hotBy[node]--
		w.hot--
	}
}

// Restarted forgets what a recovered node held: it starts empty.
func (w *GossipLoad) Restarted(_ sim.Control, node proc.ID) {
	if w.has[node] {
		w.has[node] = false
		w.have--
		w.missing = append(w.missing, node)
	}
	w.hot -= int(w.hotBy[node])
	w.hotBy[node] = 0
}

// Done reports whether every present node holds the newest version and no
// rumor is hot. Checking presence costs a pass over the nodes that may
// lack it, so a pass is made only when a quarter of them adopted it since
// the last, or as many events as they are have passed (a crash may have
// settled it): O(1) per event, amortized.
func (w *GossipLoad) Done(up func(proc.ID) bool) bool {
	if !w.injected || w.hot > 0 {
		return false
	}
	if w.UntilCold || w.have == w.n {
		return true
	}
	w.calls++
	if w.changes*4 < len(w.missing) && w.calls < len(w.missing) {
		return false
	}
	w.changes, w.calls = 0, 0
	w.missing = slices.DeleteFunc(w.missing, func(p proc.ID) bool { return w.has[p] })
	for _, p := range w.missing {
		if up(p) {
			return false
		}
	}
	return true
}

// Susceptible is the fraction of the n nodes that had not adopted the
// update after each round: element i is the fraction at At + i·Period.
// The series ends at the first round after which nothing changed any
// more.
func (w *GossipLoad) Susceptible() []float64 {
	if w.n == 0 {
		return nil
	}
	T := int64(period(w.Params))
	at := int64(w.At)
	counts := []int{}
	for _, t := range w.first {
		if t < 0 {
			continue
		}
		r := 0
		if t > at {
			r = int((t - at + T - 1) / T)
		}
		for len(counts) <= r {
			counts = append(counts, 0)
		}
		counts[r]++
	}
	out := make([]float64, len(counts))
	left := w.n
	for i, c := range counts {
		left -= c
		out[i] = float64(left) / float64(w.n)
	}
	return out
}

// gossipMetrics measures a dissemination: for anti-entropy and rumor
// mongering,
//
//   - rounds_to_all: the rounds until every node had the update (absent
//     if some never had it);
//   - rounds_to_final: the rounds until the last node that ever had it
//     got it;
//   - residue: the fraction of nodes that never had it;
//   - messages_per_node: every message sent, over the nodes;
//   - bytes_per_node: the bytes of those messages as package wire encodes
//     them for the live runtime, over the nodes (the simulator counts
//     messages only; the family's workloads meter the processes' sends);
//   - updates_per_node: rumor mongering's RUMOR messages over the nodes,
//     Demers et al.'s "traffic";
//   - pull_ratio (pull): the mean over the rounds of pᵢ₊₁/pᵢ², whose
//     theory is 1 (only rounds with pᵢ ≤ 0.9 and at least 30 nodes left
//     after, so that it measures the law and not the noise);
//   - push_tail_ratio (push): the mean of pᵢ₊₁/pᵢ over the rounds with
//     pᵢ ≤ 0.1 and at least 30 nodes left, beside the mean of
//     (1 − 1/(n−1))^{f·n(1−pᵢ)} over the same rounds (≈ e^{−f});
//
// and the series "susceptible", pᵢ after each round. Push-sum runs get
//
//   - max_error: the largest relative error |sᵢ/wᵢ − a|/|a| of any node's
//     estimate at the end, a the aggregate of the values given;
//   - rounds_to_1e-2, rounds_to_1e-4, rounds_to_1e-6: the rounds until
//     that largest error is at most 10⁻², 10⁻⁴, 10⁻⁶ (absent if it never
//     is), and rounds_to_1e-2_mean …, the same of the mean error over the
//     nodes (from which round on it stays there);
//   - rounds, messages_per_node_round and bytes_per_node;
//
// and the series "max_error" and "mean_error" after each round.
func gossipMetrics(f Finished) (map[string]float64, map[string]*float64) {
	if _, ok := f.Workload.(*DiscoveryLoad); ok {
		return discoveryMetrics(f) // the discovery algorithm's, or the members algorithm's finds
	}
	switch f.Algo {
	case "push-sum":
		return pushSumMetrics(f)
	case "swim":
		return swimMetrics(f)
	}
	w, _ := f.Workload.(*GossipLoad)
	if w == nil || w.n == 0 {
		w = replayGossip(f.Trace)
	}
	m := map[string]float64{}
	th := map[string]*float64{}
	n := float64(f.Nodes)
	m["messages_per_node"] = float64(f.Result.Sent) / n
	if w != nil {
		if b, ok := bytesPerNode(w.meter, f.Nodes); ok {
			m["bytes_per_node"] = b
		}
	}
	if f.Result.Messages("rumor") > 0 {
		m["updates_per_node"] = float64(f.Result.Messages("rumor")) / n
	}
	if w == nil || w.n == 0 {
		return m, th
	}
	s := w.Susceptible()
	f.Series["susceptible"] = s
	if len(s) > 0 {
		last := s[len(s)-1]
		m["residue"] = last
		m["rounds_to_final"] = float64(len(s) - 1)
		if last == 0 {
			m["rounds_to_all"] = float64(len(s) - 1)
		}
	}
	fan := fanout(w.Params)
	switch f.Algo {
	case "push": // the notes' count: infective nodes each try f others a round
		th["rounds_to_all"] = ptr(epidemic.RoundsToAll(f.Nodes, fan))
	case "rumor":
		if !w.Params.Pull {
			k := max(w.Params.K, 1)
			if !w.Params.Counter && !w.Params.Blind && fan == 1 {
				th["residue"] = ptr(epidemic.Residue(k))
				// Demers et al.: with feedback and a coin, s = e^{−m}.
				th["updates_per_node"] = ptr(-math.Log(epidemic.Residue(k)))
			}
			if !!w.Params.Counter && !w.Params.Blind && fan == 1 && f.Nodes == 1000 && k <= len(DemersTable1) {
				th["residue"] = ptr(DemersTable1[k-1].Residue)
				th["updates_per_node"] = ptr(DemersTable1[k-1].Traffic)
			}
		}
	}
	if f.Algo == "pull" {
		var sum float64
		var count int
		for i := 0; i+1 < len(s); i++ {
			if s[i] <= 0.9 && s[i+1]*n >= 30 {
				sum += s[i+1] / (s[i] * s[i])
				count++
			}
		}
		if count > 0 {
			m["pull_ratio"] = sum / float64(count)
			th["pull_ratio"] = ptr(1)
		}
	}
	if f.Algo == "push" {
		var sum, want float64
		var count int
		for i := 0; i+1 < len(s); i++ {
			if s[i] <= 0.1 && s[i+1]*n >= 30 {
				sum += s[i+1] / s[i]
				want += math.Pow(1-1/(n-1), float64(fan)*n*(1-s[i]))
				count++
			}
		}
		if count > 0 {
			m["push_tail_ratio"] = sum / float64(count)
			th["push_tail_ratio"] = ptr(want / float64(count))
		}
	}
	return m, th
}

func ptr(x float64) *float64 { return &x }

// replayGossip rebuilds the dissemination workload's record from a
// trace, for runs whose inputs a scenario scripted: the key followed is
// the first key written, and the rounds count from its newest write.
func replayGossip(t *trace.Trace) *GossipLoad {
	if t == nil {
		return nil
	}
	var w *GossipLoad
	for i := range t.Events {
		e := &t.Events[i]
		if e.Kind != trace.Output {
			continue
		}
		var o proc.Output
		switch e.Type {
		case "applied":
			var a epidemic.Applied
			if json.Unmarshal(e.Data, &a) != nil {
				continue
			}
			if w == nil {
				w = &GossipLoad{Key: a.Key, replay: true}
				w.init(t.Header.Nodes)
			}
			o = a
		case "infective":
			var x epidemic.Infective
			json.Unmarshal(e.Data, &x)
			o = x
		case "removed":
			var x epidemic.Removed
			json.Unmarshal(e.Data, &x)
			o = x
		default:
			continue
		}
		if w != nil {
			w.observe(e.Time, proc.ID(e.Node), o)
		}
	}
	return w
}

// DemersTable1 is Demers et al.'s Table 1: rumor mongering on 1000
// sites, push, feedback and counters, k = 1 .. 5 — the residue and the
// traffic (updates sent per site).
var DemersTable1 = []struct{ Residue, Traffic float64 }{
	{0.176, 1.74}, {0.037, 3.30}, {0.011, 4.53}, {0.0036, 5.64}, {0.0012, 6.68},
}

// PushSumLoad gives push-sum node i the value X(i) at the start and
// records, after every round, the largest and the mean relative error of
// the nodes' estimates. It ends the run after Rounds rounds; with Rounds
// 0, after the rounds after which check's push-sum-error expects every
// estimate within its bound and five more, and then not before every
// estimate is within the smallest of PushSumTargets of the aggregate —
// or twice those rounds have passed (a run that loses mass never gets
// there).
type PushSumLoad struct {
	X      func(i int) float64
	Params epidemic.Params
	Rounds int
	// Input names X, for the report: "uniform" or "one" (PushSumInput).
	Input string

	s, w       []float64
	truth      float64
	errors     []float64 // the largest relative error after each round
	meanErrors []float64 // the mean relative error after each round
	until      float64   // with Rounds 0: the error to run until
	atMost     int       // with Rounds 0: the rounds to stop at regardless
	meter      *wireMeter
}

// PushSumTargets are the relative errors whose rounds push-sum reports
// (rounds_to_1e-2 …): those of the reference figures beside them.
var PushSumTargets = []float64{1e-2, 1e-4, 1e-6}

// PushSumReference are the rounds a reference simulation of push-sum on
// 10⁶ nodes takes to PushSumTargets, for each input.
var PushSumReference = map[string][]float64{
	"uniform": {27, 41, 54},
	"one":     {47, 64, 74},
}

// PushSumInput is the value of node i of n under the named input:
//
//   - "uniform": i+1, so the values spread evenly from 1 to n, as
//     uniform draws from an interval do (standard deviation over mean
//     1/√3 either way);
//   - "one": n at node 0 and 0 elsewhere — all the mass on one node. It
//     is the input of Kempe et al.'s diffusion speed: with xⱼ = 1 at one
//     node j and weight 1 everywhere, node i's estimate is its share of
//     j's mass over its weight, vᵢⱼ/wᵢ, and its relative error
//     n·|vᵢⱼ/wᵢ − 1/n| is what the diffusion speed bounds. For inputs
//     that are not negative it is the worst case: their error is a
//     weighted mean of these. Scaling by n changes no relative error
//     and makes the average 1.
//
// It returns an error naming the input if there is no such input.
func PushSumInput(name string, n int) (func(i int) float64, error) {
	switch name {
	case "", "uniform":
		return func(i int) float64 { return float64(i + 1) }, nil
	case "one":
		return func(i int) float64 {
			if i == 0 {
				return float64(n)
			}
			return 0
		}, nil
	}
	return nil, fmt.Errorf("%w: push-sum input %q: want uniform or one", ErrInput, name)
}

// NewPushSumLoad gives node i the value i+1 (the average is (n+1)/2).
func NewPushSumLoad(p epidemic.Params) *PushSumLoad {
	return &PushSumLoad{Params: p, Input: "uniform"}
}

// Init schedules the values and the per-round measurement.
func (l *PushSumLoad) Init(c sim.Control) {
	n := c.N()
	l.ensure(n)
	if l.X == nil {
		x, err := PushSumInput(l.Input, n)
		if err != nil {
			panic(err) // an Input set without SetInput, to no input there is
		}
		l.X = x
	}
	var sum float64
	for i := range n {
		x := l.X(i)
		sum += x
		if l.Params.Aggregate != "count" && x != 0 {
			c.Schedule(time.Microsecond, proc.ID(i), epidemic.Value{X: x})
		}
	}
	switch l.Params.Aggregate {
	case "sum":
		l.truth = sum
	case "count":
		l.truth = float64(n)
	default:
		l.truth = sum / float64(n)
	}
	if l.Rounds == 0 {
		l.Rounds = check.PushSumRounds(n) + 5
		l.until, l.atMost = PushSumTargets[len(PushSumTargets)-1], 2*l.Rounds
	}
	T := period(l.Params)
	var measure func()
	measure = func() {
		worst, mean := l.measure()
		l.errors = append(l.errors, worst)
		l.meanErrors = append(l.meanErrors, mean)
		c.After(T, measure)
	}
	c.After(T+T/2, measure)
}

// SetInput names the input: "uniform" or "one" (PushSumInput).
func (l *PushSumLoad) SetInput(name string) error {
	if _, err := PushSumInput(name, 1); err != nil {
		return err
	}
	l.Input, l.X = name, nil
	return nil
}

// Done ends the run after the rounds.
func (l *PushSumLoad) Done(func(proc.ID) bool) bool {
	r := len(l.errors)
	if r < l.Rounds {
		return false
	}
	return l.until == 0 || l.errors[r-1] <= l.until || r >= l.atMost
}

// Observe records each node's mass.
func (l *PushSumLoad) Observe(c sim.Control, node proc.ID, o proc.Output) {
	if st, ok := o.(epidemic.State); ok {
		l.ensure(c.N())
		l.s[node], l.w[node] = st.S, st.W
	}
}

// ensure allocates the record: the processes start, and output their
// first state, before the workload's Init.
func (l *PushSumLoad) ensure(n int) {
	if l.s == nil {
		l.s, l.w = make([]float64, n), make([]float64, n)
	}
}

// measure is the largest and the mean relative error of the nodes'
// estimates, |sᵢ/wᵢ − truth|/|truth|; a node without weight has no
// estimate, an infinite error.
func (l *PushSumLoad) measure() (worst, mean float64) {
	var sum float64
	for i := range l.s {
		if l.w[i] == 0 {
			return math.Inf(1), math.Inf(1)
		}
		e := math.Abs(l.s[i]/l.w[i]-l.truth) / math.Abs(l.truth)
		worst = max(worst, e)
		sum += e
	}
	return worst, sum / float64(len(l.s))
}

// roundsTo is the first round after which every error of the series is
// at most eps, counting from 1; false if the series never gets there. A
// push-sum estimate is a weighted mean of estimates of the round before
// (a node's own half and the shares it received), so the largest error
// never grows again once it is below eps; the mean may, by rounding.
func roundsTo(series []float64, eps float64) (float64, bool) {
	r := len(series)
	for r > 0 && series[r-1] <= eps {
		r--
	}
	if r == len(series) {
		return 0, false
	}
	return float64(r + 1), true
}

func pushSumMetrics(f Finished) (map[string]float64, map[string]*float64) {
	m := map[string]float64{}
	l, _ := f.Workload.(*PushSumLoad)
	if l == nil || len(l.s) == 0 {
		return m, nil
	}
	th := map[string]*float64{"messages_per_node_round": ptr(1)}
	rounds := float64(len(l.errors))
	m["max_error"], _ = l.measure()
	if b, ok := bytesPerNode(l.meter, f.Nodes); ok {
		m["bytes_per_node"] = b
	}
	m["rounds"] = rounds
	if rounds > 0 {
		m["messages_per_node_round"] = float64(f.Result.Sent) / float64(f.Nodes) / rounds
	}
	ref := PushSumReference[l.Input]
	for i, eps := range PushSumTargets {
		name := pushSumRoundsTo(eps)
		if r, ok := roundsTo(l.errors, eps); ok {
			m[name] = r
		}
		if r, ok := roundsTo(l.meanErrors, eps); ok {
			m[name+"_mean"] = r
		}
		if f.Nodes == 1_000_000 && (l.Params.Aggregate == "" || l.Params.Aggregate == "average") && ref != nil {
			th[name] = ptr(ref[i])
		}
	}
	f.Series["max_error"] = capped(l.errors)
	f.Series["mean_error"] = capped(l.meanErrors)
	return m, th
}

// pushSumRoundsTo is the metric of the rounds to relative error eps, a
// power of ten: rounds_to_1e-2, ….
func pushSumRoundsTo(eps float64) string {
	return "rounds_to_1e" + strconv.Itoa(int(math.Round(math.Log10(eps))))
}

// capped is the series with infinities at the largest float32: JSON has
// no infinity.
func capped(s []float64) []float64 {
	out := make([]float64, len(s))
	for i, e := range s {
		out[i] = min(e, math.MaxFloat32)
	}
	return out
}

// pushSumCaseMetrics are the metrics of the comparison's push-sum cases.
func pushSumCaseMetrics() []string {
	m := []string{"max_error"}
	for _, eps := range PushSumTargets {
		m = append(m, pushSumRoundsTo(eps))
	}
	for _, eps := range PushSumTargets {
		m = append(m, pushSumRoundsTo(eps)+"_mean")
	}
	return append(m, "messages_per_node_round", "bytes_per_node")
}

// pushSumNotes are the notes of a push-sum case whose input is as input
// says.
func pushSumNotes(input string) map[string]string {
	notes := map[string]string{
		"max_error": "the largest relative error of any node's estimate at the end (the runs go on past 2·log₂ n + 3·log₂ 1000 + 5 rounds until it is within 10⁻⁶). Input: " + input,
	}
	for _, eps := range PushSumTargets {
		notes[pushSumRoundsTo(eps)] = "the rounds until every node's estimate is within ε (relative) of the average — the largest error over the nodes, the error of Kempe et al.'s Theorem 3.1 (O(log n + log 1/ε + log 1/δ) rounds, no constant). Theory: a reference simulation at n = 10⁶ (27/41/54 with uniform inputs, 47/64/74 with all the mass on one node); it measured the largest error too: at 10⁶ the largest error matches it within 1 to 3 rounds for both inputs, while the mean error (next rows) gets there 14 to 17 rounds sooner. The largest error falls in steps, a round or more at a time: the node furthest from the average keeps its estimate in every round no share reaches it (probability about 1/e), so one run (one seed, at 10⁶) differs from the reference by a round or more either way"
		notes[pushSumRoundsTo(eps)+"_mean"] = "the rounds from which the mean relative error over the nodes stays within ε: it falls by √2 a round, as Kempe et al.'s potential (the variance of the contributions, halved in expectation each round) has it — 13.3 rounds for each factor 100; no reference figure"
	}
	return notes
}

// gossipWorkload is the default workload of gossip algorithm a under
// params p.
func gossipWorkload(algo string, p epidemic.Params) sim.Workload {
	switch algo {
	case "push-sum":
		return NewPushSumLoad(p)
	case "swim":
		return NewSwimLoad(p)
	case "discovery":
		return NewDiscoveryLoad(p)
	}
	return NewGossipLoad(p)
}

// ConfigureGossip returns the run options of gossip algorithm a with
// params p: its processes and its workload built from them, the bytes
// they send metered.
func ConfigureGossip(f Family, a proc.Algorithm, p epidemic.Params) (Options, error) {
	if a.Name == "discovery" && p.Period == 0 {
		p.Period = epidemic.DiscoveryPeriod
	}
	a, err := epidemic.Configure(a, p)
	if err != nil {
		return Options{}, err
	}
	o := Options{Algo: a, Metrics: f.Metrics, Streamed: f.Streamed, Workload: gossipWorkload(a.Name, p)}
	o.Algo = meterGossip(a, o.Workload)
	return o, nil
}

// gossipCheckedUpTo is the largest comparison run that keeps its trace
// for the checkers; larger ones are measured only.
const gossipCheckedUpTo = 10_000

// gossipCompareNodeRuns is how many node-runs a comparison case spends
// at small n: its runs are as many seeds as make this many nodes in all,
// 1 to 10 (a variable so that tests may spend less).
var gossipCompareNodeRuns = 10_000

// gossipRuns runs a of the gossip family with params p on n nodes, once
// per seed from seed on — as many seeds as it takes for about 10^4 node
// runs in all (10 at 1000 nodes, 1 from 10^4 on), so that the figures of
// small runs are means and not one draw — and returns a report whose
// metrics are the means, and whose checks are every run's. Each
// configure, if given, adjusts each run's workload.
func gossipRuns(f Family, a proc.Algorithm, p epidemic.Params, n int, seed uint64, configure ...func(sim.Workload)) (*Report, error) {
	reps := min(10, max(1, gossipCompareNodeRuns/n))
	var out *Report
	sums, counts := map[string]float64{}, map[string]int{}
	theory, tcounts := map[string]float64{}, map[string]int{}
	for i := range reps {
		o, err := ConfigureGossip(f, a, p) // a fresh workload and meter per run
		if err != nil {
			return nil, err
		}
		for _, c := range configure {
			c(o.Workload)
		}
		s := seed + uint64(i)
		o.Nodes, o.Seed, o.NoCheck = n, &s, n > gossipCheckedUpTo
		o.NoHash = o.NoCheck
		r, _, err := Sim(o)
		if err != nil {
			return nil, err
		}
		for k, v := range r.Metrics {
			sums[k] += v
			counts[k]++
		}
		for k, v := range r.Theory {
			if v != nil {
				theory[k] += *v
				tcounts[k]++
			}
		}
		if out == nil {
			out = r
		} else {
			out.Checks = append(out.Checks, r.Checks...)
		}
	}
	// Means over the runs that have the figure (a run with too few tail
	// rounds has no push_tail_ratio); rounds_to_all only if every run
	// reached every node.
	for k, v := range sums {
		out.Metrics[k] = v / float64(counts[k])
	}
	for k, v := range theory {
		out.Theory[k] = ptr(v / float64(tcounts[k]))
	}
	if counts["rounds_to_all"] < reps {
		delete(out.Metrics, "rounds_to_all")
	}
	return out, nil
}

// swimCompareMaxNodes is the largest membership `cohort compare gossip`
// runs SWIM's cases with, as the issue measures them (10², 10⁴, 10⁵):
// their figures are constant in n, and a case of 10⁵ members already
// costs 45 s of CPU (60 periods at about 7.5 µs a member), so 10⁶ would
// cost some 15 minutes for the two cases, more than the rest of the
// comparison.
const swimCompareMaxNodes = 100_000

// gossipCases are the constructed situations of `cohort compare gossip`.
var gossipCases = func() []compareCase {
	oneUpdate := func(algo string, metrics ...string) compareCase {
		return compareCase{
			// One update written at p0; anti-entropy spreads it to every node.
			name: "one update", metrics: append([]string{"rounds_to_all"}, append(metrics, "messages_per_node", "bytes_per_node")...),
			algos: []string{algo},
			run: func(f Family, a proc.Algorithm, n int, seed uint64) (*Report, error) {
				return gossipRuns(f, a, epidemic.Params{}, n, seed)
			},
			notes: map[string]string{
				"rounds_to_all":   "log₂(n) + ln(n) is the notes' (and Pittel's) count for push, an infective node trying one random node a round; the sources give none for pull and push-pull, which finish sooner: once most nodes have the update each round squares what is left",
				"pull_ratio":      "Σpᵢ₊₁/Σpᵢ² over the rounds with ≥ 30 nodes left: the notes' pᵢ₊₁ = pᵢ² gives 1 (the finite-n law pᵢ(npᵢ−1)/(n−1) is below it by < 1% there)",
				"push_tail_ratio": "mean pᵢ₊₁/pᵢ in the tail (pᵢ ≤ 0.1, ≥ 30 nodes left) beside the notes' (1−1/n)^{n(1−pᵢ)}, about 1/e",
				"bytes_per_node":  "every message sent, as the wire codec encodes it: pull and push-pull send a digest from every node every round, news or not, and the update only where it is missing; push sends whole maps, from the nodes that have one",
			},
		}
	}
	cases := []compareCase{oneUpdate("push", "push_tail_ratio"), oneUpdate("pull", "pull_ratio"), oneUpdate("push-pull")}
	for k := 1; k <= 5; k++ {
		cases = append(cases, compareCase{
			// The notes' model: feedback and a coin.
			name: fmt.Sprintf("k=%d feedback coin", k), metrics: []string{"residue", "updates_per_node"},
			algos: []string{"rumor"},
			run: func(f Family, a proc.Algorithm, n int, seed uint64) (*Report, error) {
				return gossipRuns(f, a, epidemic.Params{K: k}, n, seed)
			},
			notes: map[string]string{
				"residue":          "the notes' s = e^{−(k+1)(1−s)}: the limit of the rumor ODE (ds/dt = −si, di/dt = si − (1−s)i/k) for an infinite population; this variant is exactly that model, so it matches at every n within the noise",
				"updates_per_node": "Demers et al.: with feedback and a coin the residue and the traffic m obey s = e^{−m}, so m = −ln s",
			},
		}, compareCase{
			// Demers et al.'s Table 1: feedback and counters, 1000 sites.
			name: fmt.Sprintf("k=%d feedback counter", k), metrics: []string{"residue", "updates_per_node"},
			algos: []string{"rumor"},
			run: func(f Family, a proc.Algorithm, n int, seed uint64) (*Report, error) {
				return gossipRuns(f, a, epidemic.Params{K: k, Counter: true}, n, seed)
			},
			notes: map[string]string{
				"residue":          "Demers et al.'s Table 1 (theory at n = 1000 only), their simulation of 1000 sites with feedback and counters. With contacts handled one at a time (as here, and in the notes' ODE) a counter restarted by useful contacts already leaves less residue than the coin, as Demers et al. say it does, but its mongers send less than Table 1's (next row); both obey s = e^{−m} (e^{−1.74} = 0.176). The cycles case below reproduces Table 1",
				"updates_per_node": "Demers et al.'s Table 1 traffic, updates sent per site (n = 1000)",
			},
		}, compareCase{
			// The same, with feedback as of the start of the round.
			name: fmt.Sprintf("k=%d feedback counter cycles", k), metrics: []string{"residue", "updates_per_node"},
			algos: []string{"rumor"},
			run: func(f Family, a proc.Algorithm, n int, seed uint64) (*Report, error) {
				return gossipRuns(f, a, epidemic.Params{K: k, Counter: true, Cycles: true}, n, seed)
			},
			notes: map[string]string{
				"residue":          "Demers et al.'s Table 1 is this variant: feedback, a counter of useless contacts in a row (a useful one restarts it), and feedback judged as of the start of the cycle, as a simulation in synchronous cycles has it (two mongers reaching one site in a cycle both count the contact as useful). Over 10 seeds at 1000 nodes it matches the table within the noise for k = 1..5 (k = 5 leaves one or two nodes: a residue of 0.0012 is 1.2 nodes)",
				"updates_per_node": "Demers et al.'s Table 1 traffic, updates sent per site (n = 1000)",
			},
		})
	}
	for _, in := range []struct{ name, input, notes string }{
		{"average of 1..n", "uniform", "node i holds i + 1: spread as evenly as uniform draws from an interval (standard deviation over mean 1/√3 either way)"},
		{"average, all mass on one node", "one", "node 0 holds n, the others 0 (average 1): the input of Kempe et al.'s diffusion speed, and the worst case of the inputs that are not negative. A node that has had no share estimates 0, an error of 1, and mass reaches every node only as a push rumor does, in about log₂ n + ln n rounds (34 at 10⁶); the largest error then falls as with the other input"},
	} {
		cases = append(cases, compareCase{
			// Push-sum of the average, run until every estimate is within
			// 10⁻⁶.
			name: in.name, metrics: pushSumCaseMetrics(),
			algos: []string{"push-sum"},
			run: func(f Family, a proc.Algorithm, n int, seed uint64) (*Report, error) {
				return gossipRuns(f, a, epidemic.Params{}, n, seed, func(w sim.Workload) { w.(*PushSumLoad).Input = in.input })
			},
			notes: pushSumNotes(in.notes),
		})
	}
	for _, c := range []struct {
		name string
		p    epidemic.Params
	}{
		{"crashes and a pause", epidemic.Params{}},
		{"crashes and a pause, no lifeguard", epidemic.Params{NoLHM: true, NoDynamicSuspicion: true, NoBuddy: true}},
	} {
		cases = append(cases, compareCase{
			// SWIM: n/50 members crash, each just before a period; one
			// is paused for three periods.
			name: c.name, metrics: []string{"first_detection_periods", "first_declared_periods", "messages_per_member_per_period", "false_positives"},
			algos: []string{"swim"},
			skip: func(n int) string {
				if n > swimCompareMaxNodes {
					return fmt.Sprintf("SWIM's cases run up to %d members", swimCompareMaxNodes)
				}
				return ""
			},
			run: func(f Family, a proc.Algorithm, n int, seed uint64) (*Report, error) {
				return gossipRuns(f, a, c.p, n, seed)
			},
			notes: map[string]string{
				"first_detection_periods":        "Das et al. §3.1: 1/(1−(1−1/(n−1))^{n−1}) periods from a crash to the first ping of the crashed member that goes unanswered, e/(e−1) ≈ 1.58 for large n; the crashes fall just before a period starts, so the suspicion raised at the end of that period counts one period",
				"first_declared_periods":         "the first suspicion plus the suspicion timeout: 4·max(1, log₁₀ n) periods without Lifeguard, up to six times that with its dynamic timeout, shortened by each independent confirmation",
				"messages_per_member_per_period": "a ping and on average one ack per member and period (Das et al.: constant in n), plus the ping-reqs, their pings, acks and nacks around the crashed members, over the periods each member was up",
				"false_positives":                "members that never crashed declared dead by someone, per run (the paused member included): its pause of three periods is shorter than the suspicion timeout, so it refutes, but the refutation travels by piggyback alone, O(log n) periods to most members and longer to the last; a member it has not reached when its suspicion timer expires declares the paused member dead",
			},
		})
	}
	cases = append(cases, discoveryCase("advertise and find, transit-stub", false), discoveryCase("advertise and find, plane", true))
	return cases
}()

// wireMeter counts the bytes a run's processes send, each message encoded
// as the live runtime would put it on the wire (package wire): the
// simulator counts messages, not bytes. One per run, kept by the run's
// workload, which hands the simulator its sent (sim.Config.Sent, through
// the workload's Sent).
type wireMeter struct {
	codec *wire.Codec
	buf   []byte
	bytes int64
	// The last message encoded, and its length: see sent.
	last    proc.Message
	lastLen int64
}

// sent counts msg's bytes. A message is a value that nobody changes once
// it is sent, and the meter holds on to the last one, whose memory is
// then not reused: a message with the same type and data words is the
// same value, of the same length, and is not encoded again. Most of a
// dissemination's messages are one: the empty digest (a struct of one
// nil slice is boxed without an allocation, always at the same address).
func (m *wireMeter) sent(msg proc.Message) {
	if words(msg) == words(m.last) && m.last != nil {
		m.bytes += m.lastLen
		return
	}
	if b, err := m.codec.Append(m.buf[:0], msg); err == nil {
		m.buf = b
		m.bytes += int64(len(b))
		m.last, m.lastLen = msg, int64(len(b))
	}
}

// words are an interface value's type and data words.
func words(m proc.Message) [2]unsafe.Pointer { return *(*[2]unsafe.Pointer)(unsafe.Pointer(&m)) }

// Sent meters a message sent, if the workload has a meter.
func (w *GossipLoad) Sent(_, _ proc.ID, m proc.Message) {
	if w.meter != nil {
		w.meter.sent(m)
	}
}

// Sent meters a message sent, if the workload has a meter.
func (l *PushSumLoad) Sent(_, _ proc.ID, m proc.Message) {
	if l.meter != nil {
		l.meter.sent(m)
	}
}

// meterGossip gives the workload (a gossip workload; anything else is
// left alone) a meter of the bytes a's processes send, and returns a as
// it is: the workload sees every send (Sim passes the simulator its
// Sent), so the processes need no wrapper.
func meterGossip(a proc.Algorithm, w sim.Workload) proc.Algorithm {
	var m **wireMeter
	switch w := w.(type) {
	case *GossipLoad:
		m = &w.meter
	case *PushSumLoad:
		m = &w.meter
	default:
		return a
	}
	codec, err := wire.NewCodec(a.Messages)
	if err != nil {
		return a // a message list the codec refuses: the wire tests say so
	}
	*m = &wireMeter{codec: codec}
	return a
}

// bytesPerNode is what the meter counted, over the nodes.
func bytesPerNode(m *wireMeter, n int) (float64, bool) {
	if m == nil || n == 0 {
		return 0, false
	}
	return float64(m.bytes) / float64(n), true
}
