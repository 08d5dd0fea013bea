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

// TestDeadlockCheckers: four processes, p2 and p3 owning the resources
// r2 and r3; p0's transaction holds r2 and waits for r3, p1's holds r3
// and waits for r2 — the cycle p0 → p1 → p0 — which is declared in time,
// late, never, before it formed, or after its victim aborted (in time by
// the causal past of the declaration, not by true time); a declaration
// that names the wrong cycle; and a trace that ends before the bound.
func TestDeadlockCheckers(t *testing.T) {
	t0, t1 := deadlock.Txn{P: 0, Seq: 1}, deadlock.Txn{P: 1, Seq: 1}
	const wait = 10 * time.Millisecond // the bound: 10 events of checktest.Step, plus the messages' delays
	start := func(b *checktest.Builder) {
		for p := range int32(4) {
			b.Output(p, deadlock.Detector{Wait: wait})
		}
		b.Output(0, deadlock.Began{Txn: t0, Want: []proc.ID{2, 3}})
		b.Output(1, deadlock.Began{Txn: t1, Want: []proc.ID{3, 2}})
		b.Output(2, deadlock.Granted{Res: 2, Txn: t0})
		b.Output(3, deadlock.Granted{Res: 3, Txn: t1})
		b.Output(2, deadlock.Blocked{Res: 2, Txn: t1, Holder: t0}) // p1 → p0
	}
	closeCycle := func(b *checktest.Builder) int {
		return b.Output(3, deadlock.Blocked{Res: 3, Txn: t0, Holder: t1}) // p0 → p1: the cycle
	}
	idle := func(b *checktest.Builder, steps int) {
		for range steps {
			b.Local(2, trace.Timer)
		}
	}
	resolve := func(b *checktest.Builder, p int32, cycle ...proc.ID) int {
		txn := map[int32]deadlock.Txn{0: t0, 1: t1}[p]
		d := b.Output(p, deadlock.Deadlock{Txn: txn, Cycle: cycle})
		b.Output(p, deadlock.Aborted{Txn: txn, Reason: "deadlock"})
		return d
	}
	type want struct{ detected, phantom check.Status }
	ok := want{check.OK, check.OK}
	for _, c := range []struct {
		name  string
		build func(b *checktest.Builder) int // the event to be cited, or -1
		want  want
	}{
		{"declared at once", func(b *checktest.Builder) int {
			start(b)
			closeCycle(b)
			resolve(b, 1, 1, 0)
			idle(b, 30)
			return -1
		}, ok},
		{"declared without naming the cycle", func(b *checktest.Builder) int {
			start(b)
			closeCycle(b)
			resolve(b, 0)
			idle(b, 30)
			return -1
		}, ok},
		{"never declared", func(b *checktest.Builder) int {
			start(b)
			c := closeCycle(b)
			idle(b, 30)
			return c
		}, want{check.Violated, check.OK}},
		{"declared late", func(b *checktest.Builder) int {
			start(b)
			c := closeCycle(b)
			idle(b, 15)
			resolve(b, 1, 1, 0)
			return c
		}, want{check.Violated, check.OK}},
		{"trace ends before the bound", func(b *checktest.Builder) int {
			start(b)
			closeCycle(b)
			idle(b, 3)
			return -1
		}, want{check.Unknown, check.OK}},
		{"declared before the cycle formed", func(b *checktest.Builder) int {
			start(b)
			d := resolve(b, 0)
			return d
		}, want{check.OK, check.Violated}},
		{"declares the wrong cycle", func(b *checktest.Builder) int {
			start(b)
			closeCycle(b)
			return resolve(b, 1, 1, 2)
		}, want{check.OK, check.Violated}},
		{"declared after the other victim aborted, which it could not know", func(b *checktest.Builder) int {
			// A probe of p1 goes round: p1 → p3 (r3's owner) → p0 (its
			// holder, waiting) → p2 (r2's owner) → p1; p0 then aborts
			// (another cycle's victim), and p1 declares. At that instant
			// the cycle is gone, but not in p1's causal past.
			start(b)
			closeCycle(b)
			s := b.Send(1, 3, "probe")
			b.Recv(s)
			s = b.Send(3, 0, "probe")
			b.Recv(s)
			s = b.Send(0, 2, "probe")
			b.Output(0, deadlock.Aborted{Txn: t0, Reason: "deadlock"})
			b.Recv(s)
			s = b.Send(2, 1, "probe")
			b.Recv(s)
			resolve(b, 1, 1, 0)
			idle(b, 30)
			return -1
		}, ok},
		{"declared after the other victim aborted, knowingly", func(b *checktest.Builder) int {
			// The same, but the probe leaves p0 after its abort.
			start(b)
			closeCycle(b)
			b.Output(0, deadlock.Aborted{Txn: t0, Reason: "deadlock"})
			s := b.Send(0, 1, "probe")
			b.Recv(s)
			return resolve(b, 1, 1, 0)
		}, want{check.OK, check.Violated}},
	} {
		b := checktest.New(4)
		cite := c.build(b)
		rs, err := check.Run(&b.Trace, "deadlock-detected", "deadlock-no-phantom")
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
			// A late deadlock carries its cycle, p0 ⇄ p1, shown by the event
			// that closed it; a phantom has none to give.
			var edges []check.Edge
			if w == check.Violated && i == 0 {
				edges = []check.Edge{{From: 0, To: 1, At: cite}, {From: 1, To: 0, At: cite}}
			}
			if !slices.Equal(r.Edges, edges) {
				t.Errorf("%s: %s edges %+v, want %+v", c.name, r.Name, r.Edges, edges)
			}
			if w == check.Unknown && !strings.Contains(r.Detail, "before the bound") {
				t.Errorf("%s: %s", c.name, r)
			}
		}
	}
	// A trace with no detector output says no bound: unknown.
	b := checktest.New(2)
	b.Output(0, deadlock.Began{Txn: t0, Want: []proc.ID{1}})
	if r, _ := check.Run(&b.Trace, "deadlock-detected"); r[0].Status != check.Unknown {
		t.Errorf("no detector: %s, want unknown", r[0])
	}
	// Malformed data is unknown, not a panic.
	b.Trace.Events[0].Data = []byte(`{"txn":{"p":7,"seq":1}}`)
	for _, name := range []string{"deadlock-detected", "deadlock-no-phantom"} {
		if r, _ := check.Run(&b.Trace, name); r[0].Status != check.Unknown {
			t.Errorf("%s on a process out of range: %s, want unknown", name, r[0])
		}
	}
}
