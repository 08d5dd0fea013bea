package lock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/livetest"
	"github.com/cohort-go/cohort/lock"
)

// TestAHaltedReplicaRefuses: a node whose copy of the lock table halted
// (consensus.Halted: a committed entry it cannot apply) answers at once
// with ErrHalted naming the entry — a call already waiting there, and
// every call after — instead of leaving its callers to time out; the
// other nodes serve the locks. Once it resumes (consensus.Resumed: it
// restored the leader's snapshot), it serves them again.
func TestAHaltedReplicaRefuses(t *testing.T) {
	nodes, stop, err := livetest.New(3, live.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	rs := make([]*lock.Replicated, len(nodes))
	for i, nd := range nodes {
		if rs[i], err = lock.NewReplicated(nd, consensus.DefaultConfig); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	leading(ctx, t, rs)
	holder, err := rs[1].Open(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Lock(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	s, err := rs[0].Open(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// The request reaches the log before the node halts (had it halted
	// first, nothing would be proposed): a grant of it must not keep the
	// lock from the others once the caller is refused.
	proposed := rs[0].Proposals()
	waiting := make(chan error, 1)
	go func() { _, err := s.Lock(ctx, "x"); waiting <- err }() // waits: holder has it
	for deadline := time.Now().Add(10 * time.Second); rs[0].Proposals() == proposed; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the lock's request was not proposed")
		}
	}
	lock.Halt(rs[0], consensus.Halted{Index: 42, Reason: "an entry of a newer version"})
	select {
	case err := <-waiting:
		if !errors.Is(err, lock.ErrHalted) || !strings.Contains(err.Error(), "entry 42") {
			t.Fatalf("a lock waiting at the halted node: %v, want ErrHalted naming entry 42", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a lock waiting at the halted node was not refused")
	}
	if _, err := rs[0].Open(ctx, time.Minute); !errors.Is(err, lock.ErrHalted) {
		t.Fatalf("a session opened at the halted node: %v, want ErrHalted", err)
	}
	// The others serve the lock: the holder lets go, another takes it.
	if err := holder.Unlock(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	other, err := rs[2].Open(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	octx, ocancel := context.WithTimeout(ctx, 20*time.Second) // s's session lasts a minute
	defer ocancel()
	if tok, err := other.Lock(octx, "x"); err != nil || tok == 0 {
		t.Fatalf("a lock at another node: token %d, %v (the halted node's refused request still queued?)", tok, err)
	}
	lock.Resume(rs[0], consensus.Resumed{Index: 50})
	if err := rs[0].Halted(); err != nil {
		t.Fatalf("Halted after it resumed: %v", err)
	}
	again, err := rs[0].Open(ctx, time.Minute)
	if err != nil {
		t.Fatalf("a session opened at the resumed node: %v", err)
	}
	if tok, err := again.Lock(ctx, "y"); err != nil || tok == 0 {
		t.Fatalf("a lock at the resumed node: token %d, %v", tok, err)
	}
}
