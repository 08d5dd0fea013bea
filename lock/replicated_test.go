package lock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/livetest"
	"github.com/cohort-go/cohort/lock"
)

func replicated(t *testing.T, n int) []*lock.Replicated {
	t.Helper()
	nodes := livetest.Start(t, n, live.Config{DataDir: t.TempDir()})
	rs := make([]*lock.Replicated, n)
	for i, nd := range nodes {
		r, err := lock.NewReplicated(nd, consensus.DefaultConfig)
		if err != nil {
			t.Fatal(err)
		}
		rs[i] = r
	}
	return rs
}

// TestReplicatedLockExcludes: clients on every node of a three-node
// cluster take one lock in turn; the holders never overlap and the tokens
// strictly increase.
func TestReplicatedLockExcludes(t *testing.T) {
	rs := replicated(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	inside, last := 0, uint64(0)
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := rs[i%3].Open(ctx, 5*time.Second)
			if err != nil {
				errs <- err
				return
			}
			defer s.Close(ctx)
			for range 10 {
				tok, err := s.Lock(ctx, "x")
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				inside++
				if inside > 1 || tok <= last {
					errs <- errors.New("two holders at once, or a token that did not increase")
				}
				last = tok
				mu.Unlock()
				if time.Now().After(s.Until()) {
					errs <- errors.New("granted after the session's reckoning ran out")
				}
				mu.Lock()
				inside--
				mu.Unlock()
				if err := s.Unlock(ctx, "x"); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if last == 0 {
		t.Fatal("no grant")
	}
}

// TestReplicatedSessionExpires: a session nobody renews expires after its
// TTL, and its lock goes to the next in line; its keepalive then says the
// session is gone.
func TestReplicatedSessionExpires(t *testing.T) {
	rs := replicated(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := rs[0].Open(ctx, 400*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	ta, err := a.Lock(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	b, err := rs[1].Open(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	go func() { // b stays alive
		for ctx.Err() == nil {
			b.KeepAlive(ctx)
			time.Sleep(100 * time.Millisecond)
		}
	}()
	tb, err := b.Lock(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	if time.Now().Before(a.Until()) {
		t.Errorf("b was granted the lock before a's reckoning ran out (%v left)", time.Until(a.Until()))
	}
	if tb <= ta {
		t.Errorf("token %d after %d", tb, ta)
	}
	if _, err := a.KeepAlive(ctx); !errors.Is(err, lock.ErrSessionGone) {
		t.Errorf("keepalive of the expired session: %v, want ErrSessionGone", err)
	}
}
