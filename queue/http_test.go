package queue

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func serve(t *testing.T, m *Manager) *Client {
	t.Helper()
	srv := httptest.NewServer(Handler(m))
	t.Cleanup(srv.Close)
	return &Client{Endpoints: []string{srv.URL}}
}

func TestHTTPPutGetAck(t *testing.T) {
	m := open(t, Config{Dir: t.TempDir()})
	c := serve(t, m)
	ctx := context.Background()
	for i := range 3 {
		if _, err := c.Put(ctx, "jobs", []byte(fmt.Sprint("job ", i))); err != nil {
			t.Fatal(err)
		}
	}
	msgs, err := c.Get(ctx, "jobs", GetOptions{Count: 2, Wait: time.Second})
	if err != nil || len(msgs) != 2 || string(msgs[0].Body) != "job 0" || string(msgs[1].Body) != "job 1" {
		t.Fatalf("get: %+v %v", msgs, err)
	}
	if err := c.Ack(ctx, "jobs", msgs[0].ID, msgs[1].ID); err != nil {
		t.Fatal(err)
	}
	if err := c.Ack(ctx, "jobs", msgs[0].ID); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("second ack: %v, want a 404", err)
	}
	msgs, err = c.Get(ctx, "jobs", GetOptions{NoWait: true, Count: 5})
	if err != nil || len(msgs) != 1 || string(msgs[0].Body) != "job 2" {
		t.Fatalf("poll: %+v %v", msgs, err)
	}
	start := time.Now()
	msgs, err = c.Get(ctx, "empty", GetOptions{Wait: 50 * time.Millisecond})
	if err != nil || len(msgs) != 0 || time.Since(start) < 50*time.Millisecond {
		t.Fatalf("a get of an empty queue: %+v %v after %v", msgs, err, time.Since(start))
	}
	qs, err := c.Queues(ctx)
	if err != nil || len(qs) != 2 || qs[1].Name != "jobs" || qs[1].Leased != 1 {
		t.Fatalf("queues: %+v %v", qs, err)
	}
}

func TestHTTPLongPollAndListen(t *testing.T) {
	m := open(t, Config{Dir: t.TempDir()})
	c := serve(t, m)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	heard := make(chan Message, 4)
	lctx, stop := context.WithCancel(ctx)
	listening := make(chan error, 1)
	go func() { listening <- c.Listen(lctx, "news", func(m Message) { heard <- m }) }()
	got := make(chan []Message, 1)
	go func() {
		msgs, _ := c.Get(ctx, "news", GetOptions{Wait: 5 * time.Second})
		got <- msgs
	}()
	// Put until the listener has subscribed and heard one.
	var first Message
	for first.ID == 0 {
		if _, err := c.Put(ctx, "news", []byte("extra")); err != nil {
			t.Fatal(err)
		}
		select {
		case first = <-heard:
		case <-time.After(20 * time.Millisecond):
		}
	}
	if string(first.Body) != "extra" {
		t.Fatalf("heard %q", first.Body)
	}
	select {
	case msgs := <-got:
		if len(msgs) != 1 || string(msgs[0].Body) != "extra" {
			t.Fatalf("long poll: %+v", msgs)
		}
	case <-ctx.Done():
		t.Fatal("the long poll did not return")
	}
	stop()
	if err := <-listening; err != nil {
		t.Fatalf("listen ended with %v", err)
	}
}

