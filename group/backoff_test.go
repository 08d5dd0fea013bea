package group_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/group"
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

		livetest.CutOff{Network: nw, Node: proc.ID(lead), Span: cut, Ops: senders, Seed: seed,
			Op: func(i int) error {
				d, err := r.Multicast(ctx, "g", fmt.Append(nil, "while cut off ", i))
				if err == nil && d.Pos == 0 {
					err = errors.New("acknowledged at position 0")
				}
				return err
			},
			Proposals: r.Proposals, Sent: func() int64 { return r.Service().Stats().Sent },
			Retry: group.Retry(r), HealBound: healBound, What: "message"}.Run(t)
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
