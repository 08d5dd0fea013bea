package queue_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/consensus"
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
	t.Logf("killed node %d, the leader, after %d puts acknowledged: %s; %d streams", lead, at, h.Summary(), h.Streams())
	if n := h.Publishers(); n != 1 || h.Streams() < 2 {
		t.Fatalf("%d Publishers, %d streams: want one Publisher that replaced its stream", n, h.Streams())
	}
}

// A stream of puts to a replicated queue that fills: the puts that fit
// are acknowledged, the rest fail as refused (507), none of them stored;
// a put bigger than a replicated message is refused (413).
func TestReplicatedStreamRefusals(t *testing.T) {
	rs, stop := replicatedQueues(t, 3, t.TempDir(), queue.ReplicatedConfig{Limits: consensus.QueueLimits{Messages: 5}})
	defer stop()
	srv := httptest.NewServer(queue.Handler(rs[0]))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := &queue.Client{Endpoints: []string{srv.URL}}
	p, err := c.Publish(ctx, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	var acks []*queue.PutAck
	for i := range 8 {
		acks = append(acks, p.PutAsync(fmt.Appendf(nil, "m%d", i)))
	}
	for i, a := range acks {
		id, err := a.Wait(ctx)
		if i < 5 && (err != nil || id == 0) {
			t.Fatalf("put %d: id %d, %v", i, id, err)
		}
		if i >= 5 && (err == nil || !strings.Contains(err.Error(), "HTTP 507")) {
			t.Fatalf("put %d past the limit: %v, want HTTP 507", i, err)
		}
	}
	p.Close(ctx)
	if ms, err := rs[1].PollN("jobs", time.Minute, 10); err != nil || len(ms) != 5 {
		t.Fatalf("the queue holds %d messages (%v), want 5", len(ms), err)
	}
	p, err = c.Publish(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Put(ctx, make([]byte, queue.MaxReplicatedMessage+1)); err == nil || !strings.Contains(err.Error(), "HTTP 413") {
		t.Fatalf("a put of %d bytes: %v, want HTTP 413", queue.MaxReplicatedMessage+1, err)
	}
}
