package check_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/check/checktest"
	"github.com/cohort-go/cohort/mutex"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/trace"
)

// mx builds mutual-exclusion traces: acquire, enter, exit, and the
// waiting/lent outputs, by name.
type mx struct{ *checktest.Builder }

func newMX(n int) mx { return mx{checktest.New(n)} }

func (b mx) acquire(p int32) int {
	return b.Add(trace.Event{Node: p, Kind: trace.Input, Type: "acquire", Peer: -1})
}
func (b mx) enter(p int32) int { return b.Output(p, mutex.Enter{}) }
func (b mx) exit(p int32) int  { return b.Output(p, mutex.Exit{}) }
func (b mx) waiting(p int32, ids ...proc.ID) int {
	return b.Output(p, mutex.Waiting{For: ids})
}
func (b mx) lent(p int32, to proc.ID) int { return b.Output(p, mutex.Lent{To: to}) }

func TestMutexCheckers(t *testing.T) {
	cases := []struct {
		name    string
		checker string
		build   func(b mx) []int // the events a violation must cite; nil: the trace holds
		detail  string
	}{
		{"one after the other", "ME1", func(b mx) []int {
			b.acquire(0)
			b.enter(0)
			b.acquire(1)
			b.exit(0)
			b.enter(1)
			b.exit(1)
			return nil
		}, ""},
		{"overlap", "ME1", func(b mx) []int {
			b.acquire(0)
			e0 := b.enter(0)
			b.acquire(1)
			e1 := b.enter(1)
			b.exit(0)
			b.exit(1)
			return []int{e0, e1}
		}, "p1 entered the critical section at #3"},
		{"a crash ends the critical section", "ME1", func(b mx) []int {
			b.acquire(0)
			b.enter(0)
			b.Local(0, trace.Crash)
			b.acquire(1)
			b.enter(1)
			return nil
		}, ""},
		{"every request granted", "ME2", func(b mx) []int {
			b.acquire(0)
			b.acquire(1)
			b.waiting(1, 0)
			b.enter(0)
			b.exit(0)
			b.waiting(1)
			b.enter(1)
			return nil
		}, ""},
		{"starvation", "ME2", func(b mx) []int {
			a := b.acquire(1)
			w := b.waiting(1, 0)
			return []int{a, w}
		}, "p1's request at #0 (t=1.000ms) was never granted; it still waits for {p0}"},
		{"deadlock", "ME2", func(b mx) []int {
			// p0 needs p2's vote, which p1 holds; p1 needs p3's, which p0 holds.
			a0 := b.acquire(0)
			a1 := b.acquire(1)
			l2 := b.lent(2, 1)
			l3 := b.lent(3, 0)
			w0 := b.waiting(0, 2)
			w1 := b.waiting(1, 3)
			return []int{a0, a1, l2, l3, w0, w1}
		}, "deadlock: p0 waits for p2, p2's permission is held by p1, p1 waits for p3, p3's permission is held by p0"},
		{"a cycle with messages in flight is not called a deadlock", "ME2", func(b mx) []int {
			a0 := b.acquire(0)
			b.acquire(1)
			b.lent(2, 1)
			b.lent(3, 0)
			b.waiting(0, 2)
			b.waiting(1, 3)
			b.Send(1, 2, "release") // on its way: it may free p2's vote
			return []int{a0}
		}, "with messages still in flight to {p2}"},
		{"a vote given back breaks the cycle", "ME2", func(b mx) []int {
			b.acquire(0)
			b.acquire(1)
			b.lent(2, 1)
			b.lent(3, 0)
			b.waiting(0, 2)
			b.waiting(1, 3)
			b.lent(2, proc.None)
			b.lent(2, 0)
			b.waiting(0)
			b.enter(0)
			b.exit(0)
			b.lent(3, 1)
			b.waiting(1)
			b.enter(1)
			return nil
		}, ""},
		{"a crashed requester is not starved", "ME2", func(b mx) []int {
			b.acquire(1)
			b.waiting(1, 0)
			b.Local(1, trace.Crash)
			return nil
		}, ""},
		{"happened-before order kept", "ME3", func(b mx) []int {
			b.acquire(0)
			s := b.Send(0, 1, "note")
			b.Recv(s)
			b.acquire(1)
			b.enter(0)
			b.exit(0)
			b.enter(1)
			return nil
		}, ""},
		{"concurrent requests in any order", "ME3", func(b mx) []int {
			b.acquire(0)
			b.acquire(1)
			b.enter(1)
			b.exit(1)
			b.enter(0)
			return nil
		}, ""},
		{"priority inversion", "ME3", func(b mx) []int {
			// The textbook counterexample for the central server: A
			// requests, then tells B; B requests; B's request reaches the
			// server first.
			a := b.acquire(0)
			s := b.Send(0, 1, "note")
			b.Recv(s)
			a1 := b.acquire(1)
			e1 := b.enter(1)
			b.exit(1)
			e0 := b.enter(0)
			return []int{a, a1, e1, e0}
		}, "p0's request at #0 (t=1.000ms) happened before p1's at #3 (t=4.000ms), but p1 entered first (#4)"},
	}
	for _, c := range cases {
		b := newMX(4)
		want := c.build(b)
		res, err := check.Run(&b.Trace, c.checker)
		if err != nil {
			t.Fatal(err)
		}
		r := res[0]
		if want == nil {
			if !r.OK() {
				t.Errorf("%s: %s says %s: %s", c.name, c.checker, r.Status, r.Detail)
			}
			continue
		}
		slices.Sort(want)
		if r.OK() || !slices.Equal(r.Events, want) {
			t.Errorf("%s: %s = %s citing %v, want violated citing %v (%s)", c.name, c.checker, r.Status, r.Events, want, r.Detail)
		}
		if strings.Contains(c.name, "in flight") != (r.Status == check.Unknown) {
			t.Errorf("%s: status %s; unknown is for cut-off runs only", c.name, r.Status)
		}
		if !strings.Contains(r.Detail, c.detail) {
			t.Errorf("%s: detail %q, want it to contain %q", c.name, r.Detail, c.detail)
		}
		if c.name == "deadlock" {
			// The cycle, structured: each edge shown by its waiting or lent
			// output (the build's events 4, 2, 5, 3).
			wantEdges := []check.Edge{{From: 0, To: 2, At: want[4]}, {From: 2, To: 1, At: want[2]}, {From: 1, To: 3, At: want[5]}, {From: 3, To: 0, At: want[3]}}
			if !slices.Equal(r.Edges, wantEdges) {
				t.Errorf("deadlock: edges %+v, want %+v", r.Edges, wantEdges)
			}
		} else if r.Edges != nil {
			t.Errorf("%s: edges %+v on a verdict that is no deadlock", c.name, r.Edges)
		}
		ce := r.Counterexample(&b.Trace)
		for _, i := range want {
			if !strings.Contains(ce, b.Trace.Events[i].String()) {
				t.Errorf("%s: counterexample lacks event #%d:\n%s", c.name, i, ce)
			}
		}
	}
}

