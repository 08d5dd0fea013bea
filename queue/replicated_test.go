package queue_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/livetest"
	"github.com/cohort-go/cohort/queue"
)

// replicatedQueues starts n nodes in this process, on dir, each with the
// replicated queues; stop closes them.
func replicatedQueues(t *testing.T, n int, dir string, c queue.ReplicatedConfig) (rs []*queue.Replicated, stop func()) {
	t.Helper()
	nodes, stop, err := livetest.New(n, live.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, nd := range nodes {
		r, err := queue.NewReplicated(nd, c)
		if err != nil {
			stop()
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	return rs, stop
}

// Put through one node, got through another, in order; an ack is for
// good, a release gives the message back at the head; a get waits for a
// put through a third node; a transaction acks and puts at once.
func TestReplicatedPutGetAck(t *testing.T) {
	rs, stop := replicatedQueues(t, 3, t.TempDir(), queue.ReplicatedConfig{})
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 5 {
		if id, err := rs[0].PutContext(ctx, "jobs", fmt.Appendf(nil, "m%d", i)); err != nil || id == 0 {
			t.Fatalf("put %d: id %d, %v", i, id, err)
		}
	}
	m, err := rs[2].Get(ctx, "jobs", time.Minute)
	if err != nil || string(m.Body) != "m0" || m.Deliveries != 1 {
		t.Fatalf("get through another node: %+v, %v", m, err)
	}
	if err := rs[1].Ack("jobs", m.ID); err != nil {
		t.Fatal(err)
	}
	if err := rs[1].Ack("jobs", m.ID); !errors.Is(err, queue.ErrNoMessage) {
		t.Errorf("a second ack: %v, want ErrNoMessage", err)
	}
	m1, ok, err := rs[1].Poll("jobs", time.Minute)
	if err != nil || !ok || string(m1.Body) != "m1" {
		t.Fatalf("poll: %+v %v %v", m1, ok, err)
	}
	if err := rs[0].Release("jobs", m1.ID); err != nil {
		t.Fatal(err)
	}
	ms, err := rs[2].PollN("jobs", time.Minute, 10)
	if err != nil || len(ms) != 4 || string(ms[0].Body) != "m1" || ms[0].Deliveries != 2 || string(ms[3].Body) != "m4" {
		t.Fatalf("after a release, poll 10: %+v, %v", ms, err)
	}
	// A transaction: ack two, put one elsewhere.
	ids, err := rs[0].Transact(ctx, []queue.TxAck{{Queue: "jobs", ID: ms[0].ID}, {Queue: "jobs", ID: ms[1].ID}},
		[]queue.TxPut{{Queue: "done", Body: []byte("m1+m2")}})
	if err != nil || len(ids) != 1 {
		t.Fatalf("transaction: %v, %v", ids, err)
	}
	if _, err := rs[0].Transact(ctx, []queue.TxAck{{Queue: "jobs", ID: ms[0].ID}}, []queue.TxPut{{Queue: "done", Body: []byte("again")}}); err == nil {
		t.Fatal("a transaction acking a message acked already went through")
	}
	if d, ok, _ := rs[1].Poll("done", time.Minute); !ok || string(d.Body) != "m1+m2" {
		t.Fatalf("the transaction's put: %q %v", d.Body, ok)
	}
	if _, ok, _ := rs[1].Poll("done", time.Minute); ok {
		t.Fatal("a refused transaction put its message")
	}
	// A get that waits, for a put through another node.
	got := make(chan queue.Message, 1)
	go func() {
		m, err := rs[1].Get(ctx, "later", time.Minute)
		if err != nil {
			t.Error(err)
		}
		got <- m
	}()
	if _, err := rs[0].PutContext(ctx, "later", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if m := <-got; string(m.Body) != "hello" {
		t.Fatalf("the waiting get: %q", m.Body)
	}
	// A lease that runs out: the message goes to the next get (which
	// waits for the expiry); the first consumer can no longer release or
	// ack it under the second's feet.
	if _, err := rs[0].PutContext(ctx, "short", []byte("x")); err != nil {
		t.Fatal(err)
	}
	first, err := rs[0].Get(ctx, "short", 50*time.Millisecond)
	if err != nil || first.Lease == 0 {
		t.Fatalf("get: %+v %v", first, err)
	}
	second, err := rs[1].Get(ctx, "short", time.Minute)
	if err != nil || second.ID != first.ID || second.Lease <= first.Lease || second.Deliveries != 2 {
		t.Fatalf("after the lease ran out: %+v %v (first %+v)", second, err, first)
	}
	if err := rs[0].ReleaseLease("short", first.Lease, first.ID); !errors.Is(err, queue.ErrLeaseLost) {
		t.Errorf("a release under a lost lease: %v", err)
	}
	if err := rs[0].AckLease("short", first.Lease, first.ID); !errors.Is(err, queue.ErrLeaseLost) {
		t.Errorf("an ack under a lost lease: %v", err)
	}
	if err := rs[2].AckLease("short", second.Lease, second.ID); err != nil {
		t.Errorf("an ack under the lease: %v", err)
	}
	st := rs[0].Queues()
	if i := slices.IndexFunc(st, func(s queue.Stats) bool { return s.Name == "jobs" }); i < 0 || st[i].Leased != 2 || !st[i].Replicated {
		t.Errorf("stats: %+v", st)
	}
}

// A queue past its limit refuses puts with ErrFull (507 over HTTP).
func TestReplicatedQueueFull(t *testing.T) {
	rs, stop := replicatedQueues(t, 1, t.TempDir(), queue.ReplicatedConfig{Limits: consensus.QueueLimits{Messages: 2, Bytes: 1 << 20, Queues: 4}})
	defer stop()
	for i := range 2 {
		if _, err := rs[0].Put("q", []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rs[0].Put("q", []byte("x")); !errors.Is(err, queue.ErrFull) {
		t.Fatalf("a third put: %v, want ErrFull", err)
	}
	srv := httptest.NewServer(queue.Handler(rs[0]))
	defer srv.Close()
	_, err := (&queue.Client{Endpoints: []string{srv.URL}}).Put(context.Background(), "q", []byte("x"))
	if err == nil || !strings.Contains(err.Error(), "full") {
		t.Fatalf("over HTTP: %v", err)
	}
}

// The HTTP API over the replicated queues: a put through one node's API,
// a get with count through another's, under one lease, acks, and the same messages after
// every node was closed and started again on its data directory —
// acknowledged ones gone, the rest still there.
func TestReplicatedOverHTTPSurvivesAFullRestart(t *testing.T) {
	dir := t.TempDir()
	rs, stop := replicatedQueues(t, 3, dir, queue.ReplicatedConfig{})
	var eps []string
	for _, r := range rs {
		srv := httptest.NewServer(queue.Handler(r))
		defer srv.Close()
		eps = append(eps, srv.URL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, b := &queue.Client{Endpoints: eps[:1]}, &queue.Client{Endpoints: eps[2:]}
	for i := range 10 {
		if _, err := a.Put(ctx, "jobs", fmt.Appendf(nil, "m%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	ms, err := b.Get(ctx, "jobs", queue.GetOptions{Count: 4, Wait: 10 * time.Second, Visibility: time.Minute})
	if err != nil || len(ms) != 4 || string(ms[0].Body) != "m0" || string(ms[3].Body) != "m3" {
		t.Fatalf("get 4: %+v, %v", ms, err)
	}
	// One get, one lease: the four are acknowledged under the first's
	// (a get that waited for the first and polled the rest leased them
	// in two entries, and this ack failed for three as "lease lost").
	for _, m := range ms {
		if m.Lease == 0 || m.Lease != ms[0].Lease {
			t.Fatalf("the messages of one get under leases %d and %d", ms[0].Lease, m.Lease)
		}
	}
	if err := b.AckLease(ctx, "jobs", ms[0].Lease, ms[0].ID, ms[1].ID, ms[2].ID, ms[3].ID); err != nil {
		t.Fatal(err)
	}
	stop()

	rs, stop = replicatedQueues(t, 3, dir, queue.ReplicatedConfig{})
	defer stop()
	var bodies []string
	for len(bodies) < 6 {
		m, err := rs[len(bodies)%3].Get(ctx, "jobs", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, string(m.Body))
		if err := rs[0].Ack("jobs", m.ID); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"m4", "m5", "m6", "m7", "m8", "m9"}; !slices.Equal(bodies, want) {
		t.Fatalf("after the restart: %q, want %q", bodies, want)
	}
	if _, ok, _ := rs[1].Poll("jobs", time.Minute); ok {
		t.Fatal("a message acked before the restart came back")
	}
}

// A stream of puts through a follower or the leader, on the replicated
// queues: each acknowledged once committed, all there in order, through
// another node.
func TestReplicatedStream(t *testing.T) {
	rs, stop := replicatedQueues(t, 3, t.TempDir(), queue.ReplicatedConfig{})
	defer stop()
	srv := httptest.NewServer(queue.Handler(rs[1]))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := (&queue.Client{Endpoints: []string{srv.URL}}).Publish(ctx, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	acks := make([]*queue.PutAck, n)
	for i := range acks {
		acks[i] = p.PutAsync(fmt.Appendf(nil, "m%d", i))
	}
	for i, a := range acks {
		if _, err := a.Wait(ctx); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	ms, err := rs[2].PollN("jobs", time.Minute, n+1)
	if err != nil || len(ms) != n {
		t.Fatalf("poll through another node: %d messages, %v; want %d", len(ms), err, n)
	}
	for i, m := range ms {
		if string(m.Body) != fmt.Sprint("m", i) {
			t.Fatalf("message %d is %q", i, m.Body)
		}
	}
}

// A node of replicated queues left without a majority (the others
// closed: as cut off) answers a get with 503 naming ErrNoLeader once it
// has known no leader for NoLeaderFor, instead of holding it for its
// whole wait; and a Client's Get goes on from an endpoint that answers
// 503 to the next, which serves it.
func TestGetPassesANodeWithoutALeader(t *testing.T) {
	cl := startCluster(t, 3, t.TempDir(), queue.ReplicatedConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := &queue.Client{Endpoints: cl.eps, Token: token}
	if _, err := c.Put(ctx, "jobs", []byte("m0")); err != nil {
		t.Fatal(err)
	}
	// The Client: a first endpoint that answers 503, then a live node.
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"error":"no leader in reach"}`, http.StatusServiceUnavailable)
	}))
	defer down.Close()
	ms, err := (&queue.Client{Endpoints: []string{down.URL, cl.eps[1]}, Token: token}).Get(ctx, "jobs",
		queue.GetOptions{Count: 1, Wait: 10 * time.Second, Visibility: time.Minute})
	if err != nil || len(ms) != 1 || string(ms[0].Body) != "m0" {
		t.Fatalf("a get past an endpoint answering 503: %+v, %v", ms, err)
	}
	// Node 0 alone.
	cl.nodes[1].Close()
	cl.nodes[2].Close()
	gctx, gcancel := context.WithTimeout(ctx, 20*time.Second)
	defer gcancel()
	_, err = (&queue.Client{Endpoints: cl.eps[:1], Token: token}).Get(gctx, "jobs",
		queue.GetOptions{Count: 1, Wait: 30 * time.Second, Visibility: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), queue.ErrNoLeader.Error()) {
		t.Fatalf("a get at a node without a majority: %v, want a 503 naming ErrNoLeader", err)
	}
}

// TestAckPassesANodeWithoutALeader: a Client's acknowledgement under a
// lease is numbered, so it goes on from an endpoint that answers 503 to
// the next (a plain ack may not: it could still apply where it was
// sent); the message is gone for good. An ack under a lease the message
// is no longer under is refused, names the message, and acknowledges the
// others of the call.
func TestAckPassesANodeWithoutALeader(t *testing.T) {
	cl := startCluster(t, 3, t.TempDir(), queue.ReplicatedConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := &queue.Client{Endpoints: cl.eps[1:2], Token: token}
	for _, b := range []string{"m0", "m1", "m2"} {
		if _, err := c.Put(ctx, "jobs", []byte(b)); err != nil {
			t.Fatal(err)
		}
	}
	get := func(n int) []queue.Message {
		ms, err := c.Get(ctx, "jobs", queue.GetOptions{Count: n, Wait: 10 * time.Second, Visibility: time.Minute})
		if err != nil || len(ms) != n {
			t.Fatalf("get %d: %+v, %v", n, ms, err)
		}
		return ms
	}
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"error":"no leader in reach"}`, http.StatusServiceUnavailable)
	}))
	defer down.Close()
	past := &queue.Client{Endpoints: []string{down.URL, cl.eps[2]}, Token: token}
	ms := get(1)
	if err := past.AckLease(ctx, "jobs", ms[0].Lease, ms[0].ID); err != nil {
		t.Fatalf("an ack past an endpoint answering 503: %v", err)
	}
	// The other two: one acked under a lease it is not under.
	ms = get(2)
	err := past.AckLease(ctx, "jobs", ms[0].Lease, ms[0].ID, ms[1].ID+1000)
	if !errors.Is(err, queue.ErrLeaseLost) && (err == nil || !strings.Contains(err.Error(), fmt.Sprint(ms[1].ID+1000))) {
		t.Fatalf("an ack of a message not under the lease: %v, want an error naming %d", err, ms[1].ID+1000)
	}
	if err := c.AckLease(ctx, "jobs", ms[1].Lease, ms[1].ID); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		left := 0
		for _, s := range cl.rs[0].Queues() {
			if s.Name == "jobs" {
				left += s.Ready + s.Leased
			}
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d messages left after every ack", left)
		}
	}
}
