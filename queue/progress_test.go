package queue_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/livetest"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/queue"
)

// TestStreamResumesWhenTheLogMovesAgain: a stream of puts through the
// node that leads the queues' log, cut off from the others for 4 s while
// puts keep coming. Nothing can commit meanwhile, and the stream's runs
// are proposed again after waits that double up to backoff.Max; once the
// partition heals and the node's log moves again (it hears the new
// leader), they are proposed at once, so every put is acknowledged within
// 2 s of the heal (7–16 ms here), not after the rest of a wait of up to
// 5 s (3.6–4.2 s without the wake-up).
func TestStreamResumesWhenTheLogMovesAgain(t *testing.T) {
	const cut, healBound = 4 * time.Second, 2 * time.Second
	for run := range 2 {
		nodes, nw := livetest.StartNetwork(t, 3, live.Config{DataDir: t.TempDir()})
		rs := make([]*queue.Replicated, len(nodes))
		for i, nd := range nodes {
			r, err := queue.NewReplicated(nd, queue.ReplicatedConfig{})
			if err != nil {
				t.Fatal(err)
			}
			rs[i] = r
		}
		ctx, cancel := context.WithTimeout(context.Background(), cut+time.Minute)
		defer cancel()
		lead := -1
		waitUntil(ctx, t, "a leader", func() bool {
			for i, r := range rs {
				if r.Leading() {
					lead = i
					return true
				}
			}
			return false
		})
		srv := httptest.NewServer(queue.Handler(rs[lead]))
		defer srv.Close()
		p, err := (&queue.Client{Endpoints: []string{srv.URL}}).Publish(ctx, "jobs")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Put(ctx, []byte("before")); err != nil {
			t.Fatal(err)
		}
		nw.Isolate(proc.ID(lead), true)
		var acks []*queue.PutAck
		for i := range 8 { // puts through the partition, the last well into it
			acks = append(acks, p.PutAsync(fmt.Appendf(nil, "m%d", i)))
			time.Sleep(cut / 10)
		}
		time.Sleep(cut - 8*cut/10) // the rest of the partition
		healed := time.Now()
		nw.Isolate(proc.ID(lead), false)
		for i, a := range acks {
			if _, err := a.Wait(ctx); err != nil {
				t.Fatalf("run %d: put m%d: %v", run, i, err)
			}
		}
		took := time.Since(healed)
		t.Logf("run %d: every put through the cut-off leader acknowledged %v after the heal, on %d streams", run, took.Round(time.Millisecond), p.Streams())
		if took > healBound {
			t.Errorf("run %d: the puts were acknowledged %v after the partition healed; want within %v", run, took.Round(time.Millisecond), healBound)
		}
		p.Close(ctx)
	}
}
