package queue_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/cohort-go/cohort/queue"
	"github.com/cohort-go/cohort/queue/queuetest"
)

// A Publisher streams to the leader of three nodes with replicated
// queues, which is killed mid-stream: the Publisher goes on through
// another node, sending again the puts not acknowledged under their
// numbers, and a consumer gets every acknowledged put, none stored twice.
// Without the numbers (a resend applied again) the history finds puts
// stored twice; without the resend, a Publisher fails at the kill.
func TestPublisherSurvivesTheKillOfItsNode(t *testing.T) {
	cl := startCluster(t, 3, t.TempDir(), queue.ReplicatedConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The leader first: the Publisher streams to it.
	eps := slices.Clone(cl.eps)
	lead := -1
	for lead < 0 && ctx.Err() == nil {
		for i, r := range cl.rs {
			if r.Leading() {
				lead = i
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	eps[0], eps[lead] = eps[lead], eps[0]
	h := queuetest.StartStream("jobs", token, 256, eps...)
	defer h.Stop()
	waitFor := func(n int, what string) {
		t.Helper()
		for h.Acknowledged() < n {
			if ctx.Err() != nil {
				t.Fatalf("%s: %s", what, h.Summary())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor(500, "before the kill")
	cl.nodes[lead].Close()
	cl.srvs[lead].CloseClientConnections()
	go cl.srvs[lead].Close()
	h.Use(eps[1:]...)
	at := h.Acknowledged()
	waitFor(at+500, "after the kill")
	if err := h.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.Check(); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed node %d, the leader, after %d puts acknowledged: %s", lead, at, h.Summary())
	if n := h.Publishers(); n != 1 {
		t.Fatalf("%d Publishers: one failed at the kill", n)
	}
}
