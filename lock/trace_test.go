package lock

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/trace"
	"github.com/cohort-go/cohort/wire"
)

// A live run, traced on every node and merged, passes the same checkers as
// a simulated one: integrity, no duplicates, the clock condition on the
// piggybacked vector timestamps, and ME1–ME3.
func TestLiveTracePassesTheCheckers(t *testing.T) {
	const n = 3
	a := algo(t, "ricart-agrawala")
	net, err := transport.NewInProc(n, transport.InProcConfig{})
	if err != nil {
		t.Fatal(err)
	}
	bufs := make([]*bytes.Buffer, n)
	var nodes []*live.Node
	for i := 0; i < n; i++ {
		ep, _ := net.Endpoint(proc.ID(i))
		bufs[i] = &bytes.Buffer{}
		node, err := live.NewNode(live.Config{Self: proc.ID(i), N: n, Transport: ep,
			NewCodec: func(m []proc.Message) (live.Codec, error) { return wire.NewCodec(m) },
			Resolve:  Resolver(a), Trace: bufs[i], TraceFamily: "mutex", TraceAlgo: a.Name})
		if err != nil {
			t.Fatal(err)
		}
		if err := node.Start(); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, node)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, node := range nodes {
		l, err := New(node, "traced", a)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < 5; r++ {
				if _, err := l.Lock(ctx); err != nil {
					t.Error(err)
					return
				}
				time.Sleep(200 * time.Microsecond)
				if err := l.Unlock(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	var traces []*trace.Trace
	for i, node := range nodes {
		if err := node.Close(); err != nil {
			t.Fatal(err)
		}
		tr, err := trace.Read(bufs[i])
		if err != nil {
			t.Fatalf("node %d's trace: %v", i, err)
		}
		traces = append(traces, tr)
	}
	merged, err := live.Merge(traces...)
	if err != nil {
		t.Fatal(err)
	}
	results, err := check.Run(merged, "integrity", "no-duplicates", "clock-condition", "ME1", "ME2", "ME3")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if !r.OK() {
			t.Errorf("%s", r.Counterexample(merged))
		}
	}
	enters := 0
	for _, e := range merged.Events {
		if e.Kind == trace.Output && e.Type == "enter" {
			enters++
		}
	}
	if enters != 15 {
		t.Errorf("%d entries in the merged trace, want 15", enters)
	}
}
