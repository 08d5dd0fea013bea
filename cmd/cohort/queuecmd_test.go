package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-go/cohort/group"
	"github.com/cohort-go/cohort/live/livetest"
	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/node"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/queue"
	"github.com/cohort-go/cohort/registry"
)

// queueCluster starts n nodes in this process, with data directories and
// a token, and returns their API endpoints.
func queueCluster(t *testing.T, n int, token string) []string {
	t.Helper()
	return queueClusterWith(t, n, token, func(h http.Handler) http.Handler { return h })
}

// queueClusterWith is queueCluster with each node's API wrapped by wrap.
func queueClusterWith(t *testing.T, n int, token string, wrap func(http.Handler) http.Handler) []string {
	t.Helper()
	ra, _ := registry.Find("mutex", "ricart-agrawala")
	seq, _ := group.Algorithm(group.DefaultAlgorithm)
	net, err := transport.NewInProc(n, transport.InProcConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var eps []string
	for i := range n {
		ep, _ := net.Endpoint(proc.ID(i))
		nd, err := node.New(node.Config{ID: proc.ID(i), N: n, Transport: ep, Lock: ra, Group: seq, Token: token,
			DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(wrap(nd.Handler()))
		t.Cleanup(func() { srv.Close(); nd.Close() })
		eps = append(eps, strings.TrimPrefix(srv.URL, "http://"))
	}
	return eps
}

// withStdin runs f with standard input reading s.
func withStdin(t *testing.T, s string, f func()) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() { io.WriteString(w, s); w.Close() }()
	old := os.Stdin
	os.Stdin = r
	defer func() { os.Stdin = old; r.Close() }()
	f()
}

func TestQueueCommandsEndToEnd(t *testing.T) {
	eps := queueCluster(t, 2, "tok")
	ep := "--endpoints=" + eps[0]
	t.Setenv("COHORT_TOKEN", "tok")
	if code, _, errs := cli(t, "queue", "put", "jobs", "first", ep); code != 0 {
		t.Fatalf("put: %d %s", code, errs)
	}
	withStdin(t, "second\nthird\n", func() {
		if code, _, errs := cli(t, "queue", "put", "jobs", "-", ep); code != 0 {
			t.Fatalf("put -: %d %s", code, errs)
		}
	})
	code, out, errs := cli(t, "queue", "list", ep)
	if code != 0 || !strings.Contains(out, "jobs") || !strings.Contains(out, "persistent") {
		t.Fatalf("list: %d %q %s", code, out, errs)
	}
	code, out, errs = cli(t, "queue", "get", "jobs", "--count", "2", ep)
	if code != 0 || out != "first\nsecond\n" {
		t.Fatalf("get --count 2: %d %q %s", code, out, errs)
	}
	code, out, _ = cli(t, "queue", "poll", "jobs", "--json", ep)
	var m queue.Message
	if code != 0 || json.Unmarshal([]byte(out), &m) != nil || string(m.Body) != "third" {
		t.Fatalf("poll --json: %d %q", code, out)
	}
	// Empty now: poll prints nothing, get gives up at its timeout.
	if code, out, _ = cli(t, "queue", "poll", "jobs", ep); code != 0 || out != "" {
		t.Fatalf("poll of an empty queue: %d %q", code, out)
	}
	if code, _, errs = cli(t, "queue", "get", "jobs", "--timeout", "100ms", ep); code != 1 || !strings.Contains(errs, "got 0 of 1") {
		t.Fatalf("get at the timeout: %d %s", code, errs)
	}
	// Queues are each node's own.
	if code, out, _ = cli(t, "queue", "poll", "jobs", "--endpoints", eps[1]); code != 0 || out != "" {
		t.Fatalf("node 1 holds node 0's queue: %d %q", code, out)
	}
	// listen hears the puts without taking them.
	done := make(chan string)
	go func() {
		_, out, _ := cli(t, "queue", "listen", "news", "--timeout", "2s", ep)
		done <- out
	}()
	// (Puts through the Go client: the CLI is not run twice at once.)
	qc := &queue.Client{Endpoints: eps[:1], Token: "tok"}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := qc.Put(context.Background(), "news", []byte("extra")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out := <-done; !strings.Contains(out, "extra\n") {
		t.Fatalf("listen heard %q", out)
	}
	if code, out, _ = cli(t, "queue", "poll", "news", ep); code != 0 || out != "extra\n" {
		t.Fatalf("listen took the messages: %d %q", code, out)
	}
	// The token is required.
	t.Setenv("COHORT_TOKEN", "")
	if code, _, errs = cli(t, "queue", "poll", "jobs", ep); code == 0 || !strings.Contains(errs, "bearer token") {
		t.Fatalf("without the token: %d %s", code, errs)
	}
}

func TestQueueCommandsBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"queue", "put", "a/b", "x", "--endpoints", "x:1"}, `queue name "a/b"`},
		{[]string{"queue", "put", "q", "x"}, "--endpoints: none given"},
		{[]string{"queue", "get", "q", "--count", "0", "--endpoints", "x:1"}, "--count 0: want 1 to 1000"},
		{[]string{"queue", "get", "q", "--count", "1001", "--endpoints", "x:1"}, "--count 1001"},
		{[]string{"queue", "poll", "q", "--visibility", "24h", "--endpoints", "x:1"}, "--visibility 24h0m0s"},
		{[]string{"queue", "listen", "q", "--timeout", "-1s", "--endpoints", "x:1"}, "--timeout -1s"},
		{[]string{"queue", "tx", "--endpoints", "x:1"}, "nothing to do: give --ack or --put"},
		{[]string{"queue", "tx", "--ack", "q", "--endpoints", "x:1"}, `--ack "q": want QUEUE:ID or QUEUE:ID:LEASE`},
		{[]string{"queue", "tx", "--ack", "q:0", "--endpoints", "x:1"}, `--ack "q:0": id "0": want a message id`},
		{[]string{"queue", "tx", "--ack", "q:5:x", "--endpoints", "x:1"}, `--ack "q:5:x": lease "x"`},
		{[]string{"queue", "tx", "--ack", "a/b:5", "--endpoints", "x:1"}, `queue name "a/b"`},
		{[]string{"queue", "tx", "--put", "noequals", "--endpoints", "x:1"}, `--put "noequals": want QUEUE=TEXT`},
		{[]string{"queue", "tx", "--put", "a b=x", "--endpoints", "x:1"}, `queue name "a b"`},
		{[]string{"queue", "tx", "--put", "q=x", "--seq", "3", "--endpoints", "x:1"}, "--seq 3 without --origin"},
		{[]string{"queue", "tx", "--put", "q=x", "--origin", "w", "--endpoints", "x:1"}, `--origin "w" without --seq`},
		{[]string{"queue", "tx", "--ack", "q:1", "--ack", "q:1", "--endpoints", "x:1"}, "acks[1]: message 1 of queue q is acked twice"},
		{[]string{"queue", "nope"}, `unknown subcommand "nope"`},
		{[]string{"queue"}, "missing subcommand"},
	} {
		t.Setenv("COHORT_ENDPOINTS", "")
		code, _, errs := cli(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("cohort %s: exit %d, %q; want exit 2 and %q", strings.Join(c.args, " "), code, errs, c.want)
		}
	}
	long := strings.Repeat("x", queue.MaxMessage+1)
	withStdin(t, "ok\n"+long+"\n", func() {
		eps := queueCluster(t, 1, "")
		code, _, errs := cli(t, "queue", "put", "q", "-", "--endpoints", eps[0])
		if code != 2 || !strings.Contains(errs, "line 2 of standard input: longer than") {
			t.Errorf("a line too long: exit %d, %q", code, errs)
		}
	})
}