// TestPerServiceJudging: in a live node's trace, events name their service
// (a lock). One node holding two different locks at once breaks nothing;
// two nodes in one lock at once breaks ME1, and the verdict names the
// lock. The cited events are indexes of the whole trace.
func TestPerServiceJudging(t *testing.T) {
	b := newMX(2)
	in := func(svc string, i int) int { b.Trace.Events[i].Service = svc; return i }
	in("lock/a", b.acquire(0))
	in("lock/a", b.enter(0))
	in("lock/b", b.acquire(0))
	in("lock/b", b.enter(0))
	in("lock/b", b.acquire(1))
	in("lock/b", b.exit(0))
	in("lock/b", b.enter(1))
	in("lock/a", b.exit(0))
	in("lock/b", b.exit(1))
	tr := &b.Trace
	if got := check.Services(tr); !slices.Equal(got, []string{"lock/a", "lock/b"}) {
		t.Fatalf("Services = %q", got)
	}
	rs, err := check.Run(tr, "ME1")
	if err != nil || !rs[0].OK() {
		t.Fatalf("two locks held by one node: %v %v", rs, err)
	}

	in("lock/a", b.acquire(1))
	e := in("lock/a", b.enter(1)) // p1 in lock/a; then p0 enters it too
	in("lock/a", b.acquire(0))
	e0 := in("lock/a", b.enter(0))
	rs, err = check.Run(&b.Trace, "ME1")
	if err != nil || rs[0].OK() || !strings.HasPrefix(rs[0].Detail, "lock/a: ") || !slices.Equal(rs[0].Events, []int{e, e0}) {
		t.Fatalf("two nodes in lock/a: %+v %v, want violated, naming lock/a, citing #%d and #%d", rs, err, e, e0)
	}
}
