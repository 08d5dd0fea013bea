package lab

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/cohort-go/cohort/overlay"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
)

// OverlayLoad is the overlay family's workload: node 0 starts the
// overlay, the others join one after another, Gap apart, each through a
// random present member (the simulator's Join faults draw the contact);
// once the last join has settled, Lookups lookups of random keys are
// asked at random nodes, a quarter of a millisecond apart. The run ends
// when every lookup has been delivered. It records the hops of each
// delivery, so the metrics need no trace, and (with Family.Wrap) keeps
// the processes to measure their state at the end.
//
// With Fail above 0 it is Rowstron & Druschel's experiment (2001 §3.3):
// after those lookups a fraction Fail of the nodes fails at once;
// Lookups more are asked right after, at live nodes (before the
// keep-alives can notice: only the lookups' own timeouts find the failed
// nodes), and Lookups more once repair has had RepairTime; then every
// live node shows its tables (for overlay-tables, in checked runs). The
// nodes run with failure detection and repair (overlay.Repairing) when
// Fail is above 0 or Repair is set (the CLI sets it when faults are
// given); otherwise with none (overlay.FailureFree: at 10⁶ nodes the
// keep-alives would be most of the traffic).
type OverlayLoad struct {
	// Lookups is how many lookups are asked; 0 means 1000.
	Lookups int
	// Gap is the time between joins; 0 means 10 ms for Pastry (a join's
	// route, its state and its announcements take about ⌈log₁₆ N⌉ + 2
	// latencies of 1 ms) and (N/2l + 10) ms for the circular baseline,
	// whose JOIN crawls along the ring. (Joins may overlap, and the leaf
	// sets still converge: overlay.TestConcurrentJoins; the metrics here
	// are of joins one at a time, as in Rowstron & Druschel's
	// experiments.)
	Gap time.Duration
	// Fail is the fraction of the nodes that fail at once after the first
	// lookups; 0: none.
	Fail float64
	// Repair runs the nodes with failure detection and repair even when
	// Fail is 0 (faults come from elsewhere).
	Repair bool
	// RepairTime is how long after the failure the last lookups are
	// asked; 0 means six keep-alive periods.
	RepairTime time.Duration
	// Network runs the overlay on a transit-stub network (sim.TransitStub,
	// drawn with the run's seed; up to sim.MaxTransitStubHosts nodes) and
	// measures each lookup's relative delay penalty: its delay along the
	// route over the direct latency from the node asked to the node that
	// takes delivery. The joins are then 10 ms + 24 of the network's
	// longest latencies apart (room for a proximity-aware join's search
	// for a nearby node).
	Network bool
	// Proximity runs the nodes with proximity-aware tables
	// (overlay.Config.Proximity).
	Proximity bool

	algo      string
	n         int
	hops      []int
	asked     int
	faulted   bool
	processes []proc.Process
	// The failure experiment: the failed nodes, the phases' start times,
	// each phase's deliveries, and the end of the run.
	crashed       []proc.ID
	failAt, repAt time.Duration
	phases        [3]phase
	end           time.Duration
	over          bool
	live          []proc.ID // the live nodes after the failure, for the oracle
	all           []proc.ID
	// The churn workload: who is up, the gets answered and found.
	up          func(proc.ID) bool
	gets, found int
	// On a transit-stub network: the network, its longest latency, each
	// lookup's asker and time by key, the delay penalties measured.
	topo       *sim.TransitStub
	maxLatency time.Duration
	asks       map[overlay.GUID]ask
	rdp        []float64
}

// ask is a lookup asked: where and when.
type ask struct {
	node proc.ID
	at   time.Duration
}

// Pairwise is the transit-stub network's latency between every two
// nodes, with Network (nil otherwise: the run's own latency).
func (w *OverlayLoad) Pairwise(n int, seed uint64) sim.PairLatency {
	if !w.Network || n > sim.MaxTransitStubHosts {
		return nil
	}
	if w.topo == nil {
		w.topo = sim.NewTransitStub(n, seed)
		w.maxLatency = w.topo.MaxLatency()
	}
	return w.topo
}

