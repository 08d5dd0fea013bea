package queue_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/queue"
)

// TestReplicatedPipeline: one publisher's pipelined puts through a node
// of R3, some of its runs lost on their way (as at a change of leader):
// every put is acknowledged, in order, and the queue holds each once, in
// the order put.
func TestReplicatedPipeline(t *testing.T) {
	rs, stop := replicatedQueues(t, 3, t.TempDir(), queue.ReplicatedConfig{})
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := rs[1].PutContext(ctx, "warm-up", nil); err != nil { // a leader
		t.Fatal(err)
	}
	var runs atomic.Int64
	queue.LoseRuns(rs[1], func(run consensus.QueuePutRun) bool {
		return run.Queue == "jobs" && runs.Add(1)%5 == 2
	})
	p, err := queue.NewPipeline(rs[1], "jobs", 64)
	if err != nil {
		t.Fatal(err)
	}
	const n = 500
	acks := make([]*queue.PutAck, n)
	for i := range acks {
		acks[i] = p.PutAsync(fmt.Appendf(nil, "m%04d", i))
	}
	var last uint64
	for i, a := range acks {
		id, err := a.Wait(ctx)
		if err != nil || id <= last {
			t.Fatalf("put %d: id %d (the one before: %d), %v", i, id, last, err)
		}
		last = id
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	queue.LoseRuns(rs[1], nil)
	ms, err := rs[2].PollN("jobs", time.Hour, 2*n)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range ms {
		if want := fmt.Sprintf("m%04d", i); string(m.Body) != want {
			t.Fatalf("message %d of %d is %s, want %s: each put once, in order", i, len(ms), m.Body, want)
		}
	}
	if len(ms) != n {
		t.Fatalf("%d messages, want %d", len(ms), n)
	}
	t.Logf("%d runs, %d refused as early", runs.Load(), queue.Early(rs[1]))
}
