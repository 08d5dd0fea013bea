package livetest

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cohort-go/cohort/internal/backoff"
	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/proc"
)

// CutOff measures how a replicated service's client backs off while its
// node is cut off from the others (a partition) and how soon it is
// served once the partition heals: Ops operations start at the node,
// each at a time the seed draws in the first half of the partition; none
// can commit before it heals, so each is proposed again meanwhile.
type CutOff struct {
	Network *transport.Network
	Node    proc.ID       // the node cut off, whose clients start the operations
	Span    time.Duration // how long it is cut off
	Ops     int
	Seed    uint64
	// Op runs operation i to its end; an error fails the test.
	Op func(i int) error
	// Proposals counts the proposals made so far at the node, Sent the
	// messages it sent.
	Proposals func() uint64
	Sent      func() int64
	// Retry is the operations' first wait (package backoff).
	Retry time.Duration
	// HealBound: every operation is served within this of the heal.
	HealBound time.Duration
	What      string // what an operation is, in messages ("lock", "message")
}

// Run cuts the node off for Span, starts the operations, heals, and
// fails t if an operation fails, if they were proposed more often than
// waits doubling from Retry up to backoff.Max allow (and once more each
// when the log moves again), or if one is served later than HealBound
// after the heal.
func (c CutOff) Run(t testing.TB) {
	t.Helper()
	rng := rand.New(rand.NewPCG(c.Seed, 13))
	before, sent := c.Proposals(), c.Sent()
	c.Network.Isolate(c.Node, true)
	start := time.Now()
	type served struct {
		at  time.Time
		err error
	}
	done := make(chan served, c.Ops)
	most, waited := 0, time.Duration(0) // waited: the operations' time under way in the partition, in all
	for i := range c.Ops {
		at := time.Duration(rng.Int64N(int64(c.Span / 2)))
		waited += c.Span - at
		most += backoff.Most(c.Span-at, c.Retry) + 1 // and once when the log moves again
		time.AfterFunc(at, func() {
			err := c.Op(i)
			done <- served{time.Now(), err}
		})
	}
	time.Sleep(c.Span) // the partition
	proposed, messages := c.Proposals()-before, c.Sent()-sent
	healed := time.Now()
	c.Network.Isolate(c.Node, false)
	slowest := time.Duration(0)
	for range c.Ops {
		s := <-done
		if s.err != nil {
			t.Fatalf("seed %d: a %s started while cut off: %v; want it served once the partition heals", c.Seed, c.What, s.err)
		}
		slowest = max(slowest, s.at.Sub(healed))
	}
	t.Logf("seed %d: node %d cut off for %v: %d proposals of %d %ss under way for %v in all, %d messages sent; all served %v after the heal",
		c.Seed, c.Node, healed.Sub(start).Round(time.Millisecond), proposed, c.Ops, c.What, waited.Round(time.Millisecond), messages, slowest.Round(time.Millisecond))
	if proposed > uint64(most) {
		t.Errorf("seed %d: %d proposals of %d %ss over a %v partition; want at most %d (the waits doubling from %v up to %v)",
			c.Seed, proposed, c.Ops, c.What, c.Span, most, c.Retry, backoff.Max)
	}
	if slowest > c.HealBound {
		t.Errorf("seed %d: the last %s was served %v after the partition healed; want within %v", c.Seed, c.What, slowest.Round(time.Millisecond), c.HealBound)
	}
}