// config is the nodes' configuration.
func (w *OverlayLoad) config() overlay.Config {
	cfg := overlay.FailureFree
	if w.repairing() {
		cfg = overlay.Repairing
	}
	cfg.Proximity = w.Proximity
	if w.topo != nil {
		cfg.HopTimeout = max(cfg.HopTimeout, 2*w.maxLatency+10*time.Millisecond)
	}
	return cfg
}

// phase is a lookup phase's deliveries: their hops, and how many were at
// the live node numerically closest to the key.
type phase struct {
	hops    []int
	correct int
}

// NewOverlayLoad is the default workload of overlay algorithm algo.
func NewOverlayLoad(algo string) *OverlayLoad { return &OverlayLoad{algo: algo} }

func (w *OverlayLoad) lookups() int { return cmp.Or(w.Lookups, 1000) }

func (w *OverlayLoad) gap(n int) time.Duration {
	switch {
	case w.Gap > 0:
		return w.Gap
	case w.algo == "circular":
		return time.Duration(n/(2*overlay.DefaultLeaves)+10) * time.Millisecond
	case w.topo != nil:
		return 10*time.Millisecond + 24*w.maxLatency
	}
	return 10 * time.Millisecond
}

// settled is when the last join is over: the lookups begin then.
func (w *OverlayLoad) settled(n int) time.Duration {
	return time.Duration(n)*w.gap(n) + 50*time.Millisecond
}

func (w *OverlayLoad) repairing() bool { return w.Fail > 0 || w.Repair }

func (w *OverlayLoad) repairTime() time.Duration {
	return cmp.Or(w.RepairTime, 6*overlay.Repairing.KeepAlive)
}

// spread is how long a phase's lookups take to ask.
func (w *OverlayLoad) spread() time.Duration {
	return time.Duration(w.lookups()) * time.Millisecond / 4
}

// Faults are the joins: node i at i·Gap (node 0 first, alone); with Fail,
// the failure of ⌊Fail·N⌋ nodes drawn with the seed.
func (w *OverlayLoad) Faults(n int, seed uint64) []sim.Fault {
	w.faulted = true
	w.Pairwise(n, seed) // the joins' gap depends on the network
	// The processes are kept in a table made now, before the run: the
	// memory estimate's sample processes (built at other sizes) must not
	// make it grow with n; the ones it leaves here are replaced when
	// their nodes join, and every node joins.
	w.processes = make([]proc.Process, n)
	fs := make([]sim.Fault, n)
	for i := range fs {
		fs[i] = sim.Fault{Kind: sim.Join, Node: proc.ID(i), At: time.Duration(i) * w.gap(n)}
	}
	if w.Fail > 0 {
		w.failAt = w.settled(n) + w.spread() + 100*time.Millisecond
		rng := rand.New(rand.NewPCG(seed, 0x6661696c))
		k := min(int(w.Fail*float64(n)), n-1)
		down := make([]bool, n)
		for _, i := range rng.Perm(n)[:k] {
			down[i] = true
			w.crashed = append(w.crashed, proc.ID(i))
			fs = append(fs, sim.Fault{Kind: sim.Crash, Node: proc.ID(i), At: w.failAt})
		}
		w.live = w.live[:0]
		for i := range n {
			if !down[i] {
				w.live = append(w.live, proc.ID(i))
			}
		}
	}
	return fs
}

