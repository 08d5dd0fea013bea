package lock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/livetest"
	"github.com/cohort-go/cohort/live/transport"
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
		cut := time.Duration(2+2*seed) * time.Second
		rs, nw := startReplicatedLocks(t, 3)
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

		livetest.CutOff{Network: nw, Node: proc.ID(lead), Span: cut, Ops: clients, Seed: seed,
			Op: func(i int) error {
				tok, err := sessions[i].Lock(ctx, fmt.Sprint("x", i))
				if err == nil && tok == 0 {
					err = errors.New("granted with token 0")
				}
				return err
			},
			Proposals: r.Proposals, Sent: func() int64 { return r.Service().Stats().Sent },
			Retry: lock.Retry(r), HealBound: healBound, What: "lock"}.Run(t)
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

// startReplicatedLocks starts n replicated lock services on a network of
// n nodes that a test can cut apart, each with its log in a directory of
// its own.
func startReplicatedLocks(t *testing.T, n int) ([]*lock.Replicated, *transport.Network) {
	t.Helper()
	nodes, nw := livetest.StartNetwork(t, n, live.Config{DataDir: t.TempDir()})
	rs := make([]*lock.Replicated, len(nodes))
	for i, nd := range nodes {
		r, err := lock.NewReplicated(nd, consensus.DefaultConfig)
		if err != nil {
			t.Fatal(err)
		}
		rs[i] = r
	}
	return rs, nw
}