// TestQueueOnNodeProcesses: `cohort node` serves the queues from its
// data directory. Messages put on node 0 survive its SIGKILL; its relay
// (relays: in node.yaml) keeps a remote queue's messages while node 1 is
// down and forwards them, once each, in order, when node 1 comes up.
func TestQueueOnNodeProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	bin := cohortBinary(t)
	dir := t.TempDir()
	ports, err := freePorts(4)
	if err != nil {
		t.Fatal(err)
	}
	conf := func(id int, extra string) string {
		c := fmt.Sprintf("id: %d\nlisten: %s\napi: %s\npeers: {0: %s, 1: %s}\nsecret: 0123456789abcdef0123\nlock: ricart-agrawala\ngroup: total-sequencer\ndata_dir: %s\n%s",
			id, ports[id], ports[2+id], ports[0], ports[1], filepath.Join(dir, fmt.Sprint("n", id)), extra)
		p := filepath.Join(dir, fmt.Sprintf("node%d.yaml", id))
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c0 := conf(0, fmt.Sprintf("relays:\n  - {source: outbox, to: [%s], queue: inbox}\n", ports[3]))
	c1 := conf(1, "")
	run := func(cfg string) *exec.Cmd {
		c := exec.Command(bin, "node", "--config", cfg)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		return c
	}
	n0 := run(c0)
	waitAPI(t, ports[2])
	ep0, ep1 := "--endpoints="+ports[2], "--endpoints="+ports[3]
	for _, args := range [][]string{{"jobs", "kept"}, {"outbox", "one"}, {"outbox", "two"}, {"outbox", "three"}} {
		if code, _, errs := cli(t, "queue", "put", args[0], args[1], ep0); code != 0 {
			t.Fatalf("put %v: %s", args, errs)
		}
	}
	n0.Process.Kill()
	n0.Wait()
	run(c0)
	waitAPI(t, ports[2])
	if code, out, errs := cli(t, "queue", "get", "jobs", "--timeout", "10s", ep0); code != 0 || out != "kept\n" {
		t.Fatalf("after SIGKILL: %d %q %s", code, out, errs)
	}
	run(c1)
	waitAPI(t, ports[3])
	if code, out, errs := cli(t, "queue", "get", "inbox", "--count", "3", "--timeout", "20s", ep1); code != 0 || out != "one\ntwo\nthree\n" {
		t.Fatalf("relayed: %d %q %s", code, out, errs)
	}
	if code, out, _ := cli(t, "queue", "poll", "inbox", ep1); code != 0 || out != "" {
		t.Fatalf("a duplicate at the destination: %q", out)
	}
}