func TestHTTPBadInput(t *testing.T) {
	m := open(t, Config{Dir: t.TempDir(), MaxQueueBytes: 100})
	c := serve(t, m)
	base := c.Endpoints[0]
	for _, tc := range []struct {
		method, path, body string
		code               int
		msg                string
	}{
		{"POST", "/v1/queues/a%20b", "x", 400, "queue name"},
		{"POST", "/v1/queues/q", strings.Repeat("x", MaxMessage+1), 413, "too big"},
		{"POST", "/v1/queues/q", strings.Repeat("x", 101), 507, "the most is 100"},
		{"GET", "/v1/queues/q?count=0", "", 400, "count"},
		{"GET", "/v1/queues/q?count=1001", "", 400, "count"},
		{"GET", "/v1/queues/q?wait=1h", "", 400, "wait"},
		{"GET", "/v1/queues/q/poll?visibility=soon", "", 400, "visibility"},
		{"POST", "/v1/queues/q/ack", "{}", 400, "ids"},
		{"POST", "/v1/queues/q/ack", "nonsense", 400, "ids"},
		{"POST", "/v1/queues/q/ack", `{"ids":[77]}`, 404, "no message"},
		{"POST", "/v1/queues/q/release?id=x", "", 400, "id"},
		{"POST", "/v1/queues/q", "x", 200, ""},
		{"POST", "/v1/queues/q?transient=1", "x", 409, "persistent"},
	} {
		req, _ := http.NewRequest(tc.method, base+tc.path, strings.NewReader(tc.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || !strings.Contains(string(b), tc.msg) {
			t.Errorf("%s %s: %d %s; want %d with %q", tc.method, tc.path, resp.StatusCode, b, tc.code, tc.msg)
		}
	}
}

func TestMetrics(t *testing.T) {
	m := open(t, Config{Dir: t.TempDir()})
	mustPut(t, m, "jobs", "x")
	m.Get(context.Background(), "jobs", 0)
	mustPut(t, m, "jobs", "yy")
	var b strings.Builder
	m.WriteMetrics(&b)
	for _, want := range []string{
		`cohort_queue_messages{queue="jobs",state="ready"} 1`,
		`cohort_queue_messages{queue="jobs",state="leased"} 1`,
		`cohort_queue_bytes{queue="jobs"} 3`,
		"cohort_queue_records_total 2",
		"cohort_queue_syncs_total 2",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("metrics lack %q:\n%s", want, b.String())
		}
	}
}

// TestClientKeepsConnections: a Client without its own http.Client keeps
// its connections between puts, many at once — http.DefaultClient keeps
// two idle per node and would open most of them again.
func TestClientKeepsConnections(t *testing.T) {
	m := open(t, Config{Dir: t.TempDir()})
	srv := httptest.NewUnstartedServer(Handler(m))
	var mu sync.Mutex
	opened := 0
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			opened++
			mu.Unlock()
		}
	}
	srv.Start()
	defer srv.Close()
	c := &Client{Endpoints: []string{srv.URL}}
	const at = 64
	round := func() int {
		var wg sync.WaitGroup
		for i := range at {
			wg.Go(func() {
				if _, err := c.Put(context.Background(), "q", []byte(fmt.Sprint(i))); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return opened
	}
	// A round's last answers may still be on their way back to the
	// client's pool when the next round starts (the transport returns a
	// connection after its body is read, on another goroutine): on a
	// loaded machine a round can dial a few connections anyway. So of
	// three more rounds the quietest must reuse what the first opened; a
	// client that drops its connections dials most of them every round.
	first := round()
	fewest, last := at, first
	for range 3 {
		now := round()
		fewest, last = min(fewest, now-last), now
	}
	t.Logf("%d puts at once: %d connections, then at least %d more a round", at, first, fewest)
	if first == 0 || fewest > at/4 {
		t.Fatalf("every further round of %d puts at once opened at least %d new connections (the first %d): the client does not keep them", at, fewest, first)
	}
}

// TestHTTPBatchIsFrames: a batch's body is frames, as a stream's — any
// bytes, the empty message included — put in order as one transaction,
// and a numbered copy is answered as a duplicate; a bad frame is refused
// with a status and a message naming it, and nothing of it is put.
func TestHTTPBatchIsFrames(t *testing.T) {
	m := open(t, Config{Dir: t.TempDir()})
	c := serve(t, m)
	base := c.Endpoints[0]
	post := func(body []byte, h map[string]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+"/v1/queues/q/batch", bytes.NewReader(body))
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	bodies := [][]byte{[]byte("one"), {}, {0, 0xff, '"', '\n'}}
	var frames []byte
	for _, b := range bodies {
		frames = appendFrame(frames, b)
	}
	numbered := map[string]string{"Cohort-Origin": "pub-1", "Cohort-Origin-Seq": "1"}
	if code, reply := post(frames, numbered); code != 200 || !strings.Contains(reply, `"ids":[1,2,3]`) {
		t.Fatalf("a batch: %d %s", code, reply)
	}
	if code, reply := post(frames, numbered); code != 200 || !strings.Contains(reply, `"duplicate":true`) {
		t.Fatalf("its copy: %d %s", code, reply)
	}
	for _, tc := range []struct {
		name string
		body []byte
		h    map[string]string
		code int
		msg  string
	}{
		{"empty", nil, nil, 400, "transaction of 0"},
		{"cut short", append(appendFrame(nil, []byte("ok")), 5, 'a'), nil, 400, "put 1: length 5: the body ends after 1 bytes"},
		{"length cut", append(appendFrame(nil, []byte("ok")), 0x80), nil, 400, "put 1: the length ends"},
		{"too big a put", binary.AppendUvarint(nil, MaxMessage+1), nil, 413, "put 0"},
		{"too many puts", bytes.Repeat([]byte{0}, MaxTxOps+1), nil, 400, "more than 1000 puts"},
		{"bad number", frames, map[string]string{"Cohort-Origin": "pub-1", "Cohort-Origin-Seq": "x"}, 400, "Cohort-Origin-Seq"},
	} {
		if code, reply := post(tc.body, tc.h); code != tc.code || !strings.Contains(reply, tc.msg) {
			t.Errorf("%s: %d %s; want %d with %q", tc.name, code, reply, tc.code, tc.msg)
		}
	}
	msgs, err := c.Get(context.Background(), "q", GetOptions{NoWait: true, Count: 10})
	if err != nil || len(msgs) != len(bodies) {
		t.Fatalf("got %d messages (%v), want the %d of the batch once", len(msgs), err, len(bodies))
	}
	for i, msg := range msgs {
		if !bytes.Equal(msg.Body, bodies[i]) {
			t.Errorf("message %d: %q, want %q", i, msg.Body, bodies[i])
		}
	}
}

// TestPutBatchToAnEarlierNode: a node of an earlier version answers the
// batch route 404 (its mux knows no such route); PutBatch sends the
// batch again as JSON to /v1/queues:tx, under the same number, and goes
// there at once for the next batches. A 404 of the queues themselves
// (JSON) is an answer, not sent again.
func TestPutBatchToAnEarlierNode(t *testing.T) {
	m := open(t, Config{Dir: t.TempDir()})
	var mu sync.Mutex
	hits := map[string]int{}
	queues := Handler(m)
	old := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/batch") {
			http.NotFound(w, r)
			return
		}
		queues.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(old)
	defer srv.Close()
	c := &Client{Endpoints: []string{srv.URL}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 3 {
		ids, err := c.PutBatch(ctx, "q", [][]byte{fmt.Appendf(nil, "a%d", i), fmt.Appendf(nil, "b%d", i)})
		if err != nil || len(ids) != 2 || ids[0] == 0 || ids[1] != ids[0]+1 {
			t.Fatalf("batch %d: %v, %v", i, ids, err)
		}
	}
	mu.Lock()
	batch, tx := hits["/v1/queues/q/batch"], hits["/v1/queues:tx"]
	mu.Unlock()
	if batch != 1 || tx != 3 {
		t.Errorf("the batch route was asked %d times, /v1/queues:tx %d: want 1 and 3", batch, tx)
	}
	var got []string
	for _, msg := range pollAll(t, m, "q") {
		got = append(got, string(msg.Body))
	}
	if want := "a0 b0 a1 b1 a2 b2"; strings.Join(got, " ") != want {
		t.Errorf("the queue holds %q, want %s", got, want)
	}

	// The queues' own 404 is their answer.
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits["refusing "+r.URL.Path]++
		mu.Unlock()
		if r.URL.Path == "/v1/queues" {
			queues.ServeHTTP(w, r)
			return
		}
		fail(w, fmt.Errorf("%w: none", ErrNoMessage))
	}))
	defer refusing.Close()
	c = &Client{Endpoints: []string{refusing.URL}}
	if _, err := c.PutBatch(ctx, "q", [][]byte{[]byte("x")}); err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Errorf("a batch the queues answer 404: %v, want that answer", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := hits["refusing /v1/queues:tx"]; n != 0 {
		t.Errorf("a batch the queues answered 404 went to /v1/queues:tx %d times", n)
	}
}
