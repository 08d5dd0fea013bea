package node

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/group"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/lock"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/registry"
	"github.com/cohort-go/cohort/trace"
)

// With TraceDir, every kind of service has a trace of its own on each
// node, and a kind's traces merge into a run of its family: the groups'
// into a multicast run that the multicast checkers pass, the DHT's into
// an overlay run that the overlay's pass. The locks stay in the node's
// trace. An edited copy of the group run, where one member delivers two
// messages in the other order, breaks total order.
func TestTraceDirGivesEachKindItsTrace(t *testing.T) {
	const n, each = 3, 2
	ra, _ := registry.Find("mutex", "ricart-agrawala")
	seq, _ := group.Algorithm("total-sequencer")
	net, err := transport.NewInProc(n, transport.InProcConfig{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	nodes := make([]*Node, n)
	main := make([]bytes.Buffer, n) // the node's trace: the locks
	var eps []string
	for i := range n {
		ep, _ := net.Endpoint(proc.ID(i))
		nd, err := New(Config{ID: proc.ID(i), N: n, Transport: ep, Lock: ra, Group: seq, DHT: true,
			Trace: &main[i], TraceFamily: ra.Family, TraceAlgo: ra.Name, TraceStates: true,
			TraceDir: filepath.Join(dir, fmt.Sprint("node", i)),
			Logger:   slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nd.Close() }) // (again: Close is idempotent)
		nodes[i] = nd
		srv := httptest.NewServer(nd.Handler())
		t.Cleanup(srv.Close)
		eps = append(eps, srv.URL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// A lock, every node multicasting to a group, a put, a get and a
	// lookup on the DHT.
	h, err := (&lock.Client{Endpoints: eps[1:2]}).Acquire(ctx, "jobs", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	var streams []<-chan group.Delivery
	for _, nd := range nodes {
		g, err := nd.groups.Group("news")
		if err != nil {
			t.Fatal(err)
		}
		ds, _ := g.Deliveries(ctx)
		streams = append(streams, ds)
	}
	for i, nd := range nodes {
		g, _ := nd.groups.Group("news")
		for k := range each {
			if _, err := g.Multicast(ctx, []byte{byte('a' + i), byte('0' + k)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, ds := range streams {
		for k := range n * each {
			select {
			case <-ds:
			case <-ctx.Done():
				t.Fatalf("node %d delivered %d of %d messages", i, k, n*each)
			}
		}
	}
	for _, nd := range nodes {
		select {
		case <-nd.DHT().Ready():
		case <-ctx.Done():
			t.Fatal("the DHT did not start")
		}
	}
	if _, err := nodes[0].DHT().Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	if r, err := nodes[1].DHT().Get(ctx, "k"); err != nil || r.Value != "v" {
		t.Fatalf("get: %+v, %v", r, err)
	}
	if _, err := nodes[2].DHT().Lookup(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	for _, nd := range nodes {
		nd.Close() // flushes the traces
	}

	// The node's trace holds the locks' events, and only theirs.
	for i := range main {
		tr, err := trace.Read(&main[i])
		if err != nil {
			t.Fatal(err)
		}
		svcs := check.Services(tr)
		if tr.Header.Algo != "ricart-agrawala" || len(svcs) == 0 || slices.ContainsFunc(svcs, func(s string) bool { return !strings.HasPrefix(s, "lock/") }) {
			t.Errorf("node %d's trace: %s/%s of services %q; want the locks' alone", i, tr.Header.Family, tr.Header.Algo, svcs)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "node0", "lock.jsonl")); err == nil {
		t.Error("the locks have a trace in the directory too")
	}
	if _, err := os.Stat(filepath.Join(dir, "node0", kindsService+".jsonl")); err == nil {
		t.Error("the founders' exchange of their kinds has a trace, as if a run")
	}

	// The groups: a multicast run of total-sequencer, every member
	// delivering every message, which the algorithm's checkers pass.
	run := merged(t, dir, n, "group")
	if run.Header.Family != "multicast" || run.Header.Algo != "total-sequencer" {
		t.Fatalf("the groups' trace is a run of %s/%s", run.Header.Family, run.Header.Algo)
	}
	var delivered []int
	for i, e := range run.Events {
		if e.Kind == trace.Output && e.Type == "deliver" {
			delivered = append(delivered, i)
		}
	}
	if len(delivered) != n*n*each {
		t.Errorf("%d deliveries in the group run, want %d", len(delivered), n*n*each)
	}
	results := checked(t, run, seq.Checks)
	for _, r := range results {
		if !r.OK() {
			t.Errorf("%s on the live group run: %s %s", r.Name, r.Status, r.Detail)
		}
	}

	// Node 1 delivers its first two messages the other way round.
	var at1 []int
	for _, i := range delivered {
		if run.Events[i].Node == 1 && len(at1) < 2 {
			at1 = append(at1, i)
		}
	}
	bad := &trace.Trace{Header: run.Header, Events: slices.Clone(run.Events)}
	a, b := &bad.Events[at1[0]], &bad.Events[at1[1]]
	a.Data, b.Data, a.Label, b.Label = b.Data, a.Data, b.Label, a.Label
	for _, r := range checked(t, bad, []string{"total-order"}) {
		if r.Status != check.Violated || !strings.Contains(r.Detail, "p1 delivered") || len(r.Events) == 0 {
			t.Errorf("total-order with p1's deliveries #%d and #%d swapped: %s %q, events %v", at1[0], at1[1], r.Status, r.Detail, r.Events)
		}
	}

	// The DHT: an overlay run of Scribe (on Pastry), whose lookups and
	// gets were answered at their keys' homes.
	run = merged(t, dir, n, "dht")
	if run.Header.Family != "overlay" || run.Header.Algo != "scribe" {
		t.Fatalf("the DHT's trace is a run of %s/%s", run.Header.Family, run.Header.Algo)
	}
	kinds := map[string]int{}
	for _, e := range run.Events {
		if e.Kind == trace.Input || e.Kind == trace.Output {
			kinds[e.Type]++
		}
	}
	for _, k := range []string{"put", "stored", "get", "got", "lookup", "delivered"} {
		if kinds[k] != 1 {
			t.Errorf("the DHT's run has %d %q events, want 1 (%v)", kinds[k], k, kinds)
		}
	}
	sc, _ := registry.Find("overlay", "scribe")
	for _, r := range checked(t, run, sc.Checks) {
		if !r.OK() {
			t.Errorf("%s on the live DHT run: %s %s", r.Name, r.Status, r.Detail)
		}
	}
}

// merged reads the n nodes' traces of kind in dir and merges them.
func merged(t *testing.T, dir string, n int, kind string) *trace.Trace {
	t.Helper()
	var ts []*trace.Trace
	for i := range n {
		f, err := os.Open(filepath.Join(dir, fmt.Sprint("node", i), kind+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		tr, err := trace.Read(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, tr)
	}
	m, err := live.Merge(ts...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func checked(t *testing.T, tr *trace.Trace, names []string) []check.Result {
	t.Helper()
	rs, err := check.Run(tr, names...)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 {
		t.Fatal("no checks")
	}
	return rs
}
