package queue_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/internal/httpapi"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/livetest"
	"github.com/cohort-go/cohort/queue"
)

const token = "tx-test-token"

// cluster is n nodes with the replicated queues, each serving the API
// behind the bearer token.
type cluster struct {
	nodes []*live.Node
	rs    []*queue.Replicated
	srvs  []*httptest.Server
	eps   []string
}

func startCluster(t *testing.T, n int, dir string, c queue.ReplicatedConfig) *cluster {
	t.Helper()
	nodes, stop, err := livetest.New(n, live.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	cl := &cluster{nodes: nodes}
	for _, nd := range nodes {
		r, err := queue.NewReplicated(nd, c)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(httpapi.RequireToken(token, queue.Handler(r)))
		t.Cleanup(srv.Close)
		cl.rs, cl.srvs, cl.eps = append(cl.rs, r), append(cl.srvs, srv), append(cl.eps, srv.URL)
	}
	return cl
}

// post sends body to path on base with the token (if with) and returns
// the status and the error message or reply.
func post(t *testing.T, base, path string, body []byte, with bool) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(body))
	if with {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return resp.StatusCode, httpapi.ErrorMessage(resp.Body)
}

// A transaction over HTTP through one node acks messages got through
// another and puts their results: both or neither. Resent with the same
// origin and seq it is applied once; one that acks a message no longer
// held puts nothing.
func TestTxOverHTTP(t *testing.T) {
	cl := startCluster(t, 3, t.TempDir(), queue.ReplicatedConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, b := &queue.Client{Endpoints: cl.eps[:1], Token: token}, &queue.Client{Endpoints: cl.eps[2:], Token: token}
	for i := range 3 {
		if _, err := a.Put(ctx, "in", fmt.Appendf(nil, "job%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	ms, err := b.Get(ctx, "in", queue.GetOptions{Count: 2, Wait: 10 * time.Second, Visibility: time.Minute})
	if err != nil || len(ms) != 2 {
		t.Fatalf("get 2: %+v %v", ms, err)
	}
	req := queue.TxRequest{
		Acks:   []queue.TxAck{{Queue: "in", ID: ms[0].ID, Lease: ms[0].Lease}, {Queue: "in", ID: ms[1].ID, Lease: ms[1].Lease}},
		Puts:   []queue.TxPut{{Queue: "out", Body: []byte("done0")}, {Queue: "out", Body: []byte("done1")}},
		Origin: "worker-1", Seq: 1,
	}
	mid := &queue.Client{Endpoints: cl.eps[1:2], Token: token}
	reply, err := mid.Transact(ctx, req)
	if err != nil || len(reply.IDs) != 2 || reply.Duplicate {
		t.Fatalf("transaction: %+v %v", reply, err)
	}
	// The same transaction again, through another node: answered as the
	// first (if that node was waiting when it applied it) or as a
	// duplicate, and applied once.
	again, err := a.Transact(ctx, req)
	if err != nil || !(again.Duplicate && len(again.IDs) == 0 || !again.Duplicate && slices.Equal(again.IDs, reply.IDs)) {
		t.Fatalf("the transaction resent: %+v %v, want a duplicate (first %+v)", again, err, reply)
	}
	// Unnumbered, it is refused whole: its acks' messages are gone.
	req.Origin, req.Seq = "", 0
	req.Puts = []queue.TxPut{{Queue: "out", Body: []byte("never")}}
	if _, err := a.Transact(ctx, req); err == nil || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "not held") {
		t.Fatalf("a transaction acking acked messages: %v, want 404 naming them", err)
	}
	out, err := b.Get(ctx, "out", queue.GetOptions{NoWait: true, Count: 10})
	if err != nil || len(out) != 2 || string(out[0].Body) != "done0" || string(out[1].Body) != "done1" {
		t.Fatalf("out: %+v %v, want done0 and done1 once", out, err)
	}
	rest, err := b.Get(ctx, "in", queue.GetOptions{NoWait: true, Count: 10})
	if err != nil || len(rest) != 1 || string(rest[0].Body) != "job2" {
		t.Fatalf("in: %+v %v, want job2 alone", rest, err)
	}
	// A lease that is no longer the message's: 404, nothing applied.
	_, err = a.Transact(ctx, queue.TxRequest{Acks: []queue.TxAck{{Queue: "in", ID: rest[0].ID, Lease: rest[0].Lease + 1}}, Puts: []queue.TxPut{{Queue: "out", Body: []byte("x")}}})
	if err == nil || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "lease") {
		t.Fatalf("a transaction under a lost lease: %v", err)
	}
	if st := cl.rs[0].Queues(); !slices.ContainsFunc(st, func(s queue.Stats) bool { return s.Name == "out" && s.Leased == 2 && s.Ready == 0 }) {
		t.Fatalf("a refused transaction put a message: %+v", st)
	}
}

// The transaction endpoint refuses without the token (401), names the
// bad value of a bad request (400), bounds the request (413) and what
// one transaction may do (400), and answers a full queue with 507.
func TestTxRefusesBadRequests(t *testing.T) {
	cl := startCluster(t, 1, t.TempDir(), queue.ReplicatedConfig{Limits: consensus.QueueLimits{Messages: 2}})
	base := cl.eps[0]
	body := func(v any) []byte { b, _ := json.Marshal(v); return b }
	ok := body(queue.TxRequest{Puts: []queue.TxPut{{Queue: "q", Body: []byte("x")}}})
	if code, _ := post(t, base, "/v1/queues:tx", ok, false); code != http.StatusUnauthorized {
		t.Errorf("without the token: %d, want 401", code)
	}
	many := queue.TxRequest{}
	for range queue.MaxTxOps + 1 {
		many.Puts = append(many.Puts, queue.TxPut{Queue: "q"})
	}
	big := queue.TxRequest{}
	for range 3 {
		big.Puts = append(big.Puts, queue.TxPut{Queue: "q", Body: make([]byte, queue.MaxReplicatedMessage/2)})
	}
	for _, c := range []struct {
		name string
		body []byte
		code int
		want string
	}{
		{"not JSON", []byte("hello"), 400, "invalid character"},
		{"an unknown field", []byte(`{"pust":[]}`), 400, `"pust"`},
		{"empty", []byte(`{}`), 400, "0 acks and puts"},
		{"a bad put name", body(queue.TxRequest{Puts: []queue.TxPut{{Queue: "a/b"}}}), 400, `puts[0]: bad queue name: queue name "a/b"`},
		{"a bad ack name", body(queue.TxRequest{Acks: []queue.TxAck{{Queue: "ok", ID: 1}, {Queue: "..", ID: 1}}}), 400, `acks[1]`},
		{"id 0", body(queue.TxRequest{Acks: []queue.TxAck{{Queue: "q"}}}), 400, "acks[0]: id 0"},
		{"an ack twice", body(queue.TxRequest{Acks: []queue.TxAck{{Queue: "q", ID: 7}, {Queue: "q", ID: 7}}}), 400, "acks[1]: message 7 of queue q is acked twice"},
		{"seq without origin", body(queue.TxRequest{Seq: 3, Puts: []queue.TxPut{{Queue: "q"}}}), 400, "seq 3 without an origin"},
		{"origin without seq", body(queue.TxRequest{Origin: "w", Puts: []queue.TxPut{{Queue: "q"}}}), 400, `origin "w": seq 0`},
		{"too many operations", body(many), 400, fmt.Sprintf("%d acks and puts: want 1 to %d", queue.MaxTxOps+1, queue.MaxTxOps)},
		{"bodies too big together", body(big), 413, "puts[2]"},
		{"a request too big", make([]byte, 3*queue.MaxMessage), 413, "more than"},
	} {
		code, msg := post(t, base, "/v1/queues:tx", c.body, true)
		if code != c.code || !strings.Contains(msg, c.want) {
			t.Errorf("%s: %d %q, want %d naming %q", c.name, code, msg, c.code, c.want)
		}
	}
	// Full: the queue holds two messages at most; a transaction of three
	// puts is refused whole.
	three := body(queue.TxRequest{Puts: []queue.TxPut{{Queue: "q"}, {Queue: "q"}, {Queue: "q"}}})
	if code, msg := post(t, base, "/v1/queues:tx", three, true); code != http.StatusInsufficientStorage || !strings.Contains(msg, `queue "q" is full`) {
		t.Errorf("past the queue's limit: %d %q, want 507", code, msg)
	}
	if st := cl.rs[0].Queues(); len(st) != 0 {
		t.Errorf("a refused transaction left %+v", st)
	}
}

// Transactions on a node's own queues (Manager): the same endpoint, acks
// and puts in one record of the node's log; a numbered one is applied
// once, its copies answered as duplicates, before and after a restart.
func TestTxOnLocalQueues(t *testing.T) {
	dir := t.TempDir()
	m, err := queue.Open(queue.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	srv := httptest.NewServer(httpapi.RequireToken(token, queue.Handler(m)))
	defer srv.Close()
	c := &queue.Client{Endpoints: []string{srv.URL}, Token: token}
	ctx := context.Background()
	id, _ := m.Put("in", []byte("job"))
	got, err := c.Get(ctx, "in", queue.GetOptions{NoWait: true})
	if err != nil || len(got) != 1 || got[0].ID != id {
		t.Fatalf("get: %+v %v", got, err)
	}
	reply, err := c.Transact(ctx, queue.TxRequest{Acks: []queue.TxAck{{Queue: "in", ID: id}}, Puts: []queue.TxPut{{Queue: "out", Body: []byte("result")}}})
	if err != nil || len(reply.IDs) != 1 {
		t.Fatalf("transaction: %+v %v", reply, err)
	}
	_, err = c.Transact(ctx, queue.TxRequest{Acks: []queue.TxAck{{Queue: "in", ID: id}}, Puts: []queue.TxPut{{Queue: "out", Body: []byte("twice")}}})
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("a transaction acking an acked message: %v, want 404", err)
	}
	if m.Len("out") != 1 || m.Len("in") != 0 {
		t.Fatalf("after the transactions: in %d, out %d; want 0 and 1", m.Len("in"), m.Len("out"))
	}
	id2, _ := m.Put("in", []byte("job 2"))
	numbered := queue.TxRequest{Origin: "w", Seq: 1, Acks: []queue.TxAck{{Queue: "in", ID: id2}},
		Puts: []queue.TxPut{{Queue: "out", Body: []byte("once")}, {Queue: "out", Body: []byte("once more")}}}
	if r, err := c.Transact(ctx, numbered); err != nil || r.Duplicate || len(r.IDs) != 2 {
		t.Fatalf("a numbered transaction: %+v %v", r, err)
	}
	if r, err := c.Transact(ctx, numbered); err != nil || !r.Duplicate {
		t.Fatalf("its copy: %+v %v, want a duplicate", r, err)
	}
	m.Close()
	if m, err = queue.Open(queue.Config{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	srv2 := httptest.NewServer(httpapi.RequireToken(token, queue.Handler(m)))
	defer srv2.Close()
	c.Endpoints = []string{srv2.URL}
	if r, err := c.Transact(ctx, numbered); err != nil || !r.Duplicate {
		t.Fatalf("its copy after a restart: %+v %v, want a duplicate", r, err)
	}
	numbered.Seq, numbered.Acks = 2, nil
	if r, err := c.Transact(ctx, numbered); err != nil || r.Duplicate {
		t.Fatalf("the next number: %+v %v, want it applied", r, err)
	}
	if m.Len("out") != 5 || m.Len("in") != 0 {
		t.Fatalf("after the numbered transactions: in %d, out %d; want 0 and 5", m.Len("in"), m.Len("out"))
	}
}

// Consumers move every message of "in" to "out" by transactions over
// HTTP — get, then ack and put at once — while the leader of the queues'
// log is killed: every message ends in "out" exactly once, and none stays
// in "in". A transaction whose answer was lost with the leader is resent
// with its number, through another node, and applied once.
func TestTxAtomicUnderLeaderKill(t *testing.T) {
	const msgs, consumers = 120, 8
	cl := startCluster(t, 3, t.TempDir(), queue.ReplicatedConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prod := &queue.Client{Endpoints: cl.eps, Token: token}
	for i := range msgs {
		if _, err := prod.Put(ctx, "in", fmt.Appendf(nil, "m%03d", i)); err != nil {
			t.Fatal(err)
		}
	}
	// The consumers go to the leader first: the kill finds transactions
	// under way there.
	eps := slices.Clone(cl.eps)
	for i, r := range cl.rs {
		if r.Leading() {
			eps[0], eps[i] = eps[i], eps[0]
		}
	}
	var moved, resent, dups, lost atomic.Int64
	killed := make(chan int, 1)
	var wg sync.WaitGroup
	for k := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &queue.Client{Endpoints: eps, Token: token}
			seq := uint64(0)
			for ctx.Err() == nil {
				got, err := c.Get(ctx, "in", queue.GetOptions{Wait: 200 * time.Millisecond, Visibility: 3 * time.Second})
				if err != nil || len(got) == 0 {
					if err == nil && moved.Load() >= msgs {
						return
					}
					continue
				}
				m := got[0]
				seq++
				req := queue.TxRequest{Origin: fmt.Sprintf("consumer-%d", k), Seq: seq,
					Acks: []queue.TxAck{{Queue: "in", ID: m.ID, Lease: m.Lease}},
					Puts: []queue.TxPut{{Queue: "out", Body: m.Body}}}
				for ctx.Err() == nil {
					reply, err := c.Transact(ctx, req)
					if err == nil {
						moved.Add(1)
						if reply.Duplicate {
							dups.Add(1)
						}
						break
					}
					if strings.Contains(err.Error(), "HTTP 404") {
						lost.Add(1)
						break // the lease ran out: another consumer has the message
					}
					resent.Add(1)
					time.Sleep(20 * time.Millisecond) // a node going away: resend, same number
				}
			}
		}()
	}
	// Kill the leader once a third of the messages moved.
	for moved.Load() < msgs/3 && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	for i, r := range cl.rs {
		if r.Leading() {
			cl.nodes[i].Close()
			cl.srvs[i].CloseClientConnections()
			go cl.srvs[i].Close() // its requests end as the node closed
			killed <- i
			break
		}
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("the consumers did not finish: %d of %d moved", moved.Load(), msgs)
	}
	if len(killed) == 0 {
		t.Fatal("no leader to kill")
	}
	dead := <-killed
	alive := (dead + 1) % 3
	survivor := &queue.Client{Endpoints: cl.eps[alive : alive+1], Token: token}
	seen := map[string]int{}
	for {
		out, err := survivor.Get(ctx, "out", queue.GetOptions{NoWait: true, Count: queue.MaxCount, Visibility: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(out) == 0 {
			break
		}
		for _, m := range out {
			seen[string(m.Body)]++
		}
	}
	for i := range msgs {
		if b := fmt.Sprintf("m%03d", i); seen[b] != 1 {
			t.Errorf("%s is in out %d times, want once", b, seen[b])
		}
	}
	if left, err := survivor.Get(ctx, "in", queue.GetOptions{NoWait: true, Count: 10}); err != nil || len(left) != 0 {
		t.Errorf("in still holds %+v (%v)", left, err)
	}
	t.Logf("killed node %d, the leader, after %d of %d transactions; %d resent, %d answered as duplicates, %d refused (lease lost)",
		dead, msgs/3, msgs, resent.Load(), dups.Load(), lost.Load())
}

// Filling the replicated queues to the default state limit (a smaller
// one under the race detector): the puts
// past it are refused (507, naming the snapshot), the snapshots made on
// the way fit a record of the log, and the node restarted on its data
// directory has every message put.
func TestStateLimitRefusesBeforeTheSnapshotOutgrowsTheLog(t *testing.T) {
	if testing.Short() {
		t.Skip("writes about 60 MiB")
	}
	dir := t.TempDir()
	raft := consensus.DefaultConfig
	raft.CompactEvery = 200
	// (A shared disk can stall a sync for long: the puts wait, rather
	// than fail the test.)
	c := queue.ReplicatedConfig{Raft: raft, Timeout: 2 * time.Minute}
	limit := consensus.DefaultQueueLimits.State
	if queue.RaceEnabled {
		// Ten times slower: fill a smaller state.
		limit = 4 << 20
		c.Limits.State, c.Raft.CompactEvery = limit, 20
	}
	cl := startCluster(t, 1, dir, c)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	client := &queue.Client{Endpoints: cl.eps, Token: token}
	body := bytes.Repeat([]byte("x"), queue.MaxReplicatedMessage)
	put := 0
	var err error
	for put < 10_000 {
		name := fmt.Sprintf("q%d", put%7)
		if _, err = client.Put(ctx, name, body); err != nil {
			break
		}
		put++
	}
	if err == nil || !strings.Contains(err.Error(), "HTTP 507") || !strings.Contains(err.Error(), "snapshot") {
		t.Fatalf("after %d puts: %v, want 507 naming the snapshot", put, err)
	}
	want := limit / consensus.MessageCost(len(body))
	if int64(put) != want {
		t.Errorf("%d puts taken, want %d (the state limit over a message's cost)", put, want)
	}
	cl.nodes[0].Close()
	cl.srvs[0].Close()
	cl2 := startCluster(t, 1, dir, c)
	var held int
	for _, s := range cl2.rs[0].Queues() {
		held += s.Ready
	}
	deadline := time.Now().Add(time.Minute)
	for held < put && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		held = 0
		for _, s := range cl2.rs[0].Queues() {
			held += s.Ready
		}
	}
	if held != put {
		t.Fatalf("after the restart: %d messages, want %d", held, put)
	}
	if _, err := (&queue.Client{Endpoints: cl2.eps, Token: token}).Put(ctx, "q0", body); err == nil || !strings.Contains(err.Error(), "507") {
		t.Fatalf("a put after the restart: %v, want 507 still", err)
	}
}

// BenchmarkConsumeAndProduce: a consumer over HTTP takes a message and
// puts its result, on a 3-node cluster in this process — by one
// transaction (one entry of the log: the ack and the put together), or
// by an ack and a put (two entries, and a crash between them loses the
// result or, put first, doubles it).
func BenchmarkConsumeAndProduce(b *testing.B) {
	for _, mode := range []string{"tx", "ack+put"} {
		b.Run(mode, func(b *testing.B) {
			nodes, stop, err := livetest.New(3, live.Config{DataDir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer stop()
			var eps []string
			var rs []*queue.Replicated
			for _, nd := range nodes {
				r, err := queue.NewReplicated(nd, queue.ReplicatedConfig{})
				if err != nil {
					b.Fatal(err)
				}
				srv := httptest.NewServer(queue.Handler(r))
				defer srv.Close()
				eps, rs = append(eps, srv.URL), append(rs, r)
			}
			c := &queue.Client{Endpoints: eps}
			ctx := context.Background()
			if _, err := c.Put(ctx, "warm", nil); err != nil { // a leader is elected
				b.Fatal(err)
			}
			// Through the leader's node.
			for i, r := range rs {
				if r.Leading() {
					eps[0], eps[i] = eps[i], eps[0]
				}
			}
			c = &queue.Client{Endpoints: eps}
			body := bytes.Repeat([]byte("x"), 128)
			for i := 0; i < b.N; i += queue.MaxTxOps {
				req := queue.TxRequest{}
				for j := i; j < min(b.N, i+queue.MaxTxOps); j++ {
					req.Puts = append(req.Puts, queue.TxPut{Queue: "in", Body: body})
				}
				if _, err := c.Transact(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for range b.N {
				ms, err := c.Get(ctx, "in", queue.GetOptions{NoWait: true, Visibility: time.Minute})
				if err != nil || len(ms) != 1 {
					b.Fatalf("get: %v %v", ms, err)
				}
				m := ms[0]
				if mode == "tx" {
					_, err = c.Transact(ctx, queue.TxRequest{Acks: []queue.TxAck{{Queue: "in", ID: m.ID, Lease: m.Lease}}, Puts: []queue.TxPut{{Queue: "out", Body: m.Body}}})
				} else if err = c.AckLease(ctx, "in", m.Lease, m.ID); err == nil {
					_, err = c.Put(ctx, "out", m.Body)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
