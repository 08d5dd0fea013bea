package lab

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/cohort-go/cohort/overlay"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
)

// The overlay family's multicast trees, Scribe and End System Multicast,
// run on a transit-stub physical network (sim.TransitStub, drawn
// with the run's seed): every pair of nodes has the latency of the
// shortest path between them, so that the trees' cost can be measured
// against naive unicast from the source on the same network.

// treeKeeper is a workload that keeps the processes of its run, to
// measure their trees at the end.
type treeKeeper interface {
	keep(id proc.ID, p proc.Process)
}

// treeLoad is what the Scribe and ESM workloads share: the physical
// network, the kept processes, the deliveries counted.
type treeLoad struct {
	// Casts is how many multicasts are sent (per group for Scribe); 0
	// means 20.
	Casts int

	n          int
	topo       *sim.TransitStub
	maxLatency time.Duration
	processes  []proc.Process
	expected   int
	received   int
	over       bool
}

func (w *treeLoad) casts() int { return cmp.Or(w.Casts, 20) }

// keep records process id, the latest built for that address (a run
// whose faults come from elsewhere has not sized the table).
func (w *treeLoad) keep(id proc.ID, p proc.Process) {
	if id < 0 || int(id) >= sim.MaxTransitStubHosts {
		return
	}
	for int(id) >= len(w.processes) {
		w.processes = append(w.processes, nil)
	}
	w.processes[id] = p
}

// network draws the run's transit-stub network (none beyond
// sim.MaxTransitStubHosts nodes).
func (w *treeLoad) network(n int, seed uint64) {
	if w.topo == nil && n <= sim.MaxTransitStubHosts {
		w.topo = sim.NewTransitStub(n, seed)
		w.maxLatency = w.topo.MaxLatency()
	}
}

// Pairwise is the transit-stub network's latency between every two
// nodes.
func (w *treeLoad) Pairwise(n int, seed uint64) sim.PairLatency {
	w.network(n, seed)
	if w.topo == nil {
		return nil
	}
	return w.topo
}

// hopTimeout is how long Scribe's hops wait for their acknowledgements:
// two of the network's longest latencies.
func (w *treeLoad) hopTimeout() time.Duration {
	return max(overlay.Repairing.HopTimeout, 2*w.maxLatency+10*time.Millisecond)
}

func (w *treeLoad) prepare(n int) { w.n, w.processes = n, make([]proc.Process, n) }

// Done: every expected delivery made, or the end reached.
func (w *treeLoad) Done(func(proc.ID) bool) bool {
	return w.over || (w.expected > 0 && w.received >= w.expected)
}

// ScribeLoad is Scribe's workload: the Pastry overlay built by joins 10
// ms apart, then Groups groups created, each joined by a quarter of the
// nodes (at least one) within 200 ms; two seconds later each group's
// first member sends Casts multicasts, 20 ms apart, the groups' in turn.
type ScribeLoad struct {
	treeLoad
	// Groups is the number of groups; 0 means 4.
	Groups int
	// Repair runs the nodes with Pastry's failure detection and repair
	// (overlay.Repairing; the CLI sets it when faults are given);
	// otherwise with none (overlay.FailureFree: a run without failures
	// needs no keep-alives).
	Repair bool
	// Zipf gives the groups Castro et al.'s sizes (2002 §4: 1,500 groups
	// on 100,000 nodes): group r, from 1, has ⌊N·r^−1.25 + 0.5⌋ members
	// (at least one), instead of a quarter of the nodes each.
	Zipf bool
	// Proximity runs the nodes with proximity-aware tables
	// (overlay.Config.Proximity); the joins are then further apart, room
	// for each joiner's search for a nearby node.
	Proximity bool

	groups  []overlay.GUID
	sources []proc.ID
	joins   bool // the nodes join (Faults): else all are present from the start
}

// NewScribeLoad is Scribe's default workload.
func NewScribeLoad() *ScribeLoad { return &ScribeLoad{} }

func (w *ScribeLoad) groupCount() int { return cmp.Or(w.Groups, 4) }