// Init schedules the lookups after the joins (at once if the scenario
// brings its own membership).
func (w *OverlayLoad) Init(c sim.Control) {
	w.n = c.N()
	if w.Repair && !w.faulted {
		w.churn(c)
		return
	}
	at := time.Duration(0)
	if w.faulted {
		at = w.settled(w.n)
	}
	// The lookups are a series: each made (its key and node drawn, in
	// the order of the phases) as the one before it is asked, so that a
	// million of them are not a million pending inputs.
	type stage struct {
		at    time.Duration
		nodes []proc.ID // nil: any node
	}
	phases := []stage{{at: at}}
	if w.failAt > 0 && w.faulted {
		w.repAt = w.failAt + w.repairTime()
		phases = append(phases, stage{w.failAt + time.Millisecond, w.live}, stage{w.repAt + time.Millisecond, w.live})
	}
	rng := c.Rand()
	per := w.lookups()
	w.asked = per * len(phases)
	c.Series(w.asked, func(i int) (time.Duration, proc.ID, proc.Input) {
		p := phases[i/per]
		key := overlay.GUID{Hi: rng.Uint64(), Lo: rng.Uint64()}
		node := proc.ID(rng.IntN(w.n))
		if p.nodes != nil {
			node = p.nodes[rng.IntN(len(p.nodes))]
		}
		when := p.at + time.Duration(i%per)*time.Millisecond/4
		if w.topo != nil {
			if w.asks == nil {
				w.asks = map[overlay.GUID]ask{}
			}
			w.asks[key] = ask{node, when}
		}
		return when, node, overlay.Lookup{Key: key}
	})
	if len(phases) == 1 {
		return
	}
	for _, id := range w.live {
		c.Schedule(w.repAt-c.Now(), id, overlay.ShowTables{})
	}
	// The run ends when every lookup has been delivered, or, if some
	// were lost, ten seconds after the last was asked (a marker input).
	w.end = w.repAt + w.spread() + 10*time.Second
	c.Schedule(w.end-c.Now(), w.live[0], overlay.ShowTables{})
}

// churn is the workload of a run whose membership changes by faults
// given from outside (the fault language's churn: Poisson joins,
// failures and leaves): the DHT's puts of Lookups keys at one second,
// then a lookup and a get of one of those keys every 20 ms, each at a
// node present then; the run ends 10 s after the last. Every get after
// its put should find the value (dht-get), unless its replica set
// failed.
func (w *OverlayLoad) churn(c sim.Control) {
	rng := c.Rand()
	at := func(t time.Duration, in func() proc.Input) {
		c.After(t-c.Now(), func() {
			node := proc.ID(rng.IntN(w.n))
			for try := 0; try < 100 && w.up != nil && !w.up(node); try++ {
				node = proc.ID(rng.IntN(w.n))
			}
			c.Schedule(0, node, in())
		})
	}
	keys := make([]overlay.GUID, w.lookups())
	for i := range keys {
		keys[i] = overlay.GUID{Hi: rng.Uint64(), Lo: rng.Uint64()}
		at(time.Second, func() proc.Input { return overlay.Put{Key: keys[i], Value: fmt.Sprint("v", i)} })
	}
	const every = 20 * time.Millisecond
	for i := range keys {
		t := 2*time.Second + time.Duration(i)*every
		at(t, func() proc.Input { return overlay.Lookup{Key: overlay.GUID{Hi: rng.Uint64(), Lo: rng.Uint64()}} })
		at(t, func() proc.Input { return overlay.Get{Key: keys[i]} })
	}
	w.asked = len(keys)
	c.After(2*time.Second+time.Duration(len(keys))*every+10*time.Second-c.Now(), func() { w.over = true })
}

// GCPercent is the collector's target for the run (sim.Config.GCPercent):
// OverlayGC from OverlayGCFrom nodes on, else the program's.
func (w *OverlayLoad) GCPercent(n int) int {
	if n < OverlayGCFrom {
		return 0
	}
	return OverlayGC
}

// An overlay built by joins holds its nodes' tables, live to the end and
// growing with every join, while each join's messages (the states sent
// to the joiner, its announcements) and each lookup's hops are garbage
// once delivered: at the default target of 100% the collector marks the
// whole overlay again each time the garbage reaches its size — in the
// lookups of a 10⁶-node overlay, over a gigabyte marked to free a few
// hundred megabytes. At OverlayGC the heap may grow to 4 times what the last
// collection left live before the next one, under the simulator's
// memory limit: fewer collections, each marking as much. At 10⁶ nodes
// the lookups' CPU time falls by about a seventh, the build's by about
// 1%, and the peak grows by some 150 MB (of 2.2 GB). Below
// OverlayGCFrom nodes the collector's share is small and the program's
// setting stays.
const (
	OverlayGC     = 300
	OverlayGCFrom = 100_000
)

