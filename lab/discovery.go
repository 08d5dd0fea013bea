package lab

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
)

// DiscoveryLoad is the discovery algorithm's workload: the nodes run
// WarmUp rounds, in which their Vivaldi coordinates settle; then Holders
// nodes, drawn from the run's seed, advertise resource "x"; once every
// node holds every advertisement (watched through the Applied outputs, so
// that no trace is needed), every node finds its K nearest holders, and
// the answers are scored against the network's true round-trip times.
// The network is a transit-stub one (sim.TransitStub) up to
// sim.MaxTransitStubHosts nodes, beyond that (or with Plane) a plane of
// cities (sim.Plane).
type DiscoveryLoad struct {
	Params  epidemic.Params
	Holders int  // 0 means 8
	K       int  // 0 means 3
	WarmUp  int  // rounds; 0 means 300
	Plane   bool // the plane of cities at any size

	n        int
	net      sim.PairLatency
	holders  []proc.ID
	keys     map[string]bool
	has      []int32 // per node: advertisements held
	complete int     // nodes holding every advertisement
	at, all  time.Duration
	asked    bool
	answers  int
	found    [][]proc.ID // per node: its answer, nearest first
	estimate [][]float64
}

// NewDiscoveryLoad is the default discovery workload under params p.
func NewDiscoveryLoad(p epidemic.Params) *DiscoveryLoad { return &DiscoveryLoad{Params: p} }

func (w *DiscoveryLoad) period() time.Duration {
	return cmp.Or(w.Params.Period, epidemic.DiscoveryPeriod)
}

// Pairwise is the run's network.
func (w *DiscoveryLoad) Pairwise(n int, seed uint64) sim.PairLatency {
	if w.net == nil {
		if n <= sim.MaxTransitStubHosts && !w.Plane {
			w.net = sim.NewTransitStub(n, seed)
		} else {
			w.net = sim.NewPlane(n, seed)
		}
	}
	return w.net
}

// Init draws the holders and schedules their advertisements.
func (w *DiscoveryLoad) Init(c sim.Control) {
	w.n = c.N()
	h := min(cmp.Or(w.Holders, 8), w.n)
	w.keys = map[string]bool{}
	for _, i := range c.Rand().Perm(w.n)[:h] {
		w.holders = append(w.holders, proc.ID(i))
	}
	slices.Sort(w.holders)
	for _, x := range w.holders {
		w.keys[epidemic.ResourcePrefix+"x@"+itoa(int(x))] = true
	}
	w.has = make([]int32, w.n)
	w.found = make([][]proc.ID, w.n)
	w.estimate = make([][]float64, w.n)
	w.at = time.Duration(cmp.Or(w.WarmUp, 300))*w.period() + w.period()/2
	for _, x := range w.holders {
		c.Schedule(w.at-c.Now(), x, epidemic.Advertise{Name: "x"})
	}
}

func itoa(i int) string { return string(appendInt(nil, i)) }

func appendInt(b []byte, i int) []byte {
	if i >= 10 {
		b = appendInt(b, i/10)
	}
	return append(b, byte('0'+i%10))
}

// Observe follows the advertisements' spread and collects the answers.
func (w *DiscoveryLoad) Observe(c sim.Control, node proc.ID, o proc.Output) {
	switch o := o.(type) {
	case epidemic.Applied:
		if !w.keys[o.Key] || o.Deleted {
			return
		}
		w.has[node]++
		if int(w.has[node]) == len(w.holders) {
			w.complete++
			if w.complete == w.n && !w.asked {
				w.all = c.Now()
				w.asked = true
				for i := range w.n {
					c.Schedule(w.period(), proc.ID(i), epidemic.Find{ID: 1, Name: "x", K: cmp.Or(w.K, 3)})
				}
			}
		}
	case epidemic.Found:
		w.answers++
		for _, h := range o.Holders {
			w.found[node] = append(w.found[node], h.Node)
			w.estimate[node] = append(w.estimate[node], h.RTT)
		}
	}
}

// Done once every node has answered.
func (w *DiscoveryLoad) Done(func(proc.ID) bool) bool { return w.asked && w.answers >= w.n }

func (w *DiscoveryLoad) rtt(a, b proc.ID) float64 {
	return float64(w.net.Latency(a, b)+w.net.Latency(b, a)) / float64(time.Millisecond)
}