// gap is the time between joins: Pastry's joins one at a time, and
// one takes a few of the network's latencies.
func (w *ScribeLoad) gap() time.Duration {
	if w.Proximity {
		return 10*time.Millisecond + 24*w.maxLatency
	}
	return 10*time.Millisecond + 6*w.maxLatency
}

// Faults are the Pastry joins.
func (w *ScribeLoad) Faults(n int, seed uint64) []sim.Fault {
	w.prepare(n)
	w.joins = true
	w.network(n, seed)
	fs := make([]sim.Fault, n)
	for i := range fs {
		fs[i] = sim.Fault{Kind: sim.Join, Node: proc.ID(i), At: time.Duration(i) * w.gap()}
	}
	return fs
}

// Init schedules the groups, their members and the multicasts.
func (w *ScribeLoad) Init(c sim.Control) {
	w.n = c.N()
	rng := c.Rand()
	settled := time.Duration(w.n)*w.gap() + time.Second
	if !w.joins {
		settled = 0 // every node present from the start
	}
	total := 0
	for r := range w.groupCount() {
		members := max(1, w.n/4)
		if w.Zipf {
			members = min(w.n, max(1, int(float64(w.n)*math.Pow(float64(r+1), -1.25)+0.5)))
		}
		total += members
		g := overlay.GUID{Hi: rng.Uint64(), Lo: rng.Uint64()}
		w.groups = append(w.groups, g)
		c.Schedule(settled-c.Now(), proc.ID(rng.IntN(w.n)), overlay.CreateGroup{Group: g})
		var perm []int
		if w.Zipf {
			perm = sample(rng, w.n, members) // most groups are small
		} else {
			perm = rng.Perm(w.n)[:members]
		}
		w.sources = append(w.sources, proc.ID(perm[0]))
		for _, i := range perm {
			c.Schedule(settled+100*time.Millisecond+time.Duration(rng.IntN(200))*time.Millisecond-c.Now(), proc.ID(i), overlay.JoinGroup{Group: g})
		}
	}
	start := settled + 2*time.Second
	for i := range w.casts() {
		for k, g := range w.groups {
			at := start + time.Duration(i*len(w.groups)+k)*20*time.Millisecond
			c.Schedule(at-c.Now(), w.sources[k], overlay.Multicast{Group: g, ID: uint64(i*len(w.groups) + k + 1)})
		}
	}
	w.expected = w.casts() * total
	end := start + time.Duration(w.casts()*len(w.groups))*20*time.Millisecond + 5*time.Second
	c.After(end-c.Now(), func() { w.over = true })
}

// sample is k distinct numbers below n, drawn with rng (a partial
// Fisher–Yates shuffle over a map: no table of n for a small group).
func sample(rng *rand.Rand, n, k int) []int {
	swapped := map[int]int{}
	at := func(i int) int {
		if v, ok := swapped[i]; ok {
			return v
		}
		return i
	}
	out := make([]int, k)
	for i := range k {
		j := i + rng.IntN(n-i)
		out[i] = at(j)
		swapped[j] = at(i)
	}
	return out
}

// Observe counts the deliveries.
func (w *ScribeLoad) Observe(_ sim.Control, _ proc.ID, o proc.Output) {
	if _, ok := o.(overlay.Received); ok {
		w.received++
	}
}

// ESMLoad is End System Multicast's workload: the source is node 0; the
// other nodes join the session 20 ms apart; once the last is on the tree
// (overlay.ESMJoinBound) and Settle improvement periods later, the source
// sends Casts packets, 20 ms apart. On the transit-stub
// network every host has its upload capacity (sim.TransitStub.Upload;
// the source's at least enough for Degree children at the stream's
// rate) and the stream is ESMStream.
type ESMLoad struct {
	treeLoad
	// LatencyOnly makes the nodes choose their parents by delay alone,
	// not by bandwidth first (overlay.ESMConfig.LatencyOnly).
	LatencyOnly bool
	// Improve is the period of the members' search for a better parent
	// (overlay.ESMConfig.Improve); 0 means overlay.ESMImprove, negative
	// none.
	Improve time.Duration
	// Settle is how many improvement periods (overlay.ESMImprove if
	// there is no improvement) the tree runs after the joins, before the
	// stream (and the tree measured at its end). With
	// Settle > 0 the members begin to improve once the joins are done,
	// and the tree is measured then too (the metrics named _before).
	Settle int

	before map[string]float64
}

