package node

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/group"
	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/liverpc"
	"github.com/cohort-go/cohort/lock"
	"github.com/cohort-go/cohort/members"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/queue"
	"github.com/cohort-go/cohort/registry"
)

func start(t *testing.T, n int, token string) []*Node {
	t.Helper()
	ra, _ := registry.Find("mutex", "ricart-agrawala")
	seq, _ := group.Algorithm(group.DefaultAlgorithm)
	net, err := transport.NewInProc(n, transport.InProcConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var nodes []*Node
	for i := range n {
		ep, _ := net.Endpoint(proc.ID(i))
		nd, err := New(Config{ID: proc.ID(i), N: n, Transport: ep, Lock: ra, Group: seq, Token: token,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nd.Close() })
		nodes = append(nodes, nd)
	}
	return nodes
}

// A node's API checks the bearer token once, for every service and the
// health probe, the metrics (which name the locks) and the profiles alike.
func TestHandlerChecksTheTokenForEveryService(t *testing.T) {
	srv := httptest.NewServer(start(t, 1, "s3cret")[0].Handler())
	defer srv.Close()
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/health"}, {"GET", "/v1/locks/jobs"}, {"GET", "/v1/queues/jobs/poll"}, {"POST", "/v1/queues:tx"}, {"POST", "/v1/rpc/0/add"}, {"GET", "/v1/elections/sched"}, {"POST", "/v1/groups/g/messages"}, {"GET", "/metrics"}, {"GET", "/debug/pprof/heap"},
	} {
		for _, token := range []string{"", "wrong", "s3cret"} {
			req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader("hello"))
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if refused := resp.StatusCode == http.StatusUnauthorized; refused != (token != "s3cret") {
				t.Errorf("%s %s with token %q: %d", c.method, c.path, token, resp.StatusCode)
			}
		}
	}
}

// A service the node does not run answers 501 naming the setting that
// runs it — not a bare 404, which a key-value client reads as "no such
// key" — and only behind the token, as every route.
func TestAbsentServicesSaySo(t *testing.T) {
	srv := httptest.NewServer(start(t, 1, "s3cret")[0].Handler())
	defer srv.Close()
	for _, c := range []struct{ path, says string }{
		{"/v1/members", "members: true"}, {"/v1/kv/k", "members: true"}, {"/v1/aggregate/avg/x", "members: true"},
		{"/v1/dht/k", "dht: true"}, {"/v1/scribe/g", "dht: true"},
	} {
		for _, token := range []string{"", "s3cret"} {
			req, _ := http.NewRequest("GET", srv.URL+c.path, nil)
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case token == "" && resp.StatusCode != http.StatusUnauthorized:
				t.Errorf("GET %s without the token: %d", c.path, resp.StatusCode)
			case token != "" && (resp.StatusCode != http.StatusNotImplemented || !strings.Contains(string(body), c.says)):
				t.Errorf("GET %s: %d %s; want 501 naming %q", c.path, resp.StatusCode, body, c.says)
			}
		}
	}
	_, err := (&members.Client{Endpoints: []string{srv.URL}, Token: "s3cret"}).Members(context.Background())
	if err == nil || !strings.Contains(err.Error(), "runs no membership service") {
		t.Errorf("members through a node without them: %v", err)
	}
}

