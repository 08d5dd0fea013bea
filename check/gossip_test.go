package check_test

import (
	"testing"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/check/checktest"
	"github.com/cohort-go/cohort/trace"
)

// The gossip family's outputs, as the checkers read them.
type applied struct {
	Key     string `json:"key"`
	Value   string `json:"value,omitempty"`
	Version uint64 `json:"version"`
	Deleted bool   `json:"deleted,omitempty"`
}
type reaped struct {
	Key     string `json:"key"`
	Version uint64 `json:"version"`
}
type psState struct {
	S float64 `json:"s"`
	W float64 `json:"w"`
}

func (applied) Kind() string { return "applied" }
func (reaped) Kind() string  { return "reaped" }
func (psState) Kind() string { return "state" }

const v1, v2, v3 = 1 << 32, 2<<32 | 1, 3 << 32

func gossipStarted(n int) *checktest.Builder {
	b := checktest.New(n)
	for p := range n {
		b.Local(int32(p), trace.Start)
	}
	return b
}

func TestGossipConvergence(t *testing.T) {
	runFixtures(t, "gossip-convergence", []fixture{
		{name: "same map everywhere; a reaped tombstone is a tombstone", build: func() (*trace.Trace, []int) {
			b := gossipStarted(3)
			for p := range int32(3) {
				b.Output(p, applied{Key: "x", Value: "1", Version: v1})
				b.Output(p, applied{Key: "y", Version: v2, Deleted: true})
			}
			b.Output(2, reaped{Key: "y", Version: v2})
			return &b.Trace, nil
		}},
		{name: "a crashed node is not judged", build: func() (*trace.Trace, []int) {
			b := gossipStarted(2)
			b.Output(0, applied{Key: "x", Value: "1", Version: v1})
			b.Output(0, applied{Key: "x", Value: "2", Version: v2})
			b.Output(1, applied{Key: "x", Value: "1", Version: v1})
			b.Local(1, trace.Crash)
			return &b.Trace, nil
		}},
		{name: "an older version", detail: "p1 ends with x at version 1.0, older than version 2.1 at p0", build: func() (*trace.Trace, []int) {
			b := gossipStarted(2)
			b.Output(0, applied{Key: "x", Value: "1", Version: v1})
			old := b.Output(1, applied{Key: "x", Value: "1", Version: v1})
			newest := b.Output(0, applied{Key: "x", Value: "2", Version: v2})
			return &b.Trace, []int{old, newest}
		}},
		{name: "a node that never heard, back from a crash empty", detail: "p1 ends without x=1 (version 1.0), which p0 holds", build: func() (*trace.Trace, []int) {
			b := gossipStarted(2)
			put := b.Output(0, applied{Key: "x", Value: "1", Version: v1})
			b.Output(1, applied{Key: "x", Value: "1", Version: v1})
			b.Local(1, trace.Crash)
			back := b.Local(1, trace.Recover)
			return &b.Trace, []int{back, put}
		}},
	})
}

func TestGossipNoResurrection(t *testing.T) {
	runFixtures(t, "gossip-no-resurrection", []fixture{
		{name: "deleted, then written anew", build: func() (*trace.Trace, []int) {
			b := gossipStarted(1)
			b.Output(0, applied{Key: "x", Value: "1", Version: v1})
			b.Output(0, applied{Key: "x", Version: v2, Deleted: true})
			b.Output(0, reaped{Key: "x", Version: v2})
			b.Output(0, applied{Key: "x", Value: "3", Version: v3})
			return &b.Trace, nil
		}},
		{name: "a new incarnation has forgotten the deletion", build: func() (*trace.Trace, []int) {
			b := gossipStarted(1)
			b.Output(0, applied{Key: "x", Version: v2, Deleted: true})
			b.Local(0, trace.Crash)
			b.Local(0, trace.Recover)
			b.Output(0, applied{Key: "x", Value: "1", Version: v1})
			return &b.Trace, nil
		}},
		{name: "the old value back after the tombstone was reaped", detail: "p0 adopted x=1 (version 1.0) after it had adopted the key's tombstone (version 2.1)", build: func() (*trace.Trace, []int) {
			b := gossipStarted(1)
			b.Output(0, applied{Key: "x", Value: "1", Version: v1})
			tomb := b.Output(0, applied{Key: "x", Version: v2, Deleted: true})
			b.Output(0, reaped{Key: "x", Version: v2})
			back := b.Output(0, applied{Key: "x", Value: "1", Version: v1})
			return &b.Trace, []int{tomb, back}
		}},
	})
}

