package group_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/group"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/livetest"
)

func replicatedGroups(t *testing.T, n int) []*group.Replicated {
	t.Helper()
	nodes := livetest.Start(t, n, live.Config{DataDir: t.TempDir()})
	var rs []*group.Replicated
	for _, nd := range nodes {
		r, err := group.NewReplicated(nd, consensus.DefaultConfig)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	return rs
}

// Senders on every node of three multicast at once; every node delivers
// every acknowledged message once, at the position acknowledged, in one
// order; a listener that joins late resumes from position 1; one that
// asks for a position not yet delivered waits for it.
func TestReplicatedGroupOrder(t *testing.T) {
	rs := replicatedGroups(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	streams := make([]<-chan group.Delivery, 3)
	for i, r := range rs {
		ds, _, err := r.Deliveries(ctx, "g", 0)
		if err != nil {
			t.Fatal(err)
		}
		streams[i] = ds
	}
	const per = 50
	var mu sync.Mutex
	acked := map[uint64]string{}
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range per {
				body := fmt.Sprintf("n%d-%d", i, k)
				d, err := r.Multicast(ctx, "g", []byte(body))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked[d.Pos] = body
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(acked) != 3*per {
		t.Fatalf("%d distinct positions acknowledged for %d messages", len(acked), 3*per)
	}
	check := func(who string, ds <-chan group.Delivery) {
		t.Helper()
		for p := uint64(1); p <= 3*per; p++ {
			select {
			case d := <-ds:
				if d.Pos != p || string(d.Body) != acked[p] {
					t.Fatalf("%s: got %q at %d, want %q at %d", who, d.Body, d.Pos, acked[p], p)
				}
			case <-ctx.Done():
				t.Fatalf("%s: position %d never came", who, p)
			}
		}
	}
	for i, ds := range streams {
		check(fmt.Sprintf("node %d", i), ds)
	}
	late, _, err := rs[2].Deliveries(ctx, "g", 1)
	if err != nil {
		t.Fatal(err)
	}
	check("a late listener from 1", late)
	// A listener that asks for a position not yet delivered — here, of a
	// group nothing was sent to — waits for it, as one does on a node
	// that has just restarted and not yet replayed the log.
	ahead, _, err := rs[1].Deliveries(ctx, "other", 3)
	if err != nil {
		t.Fatalf("from a position not yet delivered: %v", err)
	}
	for k := range 4 {
		if _, err := rs[k%3].Multicast(ctx, "other", []byte(fmt.Sprint(k+1))); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []uint64{3, 4} {
		select {
		case d := <-ahead:
			if d.Pos != want || string(d.Body) != fmt.Sprint(want) {
				t.Fatalf("a listener from 3: got %q at %d, want %q at %d", d.Body, d.Pos, fmt.Sprint(want), want)
			}
		case <-ctx.Done():
			t.Fatalf("a listener from 3: position %d never came", want)
		}
	}
}

// A listener that asks for a position the node no longer keeps (only the
// last LiveRetain messages of a group are) is told so, and which is the
// oldest it keeps.
func TestReplicatedGroupCompacted(t *testing.T) {
	rs := replicatedGroups(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := group.LiveRetain + 10
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 64 {
		wg.Go(func() {
			for k := w; k < n; k += 64 {
				if _, err := rs[k%3].Multicast(ctx, "big", []byte("x")); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Every node has delivered all n once a listener from n gets it.
	for i, r := range rs {
		ds, _, err := r.Deliveries(ctx, "big", uint64(n))
		if err != nil {
			t.Fatal(err)
		}
		select {
		case d := <-ds:
			if d.Pos != uint64(n) {
				t.Fatalf("node %d: got position %d, want %d", i, d.Pos, n)
			}
		case <-ctx.Done():
			t.Fatalf("node %d never delivered position %d", i, n)
		}
	}
	_, _, err := rs[0].Deliveries(ctx, "big", 1)
	if !errors.Is(err, group.ErrCompacted) || !strings.Contains(err.Error(), "the oldest is 11") {
		t.Fatalf("from position 1 of %d: %v, want ErrCompacted naming the oldest kept, 11", n, err)
	}
}

// The cluster keeps at most MaxGroups groups (a group's positions never
// go back, so it is never forgotten): a message to one more is refused
// with ErrTooManyGroups at every node, nothing is delivered for it, and
// the groups kept go on.
func TestReplicatedGroupsAreBounded(t *testing.T) {
	rs := replicatedGroups(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	names := make(chan string)
	for w := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range names {
				if _, err := rs[w%3].Multicast(ctx, name, []byte("x")); err != nil {
					t.Error(name, err)
				}
			}
		}()
	}
	for i := range group.MaxGroups {
		names <- fmt.Sprint("g", i)
	}
	close(names)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for i, r := range rs {
		_, err := r.Multicast(ctx, fmt.Sprint("more", i), []byte("x"))
		if !errors.Is(err, group.ErrTooManyGroups) || !strings.Contains(err.Error(), fmt.Sprint(group.MaxGroups)) {
			t.Fatalf("node %d: a message to one group too many: %v, want ErrTooManyGroups naming %d", i, err, group.MaxGroups)
		}
	}
	// Over HTTP: 507, naming the limit.
	h := httptest.NewServer(group.NewServer(group.ServerConfig{Replicated: rs[2]}).Handler())
	defer h.Close()
	resp, err := http.Post(h.URL+"/v1/groups/one-more/messages", "application/octet-stream", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusInsufficientStorage || !strings.Contains(string(msg), fmt.Sprint(group.MaxGroups)) {
		t.Fatalf("over HTTP: %d %s, want 507 naming %d", resp.StatusCode, msg, group.MaxGroups)
	}
	d, err := rs[1].Multicast(ctx, "g7", []byte("y"))
	if err != nil || d.Pos != 2 {
		t.Fatalf("a kept group after the refusals: %+v, %v; want position 2", d, err)
	}
}
