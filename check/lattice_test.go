package check_test

import (
	"strings"
	"testing"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/trace"
)

// ME1-lattice judges every consistent global state: two critical sections
// that no message orders are concurrent, however far apart the observed
// run put them.
func TestME1OverEveryConsistentGlobalState(t *testing.T) {
	cases := []struct {
		name   string
		build  func(b mx) []int // the events a violation must cite; nil: the trace holds
		me1    bool             // what the observed-run checker says
		detail string
	}{
		{"apart in time, unordered by any message", func(b mx) []int {
			b.acquire(0)
			e0 := b.enter(0)
			b.exit(0)
			b.acquire(1)
			e1 := b.enter(1)
			b.exit(1)
			return []int{e0, e1}
		}, true, "p0 (entered at #1) and p1 (entered at #4) are in the critical section together in the consistent global state ⟨2,2,0⟩ (frontier #1 #4 -): a linearization other than the observed one passes through it"},
		{"ordered by a message sent after the exit", func(b mx) []int {
			b.acquire(0)
			b.enter(0)
			b.exit(0)
			s := b.Send(0, 1, "reply")
			b.Recv(s)
			b.enter(1)
			b.exit(1)
			return nil
		}, true, ""},
		{"a reply sent from inside the critical section", func(b mx) []int {
			b.acquire(0)
			e0 := b.enter(0)
			s := b.Send(0, 1, "reply")
			b.exit(0)
			b.Recv(s)
			e1 := b.enter(1)
			b.exit(1)
			return []int{e0, e1}
		}, true, "p0 (entered at #1) and p1 (entered at #5)"},
		{"overlapping in the observed run too", func(b mx) []int {
			e0 := b.enter(0)
			e1 := b.enter(1)
			b.exit(0)
			b.exit(1)
			return []int{e0, e1}
		}, false, "the observed run too passes through it"},
		{"three processes, a chain of messages", func(b mx) []int {
			b.enter(0)
			b.exit(0)
			s := b.Send(0, 1, "token")
			b.Recv(s)
			b.enter(1)
			b.exit(1)
			s = b.Send(1, 2, "token")
			b.Recv(s)
			b.enter(2)
			b.exit(2)
			return nil
		}, true, ""},
	}
	for _, c := range cases {
		b := newMX(3)
		want := c.build(b)
		me1, _ := check.Lookup("ME1")
		if got := me1.Check(&b.Trace).OK(); got != c.me1 {
			t.Errorf("%s: ME1 ok = %v, want %v", c.name, got, c.me1)
		}
		lat, ok := check.Lookup("ME1-lattice")
		if !ok {
			t.Fatal("ME1-lattice is not registered")
		}
		r := lat.Check(&b.Trace)
		expectVerdict(t, c.name, "ME1-lattice", r, want, c.detail)
		if want != nil {
			cx := r.Counterexample(&b.Trace)
			for _, i := range want {
				if !strings.Contains(cx, b.Trace.Events[i].String()) {
					t.Errorf("%s: the counterexample does not print #%d:\n%s", c.name, i, cx)
				}
			}
		}
	}
	if name, ok := check.EveryState("ME1"); !ok || name != "ME1-lattice" {
		t.Errorf("EveryState(ME1) = %q, %v", name, ok)
	}
	if _, ok := check.EveryState("ME2"); ok {
		t.Error("EveryState(ME2): ME2 is a liveness property of the run, with no lattice version")
	}
}

// A run too large to judge over every state is unknown, not ok.
func TestME1LatticeTooLargeIsUnknown(t *testing.T) {
	b := newMX(2000)
	for i := range 40000 {
		b.Add(trace.Event{Node: int32(i % 2000), Kind: trace.Timer, Peer: -1})
	}
	lat, _ := check.Lookup("ME1-lattice")
	r := lat.Check(&b.Trace)
	if r.Status != check.Unknown || !strings.Contains(r.Detail, "too large") {
		t.Errorf("40000 events × 2000 processes: %s", r)
	}
}
