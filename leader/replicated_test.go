package leader_test

import (
	"context"
	"testing"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/leader"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/livetest"
	"github.com/cohort-go/cohort/lock"
	"github.com/cohort-go/cohort/proc"
)

// Elections on the replicated table: the first candidate leads, the next
// leads when its session ends, every node's view follows, and terms rise.
func TestReplicatedElection(t *testing.T) {
	nodes := livetest.Start(t, 3, live.Config{DataDir: t.TempDir()})
	var rs []*lock.Replicated
	var es []*leader.Replicated
	for i, nd := range nodes {
		r, err := lock.NewReplicated(nd, consensus.DefaultConfig)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
		es = append(es, leader.NewReplicated(r, proc.ID(i), nil))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := rs[1].Open(ctx, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	b, err := rs[2].Open(ctx, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ta, err := es[1].Campaign(ctx, a, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	led := make(chan uint64, 1)
	go func() {
		tb, err := es[2].Campaign(ctx, b, "jobs")
		if err != nil {
			t.Error(err)
		}
		led <- tb
	}()
	agree := func(want proc.ID, term uint64) {
		t.Helper()
		for _, e := range es {
			for {
				l, changed, err := e.Current("jobs")
				if err != nil {
					t.Fatal(err)
				}
				if l.Leader == want && l.Term == term {
					break
				}
				select {
				case <-changed:
				case <-ctx.Done():
					t.Fatalf("a node sees leader %d term %d, want %d term %d", l.Leader, l.Term, want, term)
				}
			}
		}
	}
	agree(1, ta)
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	tb := <-led
	if tb <= ta {
		t.Fatalf("term %d after %d", tb, ta)
	}
	agree(2, tb)
	if err := es[2].Resign(ctx, b, "jobs"); err != nil {
		t.Fatal(err)
	}
	agree(proc.None, 0)
}
