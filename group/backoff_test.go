package group_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/group"
	"github.com/cohort-go/cohort/internal/backoff"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/livetest"
	"github.com/cohort-go/cohort/proc"
)

// TestResendsBackOffWhileTheLeaderIsCutOff: the leader of the group
// service's log is cut off from the others for a long partition (2, 4
// and 6 s), and senders on its node multicast meanwhile, each at a time
// the seed draws. No message can commit before the partition heals;
// each is proposed again while it waits. At a fixed interval (the retry,
// 300 ms) the copies grow with the partition's length, one every 300 ms;
// backing off, with the logarithm of it, and one more per backoff.Max.
// Once the partition heals, every message is acknowledged within
// healBound: the node proposes them again as soon as its log moves
// again, not after their waits (up to backoff.Max).
func TestResendsBackOffWhileTheLeaderIsCutOff(t *testing.T) {
	const senders, healBound = 4, time.Second
	for seed := range uint64(3) {
		rng := rand.New(rand.NewPCG(seed, 13))
		cut := time.Duration(2+2*seed) * time.Second
		nodes, nw := livetest.StartNetwork(t, 3, live.Config{DataDir: t.TempDir()})
		rs := make([]*group.Replicated, len(nodes))
		for i, nd := range nodes {
			r, err := group.NewReplicated(nd, consensus.DefaultConfig)
			if err != nil {
				t.Fatal(err)
			}
			rs[i] = r
		}
		ctx, cancel := context.WithTimeout(context.Background(), cut+30*time.Second)
		defer cancel()
		lead := leading(ctx, t, rs)
		r := rs[lead]
		if _, err := r.Multicast(ctx, "g", []byte("before")); err != nil {
			t.Fatal(err)
		}

		before, sent := r.Proposals(), r.Service().Stats().Sent
		nw.Isolate(proc.ID(lead), true)
		start := time.Now()
		type acked struct {
			at  time.Time
			pos uint64
			err error
		}
		done := make(chan acked, senders)
		most, waited := 0, time.Duration(0) // waited: the operations' time under way in the partition, in all
		for i := range senders {
			at := time.Duration(rng.Int64N(int64(cut / 2)))
			waited += cut - at
			most += backoff.Most(cut-at, group.Retry(r)) + 1 // and once when the log moves again
			time.AfterFunc(at, func() {
				d, err := r.Multicast(ctx, "g", fmt.Append(nil, "while cut off ", i))
				done <- acked{time.Now(), d.Pos, err}
			})
		}
		time.Sleep(cut) // the partition
		proposed, messages := r.Proposals()-before, r.Service().Stats().Sent-sent
		healed := time.Now()
		nw.Isolate(proc.ID(lead), false)
		slowest := time.Duration(0)
		for range senders {
			a := <-done
			if a.err != nil || a.pos == 0 {
				t.Fatalf("seed %d: a message sent while cut off: position %d, %v; want it acknowledged once the partition heals", seed, a.pos, a.err)
			}
			slowest = max(slowest, a.at.Sub(healed))
		}
		t.Logf("seed %d: node %d cut off for %v: %d proposals of %d messages under way for %v in all, %d messages sent; all acknowledged %v after the heal",
			seed, lead, healed.Sub(start).Round(time.Millisecond), proposed, senders, waited.Round(time.Millisecond), messages, slowest.Round(time.Millisecond))
		if proposed > uint64(most) {
			t.Errorf("seed %d: %d proposals of %d messages over a %v partition; want at most %d (the waits doubling from %v up to %v)",
				seed, proposed, senders, cut, most, group.Retry(r), backoff.Max)
		}
		if slowest > healBound {
			t.Errorf("seed %d: the last message was acknowledged %v after the partition healed; want within %v", seed, slowest.Round(time.Millisecond), healBound)
		}
	}
}

// leading waits for a leader of the group service's log among rs and
// returns its index.
func leading(ctx context.Context, t *testing.T, rs []*group.Replicated) int {
	t.Helper()
	for {
		for i, r := range rs {
			ready := false
			r.Service().Read(func(p proc.Process) { ready = p.(*consensus.Groups).Raft().Ready() })
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
