package check_test

import (
	"testing"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/check/checktest"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/rpc"
	"github.com/cohort-go/cohort/trace"
)

// rpcb builds rpc traces: a client's call and return, the server's exec.
type rpcb struct{ *checktest.Builder }

func rpcID(seq uint64) rpc.CallID { return rpc.CallID{Client: 1, Epoch: 1, Seq: seq} }

func (b rpcb) call(seq uint64, sem rpc.Semantics) int {
	return b.Output(1, rpc.Called{CallID: rpcID(seq), Sem: sem})
}
func (b rpcb) exec(seq uint64, sem rpc.Semantics) int {
	return b.Output(0, rpc.Executed{CallID: rpcID(seq), Sem: sem})
}
func (b rpcb) ret(seq uint64, sem rpc.Semantics, err string) int {
	return b.Output(1, rpc.Returned{CallID: rpcID(seq), Sem: sem, OK: err == "", Err: err, Attempts: 1})
}

func TestRPCCheckers(t *testing.T) {
	cases := []struct {
		name    string
		checker string
		build   func(b rpcb) []int // the events a violation must cite; nil: the trace holds
		detail  string
	}{
		{"maybe ran once", "rpc-maybe", func(b rpcb) []int {
			b.call(1, rpc.Maybe)
			b.exec(1, rpc.Maybe)
			b.ret(1, rpc.Maybe, "")
			return nil
		}, ""},
		{"maybe never ran", "rpc-maybe", func(b rpcb) []int {
			b.call(1, rpc.Maybe)
			b.ret(1, rpc.Maybe, rpc.ErrTimeout)
			return nil
		}, ""},
		{"maybe ran twice", "rpc-maybe", func(b rpcb) []int {
			c := b.call(1, rpc.Maybe)
			e1 := b.exec(1, rpc.Maybe)
			e2 := b.exec(1, rpc.Maybe)
			b.ret(1, rpc.Maybe, "")
			return []int{c, e1, e2}
		}, "maybe call p1.e1#1 ran 2 times"},
		{"at-least-once ran thrice", "rpc-at-least-once", func(b rpcb) []int {
			b.call(1, rpc.AtLeastOnce)
			b.exec(1, rpc.AtLeastOnce)
			b.exec(1, rpc.AtLeastOnce)
			b.ret(1, rpc.AtLeastOnce, "")
			b.exec(1, rpc.AtLeastOnce)
			return nil
		}, ""},
		{"at-least-once failed unexecuted", "rpc-at-least-once", func(b rpcb) []int {
			b.call(1, rpc.AtLeastOnce)
			b.ret(1, rpc.AtLeastOnce, rpc.ErrThrottled)
			return nil
		}, ""},
		{"at-least-once returned but never ran", "rpc-at-least-once", func(b rpcb) []int {
			c := b.call(1, rpc.AtLeastOnce)
			r := b.ret(1, rpc.AtLeastOnce, "")
			b.exec(1, rpc.AtLeastOnce) // too late: after the return
			return []int{c, r}
		}, "returned a result but never ran"},
		{"at-most-once twice, other calls fine", "rpc-at-most-once", func(b rpcb) []int {
			b.call(1, rpc.AtMostOnce)
			b.exec(1, rpc.AtMostOnce)
			c := b.call(2, rpc.AtMostOnce)
			e1 := b.exec(2, rpc.AtMostOnce)
			b.ret(1, rpc.AtMostOnce, "")
			b.Local(0, trace.Crash)
			b.Local(0, trace.Recover)
			e2 := b.exec(2, rpc.AtMostOnce)
			b.ret(2, rpc.AtMostOnce, "")
			return []int{c, e1, e2}
		}, "at-most-once call p1.e1#2 ran 2 times"},
		{"at-most-once: at-least-once calls may repeat", "rpc-at-most-once", func(b rpcb) []int {
			b.call(1, rpc.AtLeastOnce)
			b.exec(1, rpc.AtLeastOnce)
			b.exec(1, rpc.AtLeastOnce)
			return nil
		}, ""},
	}
	for _, c := range cases {
		b := rpcb{checktest.New(2)}
		want := c.build(b)
		r := runRPCChecker(t, c.checker, b.Builder)
		expectVerdict(t, c.name, c.checker, r, want, c.detail)
	}
}

// TestRPCCheckersUnreadable: an exec output that is not an rpc call's
// gives unknown, never ok.
func TestRPCCheckersUnreadable(t *testing.T) {
	b := checktest.New(2)
	b.Output(0, badExec{})
	for _, name := range []string{"rpc-maybe", "rpc-at-least-once", "rpc-at-most-once"} {
		if r := runRPCChecker(t, name, b); r.Status.String() != "unknown" {
			t.Errorf("%s: %s, want unknown", name, r)
		}
	}
}

type badExec struct {
	Client string `json:"client"`
}

func (badExec) Kind() string { return "exec" }

var _ proc.Output = badExec{}

func runRPCChecker(t *testing.T, name string, b *checktest.Builder) check.Result {
	t.Helper()
	c, ok := check.Lookup(name)
	if !ok {
		t.Fatalf("checker %q is not registered", name)
	}
	return c.Check(&b.Trace)
}
