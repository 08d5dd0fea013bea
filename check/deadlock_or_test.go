package check_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/check/checktest"
	"github.com/cohort-go/cohort/deadlock"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/trace"
)

// TestORDeadlockCheckers: four processes of the OR model. p0 waits for
// p1, and p1 for p0 — a knot, once both wait — or for p0 or p2, a cycle
// with a way out (p2 is active). Declared in time, late, never, on a
// cycle that is no knot, when an answer is already on its way, by a
// process outside the knot that waits on it, and a trace that ends before
// the bound.
func TestORDeadlockCheckers(t *testing.T) {
	w0, w1, w3 := deadlock.Txn{P: 0, Seq: 1}, deadlock.Txn{P: 1, Seq: 1}, deadlock.Txn{P: 3, Seq: 1}
	const wait = 10 * time.Millisecond // the bound: 10 events of checktest.Step, plus the messages' delays
	start := func(b *checktest.Builder) {
		for p := range int32(4) {
			b.Output(p, deadlock.Detector{Wait: wait})
		}
		b.Output(0, deadlock.Awaiting{Wait: w0, From: []proc.ID{1}})
	}
	knot := func(b *checktest.Builder) int { return b.Output(1, deadlock.Awaiting{Wait: w1, From: []proc.ID{0}}) }
	cycle := func(b *checktest.Builder) int { return b.Output(1, deadlock.Awaiting{Wait: w1, From: []proc.ID{0, 2}}) }
	idle := func(b *checktest.Builder, steps int) {
		for range steps {
			b.Local(2, trace.Timer)
		}
	}
	declare := func(b *checktest.Builder, p int32, w deadlock.Txn) int {
		d := b.Output(p, deadlock.Knot{Wait: w, Comp: 1})
		b.Output(p, deadlock.GaveUp{Wait: w, Reason: "deadlock"})
		return d
	}
	type want struct{ detected, phantom check.Status }
	ok := want{check.OK, check.OK}
	for _, c := range []struct {
		name  string
		build func(b *checktest.Builder) int // the event to be cited, or -1
		want  want
		edges []check.Edge // a violation's edges, with At = the cited event
	}{
		{"a knot declared at once", func(b *checktest.Builder) int {
			start(b)
			knot(b)
			declare(b, 1, w1)
			idle(b, 30)
			return -1
		}, ok, nil},
		{"a knot never declared", func(b *checktest.Builder) int {
			start(b)
			k := knot(b)
			idle(b, 30)
			return k
		}, want{check.Violated, check.OK}, []check.Edge{{From: 0, To: 1}, {From: 1, To: 0}}},
		{"a knot declared late", func(b *checktest.Builder) int {
			start(b)
			k := knot(b)
			idle(b, 15)
			declare(b, 1, w1)
			return k
		}, want{check.Violated, check.OK}, []check.Edge{{From: 0, To: 1}, {From: 1, To: 0}}},
		{"a knot, the trace ends before the bound", func(b *checktest.Builder) int {
			start(b)
			knot(b)
			idle(b, 3)
			return -1
		}, want{check.Unknown, check.OK}, nil},
		{"a cycle with a way out declared", func(b *checktest.Builder) int {
			start(b)
			cycle(b)
			idle(b, 30)
			return declare(b, 1, w1)
		}, want{check.OK, check.Violated}, []check.Edge{{From: 1, To: 0}, {From: 1, To: 2}, {From: 0, To: 1}}},
		{"a cycle with a way out, never declared", func(b *checktest.Builder) int {
			start(b)
			cycle(b)
			idle(b, 30)
			return -1
		}, ok, nil},
		{"declared with an answer on its way", func(b *checktest.Builder) int {
			// p1 answered p0's wait, then waits for p0: p0 will resume.
			start(b)
			b.Output(1, deadlock.Answered{Wait: w0})
			knot(b)
			idle(b, 30)
			return declare(b, 1, w1)
		}, want{check.OK, check.Violated}, []check.Edge{{From: 1, To: 0}}},
		{"declared by a process waiting on the knot", func(b *checktest.Builder) int {
			start(b)
			knot(b)
			b.Output(3, deadlock.Awaiting{Wait: w3, From: []proc.ID{0, 1}})
			declare(b, 3, w3)
			declare(b, 1, w1)
			idle(b, 30)
			return -1
		}, ok, nil},
	} {
		b := checktest.New(4)
		cite := c.build(b)
		rs, err := check.Run(&b.Trace, "or-deadlock-detected", "or-deadlock-no-phantom")
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range []check.Status{c.want.detected, c.want.phantom} {
			r := rs[i]
			if r.Status != w {
				t.Errorf("%s: %s, want %s\n%s", c.name, r, w, r.Counterexample(&b.Trace))
				continue
			}
			if w == check.Violated && (len(r.Events) == 0 || r.Events[0] != cite) {
				t.Errorf("%s: %s cites %v, want [%d]", c.name, r.Name, r.Events, cite)
			}
			if w == check.Violated {
				var edges []check.Edge
				for _, e := range c.edges {
					edges = append(edges, check.Edge{From: e.From, To: e.To, At: cite})
				}
				if !slices.Equal(r.Edges, edges) {
					t.Errorf("%s: %s edges %+v, want %+v", c.name, r.Name, r.Edges, edges)
				}
			}
			if w == check.Unknown && !strings.Contains(r.Detail, "before the bound") {
				t.Errorf("%s: %s", c.name, r)
			}
		}
	}
	// Malformed data is unknown, not a panic.
	b := checktest.New(2)
	b.Output(0, deadlock.Awaiting{Wait: deadlock.Txn{P: 0, Seq: 1}, From: []proc.ID{7}})
	for _, name := range []string{"or-deadlock-detected", "or-deadlock-no-phantom"} {
		if r, _ := check.Run(&b.Trace, name); r[0].Status != check.Unknown {
			t.Errorf("%s on a process out of range: %s, want unknown", name, r[0])
		}
	}
}