// discoveryMetrics scores a discovery run:
//
//   - rounds_to_findable: rounds from the advertisements until every node
//     held all of them;
//   - nearest_first: the fraction of finds (at nodes that hold nothing)
//     whose first answer is the truly nearest holder;
//   - nearest_in_k: the fraction whose K answers include it;
//   - precision_at_k: the mean share of the K answers that are among the
//     K truly nearest;
//   - random_precision: what K holders drawn at random score, K/holders;
//   - stretch: the mean true RTT to the first answer over the true RTT to
//     the nearest holder;
//   - rtt_error: the median relative error of the answers' estimated RTTs;
//   - messages_per_node_round: every message over the nodes and rounds.
func discoveryMetrics(f Finished) (map[string]float64, map[string]*float64) {
	m := map[string]float64{}
	th := map[string]*float64{}
	w, _ := f.Workload.(*DiscoveryLoad)
	if w == nil || w.n == 0 || w.net == nil {
		return m, th
	}
	T := w.period()
	rounds := float64(f.Result.VirtualTime) / float64(T)
	if rounds > 0 {
		m["messages_per_node_round"] = float64(f.Result.Sent) / float64(w.n) / rounds
	}
	if w.all > 0 {
		m["rounds_to_findable"] = float64(w.all-w.at) / float64(T)
		th["rounds_to_findable"] = ptr(epidemic.PushPullRounds(w.n))
	}
	k := min(cmp.Or(w.K, 3), len(w.holders))
	var first, inK, prec, stretch, queries float64
	var errs []float64
	for i := range w.n {
		node := proc.ID(i)
		if slices.Contains(w.holders, node) || len(w.found[i]) == 0 {
			continue
		}
		byTrue := slices.Clone(w.holders)
		slices.SortStableFunc(byTrue, func(a, b proc.ID) int { return cmp.Compare(w.rtt(node, a), w.rtt(node, b)) })
		queries++
		ans := w.found[i]
		if ans[0] == byTrue[0] {
			first++
		}
		if slices.Contains(ans, byTrue[0]) {
			inK++
		}
		hit := 0
		for _, a := range ans {
			if slices.Contains(byTrue[:k], a) {
				hit++
			}
		}
		prec += float64(hit) / float64(k)
		stretch += w.rtt(node, ans[0]) / w.rtt(node, byTrue[0])
		for j, a := range ans {
			if r := w.rtt(node, a); r > 0 {
				errs = append(errs, math.Abs(w.estimate[i][j]-r)/r)
			}
		}
	}
	if queries > 0 {
		m["nearest_first"] = first / queries
		m["nearest_in_k"] = inK / queries
		m["precision_at_k"] = prec / queries
		m["stretch"] = stretch / queries
		m["random_precision"] = float64(k) / float64(len(w.holders))
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		m["rtt_error"] = errs[len(errs)/2]
	}
	return m, th
}

// discoveryCase is `cohort compare gossip`'s discovery row: holders
// advertise after the warm-up, every node finds its 3 nearest.
// discoveryCompareMaxNodes is the largest run of discovery's cases in
// `cohort compare gossip` (the issue asks no discovery figure of it):
// their 300 rounds of Vivaldi warm-up make the plane's case of 10⁵ nodes
// cost more than 170 s of CPU (a run stopped there unfinished), more
// than push-sum's two cases at 10⁶ (about 135 s), and 10⁶ ten times
// that.
const discoveryCompareMaxNodes = 10_000

func discoveryCase(name string, plane bool) compareCase {
	return compareCase{
		name:    name,
		algos:   []string{"discovery"},
		metrics: []string{"rounds_to_findable", "nearest_first", "nearest_in_k", "precision_at_k", "random_precision", "stretch", "rtt_error", "messages_per_node_round"},
		skip: func(n int) string {
			if !plane && n > sim.MaxTransitStubHosts {
				return "the transit-stub network holds a latency per pair of routers: up to " + itoa(sim.MaxTransitStubHosts) + " nodes"
			}
			if n > discoveryCompareMaxNodes {
				return "discovery's cases run up to " + itoa(discoveryCompareMaxNodes) + " nodes"
			}
			return ""
		},
		notes: map[string]string{
			"rounds_to_findable": "log₃ n + ln ln n (Karp et al. 2000, push-pull rumor spreading) up to O(1); all 8 holders' advertisements must arrive, and a round's exchanges take up to a round trip of the network",
			"precision_at_k":     "the share of the 3 answers among the 3 truly nearest holders (by the network's RTT), beside random_precision, what 3 holders drawn at random score",
		},
		run: func(f Family, a proc.Algorithm, n int, seed uint64) (*Report, error) {
			p := epidemic.Params{Period: epidemic.DiscoveryPeriod}
			o, err := ConfigureGossip(f, a, p)
			if err != nil {
				return nil, err
			}
			o.Workload.(*DiscoveryLoad).Plane = plane
			o.Nodes, o.Seed, o.NoCheck = n, &seed, n > gossipCheckedUpTo
			o.NoHash = o.NoCheck
			r, _, err := Sim(o)
			return r, err
		},
	}
}
