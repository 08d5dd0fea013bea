package queue_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/queue"
)

// A node removed from the voters of the queues' log is sent no more of
// it, so nothing waiting at it is ever answered. Told so (Left, as the
// node does when it sees itself out of the configuration), it fails what
// waits — a put and a long-polling get under way — with ErrRemoved, and
// what comes after, listeners included, at once. Before, a put under way
// at the queues' leader as it was removed held its producer for the
// client's whole timeout; and a Client then asked the node again until
// then (a 503 is no answer). Rejoined, a node serves again.
func TestRemovedNodeFailsWhatWaitsAtIt(t *testing.T) {
	cl := startCluster(t, 3, t.TempDir(), queue.ReplicatedConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lead := waitLeader(ctx, t, cl.rs)
	gone, stays := lead, (lead+1)%3 // the leader, as it is removed, knows it
	if _, err := cl.rs[gone].PutContext(ctx, "jobs", []byte("m0")); err != nil {
		t.Fatal(err)
	}

	// The leader removes itself from the log, and knows it committed.
	if err := cl.rs[gone].Service().Input(consensus.RemoveServer{ID: proc.ID(gone)}); err != nil {
		t.Fatal(err)
	}
	waitUntil(ctx, t, "the removal committed", func() bool {
		var ms []proc.ID
		var committed bool
		cl.rs[gone].Service().Read(func(p proc.Process) {
			ms, committed = p.(interface{ Raft() *consensus.Raft }).Raft().Configuration()
		})
		return committed && len(ms) == 2 && !slices.Contains(ms, proc.ID(gone))
	})

	// A put and a get under way at it. Told it left, each fails with
	// ErrRemoved. (One may end first, before Left, with ErrNoLeader: the
	// removed node, sent no more heartbeats, may take itself for cut off
	// after NoLeaderFor; the one still waiting is the case in point.)
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	type ended struct {
		err error
		at  time.Time
	}
	ends := make(chan ended, 2)
	go func() {
		_, err := cl.rs[gone].PutContext(wctx, "jobs", []byte("m1"))
		ends <- ended{err, time.Now()}
	}()
	go func() {
		_, err := cl.rs[gone].GetN(wctx, "idle", time.Minute, 1)
		ends <- ended{err, time.Now()}
	}()
	waitUntil(ctx, t, "an operation under way at the removed node", func() bool { return queue.Waiting(cl.rs[gone]) >= 1 })
	left := time.Now()
	cl.rs[gone].Left()
	after := 0
	for range 2 {
		e := <-ends
		switch {
		case e.at.After(left):
			after++
			if !errors.Is(e.err, queue.ErrRemoved) {
				t.Errorf("an operation under way at the removed node: %v; want ErrRemoved", e.err)
			}
		case !errors.Is(e.err, queue.ErrNoLeader):
			t.Errorf("an operation at the removed node ended before it was told so: %v; want ErrNoLeader if any", e.err)
		}
	}
	if after == 0 {
		t.Errorf("no operation was under way at the removed node when it was told so")
	}
	if _, err := cl.rs[gone].PutContext(ctx, "jobs", []byte("m2")); !errors.Is(err, queue.ErrRemoved) {
		t.Errorf("a put at the removed node: %v; want ErrRemoved", err)
	}
	if _, _, err := cl.rs[gone].Subscribe("jobs", 8); !errors.Is(err, queue.ErrRemoved) {
		t.Errorf("a listener at the removed node: %v; want ErrRemoved", err)
	}

	// A Client passes it for the rest of a put (NotVoterHeader): with it
	// alone, the put fails at once rather than asking it again until the
	// put's deadline; with another node, it goes there.
	pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
	defer pcancel()
	if _, err := (&queue.Client{Endpoints: cl.eps[gone : gone+1], Token: token}).Put(pctx, "jobs", []byte("m5")); err == nil || !strings.Contains(err.Error(), "no endpoint votes") {
		t.Errorf("a Client's put to the removed node alone: %v; want it to say no endpoint votes in the log", err)
	}
	if _, err := (&queue.Client{Endpoints: []string{cl.eps[gone], cl.eps[stays]}, Token: token}).Put(ctx, "jobs", []byte("m6")); err != nil {
		t.Errorf("a Client's put to the removed node, then another: %v", err)
	}

	// A node told it left, and then that it is back, serves again.
	cl.rs[stays].Left()
	if _, err := cl.rs[stays].PutContext(ctx, "jobs", []byte("m3")); !errors.Is(err, queue.ErrRemoved) {
		t.Errorf("a put at a node told it left: %v; want ErrRemoved", err)
	}
	cl.rs[stays].Rejoined()
	if _, err := cl.rs[stays].PutContext(ctx, "jobs", []byte("m4")); err != nil {
		t.Errorf("a put at a node back in the log: %v", err)
	}
}
