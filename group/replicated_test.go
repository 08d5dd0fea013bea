package group_test

import (
	"context"
	"errors"
	"fmt"
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
// asks for a position already dropped is told so.
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
	if _, _, err := rs[0].Deliveries(ctx, "other", 5); !errors.Is(err, group.ErrCompacted) {
		t.Errorf("from a position never kept: %v, want ErrCompacted", err)
	}
}