// queue tx acks a message got with --no-ack and puts its result at once;
// a second transaction acking it is refused whole (exit 1, 404), its put
// not applied.
func TestQueueTxCommand(t *testing.T) {
	eps := queueCluster(t, 1, "tok")
	ep := "--endpoints=" + eps[0]
	t.Setenv("COHORT_TOKEN", "tok")
	if code, _, errs := cli(t, "queue", "put", "jobs", "photo 17", ep); code != 0 {
		t.Fatalf("put: %d %s", code, errs)
	}
	code, out, errs := cli(t, "queue", "get", "jobs", "--no-ack", "--json", ep)
	var m queue.Message
	if code != 0 || json.Unmarshal([]byte(out), &m) != nil || m.ID == 0 {
		t.Fatalf("get --no-ack: %d %q %s", code, out, errs)
	}
	ack := fmt.Sprintf("jobs:%d", m.ID)
	code, out, errs = cli(t, "queue", "tx", "--ack", ack, "--put", "results=photo 17 resized", "--put", "audit=17", ep)
	if lines := strings.Fields(out); code != 0 || len(lines) != 2 {
		t.Fatalf("tx: %d %q %s, want two ids", code, out, errs)
	}
	code, _, errs = cli(t, "queue", "tx", "--ack", ack, "--put", "results=again", ep)
	if code != 1 || !strings.Contains(errs, "404") || !strings.Contains(errs, fmt.Sprint(m.ID)) {
		t.Fatalf("a tx acking an acked message: %d %s, want exit 1 and 404 naming it", code, errs)
	}
	if code, out, _ = cli(t, "queue", "poll", "results", "--count", "10", ep); code != 0 || out != "photo 17 resized\n" {
		t.Fatalf("results: %d %q", code, out)
	}
	if code, out, _ = cli(t, "queue", "poll", "jobs", ep); code != 0 || out != "" {
		t.Fatalf("jobs after the tx: %d %q", code, out)
	}
}