// joined is when the last of n members is on the tree.
func joined(n int) time.Duration {
	return time.Duration(n)*20*time.Millisecond + overlay.ESMJoinBound
}

// improve is the members' improvement period; 0: none.
func (w *ESMLoad) improve() time.Duration {
	if w.Improve == 0 {
		return overlay.ESMImprove
	}
	return max(w.Improve, 0)
}

// ESMStream is the ESM workload's stream rate, Mbit/s.
const ESMStream = 1.0

// config is node id's ESM configuration in a run of n nodes.
func (w *ESMLoad) config(id proc.ID, n int) overlay.ESMConfig {
	cfg := overlay.DefaultESM
	cfg.LatencyOnly, cfg.Stream, cfg.Improve = w.LatencyOnly, ESMStream, w.improve()
	if w.Settle > 0 {
		cfg.ImproveFrom = joined(n)
	}
	if w.topo != nil && int(id) < w.topo.Hosts() {
		cfg.Upload = w.topo.Upload(id)
		if id == overlay.ESMSource {
			cfg.Upload = max(cfg.Upload, float64(cfg.Degree)*cfg.Stream)
		}
	}
	return cfg
}

// NewESMLoad is ESM's default workload.
func NewESMLoad() *ESMLoad { return &ESMLoad{} }

// Faults: none; the processes are kept.
func (w *ESMLoad) Faults(n int, _ uint64) []sim.Fault {
	w.prepare(n)
	return nil
}

// Init schedules the joins and the stream.
func (w *ESMLoad) Init(c sim.Control) {
	w.n = c.N()
	for i := 1; i < w.n; i++ {
		c.Schedule(time.Duration(i)*20*time.Millisecond-c.Now(), proc.ID(i), overlay.ESMJoin{})
	}
	start := joined(w.n) + time.Duration(w.Settle)*cmp.Or(w.improve(), overlay.ESMImprove)
	if w.Settle > 0 {
		c.After(joined(w.n)-c.Now(), func() { w.before, _ = treeMetrics(Finished{Algo: "esm", Nodes: w.n, Workload: w}) })
	}
	for i := range w.casts() {
		c.Schedule(start+time.Duration(i)*20*time.Millisecond-c.Now(), overlay.ESMSource, overlay.ESMSend{ID: uint64(i + 1)})
	}
	w.expected = w.casts() * (w.n - 1)
	c.After(start+time.Duration(w.casts())*20*time.Millisecond+5*time.Second-c.Now(), func() { w.over = true })
}

// Observe counts the deliveries.
func (w *ESMLoad) Observe(_ sim.Control, _ proc.ID, o proc.Output) {
	if _, ok := o.(overlay.ESMReceived); ok {
		w.received++
	}
}

// treeMetrics measures a multicast tree run at its end:
//
//   - received_fraction: the deliveries made, over the members times
//     the multicasts;
//   - depth_mean, depth_max: the members' depths in the tree (edges below
//     the root; Scribe's ⌈log₁₆ N⌉ at most, ESM's about log_degree N);
//   - rdp_mean, rdp_p90: the relative delay penalty of each member, the
//     delay along the overlay from the source over the direct latency
//     (Scribe's from the source through the root, as its multicasts go);
//     rdp_root_mean, Scribe's, the tree's alone: the delay down the tree
//     from the root over the direct latency from the root;
//   - stream_rate_mean, stream_rate_min, full_rate_fraction (ESM): the
//     stream's rate each member receives down the tree (Mbit/s; the
//     source sends ESMStream), from the hosts' uploads shared by their
//     children (overlay.ESMRates), and the members that get all of it;
//   - stress_max, stress_mean: the copies of a packet on a physical link,
//     the most and the mean over the links that carry it, beside
//     unicast_stress_max and unicast_stress_mean, the same for naive
//     unicast from the source to every member on the same network (RDP
//     1).
//
// physical is an overlay's hops as the physical network prices them.
func physical(hops []overlay.Hop) []sim.Hop {
	out := make([]sim.Hop, len(hops))
	for i, h := range hops {
		out[i] = sim.Hop{From: h.From, To: h.To}
	}
	return out
}