// Phases are the run's stages, timed apart in its report: the build by
// the workload's joins, then the lookups (with Fail, the lookups before
// the failure; then the failure and the lookups right after it, and the
// lookups after repair). A run without the workload's joins (a
// scenario's or churn's membership) has none.
func (w *OverlayLoad) Phases() []PhaseStart {
	if !w.faulted || w.asked == 0 {
		return nil
	}
	ps := []PhaseStart{{"build", 0}, {"lookups", w.settled(w.n)}}
	if w.failAt > 0 {
		ps = append(ps, PhaseStart{"failed", w.failAt}, PhaseStart{"repaired", w.repAt})
	}
	return ps
}

// phaseAt is the lookup phase a delivery at time t belongs to: before the
// failure, right after it, after repair.
func (w *OverlayLoad) phaseAt(t time.Duration) int {
	switch {
	case w.failAt == 0 || t < w.failAt:
		return 0
	case t < w.repAt:
		return 1
	}
	return 2
}

// Observe records the deliveries (in a failure run, by phase, and
// whether each is at the key's live home).
func (w *OverlayLoad) Observe(c sim.Control, node proc.ID, o proc.Output) {
	switch o := o.(type) {
	case overlay.Delivered:
		w.hops = append(w.hops, o.Hops)
		if a, ok := w.asks[o.Key]; ok && a.node != node {
			w.rdp = append(w.rdp, float64(c.Now()-a.at)/float64(w.topo.Latency(a.node, node)))
		}
		if w.failAt > 0 {
			p := &w.phases[w.phaseAt(c.Now())]
			p.hops = append(p.hops, o.Hops)
			live := w.live
			if c.Now() < w.failAt {
				if len(w.all) != w.n {
					w.all = orAll(nil, w.n)
				}
				live = w.all // none has failed yet
			}
			if overlay.Home(o.Key, live) == node {
				p.correct++
			}
		}
	case overlay.Got:
		w.gets++
		if o.Found {
			w.found++
		}
	case overlay.Tables:
		if w.end > 0 && c.Now() >= w.end {
			w.over = true
		}
	}
}

func orAll(ids []proc.ID, n int) []proc.ID {
	if ids != nil {
		return ids
	}
	all := make([]proc.ID, n)
	for i := range all {
		all[i] = proc.ID(i)
	}
	return all
}

// Done: every lookup delivered (or, in a failure run, its end reached).
func (w *OverlayLoad) Done(up func(proc.ID) bool) bool {
	w.up = up
	if w.Repair && !w.faulted {
		return w.over
	}
	return w.over || (w.asked > 0 && len(w.hops) >= w.asked)
}

// keepOverlay makes algorithm a's processes known to workload w, which
// measures their state at the end of the run: the joiners of the
// workload's own joins (a scenario's membership reports no state).
func keepOverlay(a proc.Algorithm, w sim.Workload) proc.Algorithm {
	if tk, ok := w.(treeKeeper); ok {
		newProc := a.New
		a.New = func(id proc.ID, n int) proc.Process {
			var p proc.Process
			if ew, ok := w.(*ESMLoad); ok && a.Name == "esm" {
				p = overlay.NewESM(id, ew.config(id, n))
			} else if sw, ok := w.(*ScribeLoad); ok && a.Name == "scribe" {
				cfg := overlay.FailureFree
				if sw.Repair {
					cfg = overlay.Repairing
				}
				cfg.HopTimeout = sw.hopTimeout()
				cfg.Proximity = sw.Proximity
				p = overlay.NewScribe(id, cfg)
			} else {
				p = newProc(id, n)
			}
			tk.keep(id, p)
			return p
		}
		return a
	}
	ow, ok := w.(*OverlayLoad)
	if !ok {
		return a
	}
	newProc := a.New
	a.New = func(id proc.ID, n int) proc.Process {
		var p proc.Process
		if b := overlay.Build(a.Name, ow.config()); b != nil {
			p = b(id, n)
		} else {
			p = newProc(id, n)
		}
		if int(id) < len(ow.processes) { // built during the run (not a probe's)
			ow.processes[id] = p
		}
		return p
	}
	return a
}