// put - sends its lines over one stream of puts: 2,500 lines (more than
// a batch of puts holds) all arrive, in order, with an id each, through
// one request (before, they went as several batches, a request each).
func TestQueuePutStdinOverAStream(t *testing.T) {
	var posts atomic.Int64
	eps := queueClusterWith(t, 1, "tok", func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				posts.Add(1)
			}
			h.ServeHTTP(w, r)
		})
	})
	ep := "--endpoints=" + eps[0]
	t.Setenv("COHORT_TOKEN", "tok")
	const n = 2500
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, "m%d\n", i)
	}
	var code int
	var out, errs string
	withStdin(t, in.String(), func() { code, out, errs = cli(t, "queue", "put", "jobs", "-", "--json", ep) })
	if code != 0 {
		t.Fatalf("put -: %d %s", code, errs)
	}
	ids := strings.Count(out, `"id":`)
	if ids != n {
		t.Fatalf("put - printed %d ids, want %d", ids, n)
	}
	if p := posts.Load(); p != 1 {
		t.Fatalf("put - made %d POST requests, want 1 (one stream)", p)
	}
	qc := &queue.Client{Endpoints: eps, Token: "tok"}
	got := 0
	for got < n {
		ms, err := qc.Get(context.Background(), "jobs", queue.GetOptions{Count: queue.MaxCount, NoWait: true})
		if err != nil || len(ms) == 0 {
			t.Fatalf("after %d messages: %v", got, err)
		}
		for _, m := range ms {
			if want := fmt.Sprint("m", got); string(m.Body) != want {
				t.Fatalf("message %d is %q, want %q", got, m.Body, want)
			}
			got++
			if err := qc.Ack(context.Background(), "jobs", m.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// put - acknowledges each line once it is on disk, while standard input
// is still open: a line typed alone has its id printed before the next
// is typed; the ids follow the lines.
func TestQueuePutStdinAcksEachLine(t *testing.T) {
	eps := queueCluster(t, 1, "")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdin
	os.Stdin = r
	defer func() { os.Stdin = old; r.Close() }()
	out := &livetest.Buffer{}
	code := make(chan int, 1)
	go func() {
		code <- execute([]string{"queue", "put", "jobs", "-", "--json", "--endpoints", eps[0]}, out, io.Discard)
	}()
	var ids []uint64
	for i := range 3 {
		fmt.Fprintf(w, "line %d\n", i)
		deadline := time.Now().Add(30 * time.Second)
		for strings.Count(out.String(), "\n") <= i {
			if time.Now().After(deadline) {
				t.Fatalf("line %d typed: no id printed in 30 s (%q)", i, out.String())
			}
			time.Sleep(2 * time.Millisecond)
		}
		var reply queue.PutReply
		if err := json.Unmarshal([]byte(strings.Split(out.String(), "\n")[i]), &reply); err != nil || reply.ID == 0 {
			t.Fatalf("line %d: %q, %v", i, out.String(), err)
		}
		ids = append(ids, reply.ID)
	}
	w.Close()
	if c := <-code; c != 0 || !slices.IsSorted(ids) {
		t.Fatalf("exit %d, ids %v", c, ids)
	}
}

// dropReplies serves h, but the first n puts (POST /v1/queues/NAME) it
// serves and then cuts the connection instead of answering: each put
// applied, its reply lost.
func dropReplies(h http.Handler, n int32) http.Handler {
	var left atomic.Int32
	left.Store(n)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1/queues/") || left.Add(-1) < 0 {
			h.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(httptest.NewRecorder(), r)
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	})
}

// cohort queue put whose replies are lost twice on node 0 (its own
// queues), node 1 next: the put is sent again to node 0 alone, under its
// number, and stored once there, none on node 1. Before, each lost reply
// sent it on to node 1 and it was stored on both.
func TestQueuePutResendsAfterALostReply(t *testing.T) {
	nodes := 0
	eps := queueClusterWith(t, 2, "tok", func(h http.Handler) http.Handler {
		if nodes++; nodes == 1 {
			return dropReplies(h, 2)
		}
		return h
	})
	t.Setenv("COHORT_TOKEN", "tok")
	if code, _, errs := cli(t, "queue", "put", "jobs", "once", "--endpoints", eps[0]+","+eps[1]); code != 0 {
		t.Fatalf("put: %d %s", code, errs)
	}
	if code, out, errs := cli(t, "queue", "get", "jobs", "--count", "5", "--timeout", "300ms", "--endpoints", eps[0]); out != "once\n" {
		t.Fatalf("node 0 holds %q (%d %s), want the put once", out, code, errs)
	}
	if code, out, _ := cli(t, "queue", "poll", "jobs", "--endpoints", eps[1]); code != 0 || out != "" {
		t.Fatalf("node 1 holds %q: a put sent to node 0 stored on another node", out)
	}
}
