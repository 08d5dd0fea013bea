package queue

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cohort-go/cohort/internal/httpapi"
)

// TestStreamPutsPipelined: one stream carries the puts of many
// goroutines, each acknowledged once, in the order sent; a slow disk
// makes them share syncs.
func TestStreamPutsPipelined(t *testing.T) {
	fs := newMemFS()
	m := open(t, Config{Dir: "/q", FS: fs})
	syncs := fs.slow(time.Millisecond)
	c := serve(t, m)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := c.Publish(ctx, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	const async, workers, each = 300, 8, 25
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for j := range each {
				if _, err := p.Put(ctx, []byte(fmt.Sprintf("w%d-%d", w, j))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	acks := make([]*PutAck, async)
	for i := range acks {
		acks[i] = p.PutAsync([]byte(fmt.Sprint("a", i)))
	}
	wg.Wait()
	var last uint64
	for i, a := range acks {
		id, err := a.Wait(ctx)
		if err != nil || id <= last {
			t.Fatalf("put %d: id %d after %d, %v", i, id, last, err)
		}
		last = id
	}
	if err := p.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := p.PutAsync([]byte("late")).Wait(ctx); err != ErrPublisherClosed {
		t.Fatalf("a put after Close: %v", err)
	}
	total := async + workers*each
	t.Logf("%d puts, %d syncs", total, syncs())
	if syncs() > total/4 {
		t.Errorf("%d syncs for %d puts on one stream: they do not share them", syncs(), total)
	}
	var got []string
	for _, msg := range pollAll(t, m, "jobs") {
		got = append(got, string(msg.Body))
	}
	if len(got) != total {
		t.Fatalf("the queue holds %d messages, want %d", len(got), total)
	}
	var asyncOrder []string
	for _, b := range got {
		if strings.HasPrefix(b, "a") {
			asyncOrder = append(asyncOrder, b)
		}
	}
	for i, b := range asyncOrder {
		if b != fmt.Sprint("a", i) {
			t.Fatalf("async put %d came out as %q", i, b)
		}
	}
}

// TestStreamAcksOnlyWhatIsSynced cuts the power during a stream of puts:
// every put acknowledged is there after the restart.
func TestStreamAcksOnlyWhatIsSynced(t *testing.T) {
	fs := newMemFS()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	m, err := Open(Config{Dir: "/q", FS: fs.Mount(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	fs.slow(200 * time.Microsecond)
	srv := httptest.NewServer(Handler(m))
	defer srv.Close()
	c := &Client{Endpoints: []string{srv.URL}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := c.Publish(ctx, "q")
	if err != nil {
		t.Fatal(err)
	}
	p.Retry = 200 * time.Millisecond // the node's disk is gone for good
	var (
		mu    sync.Mutex
		acked = map[uint64]string{}
		all   sync.WaitGroup
	)
	enough := make(chan struct{})
	var once sync.Once
	stop := make(chan struct{})
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			body := fmt.Sprint("m", i)
			a := p.PutAsync([]byte(body))
			all.Go(func() {
				if id, err := a.Wait(ctx); err == nil {
					mu.Lock()
					acked[id] = body
					if len(acked) >= 300 {
						once.Do(func() { close(enough) })
					}
					mu.Unlock()
				}
			})
			if isDone(a) {
				if _, err := a.Result(); err != nil {
					return // the stream is over
				}
			}
		}
	}()
	select {
	case <-enough:
	case <-ctx.Done():
		t.Fatal("300 puts were not acknowledged in time")
	}
	fs.Crash()
	close(stop)
	p.Close(ctx)
	all.Wait()
	m.Close()
	m2, err := Open(Config{Dir: "/q", FS: fs.Mount(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	held := map[uint64]string{}
	for _, msg := range pollAll(t, m2, "q") {
		held[msg.ID] = string(msg.Body)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d puts acknowledged, %d held after the power cut", len(acked), len(held))
	for id, body := range acked {
		if held[id] != body {
			t.Fatalf("put %d (%q) was acknowledged and is lost: %q", id, body, held[id])
		}
	}
}

// pollAll takes every message the queue holds.
func pollAll(t *testing.T, m *Manager, name string) []Message {
	t.Helper()
	var out []Message
	for {
		msg, ok, err := m.Poll(name, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return out
		}
		out = append(out, msg)
	}
}

func isDone(a *PutAck) bool {
	select {
	case <-a.Done():
		return true
	default:
		return false
	}
}

// TestStreamBadInput: a stream that starts bad is answered as a single
// put would be (400 naming the value); one that turns bad ends with an
// error line after acknowledging the puts before.
func TestStreamBadInput(t *testing.T) {
	m := open(t, Config{Dir: t.TempDir()})
	srv := httptest.NewServer(httpapi.RequireToken("s3cret", Handler(m)))
	defer srv.Close()
	frame := func(s string) []byte { return appendFrame(nil, []byte(s)) }
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	for _, tc := range []struct {
		name, queue string
		body        []byte
		code        int
		lines       []string // of a 200 reply
		msg         string   // of an error reply
	}{
		{"empty", "q", nil, 200, nil, ""},
		{"too long", "q", appendFrame(nil, make([]byte, MaxMessage+1))[:8], 413, nil, "put 1: message too big: length 1048577: the most is 1048576 bytes"},
		{"cut length", "q", []byte{0x80}, 400, nil, "put 1: the length ends after 1 bytes"},
		{"huge length", "q", bytes.Repeat([]byte{0xff}, 11), 400, nil, "put 1: length: a uvarint of more than 64 bits"},
		{"cut body", "q", append([]byte{10}, "abc"...), 400, nil, "put 1: length 10: the body ends after 3 bytes"},
		{"bad name", "a b", frame("x"), 400, nil, `queue name "a b"`},
		{"good then bad", "q", cat(frame("one"), frame("two"), []byte{5, 'x'}), 200,
			[]string{`{"ids":[1,2]}`, `{"error":"put 3: length 5: the body ends after 1 bytes","code":400}`}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/queues/"+strings.ReplaceAll(tc.queue, " ", "%20")+"/stream", bytes.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer s3cret")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tc.code {
				t.Fatalf("HTTP %d (%s), want %d", resp.StatusCode, httpapi.ErrorMessage(resp.Body), tc.code)
			}
			if tc.code != 200 {
				if msg := httpapi.ErrorMessage(resp.Body); !strings.Contains(msg, tc.msg) {
					t.Fatalf("error %q, want it to say %q", msg, tc.msg)
				}
				return
			}
			var lines []string
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				lines = append(lines, sc.Text())
			}
			if strings.Join(lines, "\n") != strings.Join(tc.lines, "\n") {
				t.Fatalf("reply\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(tc.lines, "\n"))
			}
		})
	}
	if n := m.Len("q"); n != 2 {
		t.Fatalf("the queue holds %d messages, want the 2 acknowledged", n)
	}
}

// TestStreamNeedsToken: a stream, like every request, needs the token.
func TestStreamNeedsToken(t *testing.T) {
	m := open(t, Config{Dir: t.TempDir()})
	srv := httptest.NewServer(httpapi.RequireToken("s3cret", Handler(m)))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1/queues/q/stream", "application/octet-stream", bytes.NewReader(appendFrame(nil, []byte("x"))))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a stream without the token: HTTP %d", resp.StatusCode)
	}
	ctx := context.Background()
	if _, err := (&Client{Endpoints: []string{srv.URL}, Token: "wrong"}).Publish(ctx, "q"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("a publisher with a wrong token: %v", err)
	}
	p, err := (&Client{Endpoints: []string{srv.URL}, Token: "s3cret"}).Publish(ctx, "q")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Put(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx); err != nil || m.Len("q") != 1 {
		t.Fatalf("close: %v; the queue holds %d", err, m.Len("q"))
	}
}

// fullQueueStream is a stream to queue q of a manager whose queues hold
// 1000 bytes.
func fullQueueStream(t *testing.T) (*Manager, *Publisher, context.Context) {
	m := open(t, Config{Dir: t.TempDir(), MaxQueueBytes: 1000})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	p, err := serve(t, m).Publish(ctx, "q")
	if err != nil {
		t.Fatal(err)
	}
	return m, p, ctx
}

// TestStreamFullQueue: the puts a full queue refuses fail, and none of
// them is applied; the stream ends.
func TestStreamFullQueue(t *testing.T) {
	m, p, ctx := fullQueueStream(t)
	body := make([]byte, 100)
	ok, failed := 0, 0
	for range 20 {
		if _, err := p.Put(ctx, body); err == nil {
			ok++
		} else if failed++; !strings.Contains(err.Error(), "507") && !strings.Contains(err.Error(), ErrFull.Error()) && failed == 1 {
			t.Fatalf("the first refused put: %v, want a full queue (507)", err)
		}
	}
	if ok != 10 || failed != 10 || m.Len("q") != ok {
		t.Fatalf("%d puts acknowledged, %d failed, %d held: want 10, 10, 10", ok, failed, m.Len("q"))
	}
	if err := p.Close(ctx); err == nil || !strings.Contains(err.Error(), "507") {
		t.Fatalf("close: %v, want the stream's 507", err)
	}
}

// TestStreamOutlivesReadTimeout: a node's API server bounds the reading
// of a request (httpapi.Limits.ReadTimeout); a stream of puts lasts
// longer, each put bounded instead by StreamIdle.
func TestStreamOutlivesReadTimeout(t *testing.T) {
	m := open(t, Config{Dir: t.TempDir()})
	const readTimeout = 100 * time.Millisecond
	srv := httpapi.NewServer(httpapi.RequireToken("s3cret", Handler(m)), httpapi.Limits{ReadTimeout: readTimeout})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := (&Client{Endpoints: []string{ln.Addr().String()}, Token: "s3cret"}).Publish(ctx, "q")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for start := time.Now(); time.Since(start) < 3*readTimeout; n++ {
		if _, err := p.Put(ctx, []byte("x")); err != nil {
			t.Fatalf("put %d, %v into the stream: %v", n+1, time.Since(start), err)
		}
	}
	if err := p.Close(ctx); err != nil || m.Len("q") != n {
		t.Fatalf("close: %v; %d puts, the queue holds %d", err, n, m.Len("q"))
	}
}

// TestStreamFullQueuePipelined: with puts sent without waiting (so read
// and committed together), a full queue takes those that fit, as one at
// a time; the acknowledged ones are a prefix of the stream, and exactly
// those are held.
func TestStreamFullQueuePipelined(t *testing.T) {
	m, p, ctx := fullQueueStream(t)
	acks := make([]*PutAck, 40)
	for i := range acks {
		acks[i] = p.PutAsync(make([]byte, 100))
	}
	acked := 0
	for i, a := range acks {
		_, err := a.Wait(ctx)
		switch {
		case err == nil && acked < i:
			t.Fatalf("put %d acknowledged after put %d failed", i+1, acked+1)
		case err == nil:
			acked++
		}
	}
	if acked != 10 || m.Len("q") != acked {
		t.Fatalf("%d puts acknowledged, the queue holds %d: want the 10 that fit", acked, m.Len("q"))
	}
	p.Close(ctx)
}
