package lock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-go/cohort/internal/httpapi"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/livetest"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/registry"
)

func cluster(t *testing.T, n int, a proc.Algorithm) []*live.Node {
	t.Helper()
	return livetest.Start(t, n, live.Config{Resolve: Resolver(a)})
}

func algo(t *testing.T, name string) proc.Algorithm {
	a, err := registry.Find("mutex", name)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Goroutines on every node take the lock in turn: never two inside, and
// the fencing tokens rise with every grant.
func TestLockIsMutuallyExclusiveAcrossNodes(t *testing.T) {
	for _, name := range []string{"ricart-agrawala", "lamport", "central", "suzuki-kasami"} {
		t.Run(name, func(t *testing.T) {
			a := algo(t, name)
			nodes := cluster(t, 3, a)
			var inside, maxInside atomic.Int32
			var mu sync.Mutex
			var tokens []uint64
			var wg sync.WaitGroup
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			for _, node := range nodes {
				l, err := New(node, "x", a)
				if err != nil {
					t.Fatal(err)
				}
				for g := 0; g < 3; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; i < 10; i++ {
							tok, err := l.Lock(ctx)
							if err != nil {
								t.Error(err)
								return
							}
							if v := inside.Add(1); v > maxInside.Load() {
								maxInside.Store(v)
							}
							mu.Lock()
							tokens = append(tokens, tok)
							mu.Unlock()
							time.Sleep(100 * time.Microsecond)
							inside.Add(-1)
							if err := l.Unlock(); err != nil {
								t.Error(err)
								return
							}
						}
					}()
				}
			}
			wg.Wait()
			if maxInside.Load() != 1 {
				t.Fatalf("%d holders at once", maxInside.Load())
			}
			if len(tokens) != 90 {
				t.Fatalf("%d grants, want 90", len(tokens))
			}
			if name != "suzuki-kasami" {
				for i := 1; i < len(tokens); i++ {
					if tokens[i] <= tokens[i-1] {
						t.Fatalf("token %d after %d", tokens[i], tokens[i-1])
					}
				}
			}
		})
	}
}

func TestCancelledLockIsGivenBack(t *testing.T) {
	a := algo(t, "ricart-agrawala")
	nodes := cluster(t, 2, a)
	l0, _ := New(nodes[0], "y", a)
	l1, _ := New(nodes[1], "y", a)
	ctx := context.Background()
	if _, err := l0.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := l1.Lock(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock while held elsewhere: %v, want a deadline error", err)
	}
	if err := l0.Unlock(); err != nil {
		t.Fatal(err)
	}
	// The abandoned request is granted and given back in the background;
	// then node 1 can take the lock for real.
	ctx2, cancel2 := context.WithTimeout(ctx, 5*time.Second)
	defer cancel2()
	if _, err := l1.Lock(ctx2); err != nil {
		t.Fatalf("Lock after an abandoned request: %v", err)
	}
	if err := l1.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := l1.Unlock(); !errors.Is(err, ErrNotHeld) {
		t.Errorf("second Unlock: %v, want ErrNotHeld", err)
	}
}

