package lock_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/cohort-go/cohort/lock"
)

// TestLockRetriedThroughAnotherNode: a client asks node A for a lock
// (session C, operation seq k), gives up waiting there (A paused, or cut
// off from the client) and asks node B with the same k — the retry of one
// operation. A must not withdraw the request when its wait ends: that
// would release the lock the retry is granted, or leave the retry waiting
// for ever. The grant goes to the retry when the holder lets go, and C
// still holds the lock afterwards.
func TestLockRetriedThroughAnotherNode(t *testing.T) {
	rs := replicated(t, 3)
	base := make([]string, 3)
	for i, r := range rs {
		srv := httptest.NewServer(lock.NewServer(lock.ServerConfig{Replicated: r}).Handler())
		t.Cleanup(srv.Close)
		base[i] = srv.URL
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := rs[2].Open(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	held, err := h.Lock(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	c, err := rs[0].Open(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	const k = 1000
	post := func(ctx context.Context, node int) (uint64, error) {
		url := fmt.Sprintf("%s/v1/locks/x?session=%d&seq=%d", base[node], c.ID, k)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		var out struct{ Token uint64 }
		err = json.NewDecoder(resp.Body).Decode(&out)
		return out.Token, err
	}

	// The first try waits at A until the client gives up on it.
	actx, giveUp := context.WithCancel(ctx)
	first := make(chan error, 1)
	go func() { _, err := post(actx, 0); first <- err }()
	waitFor(t, func() bool { return rs[0].WaitingForGrant() == 1 })
	// A barrier: an entry A proposes after the request is in the log after it.
	if _, err := rs[0].Open(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	giveUp()
	if err := <-first; err == nil {
		t.Fatal("the first try was granted while the lock was held")
	}
	waitFor(t, func() bool { return rs[0].WaitingForGrant() == 0 })

	// The retry through B; then the holder lets go.
	type result struct {
		token uint64
		err   error
	}
	retry := make(chan result, 1)
	go func() { tok, err := post(ctx, 1); retry <- result{tok, err} }()
	waitFor(t, func() bool { return rs[1].WaitingForGrant() == 1 })
	if err := h.Unlock(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-retry:
		if r.err != nil {
			t.Fatalf("the retry: %v", r.err)
		}
		if r.token <= held {
			t.Errorf("the retry was granted token %d, not above the holder's %d", r.token, held)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the retry was never granted: the request was withdrawn when the first try gave up")
	}
	// C holds x, at every node, and nobody took it back.
	for _, r := range rs {
		waitFor(t, func() bool { s, _ := r.Holder("x"); return s == c.ID })
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// waitFor waits, up to 10 s, until cond holds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for a condition")
		}
		time.Sleep(time.Millisecond)
	}
}