// overlayMetrics measures an overlay run:
//
//   - hops_mean, hops_p99: the hops of the delivered lookups (Pastry's
//     theory: log₁₆ N; the circular baseline's N/4l), and their
//     histogram, the series "hops";
//   - delivered_fraction: the lookups delivered, over those asked;
//   - state_entries_per_node: the distinct nodes in a node's leaf set and
//     routing table, the mean over the nodes (Pastry's theory:
//     (2^b − 1)·⌈log₁₆ N⌉ + 2l, full rows).
func overlayMetrics(f Finished) (map[string]float64, map[string]*float64) {
	switch f.Workload.(type) {
	case *ScribeLoad, *ESMLoad:
		return treeMetrics(f)
	}
	m := map[string]float64{}
	th := theoryOf("overlay", f.Algo, f.Nodes, "hops_mean", "state_entries_per_node")
	w, _ := f.Workload.(*OverlayLoad)
	if w == nil || w.asked == 0 {
		return m, th
	}
	m["delivered_fraction"] = float64(len(w.hops)) / float64(w.asked)
	hops := w.hops
	if w.failAt > 0 {
		hops = w.phases[0].hops
		for i, name := range []string{"before", "failed", "repaired"} {
			p := w.phases[i]
			m["delivered_fraction_"+name] = float64(len(p.hops)) / float64(w.lookups())
			m["correct_fraction_"+name] = float64(p.correct) / float64(w.lookups())
			if len(p.hops) > 0 {
				m["hops_mean_"+name] = meanHops(p.hops)
			}
		}
		m["failed_nodes"] = float64(len(w.crashed))
	}
	if w.gets > 0 {
		m["gets_found_fraction"] = float64(w.found) / float64(w.gets)
	}
	if len(w.rdp) > 0 {
		r := slices.Clone(w.rdp)
		slices.Sort(r)
		m["rdp_mean"] = mean(r)
		m["rdp_p90"] = r[int(math.Ceil(0.9*float64(len(r))))-1]
	}
	if len(hops) > 0 {
		h := slices.Clone(hops)
		slices.Sort(h)
		m["hops_mean"] = meanHops(h)
		m["hops_p99"] = float64(h[int(math.Ceil(0.99*float64(len(h))))-1])
		f.Series["hops"] = HopHistogram(h)
	}
	var entries, nodes float64
	for i, p := range w.processes {
		if slices.Contains(w.crashed, proc.ID(i)) {
			continue
		}
		if s, ok := p.(overlay.Stater); ok {
			entries += float64(s.Entries())
			nodes++
		}
	}
	if nodes > 0 {
		m["state_entries_per_node"] = entries / nodes
	}
	return m, th
}

// overlayCheckedUpTo is the largest overlay the comparison checks (the
// checker needs the trace).
const overlayCheckedUpTo = 10_000

// overlayCircularUpTo is the largest overlay the comparison builds with
// circular routing: a join there walks about N/4l hops, so a build takes
// about N²/4l events (12.8 M at 20,000 nodes, 11 s; 3·10¹⁰ at 10⁶).
const overlayCircularUpTo = 20_000

// overlayJoinsThenLookups: the default workload.
func overlayJoinsThenLookups(f Family, a proc.Algorithm, n int, seed uint64) (*Report, error) {
	o := f.Options(a)
	o.Nodes, o.Seed, o.NoCheck = n, &seed, n > overlayCheckedUpTo
	o.NoHash = o.NoCheck
	r, _, err := Sim(o)
	return r, err
}