func treeMetrics(f Finished) (map[string]float64, map[string]*float64) {
	m := map[string]float64{}
	th := theoryOf("overlay", f.Algo, f.Nodes, "depth_max")
	var tl *treeLoad
	type tree struct {
		src     proc.ID
		hops    []sim.Hop
		members []proc.ID
		depths  []int
	}
	var trees, fromRoot []tree
	switch w := f.Workload.(type) {
	case *ScribeLoad:
		tl = &w.treeLoad
		for k, g := range w.groups {
			if tl.processes != nil {
				h, ms, ds := overlay.ScribeTree(tl.processes, w.sources[k], g)
				trees = append(trees, tree{w.sources[k], physical(h), ms, ds})
				if root := overlay.ScribeRoot(tl.processes, w.sources[k], g); root != proc.None {
					h, ms, ds := overlay.ScribeTree(tl.processes, root, g)
					fromRoot = append(fromRoot, tree{root, physical(h), ms, ds})
				}
			}
		}
	case *ESMLoad:
		tl = &w.treeLoad
		if tl.processes != nil {
			h, ms, ds := overlay.ESMTree(tl.processes)
			trees = append(trees, tree{overlay.ESMSource, physical(h), ms, ds})
			fromRoot = trees // the source is the root
			rates := overlay.ESMRates(tl.processes)
			if len(rates) > 0 {
				var sum, low float64 = 0, ESMStream
				full := 0
				for _, r := range rates {
					sum, low = sum+r, min(low, r)
					if r >= ESMStream {
						full++
					}
				}
				m["stream_rate_mean"], m["stream_rate_min"] = sum/float64(len(rates)), low
				m["full_rate_fraction"] = float64(full) / float64(len(rates))
			}
		}
	default:
		return m, th
	}
	if tl.expected > 0 {
		m["received_fraction"] = float64(tl.received) / float64(tl.expected)
	}
	var depths []int
	var rdp []float64
	var stress, ustress []float64
	smax, umax := 0, 0
	for _, t := range trees {
		depths = append(depths, t.depths...)
		if tl.topo == nil {
			continue
		}
		c := tl.topo.Cost(t.src, t.hops, t.members)
		u := tl.topo.Cost(t.src, sim.Unicast(t.src, t.members), t.members)
		rdp = append(rdp, c.RDP...)
		if len(t.hops) > 0 {
			stress, ustress = append(stress, c.StressMean), append(ustress, u.StressMean)
			smax, umax = max(smax, c.StressMax), max(umax, u.StressMax)
		}
	}
	if len(depths) > 0 {
		m["depth_mean"] = meanHops(depths)
		m["depth_max"] = float64(slices.Max(depths))
	}
	if len(rdp) > 0 {
		slices.Sort(rdp)
		m["rdp_mean"] = mean(rdp)
		m["rdp_p90"] = rdp[int(math.Ceil(0.9*float64(len(rdp))))-1]
	}
	var rootRDP []float64
	for _, t := range fromRoot {
		if tl.topo != nil {
			rootRDP = append(rootRDP, tl.topo.Cost(t.src, t.hops, t.members).RDP...)
		}
	}
	if len(rootRDP) > 0 {
		m["rdp_root_mean"] = mean(rootRDP)
	}
	if len(stress) > 0 {
		m["stress_mean"], m["stress_max"] = mean(stress), float64(smax)
		m["unicast_stress_mean"], m["unicast_stress_max"] = mean(ustress), float64(umax)
	}
	if w, ok := f.Workload.(*ESMLoad); ok {
		for k, v := range w.before {
			if k != "received_fraction" {
				m[k+"_before"] = v
			}
		}
	}
	return m, th
}
