package leader

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cohort-go/cohort/election"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/livetest"
	"github.com/cohort-go/cohort/proc"
)

// fast are timeouts for tests: failover in well under a second.
var fast = election.LeaderConfig{Heartbeat: 20 * time.Millisecond, Timeout: 250 * time.Millisecond, Quorum: true}

func cluster(t *testing.T, n int) []*live.Node {
	t.Helper()
	return livetest.Start(t, n, live.Config{Resolve: Resolver(fast)})
}

func elections(t *testing.T, nodes []*live.Node, name string) []*Election {
	t.Helper()
	var es []*Election
	for _, n := range nodes {
		e, err := New(n, name, fast)
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	return es
}

// agree waits until every election in es sees leader.
func agree(t *testing.T, es []*Election, leader proc.ID, within time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for i, e := range es {
		if e == nil {
			continue
		}
		if l, err := e.WaitFor(ctx, func(l Leadership) bool { return l.Leader == leader }); err != nil {
			t.Fatalf("node %d sees leader %s, want %s within %v", i, l.Leader, leader, within)
		}
	}
}

func campaign(t *testing.T, e *Election) <-chan error {
	errc := make(chan error, 1)
	go func() { errc <- e.Campaign(context.Background()) }()
	return errc
}

// The highest candidate leads and every node, observers included, agrees;
// lower candidates wait under it; when the leader's node dies the next
// candidate takes over, and a candidate that resigns hands over.
func TestCampaignFailoverResign(t *testing.T) {
	nodes := cluster(t, 5)
	es := elections(t, nodes, "jobs")
	// p3 campaigns first: candidates that start together may each lead in
	// turn, a lower one until the higher one's candidacy reaches it (a
	// candidate stands against the candidates it has heard of).
	c3 := campaign(t, es[3])
	if err := <-c3; err != nil {
		t.Fatal(err)
	}
	c1, c2 := campaign(t, es[1]), campaign(t, es[2])
	agree(t, es, 3, 2*time.Second)
	if id, ok := es[0].Leader(); !ok || id != 3 {
		t.Fatalf("observer p0: Leader() = %s, %v", id, ok)
	}
	time.Sleep(5 * fast.Heartbeat) // p2's election under p3: it must not win
	select {
	case err := <-c2:
		t.Fatalf("p2's campaign ended while p3 leads: %v", err)
	default:
	}

	before := es[0].Current().Term
	start := time.Now()
	nodes[3].Close()
	es[3] = nil
	if err := <-c2; err != nil {
		t.Fatal(err)
	}
	agree(t, es, 2, 2*time.Second)
	t.Logf("failover after the leader's node closed: %v", time.Since(start))
	if after := es[2].Current().Term; before == 0 || after <= before {
		t.Errorf("term %d after the failover, %d before: terms must rise", after, before)
	}

	if err := es[2].Resign(); err != nil {
		t.Fatal(err)
	}
	if err := <-c1; err != nil {
		t.Fatal(err)
	}
	agree(t, es, 1, 2*time.Second)
	if es[2].Campaigning() || !es[1].Campaigning() {
		t.Error("Campaigning() wrong after resign and win")
	}
}

// A campaign given up by its context withdraws the candidacy.
func TestCampaignCancelWithdraws(t *testing.T) {
	nodes := cluster(t, 3)
	es := elections(t, nodes, "x")
	if err := es[2].Campaign(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := es[1].Campaign(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("p1's campaign under p2: %v, want deadline exceeded", err)
	}
	if es[1].Campaigning() {
		t.Fatal("p1 still campaigning")
	}
	// p2 resigns: nobody is a candidate any more, so nobody leads.
	if err := es[2].Resign(); err != nil {
		t.Fatal(err)
	}
	agree(t, es, proc.None, 2*time.Second)
	time.Sleep(5 * fast.Heartbeat)
	for i, e := range es {
		if id, ok := e.Leader(); ok {
			t.Errorf("node %d: leader %s with no candidate", i, id)
		}
	}
}

// Watch sends the current view first, then every change; a node that joins
// an election late learns the leader at once.
func TestWatchAndLateJoin(t *testing.T) {
	nodes := cluster(t, 4)
	e3, err := New(nodes[3], "w", fast)
	if err != nil {
		t.Fatal(err)
	}
	e2, err := New(nodes[2], "w", fast)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	w := e2.Watch(ctx)
	if first := <-w; first.Leader != proc.None {
		t.Fatalf("first view %+v, want no leader", first)
	}
	if err := e3.Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	for l := range w {
		if l.Leader == 3 {
			if l.Self || l.Changes == 0 {
				t.Errorf("view %+v", l)
			}
			break
		}
	}
	// Node 0 joins after the election: the service was started by the
	// cluster's heartbeats; Report tells the newcomer the leader.
	time.Sleep(5 * fast.Heartbeat)
	e0, err := New(nodes[0], "w", fast)
	if err != nil {
		t.Fatal(err)
	}
	agree(t, []*Election{e0}, 3, time.Second)
}

func TestBadNames(t *testing.T) {
	nodes := cluster(t, 1)
	for _, name := range []string{"", "a/b", "white space"} {
		if _, err := New(nodes[0], name, fast); err == nil {
			t.Errorf("New(%q): no error", name)
		}
	}
}