// Three nodes assembled by New serve a lock across their APIs.
func TestNodesServeALock(t *testing.T) {
	nodes := start(t, 3, "")
	var eps []string
	for _, n := range nodes {
		srv := httptest.NewServer(n.Handler())
		t.Cleanup(srv.Close)
		eps = append(eps, srv.URL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := (&lock.Client{Endpoints: eps[2:]}).Acquire(ctx, "jobs", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if h.Token == 0 {
		t.Error("no fencing token")
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{}); err == nil || !strings.Contains(err.Error(), "no transport") {
		t.Errorf("New without a transport: %v", err)
	}
}

// A relay on node 0 forwards its queue to a queue of node 1 over the
// API; a put on node 0 arrives at node 1.
func TestRelayForwardsToAnotherNode(t *testing.T) {
	dst := start(t, 1, "")[0]
	srv := httptest.NewServer(dst.Handler())
	defer srv.Close()
	ra, _ := registry.Find("mutex", "ricart-agrawala")
	seq, _ := group.Algorithm(group.DefaultAlgorithm)
	net, _ := transport.NewInProc(1, transport.InProcConfig{})
	ep, _ := net.Endpoint(0)
	src, err := New(Config{ID: 0, N: 1, Transport: ep, Lock: ra, Group: seq, DataDir: t.TempDir(),
		Relays: []Relay{{Source: "outbox", To: []string{srv.URL}, Queue: "inbox"}},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, err := src.Queues().Put("outbox", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	msg, err := dst.Queues().Get(ctx, "inbox", 0)
	if err != nil || string(msg.Body) != "hello" {
		t.Fatalf("at the destination: %q %v", msg.Body, err)
	}
	if _, err := New(Config{ID: 0, N: 1, Transport: ep, Lock: ra, Group: seq, Relays: []Relay{{Source: "a/b", To: []string{"x:1"}, Queue: "q"}}}); err == nil || !strings.Contains(err.Error(), "relay 0") {
		t.Fatalf("a bad relay: %v", err)
	}
}

// With the raft lock, the node serves replicated queues under
// Config.QueueLimits: a transaction goes through its API, a put past a
// queue's limit is refused 507, and limits whose snapshot could outgrow a
// record of the log stop New, naming them.
func TestReplicatedQueueLimitsAndTransactions(t *testing.T) {
	raftLock := lock.ReplicatedAlgorithm(consensus.DefaultConfig)
	seq, _ := group.Algorithm(group.DefaultAlgorithm)
	net, _ := transport.NewInProc(1, transport.InProcConfig{})
	ep, _ := net.Endpoint(0)
	dst := start(t, 1, "tok")[0]
	dsrv := httptest.NewServer(dst.Handler())
	defer dsrv.Close()
	cfg := Config{ID: 0, N: 1, Transport: ep, Lock: raftLock, Group: seq, DataDir: t.TempDir(), Token: "tok",
		QueueLimits: consensus.QueueLimits{Messages: 2}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Relays: []Relay{{Source: "outbox", To: []string{dsrv.URL}, Queue: "inbox"}}}
	bad := cfg
	bad.QueueLimits.State = 64 << 20
	if _, err := New(bad); err == nil || !strings.Contains(err.Error(), "state 67108864") {
		t.Fatalf("New with a state limit past the log's record: %v", err)
	}
	nd, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer nd.Close()
	srv := httptest.NewServer(nd.Handler())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := &queue.Client{Endpoints: []string{srv.URL}, Token: "tok"}
	reply, err := c.Transact(ctx, queue.TxRequest{Puts: []queue.TxPut{{Queue: "q", Body: []byte("a")}, {Queue: "q", Body: []byte("b")}}})
	if err != nil || len(reply.IDs) != 2 {
		t.Fatalf("a transaction through the node: %+v %v", reply, err)
	}
	if _, err := c.Put(ctx, "q", []byte("c")); err == nil || !strings.Contains(err.Error(), "HTTP 507") {
		t.Fatalf("a third put on a queue of two: %v, want 507", err)
	}
	// The relay forwards the replicated outbox to the other node's inbox.
	if _, err := c.Put(ctx, "outbox", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	msg, err := dst.Queues().Get(ctx, "inbox", 0)
	if err != nil || string(msg.Body) != "hello" {
		t.Fatalf("relayed from the replicated queue: %q %v", msg.Body, err)
	}
}

// With Config.RPC a node serves calls to every member's procedures on
// its API, behind the token: through node 0 to node 1, at most once per
// request id.
func TestRPCBehindTheAPI(t *testing.T) {
	ra, _ := registry.Find("mutex", "ricart-agrawala")
	seq, _ := group.Algorithm(group.DefaultAlgorithm)
	net, _ := transport.NewInProc(2, transport.InProcConfig{})
	rc := liverpc.DefaultConfig()
	var nodes []*Node
	for i := range 2 {
		ep, _ := net.Endpoint(proc.ID(i))
		cfg := Config{ID: proc.ID(i), N: 2, Transport: ep, Lock: ra, Group: seq, Token: "tok", RPC: &rc,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		if i == 0 {
			if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "data directory") {
				t.Fatalf("RPC without a data directory: %v", err)
			}
		}
		cfg.DataDir = t.TempDir()
		nd, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nd.Close() })
		nodes = append(nodes, nd)
	}
	var runs atomic.Int64
	liverpc.Register(nodes[1].RPC(), "add", func(_ context.Context, a [2]int) (int, error) { runs.Add(1); return a[0] + a[1], nil })
	srv := httptest.NewServer(nodes[0].Handler())
	defer srv.Close()
	call := func(token, id string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/rpc/1/add", strings.NewReader("[2,40]"))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Cohort-Request-Id", id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := call("wrong", "r1"); code != http.StatusUnauthorized {
		t.Fatalf("without the token: %d", code)
	}
	for range 2 {
		if code, body := call("tok", "r1"); code != 200 || body != "42" {
			t.Fatalf("a call through node 0: %d %q", code, body)
		}
	}
	if runs.Load() != 1 {
		t.Fatalf("the procedure ran %d times for one request id", runs.Load())
	}
}

// A replicated queue's relay, named by one node or by all three: the
// nodes that name it take turns (a lock on the log), so the messages are
// forwarded whoever leads, each once, in order.
func TestReplicatedRelayTakesTurns(t *testing.T) {
	raftLock := lock.ReplicatedAlgorithm(consensus.DefaultConfig)
	seq, _ := group.Algorithm(group.DefaultAlgorithm)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, relayOn := range [][]proc.ID{{2}, {0, 1, 2}} {
		dst := start(t, 1, "tok")[0]
		dsrv := httptest.NewServer(dst.Handler())
		defer dsrv.Close()
		net, _ := transport.NewInProc(3, transport.InProcConfig{})
		var urls []string
		for i := range proc.ID(3) {
			ep, _ := net.Endpoint(i)
			cfg := Config{ID: i, N: 3, Transport: ep, Lock: raftLock, Group: seq, DataDir: t.TempDir(), Token: "tok", Logger: quiet}
			for _, r := range relayOn {
				if r == i {
					cfg.Relays = []Relay{{Source: "outbox", To: []string{dsrv.URL}, Queue: "inbox"}}
				}
			}
			nd, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { nd.Close() })
			srv := httptest.NewServer(nd.Handler())
			t.Cleanup(srv.Close)
			urls = append(urls, srv.URL)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c := &queue.Client{Endpoints: urls, Token: "tok"}
		const n = 30
		for i := range n {
			if _, err := c.Put(ctx, "outbox", []byte(fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
		}
		for i := range n {
			m, err := dst.Queues().Get(ctx, "inbox", time.Minute)
			if err != nil || string(m.Body) != fmt.Sprint(i) {
				t.Fatalf("relay on %v: message %d at the destination: %q %v", relayOn, i, m.Body, err)
			}
			dst.Queues().Ack("inbox", m.ID)
		}
		for drained := false; !drained; {
			qs, err := c.Queues(ctx)
			if err != nil {
				t.Fatal(err)
			}
			drained = true
			for _, q := range qs {
				if q.Name == "outbox" && q.Ready+q.Leased > 0 {
					drained = false
				}
			}
			if ctx.Err() != nil {
				t.Fatalf("relay on %v: the outbox did not drain", relayOn)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if _, ok, _ := dst.Queues().Poll("inbox", 0); ok {
			t.Fatalf("relay on %v: a message twice at the destination", relayOn)
		}
	}
}
