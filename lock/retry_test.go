package lock_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-go/cohort/lock"
)

// TestLockRetriedThroughAnotherNode: a client asks node A for a lock
// (session C, operation seq k), gives up waiting there (A paused, or cut
// off from the client) and asks node B with the same k — the retry of one
// operation. A must not withdraw the request when its wait ends: that
// would release the lock the retry is granted, or leave the retry waiting
// for ever. The grant goes to the retry when the holder lets go, and C
// still holds the lock afterwards.
func TestLockRetriedThroughAnotherNode(t *testing.T) {
	rs := replicated(t, 3)
	base := serve(t, rs)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, held := holding(ctx, t, rs[2], "x")
	c, err := rs[0].Open(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	const k = 1000
	post := func(ctx context.Context, node int) (uint64, error) {
		url := fmt.Sprintf("%s/v1/locks/x?session=%d&seq=%d", base[node], c.ID, k)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		var out struct{ Token uint64 }
		err = json.NewDecoder(resp.Body).Decode(&out)
		return out.Token, err
	}

	// The first try waits at A until the client gives up on it.
	actx, giveUp := context.WithCancel(ctx)
	first := make(chan error, 1)
	go func() { _, err := post(actx, 0); first <- err }()
	waitFor(t, func() bool { return rs[0].WaitingForGrant() == 1 })
	// A barrier: an entry A proposes after the request is in the log after it.
	if _, err := rs[0].Open(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	giveUp()
	if err := <-first; err == nil {
		t.Fatal("the first try was granted while the lock was held")
	}
	waitFor(t, func() bool { return rs[0].WaitingForGrant() == 0 })

	// The retry through B; then the holder lets go.
	type result struct {
		token uint64
		err   error
	}
	retry := make(chan result, 1)
	go func() { tok, err := post(ctx, 1); retry <- result{tok, err} }()
	waitFor(t, func() bool { return rs[1].WaitingForGrant() == 1 })
	if err := h.Unlock(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-retry:
		if r.err != nil {
			t.Fatalf("the retry: %v", r.err)
		}
		if r.token <= held {
			t.Errorf("the retry was granted token %d, not above the holder's %d", r.token, held)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the retry was never granted: the request was withdrawn when the first try gave up")
	}
	// C holds x, at every node, and nobody took it back.
	for _, r := range rs {
		waitFor(t, func() bool { s, _ := r.Holder("x"); return s == c.ID })
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// holding opens a session through r that holds lock name.
func holding(ctx context.Context, t *testing.T, r *lock.Replicated, name string) (*lock.Session, uint64) {
	s, err := r.Open(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	token, err := s.Lock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	return s, token
}

// serve serves each node's lock API over HTTP; it returns their URLs.
func serve(t *testing.T, rs []*lock.Replicated) []string {
	base := make([]string, len(rs))
	for i, r := range rs {
		srv := httptest.NewServer(lock.NewServer(lock.ServerConfig{Replicated: r}).Handler())
		t.Cleanup(srv.Close)
		base[i] = srv.URL
	}
	return base
}

// waitFor waits, up to 10 s, until cond holds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for a condition")
		}
		time.Sleep(time.Millisecond)
	}
}

// pausable stands in front of a node's API as the node would behave if it
// were paused (SIGSTOP) at the moment pause is called: requests it takes
// from then on are never answered, and a request it passed on before is
// carried out by the node, but its answer never comes back.
type pausable struct {
	target string
	paused chan struct{}
	once   sync.Once
}

func newPausable(t *testing.T, target string) (*pausable, string) {
	p := &pausable{target: target, paused: make(chan struct{})}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv.URL
}

func (p *pausable) pause() { p.once.Do(func() { close(p.paused) }) }

func (p *pausable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hang := func() { <-r.Context().Done() } // until the client gives up
	select {
	case <-p.paused:
		hang()
		return
	default:
	}
	req, err := http.NewRequestWithContext(context.Background(), r.Method, p.target+r.URL.RequestURI(), nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	req.Header = r.Header.Clone()
	type answer struct {
		code int
		body []byte
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		done <- answer{resp.StatusCode, b, err}
	}()
	select {
	case a := <-done:
		select {
		case <-p.paused:
			hang()
			return
		default:
		}
		if a.err != nil {
			http.Error(w, a.err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.code)
		w.Write(a.body)
	case <-p.paused:
		hang()
	case <-r.Context().Done():
	}
}

// TestClientPassesOverAPausedNode: a client whose first endpoint is a
// paused node still opens its session, locks, renews, unlocks and closes
// through the others — each request waits at most its bound there (found
// by hand: cohort lock hung on a paused first endpoint). And when the
// node pauses while it holds the client's long poll, and the lock is
// granted to that request meanwhile, the client asks the next node with
// the same number and is answered with the grant (the table answers a
// repeated acquire again; before, it ignored it and the client waited for
// ever).
func TestClientPassesOverAPausedNode(t *testing.T) {
	rs := replicated(t, 3)
	base := serve(t, rs)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("paused before the client starts", func(t *testing.T) {
		p, front := newPausable(t, base[0])
		p.pause()
		c := &lock.Client{Endpoints: []string{front, base[1], base[2]}}
		s, err := c.OpenSession(ctx, 2*time.Second)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		token, err := s.Lock(ctx, "a")
		if err != nil {
			t.Fatalf("lock: %v", err)
		}
		if holder, tok := rs[1].Holder("a"); holder != s.ID || tok != token {
			waitFor(t, func() bool { holder, tok := rs[1].Holder("a"); return holder == s.ID && tok == token })
		}
		if _, err := s.KeepAlive(ctx); err != nil {
			t.Fatalf("keepalive: %v", err)
		}
		if err := s.Unlock(ctx, "a"); err != nil {
			t.Fatalf("unlock: %v", err)
		}
		if err := s.Close(ctx); err != nil {
			t.Fatalf("close: %v", err)
		}
	})

	t.Run("paused while it holds the long poll", func(t *testing.T) {
		h, held := holding(ctx, t, rs[2], "x")
		p, front := newPausable(t, base[0])
		c := &lock.Client{Endpoints: []string{front, base[1], base[2]}}
		s, err := c.OpenSession(ctx, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		type result struct {
			token uint64
			err   error
		}
		kctx, stopRenewing := context.WithCancel(ctx)
		defer stopRenewing()
		go func() { // as a client does while it waits
			for kctx.Err() == nil {
				s.KeepAlive(kctx)
				select {
				case <-kctx.Done():
				case <-time.After(s.TTL / 4):
				}
			}
		}()
		got := make(chan result, 1)
		go func() { tok, err := s.Lock(ctx, "x"); got <- result{tok, err} }()
		// The request is queued at the leader through node 0; node 0
		// pauses; the holder lets go, so the queued request is granted.
		waitFor(t, func() bool { return rs[0].WaitingForGrant() == 1 })
		p.pause()
		if err := h.Unlock(ctx, "x"); err != nil {
			t.Fatal(err)
		}
		r := <-got
		if r.err != nil {
			t.Fatalf("lock: %v", r.err)
		}
		if r.token <= held {
			t.Errorf("granted token %d, not above the holder's %d", r.token, held)
		}
		for _, rep := range rs {
			waitFor(t, func() bool { sess, tok := rep.Holder("x"); return sess == s.ID && tok == r.token })
		}
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// TestBadWait: a long poll's wait= out of bounds, or without seq= to
// resume it by, is refused with 400 naming the value.
func TestBadWait(t *testing.T) {
	rs := replicated(t, 1)
	url := serve(t, rs)[0]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := rs[0].Open(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"&seq=5&wait=1ns", "&seq=5&wait=11m", "&seq=5&wait=soon", "&wait=1s"} {
		resp, err := http.Post(fmt.Sprintf("%s/v1/locks/x?session=%d%s", url, s.ID, q), "", nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		wait := q[strings.Index(q, "wait=")+5:]
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), wait) {
			t.Errorf("%s: HTTP %d %s, want 400 naming %q", q, resp.StatusCode, body, wait)
		}
	}
}

// TestOpenSessionWaitsForALeader: a client started with its cluster (found
// by a test of cohort lock: it exited "no endpoint answered" when the
// nodes' log had no leader yet) keeps asking while the nodes are up —
// one answers 503, one does not answer at all, one refuses connections —
// and opens its session once they serve. Before, it gave up after two
// rounds (about 1.6 s at this TTL). But a client none of whose endpoints
// can be reached gives up at once, not at its deadline. The session's
// reckoning counts from the request that opened it, not from the first
// attempt (found by hand: cohort lock, started on a cluster whose
// majority was paused for 6 s, was granted its lock and gave it up at
// once, its session's reckoning long over).
func TestOpenSessionWaitsForALeader(t *testing.T) {
	rs := replicated(t, 2)
	base := serve(t, rs)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("nodes up, no leader yet", func(t *testing.T) {
		ready := make(chan struct{})
		unavailable := httptest.NewServer(gate(ready, base[0], func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"error":"no leader"}`, http.StatusServiceUnavailable)
		}))
		t.Cleanup(unavailable.Close)
		silent := httptest.NewServer(gate(ready, base[1], func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
		t.Cleanup(silent.Close)
		c := &lock.Client{Endpoints: []string{closedAddr(t), unavailable.URL, silent.URL}}
		time.AfterFunc(3*time.Second, func() { close(ready) })
		start := time.Now()
		s, err := c.OpenSession(ctx, time.Second)
		if err != nil {
			t.Fatalf("open after %v: %v", time.Since(start).Round(time.Millisecond), err)
		}
		if waited := time.Since(start); waited < 3*time.Second {
			t.Errorf("opened after %v, before the nodes served", waited)
		}
		if left := time.Until(s.Until()); left <= 0 {
			t.Errorf("the session's reckoning ended %v ago: it counts from the first attempt, not the answered one", -left)
		}
		if _, err := s.Lock(ctx, "a"); err != nil {
			t.Fatalf("lock: %v", err)
		}
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("no endpoint reachable", func(t *testing.T) {
		c := &lock.Client{Endpoints: []string{closedAddr(t), closedAddr(t)}}
		start := time.Now()
		_, err := c.OpenSession(ctx, time.Second)
		if err == nil || !strings.Contains(err.Error(), "no endpoint could be reached") {
			t.Fatalf("open: %v, want no endpoint could be reached", err)
		}
		if ctx.Err() != nil {
			t.Fatalf("gave up only at the deadline (%v)", time.Since(start))
		}
	})
}

// gate serves r with before until ready is closed, then passes requests
// on to target.
func gate(ready chan struct{}, target string, before http.HandlerFunc) http.Handler {
	u, err := url.Parse(target)
	if err != nil {
		panic(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-ready:
			proxy.ServeHTTP(w, r)
		default:
			before(w, r)
		}
	})
}

// closedAddr is a loopback address nothing listens on: connections to it
// are refused.
func closedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// TestClientPassesOverANonVoter: a node that does not vote in the log (it
// answers 503 with Cohort-Not-Voter: removed, or joined and not added)
// serves nothing however often asked, so a client asks it once per call
// and goes on to the others; with no voter among its endpoints it gives
// up at once, saying why, rather than wait for its deadline (found by the
// cluster tests once the open of a session waited while nodes answered).
// A call whose context ends says what the nodes last answered.
func TestClientPassesOverANonVoter(t *testing.T) {
	rs := replicated(t, 1)
	base := serve(t, rs)
	var asked sync.Map // URL → *atomic.Int64
	nonVoter := func() string {
		var n atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			w.Header().Set("Cohort-Not-Voter", "1")
			http.Error(w, `{"error":"node 3 does not vote in the cluster's replicated log of locks (cohort cluster add 3)"}`, http.StatusServiceUnavailable)
		}))
		t.Cleanup(srv.Close)
		asked.Store(srv.URL, &n)
		return srv.URL
	}
	count := func(u string) int64 { v, _ := asked.Load(u); return v.(*atomic.Int64).Load() }
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("a voter among the endpoints", func(t *testing.T) {
		nv := nonVoter()
		c := &lock.Client{Endpoints: []string{nv, base[0]}}
		s, err := c.OpenSession(ctx, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Lock(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		if n := count(nv); n != 1 {
			t.Errorf("the non-voter was asked %d times, want once", n)
		}
	})
	t.Run("no voter among them", func(t *testing.T) {
		c := &lock.Client{Endpoints: []string{nonVoter(), nonVoter()}}
		_, err := c.OpenSession(ctx, time.Second)
		if err == nil || !strings.Contains(err.Error(), "no endpoint votes") || !strings.Contains(err.Error(), "cohort cluster add 3") || ctx.Err() != nil {
			t.Fatalf("open: %v; want at once no endpoint votes, and why", err)
		}
	})
	t.Run("the context ends", func(t *testing.T) {
		noLeader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"error":"no leader yet"}`, http.StatusServiceUnavailable)
		}))
		t.Cleanup(noLeader.Close)
		c := &lock.Client{Endpoints: []string{noLeader.URL}}
		octx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := c.OpenSession(octx, time.Second)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no leader yet") {
			t.Fatalf("open: %v; want the deadline and what the node answered", err)
		}
	})
}
