package lab

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/deadlock"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

// DeadlockORLoad is the workload of the OR model (deadlock.Await): every
// process waits Waits times, each time for an answer from any one of Want
// other processes drawn at random; between its waits it is active for an
// exponential time of mean Active·(1−c)/c, c the Contention, answering
// at once the asks it gets (at c = 1 it waits again at once; the higher c,
// the more often everyone a process asks waits too, and knots form). A
// wait given up by the detector is tried again, for the same set, after a
// random backoff of up to 2·Active; a wait counts as done only when
// answered. The run ends when every process has had its waits answered.
type DeadlockORLoad struct {
	// Waits per process; 0 means 10.
	Waits int
	// Want is the size of each dependent set; 0 means 2. At most N−1.
	Want int
	// Contention, in (0, 1]; 0 means 0.5.
	Contention float64
	// Active sets the time scale of the active periods; 0 means 1 ms.
	Active time.Duration

	left []int       // per process, waits still to be answered
	from [][]proc.ID // per process, the current wait's dependent set
	done int         // processes whose waits have all been answered
}

func (w *DeadlockORLoad) active() time.Duration { return cmp.Or(w.Active, time.Millisecond) }

func (w *DeadlockORLoad) think(c sim.Control) time.Duration {
	ct := cmp.Or(w.Contention, DefaultDeadlockContention)
	return time.Duration(c.Rand().ExpFloat64() * float64(w.active()) * (1 - ct) / ct)
}

// Init schedules every process's first wait.
func (w *DeadlockORLoad) Init(c sim.Control) {
	n := c.N()
	w.left, w.from, w.done = make([]int, n), make([][]proc.ID, n), 0
	for p := range n {
		w.left[p] = cmp.Or(w.Waits, 10)
		w.next(c, proc.ID(p))
	}
}

// next schedules a fresh wait at p after an active period.
func (w *DeadlockORLoad) next(c sim.Control, p proc.ID) {
	n := c.N()
	want := min(cmp.Or(w.Want, 2), n-1)
	var from []proc.ID
	for _, q := range c.Rand().Perm(n) {
		if len(from) == want {
			break
		}
		if q != int(p) {
			from = append(from, proc.ID(q))
		}
	}
	slices.Sort(from)
	w.from[p] = from
	c.Schedule(w.think(c), p, deadlock.Await{From: from})
}

// Observe closes the loop: an answered wait is followed by the next after
// an active period; one given up is tried again after a backoff.
func (w *DeadlockORLoad) Observe(c sim.Control, p proc.ID, o proc.Output) {
	switch o.(type) {
	case deadlock.Resumed:
		if w.left[p]--; w.left[p] > 0 {
			w.next(c, p)
		} else {
			w.done++
		}
	case deadlock.GaveUp:
		c.Schedule(time.Duration(c.Rand().Int64N(2*int64(w.active())+1)), p, deadlock.Await{From: w.from[p]})
	}
}

// Done: every process has had its waits answered.
func (w *DeadlockORLoad) Done(func(proc.ID) bool) bool {
	return w.left != nil && w.done == len(w.left)
}

// deadlockORMetrics measures a run of the OR model from its trace:
//
//   - deadlocks_formed: events that put processes in a knot of the OR
//     wait-for graph; deadlocks_detected: those followed by a real
//     declaration in the knot while it stood;
//   - phantom_detections, aborts (waits given up), answered_waits;
//   - query_messages, reply_messages: the detector's messages;
//     declarations, and messages_per_detection: those per declaration;
//   - edges_reached: the sum, over the real declarations
//     (real_declarations), of e, the wait-for edges reachable from the
//     declarer then (its computation costs 2e messages);
//     edges_per_detection: their mean;
//   - detection_latency_ms (median), detection_bound_ms.
func deadlockORMetrics(t *trace.Trace) map[string]float64 {
	m := map[string]float64{}
	var queries, replies, aborts, answered float64
	for i := range t.Events {
		e := &t.Events[i]
		switch {
		case e.Kind == trace.Send && e.Type == "query":
			queries++
		case e.Kind == trace.Send && e.Type == "reply":
			replies++
		case e.Kind == trace.Output && e.Type == "gave-up":
			aborts++
		case e.Kind == trace.Output && e.Type == "resumed":
			answered++
		}
	}
	m["query_messages"], m["reply_messages"], m["aborts"], m["answered_waits"] = queries, replies, aborts, answered
	r, err := check.AnalyzeORDeadlocks(t)
	if err != nil {
		return m
	}
	m["deadlocks_formed"] = float64(r.Formed)
	m["deadlocks_detected"] = float64(r.Detected)
	m["phantom_detections"] = float64(len(r.Phantoms))
	m["declarations"] = float64(r.Declarations)
	m["real_declarations"] = float64(len(r.Reached))
	for _, es := range r.Reached {
		m["edges_reached"] += float64(len(es))
	}
	perDetection(m)
	if len(r.Latencies) > 0 {
		m["detection_latency_ms"] = median(r.Latencies) / 1e6
	}
	if r.Bound >= 0 {
		m["detection_bound_ms"] = float64(r.Bound) / 1e6
	}
	return m
}

// perDetection sets the per-declaration figures from the counts (again,
// after the counts of several runs are summed).
func perDetection(m map[string]float64) {
	if d := m["declarations"]; d > 0 {
		m["messages_per_detection"] = (m["query_messages"] + m["reply_messages"]) / d
	}
	if d := m["real_declarations"]; d > 0 {
		m["edges_per_detection"] = m["edges_reached"] / d
	}
}

// deadlockGraphs are, for a diagram of a run of the OR model, the wait-for
// graphs its declarations rest on: all the declarer reached, each drawn at
// its declaration. A run of the AND model has none (its declarations name
// their cycles).
func deadlockGraphs(t *trace.Trace) []trace.WaitForGraph {
	if !slices.ContainsFunc(t.Events, func(e trace.Event) bool { return e.Kind == trace.Output && e.Type == "waits" }) {
		return nil
	}
	r, err := check.AnalyzeORDeadlocks(t)
	if err != nil {
		return nil
	}
	var gs []trace.WaitForGraph
	for _, es := range r.Reached {
		if len(es) > 0 {
			gs = append(gs, trace.WaitForGraph{By: fmt.Sprintf("declared by p%d", es[0].From), Edges: es})
		}
	}
	return gs
}