// share appends the send of a push-sum share from → to.
func share(b *checktest.Builder, from, to int32, label string) int {
	b.Send(from, to, "share")
	i := len(b.Trace.Events) - 1
	b.Trace.Events[i].Label = label
	return i
}

// pushSumRound is a round of p0 and the receipt at p1: p0 (2, 1) and p1
// (4, 1) at the start; p0 keeps half and sends half.
func pushSumRound() (b *checktest.Builder, send int) {
	b = gossipStarted(2)
	b.Output(0, psState{2, 1})
	b.Output(1, psState{4, 1})
	b.Add(trace.Event{Node: 0, Kind: trace.Timer, Type: "round", Peer: -1})
	send = share(b, 0, 1, "SHARE(s=1,w=0.5)")
	b.Output(0, psState{1, 0.5})
	return b, send
}

func TestPushSumMass(t *testing.T) {
	runFixtures(t, "push-sum-mass", []fixture{
		{name: "half kept, half received", build: func() (*trace.Trace, []int) {
			b, send := pushSumRound()
			b.Recv(send)
			b.Output(1, psState{5, 1.5})
			return &b.Trace, nil
		}},
		{name: "a share in flight at the end counts", build: func() (*trace.Trace, []int) {
			b, _ := pushSumRound()
			return &b.Trace, nil
		}},
		{name: "a share lost", detail: "total mass s=5 w=1.5", build: func() (*trace.Trace, []int) {
			b, send := pushSumRound()
			drop := b.Drop(send, "loss")
			b.Local(1, trace.Timer)
			return &b.Trace, []int{send, send + 1, drop}
		}},
		{name: "a receiver that adds twice the share", detail: "total mass s=7 w=2", build: func() (*trace.Trace, []int) {
			b, send := pushSumRound()
			r := b.Recv(send)
			o := b.Output(1, psState{6, 2})
			return &b.Trace, []int{r, o}
		}},
	})
	b, _ := pushSumRound()
	b.Trace.Events[len(b.Trace.Events)-2].Label = "SHARE(half)"
	if r := check.Result(mustCheck(t, "push-sum-mass", &b.Trace)); r.Status != check.Unknown {
		t.Errorf("an unreadable share: %s, want unknown", r)
	}
}

func TestPushSumError(t *testing.T) {
	rounds := func(b *checktest.Builder, k int) {
		for range k {
			b.Add(trace.Event{Node: 0, Kind: trace.Timer, Type: "round", Peer: -1})
		}
	}
	enough := check.PushSumRounds(2)
	runFixtures(t, "push-sum-error", []fixture{
		{name: "both estimate the average", build: func() (*trace.Trace, []int) {
			b := gossipStarted(2)
			b.Output(0, psState{2, 1})
			b.Output(1, psState{4, 1})
			rounds(b, enough)
			b.Output(0, psState{1.5, 0.5})
			b.Output(1, psState{4.5, 1.5})
			return &b.Trace, nil
		}},
		{name: "one estimate off", detail: "p1 ends estimating 4", build: func() (*trace.Trace, []int) {
			b := gossipStarted(2)
			b.Output(0, psState{2, 1})
			last := b.Output(1, psState{4, 1})
			rounds(b, enough)
			b.Output(0, psState{1.5, 0.5})
			return &b.Trace, []int{last}
		}},
	})
	b := gossipStarted(2)
	b.Output(0, psState{2, 1})
	b.Output(1, psState{4, 1})
	rounds(b, enough-1)
	if r := mustCheck(t, "push-sum-error", &b.Trace); r.Status != check.Unknown {
		t.Errorf("a run shorter than the bound: %s, want unknown", r)
	}
}

func mustCheck(t *testing.T, name string, tr *trace.Trace) check.Result {
	t.Helper()
	c, ok := check.Lookup(name)
	if !ok {
		t.Fatalf("%s is not registered", name)
	}
	return c.Check(tr)
}
