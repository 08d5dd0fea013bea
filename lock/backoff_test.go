package lock_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/internal/backoff"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/livetest"
	"github.com/cohort-go/cohort/lock"
	"github.com/cohort-go/cohort/proc"
)

// TestProposalsBackOffWhileTheLeaderIsCutOff: the leader of the lock
// service's log is cut off from the others for a long partition (2, 4
// and 6 s), and clients on its node ask for locks meanwhile, each at a
// time the seed draws. No operation can commit before the partition
// heals; each is proposed again while it waits. At a fixed interval
// (the retry, 300 ms) the copies grow with the partition's length, one
// every 300 ms (51 proposals of 4 operations in 6 s); backing off, with
// the logarithm of it, and one more per backoff.Max. Once the
// partition heals, every operation is served within healBound: the node
// proposes them again as soon as its log moves again, not after their
// waits (up to backoff.Max).
func TestProposalsBackOffWhileTheLeaderIsCutOff(t *testing.T) {
	const clients, healBound = 4, time.Second
	for seed := range uint64(3) {
		rng := rand.New(rand.NewPCG(seed, 13))
		cut := time.Duration(2+2*seed) * time.Second
		nodes, nw := livetest.StartNetwork(t, 3, live.Config{DataDir: t.TempDir()})
		rs := make([]*lock.Replicated, len(nodes))
		for i, nd := range nodes {
			r, err := lock.NewReplicated(nd, consensus.DefaultConfig)
			if err != nil {
				t.Fatal(err)
			}
			rs[i] = r
		}
		ctx, cancel := context.WithTimeout(context.Background(), cut+30*time.Second)
		defer cancel()
		lead := leading(ctx, t, rs)
		r := rs[lead]
		sessions := make([]*lock.Session, clients)
		for i := range sessions {
			s, err := r.Open(ctx, time.Minute) // outlives the partition
			if err != nil {
				t.Fatal(err)
			}
			sessions[i] = s
		}

		before, sent := r.Proposals(), r.Service().Stats().Sent
		nw.Isolate(proc.ID(lead), true)
		start := time.Now()
		type served struct {
			at    time.Time
			token uint64
			err   error
		}
		done := make(chan served, clients)
		most, waited := 0, time.Duration(0) // waited: the operations' time under way in the partition, in all
		for i, s := range sessions {
			at := time.Duration(rng.Int64N(int64(cut / 2)))
			waited += cut - at
			most += backoff.Most(cut-at, lock.Retry(r)) + 1 // and once when the log moves again
			time.AfterFunc(at, func() {
				tok, err := s.Lock(ctx, fmt.Sprint("x", i))
				done <- served{time.Now(), tok, err}
			})
		}
		time.Sleep(cut) // the partition
		proposed, messages := r.Proposals()-before, r.Service().Stats().Sent-sent
		healed := time.Now()
		nw.Isolate(proc.ID(lead), false)
		slowest := time.Duration(0)
		for range clients {
			s := <-done
			if s.err != nil || s.token == 0 {
				t.Fatalf("seed %d: a lock asked for while cut off: token %d, %v; want it granted once the partition heals", seed, s.token, s.err)
			}
			slowest = max(slowest, s.at.Sub(healed))
		}
		t.Logf("seed %d: node %d cut off for %v: %d proposals of %d operations under way for %v in all, %d messages sent; all served %v after the heal",
			seed, lead, healed.Sub(start).Round(time.Millisecond), proposed, clients, waited.Round(time.Millisecond), messages, slowest.Round(time.Millisecond))
		if proposed > uint64(most) {
			t.Errorf("seed %d: %d proposals of %d operations over a %v partition; want at most %d (the waits doubling from %v up to %v)",
				seed, proposed, clients, cut, most, lock.Retry(r), backoff.Max)
		}
		if slowest > healBound {
			t.Errorf("seed %d: the last operation was served %v after the partition healed; want within %v", seed, slowest.Round(time.Millisecond), healBound)
		}
	}
}

// leading waits for a leader of the lock service's log among rs and
// returns its index.
func leading(ctx context.Context, t *testing.T, rs []*lock.Replicated) int {
	t.Helper()
	for {
		for i, r := range rs {
			ready := false
			r.Service().Read(func(p proc.Process) { ready = p.(*consensus.Locks).Raft().Ready() })
			if ready {
				return i
			}
		}
		select {
		case <-ctx.Done():
			t.Fatal("no leader")
		case <-time.After(10 * time.Millisecond):
		}
	}
}
