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
	// run — and a repeat of the id gets that answer again, not a run.)
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
	if code, _ := post(t, srv.URL, "/v1/rpc/1/block", "b0", []byte("0")); code != first[0] || blocked.Load() != 2 {
		t.Fatalf("a finished call's id again: %d (first %d), the procedure ran %d times, want 2", code, first[0], blocked.Load())
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
	cl := &Client{Endpoint: srv.URL}
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
