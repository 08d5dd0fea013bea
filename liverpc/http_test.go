package liverpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-go/cohort/internal/httpapi"
)

// post calls the API at base and returns the status and body.
func post(t *testing.T, base, path, id string, body []byte) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(body))
	if id != "" {
		req.Header.Set("Cohort-Request-Id", id)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, httpapi.ErrorMessage(resp.Body)
	}
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// Calls over HTTP through node 0 to node 1's procedures: a result, a
// procedure's error (422), the bad values named (400), arguments too big
// (413); a request id repeated gets the first answer and runs nothing
// again; calls beyond the bound get 503.
func TestHTTPCalls(t *testing.T) {
	var runs, blocked atomic.Int64
	release := make(chan struct{})
	c := newCluster(t, 2, testConfig(), func(i int, ep *Endpoint) {
		Register(ep, "add", func(_ context.Context, a [2]int) (int, error) { runs.Add(1); return a[0] + a[1], nil })
		Register(ep, "fail", func(context.Context, int) (int, error) { return 0, errors.New("no such thing") })
		Register(ep, "block", func(ctx context.Context, _ int) (int, error) {
			blocked.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return 1, nil
		})
	})
	srv := httptest.NewServer(HTTPHandler(c.eps[0], HTTPConfig{Calls: 2}))
	defer srv.Close()
	if code, body := post(t, srv.URL, "/v1/rpc/1/add", "", []byte("[2,3]")); code != 200 || body != "5" {
		t.Fatalf("add: %d %q", code, body)
	}
	for i := range 3 {
		if code, body := post(t, srv.URL, "/v1/rpc/1/add", "req-7", []byte("[20,22]")); code != 200 || body != "42" {
			t.Fatalf("add with a request id, time %d: %d %q", i+1, code, body)
		}
	}
	if n := runs.Load(); n != 2 {
		t.Fatalf("add ran %d times, want 2 (once per request id)", n)
	}
	if code, msg := post(t, srv.URL, "/v1/rpc/1/fail", "", []byte("0")); code != 422 || !strings.Contains(msg, "no such thing") {
		t.Errorf("a procedure's error: %d %q, want 422", code, msg)
	}
	for _, b := range []struct {
		path, id string
		body     []byte
		code     int
		want     string
	}{
		{"/v1/rpc/x/add", "", nil, 400, `server "x"`},
		{"/v1/rpc/2/add", "", nil, 400, `server "2": want a member's id, 0 to 1`},
		{"/v1/rpc/1/a%20b", "", nil, 400, `procedure name "a b"`},
		{"/v1/rpc/1/add?semantics=sometimes", "", nil, 400, `semantics "sometimes"`},
		{"/v1/rpc/1/add", "a b", nil, 400, `Cohort-Request-Id name "a b"`},
		{"/v1/rpc/1/add", "", make([]byte, MaxPayload+1), 413, "more than"},
	} {
		if code, msg := post(t, srv.URL, b.path, b.id, b.body); code != b.code || !strings.Contains(msg, b.want) {
			t.Errorf("%s (id %q): %d %q, want %d naming %q", b.path, b.id, code, msg, b.code, b.want)
		}
	}
	// The bound: two calls under way, a third refused at once. (The
	// blocked calls end after their attempts, 504: the procedure may have
	// run — and a repeat of the id, once it ended, gets its result, not a
	// second run.)
	var wg sync.WaitGroup
	first := make([]int, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			first[i], _ = post(t, srv.URL, "/v1/rpc/1/block", fmt.Sprint("b", i), []byte("0"))
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for blocked.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if code, msg := post(t, srv.URL, "/v1/rpc/1/add", "", []byte("[1,1]")); code != 503 || !strings.Contains(msg, "2 calls under way") {
		t.Errorf("with two calls blocked: %d %q, want 503", code, msg)
	}
	close(release)
	wg.Wait()
	if code, body := post(t, srv.URL, "/v1/rpc/1/block", "b0", []byte("0")); code != 200 || body != "1" || blocked.Load() != 2 {
		t.Fatalf("a finished call's id again: %d %q (first %d), the procedure ran %d times, want 2", code, body, first[0], blocked.Load())
	}
	if code, msg := post(t, srv.URL, "/v1/rpc/0/add", "", []byte("[1,1]")); code != 400 || !strings.Contains(msg, "server 0 is this node") {
		t.Errorf("a call of the node itself: %d %q, want 400", code, msg)
	}
}

// The client resends a call whose answer was lost — the connection cut
// after the node made the call — with the same request id, and the node
// answers the resend with the first call's result: the procedure ran
// once.
func TestHTTPClientResendsALostAnswer(t *testing.T) {
	var runs atomic.Int64
	c := newCluster(t, 2, testConfig(), func(i int, ep *Endpoint) {
		Register(ep, "add", func(_ context.Context, a [2]int) (int, error) { runs.Add(1); return a[0] + a[1], nil })
	})
	h := HTTPHandler(c.eps[0], HTTPConfig{})
	var cut atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cut.CompareAndSwap(false, true) {
			h.ServeHTTP(httptest.NewRecorder(), r) // the call is made; its answer is lost
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl := &Client{Endpoints: []string{srv.URL}}
	got, err := cl.Call(ctx, 1, "add", "job-1", []byte("[40,2]"))
	if err != nil || string(got) != "42" {
		t.Fatalf("call: %q %v", got, err)
	}
	if !cut.Load() || runs.Load() != 1 {
		t.Fatalf("the answer was lost: %v; the procedure ran %d times, want once", cut.Load(), runs.Load())
	}
	// Without an id, a lost answer is an error: the call may have run.
	cut.Store(false)
	if _, err := cl.Call(ctx, 1, "add", "", []byte("[1,1]")); err == nil {
		t.Fatal("a call without an id whose answer was lost succeeded")
	}
	if _, err := cl.Call(ctx, 1, "add", "a b", nil); err == nil || !strings.Contains(err.Error(), `"a b"`) {
		t.Fatalf("a bad request id: %v", err)
	}
}

// A request id is the call's identity at the server member: a resend
// through another node, after the forwarding node restarted, or after
// the server restarted gets the one run's result; a resend of a call the
// server crashed while running gets 504 (it may have run) — and no
// procedure ever runs twice.
func TestHTTPRequestIDSurvivesRestartsAndOtherNodes(t *testing.T) {
	var l ledger
	running := make(chan int, 10)
	c := newCluster(t, 3, testConfig(), func(i int, ep *Endpoint) {
		Register(ep, "add", func(ctx context.Context, a addArgs) (int, error) {
			l.run(a.ID)
			if a.ID < 0 { // runs until the server stops it
				running <- a.ID
				<-ctx.Done()
				return 0, ctx.Err()
			}
			return a.A + a.B, nil
		})
	})
	var mu sync.Mutex // the nodes' endpoints change at restarts
	urls := make([]string, 3)
	for i := range 3 {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			ep := c.eps[i]
			mu.Unlock()
			HTTPHandler(ep, HTTPConfig{}).ServeHTTP(w, r)
		}))
		defer srv.Close()
		urls[i] = srv.URL
	}
	restart := func(i int) {
		mu.Lock()
		defer mu.Unlock()
		c.restart(i)
	}
	call := func(node int, id string, a addArgs) (int, string) {
		t.Helper()
		return post(t, urls[node], "/v1/rpc/2/add", id, []byte(fmt.Sprintf(`{"ID":%d,"A":%d,"B":%d}`, a.ID, a.A, a.B)))
	}
	want := func(what string, code int, body string, wantCode int, wantBody string) {
		t.Helper()
		if code != wantCode || !strings.Contains(body, wantBody) {
			t.Fatalf("%s: %d %q, want %d %q", what, code, body, wantCode, wantBody)
		}
	}
	code, body := call(0, "job-1", addArgs{ID: 1, A: 40, B: 2})
	want("the call, through node 0", code, body, 200, "42")
	code, body = call(1, "job-1", addArgs{ID: 1, A: 40, B: 2})
	want("its resend through node 1", code, body, 200, "42")
	restart(0)
	code, body = call(0, "job-1", addArgs{ID: 1, A: 40, B: 2})
	want("its resend through node 0 restarted", code, body, 200, "42")
	restart(2)
	code, body = call(1, "job-1", addArgs{ID: 1, A: 40, B: 2})
	want("its resend after the server restarted", code, body, 200, "42")

	// A call the server crashes while running.
	done := make(chan int, 1)
	go func() {
		code, _ := call(0, "job-2", addArgs{ID: -2})
		done <- code
	}()
	select {
	case <-running:
	case <-time.After(20 * time.Second):
		t.Fatal("the call did not start")
	}
	restart(2)
	code, body = call(1, "job-2", addArgs{ID: -2})
	want("a resend after the server crashed running it", code, body, 504, "crashed")
	if code := <-done; code != 504 {
		t.Fatalf("the first request of the crashed call: %d, want 504", code)
	}
	for _, id := range []int{1, -2} {
		if n := l.count(id); n != 1 {
			t.Fatalf("call %d ran %d times, want once", id, n)
		}
	}
}
