package lab

import (
	"cmp"
	"math"
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
type OverlayLoad struct {
	// Lookups is how many lookups are asked; 0 means 1000.
	Lookups int
	// Gap is the time between joins; 0 means 10 ms for Pastry (a join's
	// route, its state and its announcements take about ⌈log₁₆ N⌉ + 2
	// latencies of 1 ms) and (N/2l + 10) ms for the circular baseline,
	// whose JOIN crawls along the ring. Joins must not overlap: the
	// algorithms do not handle concurrent joins.
	Gap time.Duration

	algo      string
	n         int
	hops      []int
	asked     int
	faulted   bool
	processes []proc.Process
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
	}
	return 10 * time.Millisecond
}

// settled is when the last join is over: the lookups begin then.
func (w *OverlayLoad) settled(n int) time.Duration {
	return time.Duration(n)*w.gap(n) + 50*time.Millisecond
}

// Faults are the joins: node i at i·Gap (node 0 first, alone).
func (w *OverlayLoad) Faults(n int, _ uint64) []sim.Fault {
	w.faulted = true
	// The processes are kept in a table made now, before the run: the
	// memory estimate's sample processes (built at other sizes) must not
	// make it grow with n; the ones it leaves here are replaced when
	// their nodes join, and every node joins.
	w.processes = make([]proc.Process, n)
	fs := make([]sim.Fault, n)
	for i := range fs {
		fs[i] = sim.Fault{Kind: sim.Join, Node: proc.ID(i), At: time.Duration(i) * w.gap(n)}
	}
	return fs
}

// Init schedules the lookups after the joins (at once if the scenario
// brings its own membership).
func (w *OverlayLoad) Init(c sim.Control) {
	w.n = c.N()
	at := time.Duration(0)
	if w.faulted {
		at = w.settled(w.n)
	}
	rng := c.Rand()
	for i := range w.lookups() {
		key := overlay.GUID{Hi: rng.Uint64(), Lo: rng.Uint64()}
		c.Schedule(at+time.Duration(i)*time.Millisecond/4-c.Now(), proc.ID(rng.IntN(w.n)), overlay.Lookup{Key: key})
	}
	w.asked = w.lookups()
}

// Observe records the deliveries.
func (w *OverlayLoad) Observe(_ sim.Control, _ proc.ID, o proc.Output) {
	if d, ok := o.(overlay.Delivered); ok {
		w.hops = append(w.hops, d.Hops)
	}
}

// Done: every lookup delivered.
func (w *OverlayLoad) Done(func(proc.ID) bool) bool { return w.asked > 0 && len(w.hops) >= w.asked }

// keepOverlay makes algorithm a's processes known to workload w, which
// measures their state at the end of the run: the joiners of the
// workload's own joins (a scenario's membership reports no state).
func keepOverlay(a proc.Algorithm, w sim.Workload) proc.Algorithm {
	ow, ok := w.(*OverlayLoad)
	if !ok {
		return a
	}
	newProc := a.New
	a.New = func(id proc.ID, n int) proc.Process {
		p := newProc(id, n)
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
//     theory: log₁₆ N; the circular baseline's N/4l);
//   - delivered_fraction: the lookups delivered, over those asked;
//   - state_entries_per_node: the distinct nodes in a node's leaf set and
//     routing table, the mean over the nodes (Pastry's theory:
//     (2^b − 1)·⌈log₁₆ N⌉ + 2l, full rows).
func overlayMetrics(f Finished) (map[string]float64, map[string]*float64) {
	m := map[string]float64{}
	th := theoryOf("overlay", f.Algo, f.Nodes, "hops_mean", "state_entries_per_node")
	w, _ := f.Workload.(*OverlayLoad)
	if w == nil || w.asked == 0 {
		return m, th
	}
	m["delivered_fraction"] = float64(len(w.hops)) / float64(w.asked)
	if len(w.hops) > 0 {
		h := slices.Clone(w.hops)
		slices.Sort(h)
		var sum float64
		for _, x := range h {
			sum += float64(x)
		}
		m["hops_mean"] = sum / float64(len(h))
		m["hops_p99"] = float64(h[int(math.Ceil(0.99*float64(len(h))))-1])
	}
	var entries, nodes float64
	for _, p := range w.processes {
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

// overlayCases: the default workload, Pastry beside the circular
// baseline at each size.
var overlayCases = []compareCase{{
	name:    "joins then lookups",
	metrics: []string{"hops_mean", "hops_p99", "delivered_fraction", "state_entries_per_node"},
	run: func(f Family, a proc.Algorithm, n int, seed uint64) (*Report, error) {
		o := f.Options(a)
		o.Nodes, o.Seed, o.NoCheck = n, &seed, n > overlayCheckedUpTo
		o.NoHash = o.NoCheck
		r, _, err := Sim(o)
		return r, err
	},
}}
