package lab

import (
	"cmp"
	"encoding/json"
	"strings"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/snapshot"
	"github.com/cohort-go/cohort/trace"
)

// SnapshotTakes begins snapshots during a run: Snapshots of them, Every
// apart from Every on, each begun at the same instant by Initiators
// distinct random processes (so Initiators > 1 gives concurrent
// snapshots). It runs beside any workload: wrapped around another
// family's algorithm (snapshot.WithChandyLamport), it photographs that
// algorithm's run.
type SnapshotTakes struct {
	// Snapshots is how many rounds of snapshots are begun; 0 means 2.
	Snapshots int
	// Initiators is how many processes begin a snapshot in each round; 0
	// means 1. At most the number of processes.
	Initiators int
	// Every is the time between rounds, and before the first; 0 means 5 ms.
	Every time.Duration
}

// Init schedules the Take inputs.
func (w SnapshotTakes) Init(c sim.Control) {
	n := c.N()
	rng := c.Rand()
	for s := range cmp.Or(w.Snapshots, 2) {
		at := time.Duration(s+1) * cmp.Or(w.Every, 5*time.Millisecond)
		for _, p := range rng.Perm(n)[:min(cmp.Or(w.Initiators, 1), n)] {
			c.Schedule(at-c.Now(), proc.ID(p), snapshot.Take{})
		}
	}
}

// Observe does nothing: the snapshots do not wait for anything.
func (SnapshotTakes) Observe(sim.Control, proc.ID, proc.Output) {}

// SnapshotLoad is the snapshot family's workload, the bank: every account
// makes Payments payments (snapshot.Pay), with exponential think times of
// mean 1 ms, while SnapshotTakes photographs it.
type SnapshotLoad struct {
	// Payments per account; 0 means 20.
	Payments int
	SnapshotTakes
}

// Init schedules the payments and the snapshots.
func (w *SnapshotLoad) Init(c sim.Control) {
	think := sim.Exponential{MeanD: time.Millisecond}
	rng := c.Rand()
	for id := range c.N() {
		var at time.Duration
		for range cmp.Or(w.Payments, 20) {
			at += think.Sample(rng)
			c.Schedule(at-c.Now(), proc.ID(id), snapshot.Pay{})
		}
	}
	w.SnapshotTakes.Init(c)
}

// snapshotMetrics measures a snapshot run from its trace:
//
//   - snapshots: the snapshots begun; complete_fraction: those every
//     process finished recording, over those begun;
//   - markers_per_channel: markers sent, over snapshots × directed
//     channels (theory: exactly 1);
//   - diameter: of the graph of channels the processes recorded;
//   - complete_ms: the mean time from a snapshot's first cut to its last
//     recorded output; complete_delays: the same in mean message delays
//     (theory: at most diameter + 1).
func snapshotMetrics(f Finished) (map[string]float64, map[string]*float64) {
	m := map[string]float64{}
	th := theoryOf("snapshot", f.Algo, f.Nodes, "markers_per_channel", "complete_delays")
	t := f.Trace
	if t == nil {
		return m, th
	}
	type span struct {
		first, last int64
		recorded    int
	}
	snaps := map[string]*span{}
	var markers float64
	var channels [][]int32 // in-neighbours, from a recorded output
	for i := range t.Events {
		e := &t.Events[i]
		switch {
		case e.Kind == trace.Send && e.Type == "marker":
			markers++
		case e.Kind == trace.Output && e.Type == "cut":
			id := strings.TrimPrefix(e.Label, "cut ")
			if snaps[id] == nil {
				snaps[id] = &span{first: e.Time}
			}
		case e.Kind == trace.Output && e.Type == "recorded":
			id := strings.TrimPrefix(e.Label, "recorded ")
			if s := snaps[id]; s != nil {
				s.last, s.recorded = e.Time, s.recorded+1
			}
			if channels == nil {
				channels = make([][]int32, f.Nodes)
			}
			if channels[e.Node] == nil {
				var raw struct {
					Channels []struct {
						From int32 `json:"from"`
					} `json:"channels"`
				}
				if json.Unmarshal(e.Data, &raw) == nil {
					channels[e.Node] = []int32{}
					for _, c := range raw.Channels {
						channels[e.Node] = append(channels[e.Node], c.From)
					}
				}
			}
		}
	}
	if len(snaps) == 0 {
		return m, th
	}
	directed := 0
	for _, c := range channels {
		directed += len(c)
	}
	m["snapshots"] = float64(len(snaps))
	var complete, sum float64
	for _, s := range snaps {
		if s.recorded == f.Nodes {
			complete++
			sum += float64(s.last - s.first)
		}
	}
	m["complete_fraction"] = complete / float64(len(snaps))
	if directed > 0 {
		m["markers_per_channel"] = markers / float64(len(snaps)*directed)
		d := diameter(channels)
		m["diameter"] = float64(d)
		if d >= 0 {
			bound := float64(d + 1)
			th["complete_delays"] = &bound
		}
	}
	if complete > 0 {
		m["complete_ms"] = sum / complete / 1e6
		if f.MeanLatency > 0 {
			m["complete_delays"] = sum / complete / float64(f.MeanLatency)
		}
	}
	return m, th
}

// diameter of the graph whose in-neighbours are in; -1 if it is not
// strongly connected or a process recorded no channels.
func diameter(in [][]int32) int {
	n := len(in)
	best := 0
	dist := make([]int, n)
	for s := range n {
		for i := range dist {
			dist[i] = -1
		}
		dist[s] = 0
		q := []int{s}
		for len(q) > 0 {
			u := q[0]
			q = q[1:]
			for _, v := range in[u] { // v → u: distances to s, backwards
				if v >= 0 && int(v) < n && dist[v] < 0 {
					dist[v] = dist[u] + 1
					best = max(best, dist[v])
					q = append(q, int(v))
				}
			}
		}
		for _, d := range dist {
			if d < 0 {
				return -1
			}
		}
	}
	return best
}

// snapshotCases: one snapshot at a time on the complete graph, a grid, a
// ring and a line, with a constant delay of 1 ms and no reordering, so
// that the time to complete, in delays, is exact: the initiator's
// eccentricity + 1, at most diameter + 1.
var snapshotCases = func() []compareCase {
	var cases []compareCase
	for _, topo := range []string{"full", "grid", "ring", "line"} {
		cases = append(cases, compareCase{
			name:    topo,
			metrics: []string{"markers_per_channel", "diameter", "complete_delays"},
			run: func(f Family, a proc.Algorithm, n int, seed uint64) (*Report, error) {
				o := f.Options(a)
				fifo, reorder := true, 0.0
				o.Nodes, o.Seed, o.Topology = n, &seed, topo
				o.Network = NetworkFlags{Latency: sim.Constant(compareLatency), FIFO: &fifo, Reorder: &reorder}
				if w, ok := o.Workload.(*SnapshotLoad); ok {
					w.Snapshots, w.Initiators = 3, 1
				}
				r, _, err := Sim(o)
				return r, err
			},
			notes: map[string]string{"complete_delays": "the mean of 3 snapshots, each the initiator's eccentricity + 1 delays (theory: the bound, diameter + 1)"},
		})
	}
	return cases
}()