func TestHTTPLeasesAndTokens(t *testing.T) {
	a := algo(t, "ricart-agrawala")
	nodes := cluster(t, 3, a)
	var eps []string
	for _, node := range nodes {
		srv := httptest.NewServer(httpapi.RequireToken("s3cret", NewServer(ServerConfig{Node: node, Algorithm: a}).Handler()))
		t.Cleanup(srv.Close)
		eps = append(eps, srv.URL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c0 := &Client{Endpoints: eps[:1], Token: "s3cret"}
	c2 := &Client{Endpoints: eps[2:], Token: "s3cret"}

	const ttl = 150 * time.Millisecond
	h, err := c0.Acquire(ctx, "jobs", ttl)
	if err != nil {
		t.Fatal(err)
	}
	// The lease runs for ttl from the server's renewal, which comes after
	// the request leaves, however long its answer takes to come back.
	renewing := time.Now()
	if err := h.KeepAlive(ctx); err != nil {
		t.Fatal(err)
	}
	// The holder stops renewing: its lease expires and node 2 gets the lock
	// with a larger token.
	h2, err := c2.Acquire(ctx, "jobs", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(renewing); waited < ttl {
		t.Errorf("node 2 got the lock %v after the last renewal was sent, before the lease of %v could expire", waited, ttl)
	}
	if h2.Token <= h.Token {
		t.Errorf("token %d after %d", h2.Token, h.Token)
	}
	if err := h.KeepAlive(ctx); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("keepalive of an expired lease: %v, want ErrLeaseLost", err)
	}
	if err := h2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	bad := &Client{Endpoints: eps[:1], Token: "wrong"}
	if _, err := bad.Acquire(ctx, "jobs", time.Second); err == nil || !contains(err.Error(), "401") {
		t.Errorf("wrong token: %v, want HTTP 401", err)
	}
	if _, err := c0.Acquire(ctx, "bad name!", time.Second); err == nil || !contains(err.Error(), `"bad name!"`) {
		t.Errorf("bad name: %v, want an error naming it", err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestMetricsCountTheLocksMessages(t *testing.T) {
	a := algo(t, "ricart-agrawala")
	nodes := cluster(t, 2, a)
	l, _ := New(nodes[0], "m", a)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	// The peer's handler may still be returning from the request it
	// answered (an in-process queue counts a frame until then).
	var b strings.Builder
	deadline := time.Now().Add(5 * time.Second)
	for {
		b.Reset()
		nodes[0].WriteMetrics(&b)
		if strings.Contains(b.String(), `cohort_peer_queue_depth{peer="1"} 0`) || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	for _, want := range []string{
		`cohort_messages_sent_total{service="lock/m",algo="ricart-agrawala",kind="request"} 1`,
		`cohort_messages_received_total{service="lock/m",algo="ricart-agrawala"} 1`,
		`# TYPE cohort_handler_seconds summary`,
		`cohort_peer_connected{peer="1"} 1`,
		`cohort_peer_queue_depth{peer="1"} 0`,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("metrics lack %q:\n%s", want, b.String())
		}
	}
}

// Goroutines of one node that wait for the lock get it in the order they
// asked; one whose context ends while it waits leaves the queue, and the
// lock passes over it.
func TestLocalWaitersInOrder(t *testing.T) {
	a := algo(t, "ricart-agrawala")
	nodes := cluster(t, 3, a)
	l, err := New(nodes[0], "q", a)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	queued := func(n int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			l.mu.Lock()
			k := len(l.queue)
			l.mu.Unlock()
			if k == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d waiters queued, want %d", k, n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	var order []int
	var mu sync.Mutex
	var wg sync.WaitGroup
	gone, leave := context.WithCancel(ctx)
	for i := range 4 {
		c := ctx
		if i == 1 {
			c = gone
		}
		wg.Go(func() {
			if _, err := l.Lock(c); err != nil {
				if i != 1 || !errors.Is(err, context.Canceled) {
					t.Errorf("waiter %d: %v", i, err)
				}
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			if err := l.Unlock(); err != nil {
				t.Error(err)
			}
		})
		queued(i + 1)
	}
	leave()
	queued(3)
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if fmt.Sprint(order) != "[0 2 3]" {
		t.Errorf("waiters got the lock in order %v, want [0 2 3]", order)
	}
	// The lock is free again.
	if _, err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.busy || len(l.queue) != 0 {
		t.Errorf("after everyone left: busy %v, %d queued", l.busy, len(l.queue))
	}
}

// Closing the node fails the goroutines that wait for the lock.
func TestLockFailsWhenTheNodeCloses(t *testing.T) {
	a := algo(t, "ricart-agrawala")
	nodes := cluster(t, 2, a)
	l0, _ := New(nodes[0], "c", a)
	l1, _ := New(nodes[1], "c", a)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := l1.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	for range 2 { // one asks node 1, which never answers; one waits behind it
		go func() {
			_, err := l0.Lock(ctx)
			errs <- err
		}()
	}
	time.Sleep(20 * time.Millisecond)
	nodes[0].Close()
	for range 2 {
		select {
		case err := <-errs:
			if !errors.Is(err, live.ErrClosed) {
				t.Errorf("Lock on a closed node: %v, want ErrClosed", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Lock still waiting after the node closed")
		}
	}
}

// TestServicesAreCapped: on a textbook algorithm every lock name is a
// service on every node; past the node's cap, a new name is refused with
// 503 and the reason, and the locks already there keep working.
func TestServicesAreCapped(t *testing.T) {
	a := algo(t, "ricart-agrawala")
	nodes := livetest.Start(t, 2, live.Config{Resolve: Resolver(a), MaxServices: 3})
	srv := httptest.NewServer(NewServer(ServerConfig{Node: nodes[0], Algorithm: a}).Handler())
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := &Client{Endpoints: []string{srv.URL}}
	for _, name := range []string{"a", "b", "c"} {
		h, err := c.Acquire(ctx, name, time.Second)
		if err != nil {
			t.Fatalf("lock %s: %v", name, err)
		}
		h.Release(ctx)
	}
	_, err := c.Acquire(ctx, "d", time.Second)
	if err == nil || !contains(err.Error(), "503") || !contains(err.Error(), "too many services") {
		t.Fatalf("a fourth lock name: %v, want 503, too many services", err)
	}
	if _, err := nodes[0].Service("lock/e", a); !errors.Is(err, live.ErrTooManyServices) {
		t.Errorf("Service past the cap: %v, want ErrTooManyServices", err)
	}
	h, err := c.Acquire(ctx, "a", time.Second)
	if err != nil {
		t.Fatalf("an existing lock past the cap: %v", err)
	}
	h.Release(ctx)
}

// TestLeaseTTLBounds: a lease shorter than 1 ms (or longer than MaxTTL)
// is refused, naming the value, as the error text says.
func TestLeaseTTLBounds(t *testing.T) {
	a := algo(t, "ricart-agrawala")
	nodes := cluster(t, 1, a)
	srv := httptest.NewServer(NewServer(ServerConfig{Node: nodes[0], Algorithm: a}).Handler())
	t.Cleanup(srv.Close)
	for _, ttl := range []string{"1ns", "999us", "11m", "-1s", "x"} {
		resp, err := http.Post(srv.URL+"/v1/locks/x?ttl="+ttl, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !contains(string(body), ttl) {
			t.Errorf("ttl=%s: HTTP %d %s, want 400 naming the value", ttl, resp.StatusCode, body)
		}
	}
}

// TestNodeMaxTTL: a node that bounds leases below MaxTTL refuses longer
// ones, naming the bound, and grants up to it.
func TestNodeMaxTTL(t *testing.T) {
	a := algo(t, "ricart-agrawala")
	nodes := cluster(t, 1, a)
	srv := httptest.NewServer(NewServer(ServerConfig{Node: nodes[0], Algorithm: a, MaxTTL: 30 * time.Second}).Handler())
	t.Cleanup(srv.Close)
	for ttl, want := range map[string]int{"31s": http.StatusBadRequest, "30s": http.StatusOK} {
		resp, err := http.Post(srv.URL+"/v1/locks/x?ttl="+ttl, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || (want == http.StatusBadRequest && !contains(string(body), "30s")) {
			t.Errorf("ttl=%s: HTTP %d %s, want %d (naming the bound 30s if refused)", ttl, resp.StatusCode, body, want)
		}
	}
}

// Locks nobody uses are reaped (found by probing: every POST of a new
// name left a service on every node for good). Twelve names are taken
// and given back through every node, and one is held; once idle, every
// node stops them all — but the held one, on its holder's node, however
// long its holder stays quiet. A reaped lock starts again when next asked
// for, on every node: it still excludes, and its tokens keep rising. An
// algorithm that does not rejoin after a restart (Suzuki–Kasami) is
// never reaped.
// With a data directory, a reaped lock's log is set aside (a restarted
// node does not resume it) and taken up again by its next start.
func TestIdleLocksAreReaped(t *testing.T) {
	for _, name := range []string{"ricart-agrawala", "lamport", "central", "suzuki-kasami"} {
		t.Run(name, func(t *testing.T) { idleLocksAreReaped(t, name, "") })
	}
	t.Run("ricart-agrawala/data-dir", func(t *testing.T) {
		dir := t.TempDir()
		nodes := idleLocksAreReaped(t, "ricart-agrawala", dir)
		stored, err := nodes[0].Stored()
		if err != nil || len(stored) != 0 {
			t.Errorf("node 0 would resume %q (%v) at a restart, want none: every lock was reaped", stored, err)
		}
		idle, _ := filepath.Glob(filepath.Join(dir, "node0", "*.idle"))
		if len(idle) < names {
			t.Errorf("node 0 kept %d logs of reaped locks, want one per lock", len(idle))
		}
	})
}

// names is how many locks idleLocksAreReaped takes and gives back.
const names = 12

func idleLocksAreReaped(t *testing.T, name, dir string) []*live.Node {
	a := algo(t, name)
	nodes := livetest.Start(t, 3, live.Config{Resolve: Resolver(a), DataDir: dir})
	const idle = 50 * time.Millisecond
	var cs []*Client
	for _, node := range nodes {
		srv := httptest.NewServer(NewServer(ServerConfig{Node: node, Algorithm: a, Idle: idle}).Handler())
		t.Cleanup(srv.Close)
		cs = append(cs, &Client{Endpoints: []string{srv.URL}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	first := map[string]uint64{}
	for i := range names {
		lock := fmt.Sprintf("n%d", i)
		h, err := cs[i%3].Acquire(ctx, lock, time.Second)
		if err != nil {
			t.Fatalf("lock %s: %v", lock, err)
		}
		first[lock] = h.Token
		if err := h.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	held, err := cs[1].Acquire(ctx, "held", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	running := func(i int) int { return len(nodes[i].Names("lock/")) }
	if name == "suzuki-kasami" {
		time.Sleep(10 * idle) // nothing to wait for: it must not happen
		for i, node := range nodes {
			if n, r := running(i), node.Reaped(); n < names/3 || r != 0 {
				t.Errorf("node %d runs %d locks and reaped %d after %v idle, want none reaped: its algorithm does not rejoin", i, n, r, 10*idle)
			}
		}
		return nodes
	}
	deadline := time.Now().Add(10 * time.Second)
	for running(0)+running(1)+running(2) > 1 {
		if time.Now().After(deadline) {
			t.Fatalf("still running after 10 s: %q %q %q", nodes[0].Names("lock/"), nodes[1].Names("lock/"), nodes[2].Names("lock/"))
		}
		time.Sleep(idle / 2)
	}
	time.Sleep(4 * idle)
	if got := nodes[1].Names("lock/"); len(got) != 1 || got[0] != "lock/held" {
		t.Fatalf("node 1 runs %q: want the held lock kept", got)
	}
	if err := held.KeepAlive(ctx); err != nil {
		t.Fatalf("the held lock after its peers reaped theirs: %v", err)
	}
	if r := nodes[0].Reaped() + nodes[1].Reaped() + nodes[2].Reaped(); r < names {
		t.Errorf("%d services reaped, want at least one per lock given back", r)
	}
	var metrics strings.Builder
	nodes[1].WriteMetrics(&metrics)
	if !contains(metrics.String(), "cohort_services 1\n") || contains(metrics.String(), "cohort_services_reaped_total 0\n") {
		t.Errorf("node 1's metrics: want one service and some reaped\n%s", metrics.String())
	}
	// Reaped locks start again: one holder at a time, rising tokens.
	h, err := cs[0].Acquire(ctx, "n0", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	wait, cancelWait := context.WithTimeout(ctx, 200*time.Millisecond)
	if h2, err := cs[2].Acquire(wait, "n0", time.Second); err == nil {
		t.Fatalf("n0 granted to node 2 (token %d) while node 0 holds it (token %d)", h2.Token, h.Token)
	}
	cancelWait()
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	h2, err := cs[2].Acquire(ctx, "n0", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !(first["n0"] < h.Token && h.Token < h2.Token) {
		t.Errorf("tokens of n0 before and after its reaping: %d, %d, %d: want them rising", first["n0"], h.Token, h2.Token)
	}
	h2.Release(ctx)
	held.Release(ctx)
	deadline = time.Now().Add(10 * time.Second)
	for running(0)+running(1)+running(2) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("still running after 10 s: %q %q %q", nodes[0].Names("lock/"), nodes[1].Names("lock/"), nodes[2].Names("lock/"))
		}
		time.Sleep(idle / 2)
	}
	return nodes
}