// overlayCases: the default workload, Pastry beside the circular
// baseline at each size (the baseline up to overlayCircularUpTo).
var overlayCases = []compareCase{{
	name:    "joins then lookups",
	algos:   []string{"pastry"},
	metrics: []string{"hops_mean", "hops_p99", "delivered_fraction", "state_entries_per_node"},
	run:     overlayJoinsThenLookups,
}, {
	name:    "joins then lookups",
	algos:   []string{"circular"},
	metrics: []string{"hops_mean", "hops_p99", "delivered_fraction", "state_entries_per_node"},
	skip: func(n int) string {
		if n > overlayCircularUpTo {
			return fmt.Sprintf("circular routing is built up to %d nodes (a join walks about N/4l hops: about N²/4l events)", overlayCircularUpTo)
		}
		return ""
	},
	run: overlayJoinsThenLookups,
}, {
	// Rowstron & Druschel 2001 §3.3: 10% of the nodes fail at once; the
	// lookups before, right after (routed around the failed nodes) and
	// after repair.
	name:    "10% failed at once",
	algos:   []string{"pastry"},
	metrics: []string{"hops_mean_before", "hops_mean_failed", "hops_mean_repaired", "correct_fraction_failed", "correct_fraction_repaired"},
	skip: func(n int) string {
		if n > overlayFailUpTo {
			return fmt.Sprintf("the failure experiment runs up to %d nodes (keep-alives through every join)", overlayFailUpTo)
		}
		return ""
	},
	notes: map[string]string{
		"hops_mean_before":   "Rowstron & Druschel at N = 5,000: 2.73 before, 2.96 right after, 2.74 after repair",
		"hops_mean_failed":   "a lookup whose next hop has failed times out and is routed again around it: the route is longer",
		"hops_mean_repaired": "the tables repaired: back to the figure before the failure",
	},
	run: func(f Family, a proc.Algorithm, n int, seed uint64) (*Report, error) {
		o := f.Options(a)
		o.Nodes, o.Seed, o.NoCheck = n, &seed, n > overlayFailCheckedUpTo
		o.Workload.(*OverlayLoad).Fail = 0.1
		r, _, err := Sim(o)
		return r, err
	},
},
	overlayLookupRDPCase(false),
	overlayLookupRDPCase(true),
	overlayTreeCase,
	overlayESMLatencyCase,
	overlayScribeProximityCase,
}

// overlayESMLatencyCase: ESM's tree with each parent chosen by delay
// alone, every host taking Degree children whatever its upload — the
// stream's rate the members receive beside the bandwidth-aware choice
// of overlayTreeCase.
var overlayESMLatencyCase = compareCase{
	name:    "multicast trees on a transit-stub network, ESM parents by delay alone",
	algos:   []string{"esm"},
	metrics: []string{"stream_rate_mean", "stream_rate_min", "full_rate_fraction", "depth_mean", "rdp_mean", "stress_max"},
	skip:    transitStubOnly,
	notes: map[string]string{
		"stream_rate_mean": "each host takes 4 children whatever its upload, each parent the nearest: a member below a slow host gets a share of its upload",
	},
	run: func(f Family, a proc.Algorithm, n int, seed uint64) (*Report, error) {
		o := f.Options(a)
		o.Nodes, o.Seed = n, &seed
		o.Workload.(*ESMLoad).LatencyOnly = true
		r, _, err := Sim(o)
		return r, err
	},
}

// overlayLookupRDPCase: Pastry's lookups on a transit-stub network, the
// route's delay over the direct latency (Rowstron & Druschel 2001 §3.2,
// Fig. 5: routes 30–40% longer than the direct path with proximity-aware
// tables), the tables with or without proximity.
func overlayLookupRDPCase(proximity bool) compareCase {
	c := compareCase{
		name:    "lookups on a transit-stub network",
		algos:   []string{"pastry"},
		metrics: []string{"hops_mean", "hops_p99", "rdp_mean", "rdp_p90", "delivered_fraction"},
		skip:    transitStubOnly,
		notes: map[string]string{
			"rdp_mean": "tables that ignore proximity: every hop goes anywhere on the network",
		},
		run: func(f Family, a proc.Algorithm, n int, seed uint64) (*Report, error) {
			o := f.Options(a)
			o.Nodes, o.Seed = n, &seed
			w := o.Workload.(*OverlayLoad)
			w.Network, w.Proximity = true, proximity
			r, _, err := Sim(o)
			return r, err
		},
	}
	if proximity {
		c.proximity = true
		c.name += ", proximity-aware tables"
		c.notes = map[string]string{
			"rdp_mean":  "Rowstron & Druschel report routes 30–40% longer than the direct path (RDP 1.3–1.4) with proximity-aware tables on a GT-ITM transit-stub network",
			"hops_mean": "the choice by proximity leaves the routes' hops as they were: each still adds a digit",
		}
	}
	return c
}

