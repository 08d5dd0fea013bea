package check

import (
	"slices"

	"github.com/cohort-go/cohort/trace"
)

// DeadlockWatch keeps a wait-for graph event by event — the AND model's
// (deadlock-*) or the OR model's (or-deadlock-*) — for a caller that
// judges a growing run incrementally (the explorer) and wants to know
// when the deadlock checkers can have anything new to say:
//
//   - the detection checker reports a deadlock (a cycle, in the OR model
//     a knot) that stood longer than the bound undeclared; it is late
//     while it stands, and the bound only grows as the trace does. So of
//     a trace in which no deadlock stood before or after any event since
//     the last judgement, it says what it said then; of one that ends in
//     a deadlock it says something else every time (unknown, or late).
//   - the phantom checker judges each declaration at its own instant and
//     in its causal past, both fixed once it is in the trace: only a new
//     "deadlock" output can change its verdict.
//
// Where the watch cannot tell — an output the checkers would reject, or
// no detector's promise yet (their verdict is then unknown) — Sure is
// false.
type DeadlockWatch struct {
	or       bool
	and      wfg
	orG      orGraph
	standing bool // a deadlock stands now
	detector bool // a "detector" output was seen
	broken   bool // an output the checkers reject
	ao       dlOutput
	oo       orOutput
}

// NewDeadlockWatch returns the watch of a run of n processes, of the OR
// model's graph if or, else of the AND model's.
func NewDeadlockWatch(n int, or bool) *DeadlockWatch {
	w := &DeadlockWatch{or: or}
	if or {
		w.orG = *newORGraph(n)
	} else {
		w.and = *newWFG(n)
	}
	return w
}

// CopyTo makes *c a copy of w, reusing c's storage.
func (w *DeadlockWatch) CopyTo(c *DeadlockWatch) {
	if c.or != w.or || len(c.orG.p) != len(w.orG.p) || len(c.and.active) != len(w.and.active) {
		*c = *NewDeadlockWatch(max(len(w.orG.p), len(w.and.active)), w.or)
	}
	for i := range w.orG.p {
		s, d := &w.orG.p[i], &c.orG.p[i]
		d.wait, d.from = s.wait, s.from // from is never written in place
		copy(d.answered, s.answered)
	}
	copy(c.and.active, w.and.active)
	copy(c.and.holder, w.and.holder)
	for i, q := range w.and.queue {
		c.and.queue[i] = append(c.and.queue[i][:0], q...)
	}
	c.standing, c.detector, c.broken = w.standing, w.detector, w.broken
}

// Standing reports whether a deadlock stands now: a process on a cycle
// of the AND model's graph, in a knot of the OR model's.
func (w *DeadlockWatch) Standing() bool { return w.standing }

// Sure reports whether the watch follows the run: every output of the
// model so far was one the checkers accept, and the detector's promise
// was seen.
func (w *DeadlockWatch) Sure() bool { return w.detector && !w.broken }

// Observe takes the trace's next event. It reports whether the event is
// a declaration ("deadlock" output); Standing says whether a deadlock
// stands after it.
func (w *DeadlockWatch) Observe(e *trace.Event) (declared bool) {
	if e.Kind != trace.Output || w.broken {
		return false
	}
	var ok, changed bool
	if w.or {
		ok, changed = w.observeOR(e)
	} else {
		ok, changed = w.observeAND(e)
	}
	if !ok {
		w.broken = true
		return false
	}
	switch e.Type {
	case "detector":
		w.detector = true
	case "deadlock":
		return true
	}
	if changed {
		if w.or {
			_, in := orKnots(w.orG.adjacency())
			w.standing = slices.Contains(in, true)
		} else {
			_, on := components(w.and.adjacency())
			w.standing = slices.Contains(on, true)
		}
	}
	return false
}

// observeOR reads an OR output as AnalyzeORDeadlocks does: ok if the
// checkers accept it (or it is none of theirs), changed if the graph
// changed.
func (w *DeadlockWatch) observeOR(e *trace.Event) (ok, changed bool) {
	if !slices.Contains(orKinds, e.Type) {
		return true, false
	}
	o := &w.oo
	*o = orOutput{}
	if o.parse(e, len(w.orG.p)) != nil {
		return false, false
	}
	return true, e.Type != "detector" && e.Type != "deadlock" && w.orG.apply(e.Node, e.Type, o)
}

// observeAND reads an AND output as AnalyzeDeadlocks does.
func (w *DeadlockWatch) observeAND(e *trace.Event) (ok, changed bool) {
	if !slices.Contains(dlKinds, e.Type) {
		return true, false
	}
	o := &w.ao
	*o = dlOutput{}
	if o.parse(e, len(w.and.active)) != nil {
		return false, false
	}
	return true, e.Type != "detector" && e.Type != "deadlock" && w.and.apply(e.Node, e.Type, o)
}
