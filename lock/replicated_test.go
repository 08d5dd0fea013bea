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
	return replicatedAt(t, n, 0)
}

// replicatedAt is replicated with every node's clock running at rate
// (live.Config.ClockRate).
func replicatedAt(t *testing.T, n int, rate float64) []*lock.Replicated {
	t.Helper()
	nodes := livetest.Start(t, n, live.Config{DataDir: t.TempDir(), ClockRate: rate})
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
	if early := handOn(t, 0, 400*time.Millisecond); early > 0 {
		t.Errorf("b was granted the lock before a's reckoning ran out (%v left)", early)
	}
}

// Clock drift, injected: every node's clock gains or loses against real
// time (live.Config.ClockRate), and so does the leader's, on which
// sessions expire. Within the drift bound the sessions assume
// (consensus.MaxDrift, 1%) the lock goes to the next holder only after
// the last one's reckoning ran out; a clock twice as fast breaks that,
// and the check catches it.
func TestSessionsUnderClockDrift(t *testing.T) {
	for _, rate := range []float64{1.009, 0.991} {
		early := handOn(t, rate, time.Second)
		if early > 0 {
			t.Errorf("clocks at rate %v: b was granted the lock %v before a's reckoning ran out", rate, early)
		}
		t.Logf("clocks at rate %v: b's Lock returned %v after a's reckoning ran out", rate, -early)
	}
	// Here the leader expires a's session at half its reckoning: with a
	// TTL of 6 s, 3 s before it ran out, a margin that a loaded machine's
	// delays to b's return (over 0.5 s seen with a TTL of 1 s) do not use
	// up.
	early := handOn(t, 2, 6*time.Second)
	if early <= 0 {
		t.Errorf("clocks twice as fast: b was granted the lock %v after a's reckoning ran out; the check cannot see drift beyond the bound", -early)
	}
	t.Logf("clocks twice as fast: b's Lock returned %v before a's reckoning ran out", early)
}

// handOn opens session a of ttl on a cluster of three whose clocks run at
// rate, takes a lock under it and lets a lapse, while session b waits
// for the lock; it returns how long before a's reckoning (Until) ran out
// b's Lock returned (≤ 0: after). b's grant came before its return, so a
// positive result is a real overlap.
func handOn(t *testing.T, rate float64, ttl time.Duration) (early time.Duration) {
	t.Helper()
	rs := replicatedAt(t, 3, rate)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := rs[0].Open(ctx, ttl)
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
	early = time.Until(a.Until())
	if tb <= ta {
		t.Errorf("token %d after %d", tb, ta)
	}
	if _, err := a.KeepAlive(ctx); !errors.Is(err, lock.ErrSessionGone) {
		t.Errorf("keepalive of the expired session: %v, want ErrSessionGone", err)
	}
	return early
}