// overlayScribeProximityCase: Scribe's trees on proximity-aware Pastry
// (Castro et al. 2002 report a mean delay penalty of about 1.7).
var overlayScribeProximityCase = compareCase{
	proximity: true,
	name:      "multicast trees on a transit-stub network, proximity-aware tables",
	algos:     []string{"scribe"},
	metrics:   []string{"received_fraction", "depth_mean", "depth_max", "rdp_mean", "rdp_p90", "rdp_root_mean", "stress_mean", "stress_max"},
	skip:      transitStubOnly,
	notes: map[string]string{
		"rdp_mean":      "from the source through the root: the route to the root and the tree down from it, over the direct latency from the source",
		"rdp_root_mean": "the tree alone, from its root: Castro et al. report a mean delay penalty of about 1.7 for Scribe on Pastry with proximity-aware tables",
	},
	run: func(f Family, a proc.Algorithm, n int, seed uint64) (*Report, error) {
		o := f.Options(a)
		o.Nodes, o.Seed = n, &seed
		o.Workload.(*ScribeLoad).Proximity = true
		r, _, err := Sim(o)
		return r, err
	},
}

func transitStubOnly(n int) string {
	if n > sim.MaxTransitStubHosts {
		return fmt.Sprintf("the transit-stub network has a link per pair of nodes: up to %d nodes", sim.MaxTransitStubHosts)
	}
	return ""
}

// overlayTreeCase: the multicast trees on a transit-stub network, their
// depth, delay penalty and link stress beside naive unicast from the
// source (the network has a link per pair of nodes: up to
// sim.MaxTransitStubHosts).
var overlayTreeCase = compareCase{
	name:  "multicast trees on a transit-stub network",
	algos: []string{"scribe", "esm"},
	metrics: []string{"received_fraction", "depth_mean", "depth_max", "rdp_mean", "rdp_p90", "rdp_root_mean", "stress_mean", "stress_max", "unicast_stress_mean", "unicast_stress_max",
		"stream_rate_mean", "stream_rate_min", "full_rate_fraction"},
	skip: func(n int) string {
		if n > sim.MaxTransitStubHosts {
			return fmt.Sprintf("the transit-stub network has a link per pair of nodes: up to %d nodes", sim.MaxTransitStubHosts)
		}
		return ""
	},
	notes: map[string]string{
		"rdp_mean":         "Castro et al. report a mean delay penalty of about 1.7 for Scribe on Pastry with proximity-aware tables; these tables ignore proximity (the case below has it). Chu et al. report most Narada pairs below 4",
		"stress_max":       "the copies of one packet on the busiest physical link; naive unicast's is the unicast_stress_max beside it",
		"stream_rate_mean": "ESM: the stream's rate (Mbit/s; the source sends 1) each member receives, the hosts' uploads of 0.5–10 Mbit/s shared by their children; parents chosen for bandwidth, then delay",
	},
	run: func(f Family, a proc.Algorithm, n int, seed uint64) (*Report, error) {
		o := f.Options(a)
		o.Nodes, o.Seed = n, &seed
		r, _, err := Sim(o)
		return r, err
	},
}

// overlayFailUpTo is the largest overlay the comparison fails nodes in;
// overlayFailCheckedUpTo the largest it checks (the keep-alives make the
// trace some 10³ events per node).
const (
	overlayFailUpTo        = 10_000
	overlayFailCheckedUpTo = 1_000
)

func meanHops(xs []int) float64 {
	var sum float64
	for _, x := range xs {
		sum += float64(x)
	}
	return sum / float64(len(xs))
}
