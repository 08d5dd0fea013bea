package lock_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-go/cohort/lock"
	"github.com/cohort-go/cohort/proc"
)

// TestClientFollowsTheLeader: every answer of a node names it and the
// leader it knows; a client given every node's endpoint, starting at a
// follower's, sends its requests to the leader once an answer has shown
// which endpoint that is — so that grants are answered where they commit.
func TestClientFollowsTheLeader(t *testing.T) {
	rs := replicated(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var leader proc.ID
	waitFor(t, func() bool { leader = rs[0].LeaderHint(); return leader != proc.None })
	for _, r := range rs { // every node knows it
		waitFor(t, func() bool { return r.LeaderHint() == leader })
	}
	counts := make([]atomic.Int64, len(rs))
	var urls []string
	for i, r := range rs {
		h := lock.NewServer(lock.ServerConfig{Replicated: r}).Handler()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			counts[i].Add(1)
			h.ServeHTTP(w, req)
			if got := w.Header().Get(lock.NodeHeader); got != strconv.Itoa(i) {
				t.Errorf("node %d answered as %s %q", i, lock.NodeHeader, got)
			}
		}))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	// Start at the first follower.
	first := (int(leader) + 1) % len(rs)
	c := &lock.Client{Endpoints: append(urls[first:], urls[:first]...)}
	s, err := c.OpenSession(ctx, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 * len(rs) { // the last rounds go to the leader alone
		if _, err := s.Lock(ctx, "x"); err != nil {
			t.Fatal(err)
		}
		if err := s.Unlock(ctx, "x"); err != nil {
			t.Fatal(err)
		}
	}
	before := counts[leader].Load()
	for range 5 {
		if _, err := s.Lock(ctx, "x"); err != nil {
			t.Fatal(err)
		}
		if err := s.Unlock(ctx, "x"); err != nil {
			t.Fatal(err)
		}
	}
	if got := counts[leader].Load() - before; got != 10 {
		for i := range counts {
			t.Logf("node %d: %d requests", i, counts[i].Load())
		}
		t.Fatalf("the leader (node %d) took %d of the last 10 requests; want all", leader, got)
	}
}

// failingThenLive is a client of two endpoints: the first always fails
// (503, no leader there), counted in failed; the second, counted in
// answered, answers as node 1 naming node 0 as the leader — so the
// failing endpoint may be the leader's.
func failingThenLive(t *testing.T, failed, answered *atomic.Int64) *lock.Client {
	t.Helper()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		failed.Add(1)
		http.Error(w, `{"error":"no leader"}`, http.StatusServiceUnavailable)
	}))
	t.Cleanup(failing.Close)
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answered.Add(1)
		w.Header().Set(lock.NodeHeader, "1")
		w.Header().Set(lock.LeaderHeader, "0")
		w.Write([]byte(`{"session":7,"valid_ms":5000,"token":9}`))
	}))
	t.Cleanup(live.Close)
	return &lock.Client{Endpoints: []string{failing.URL, live.URL}}
}

// TestClientDoesNotFollowIntoAFailingEndpoint: while the client seeks
// the leader's endpoint among those no answer has named, it skips one
// whose last request failed (here: 503, no leader there), and keeps
// asking the node that answers.
func TestClientDoesNotFollowIntoAFailingEndpoint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var failed, answered atomic.Int64
	c := failingThenLive(t, &failed, &answered)
	s, err := c.OpenSession(ctx, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if failed.Load() != 1 || answered.Load() != 1 {
		t.Fatalf("open: %d requests failed, %d answered; want 1 and 1", failed.Load(), answered.Load())
	}
	for range 5 {
		if _, err := s.Lock(ctx, "x"); err != nil {
			t.Fatal(err)
		}
		if err := s.Unlock(ctx, "x"); err != nil {
			t.Fatal(err)
		}
	}
	if got := failed.Load() - 1; got != 0 {
		t.Fatalf("the failing endpoint was asked %d more times", got)
	}
}

// TestClientTriesAFailedEndpointAgainLater: an endpoint passed over
// because a request to it failed is sought again once avoidFor has
// passed (a node back after a blip can be the leader's), and passed over
// again when it fails again.
func TestClientTriesAFailedEndpointAgainLater(t *testing.T) {
	const avoid = time.Second
	defer lock.SetAvoidFor(avoid)()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var failed, answered atomic.Int64
	c := failingThenLive(t, &failed, &answered)
	s, err := c.OpenSession(ctx, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	opened := time.Now()
	// Within avoidFor of the failure: not asked (its time is the
	// failure's, which came before opened).
	for time.Since(opened) < avoid/2 && failed.Load() == 1 {
		if _, err := s.Lock(ctx, "x"); err != nil {
			t.Fatal(err)
		}
	}
	if time.Since(opened) < avoid/2 {
		t.Fatalf("the failing endpoint was asked again %v after its failure", time.Since(opened))
	}
	// Past it: asked once more (the search for the leader's endpoint),
	// then passed over again.
	for failed.Load() == 1 {
		if _, err := s.Lock(ctx, "x"); err != nil {
			t.Fatal(err)
		}
		if ctx.Err() != nil {
			t.Fatal("the failing endpoint was never asked again")
		}
	}
	again := time.Now()
	for time.Since(again) < avoid/2 {
		if _, err := s.Lock(ctx, "x"); err != nil {
			t.Fatal(err)
		}
	}
	if got := failed.Load(); got != 2 {
		t.Fatalf("the failing endpoint was asked %d times; want 2 (once more after avoidFor)", got)
	}
}

// TestClientLeavesALeaderCutOff: a client waits for a lock at the leader,
// whose endpoint it follows; the leader is then cut off from the other
// nodes, not from the client. The others elect a leader and may grant
// the lock; the old one, deposed by CheckQuorum, keeps answering the
// client's long poll 202 (still waiting), and names no leader. The client
// must take its request to another node rather than wait there until the
// partition heals.
func TestClientLeavesALeaderCutOff(t *testing.T) {
	rs, nw := startReplicatedLocks(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var leader proc.ID
	waitFor(t, func() bool { leader = rs[0].LeaderHint(); return leader != proc.None })
	for _, r := range rs {
		waitFor(t, func() bool { return r.LeaderHint() == leader })
	}
	urls := serve(t, rs)
	c := &lock.Client{Endpoints: append(urls[leader:], urls[:leader]...)} // the leader's first
	s, err := c.OpenSession(ctx, 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Held elsewhere, so that the client's request waits at the leader.
	other, _ := holding(ctx, t, rs[(leader+1)%3], "x")
	got := make(chan error, 1)
	go func() { _, err := s.Lock(ctx, "x"); got <- err }()
	waitFor(t, func() bool { return rs[leader].WaitingForGrant() == 1 })

	nw.Isolate(leader, true)
	defer nw.Isolate(leader, false)
	if err := other.Close(ctx); err != nil { // through a node of the majority
		t.Fatal(err)
	}
	const within = 10 * time.Second // CheckQuorum's election timeout, a few waits of 1 s
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("the lock, with the leader cut off: %v", err)
		}
	case <-time.After(within):
		t.Fatalf("no lock %v after the old leader (node %d) was cut off and the holder let go: the client waits at the old leader", within, leader)
	}
}
