package lock

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-go/cohort/catalog"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/proc"
)

// chanNet is a minimal in-process network for these tests: FIFO per pair,
// one goroutine per receiver.
type chanNet struct {
	inbox []chan [2]any // per node: (from, payload)
}

type chanTransport struct {
	net  *chanNet
	self proc.ID
	stop chan struct{}
	wg   sync.WaitGroup
}

func newChanNet(n int) *chanNet {
	c := &chanNet{}
	for i := 0; i < n; i++ {
		c.inbox = append(c.inbox, make(chan [2]any, 1<<16))
	}
	return c
}

func (c *chanNet) endpoint(id proc.ID) *chanTransport {
	return &chanTransport{net: c, self: id, stop: make(chan struct{})}
}

func (t *chanTransport) Send(to proc.ID, p []byte) error {
	select {
	case t.net.inbox[to] <- [2]any{t.self, p}:
		return nil
	default:
		return errors.New("queue full")
	}
}

func (t *chanTransport) Start(h func(proc.ID, []byte)) error {
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		for {
			select {
			case m := <-t.net.inbox[t.self]:
				h(m[0].(proc.ID), m[1].([]byte))
			case <-t.stop:
				return
			}
		}
	}()
	return nil
}

func (t *chanTransport) Close() error { close(t.stop); t.wg.Wait(); return nil }

// refCodec passes messages by reference through a shared table: enough to
// test the host in one process, without the wire format.
type refCodec struct {
	mu   *sync.Mutex
	msgs *[]proc.Message
}

func (c refCodec) Append(dst []byte, m proc.Message) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	*c.msgs = append(*c.msgs, m)
	return binary.AppendUvarint(dst, uint64(len(*c.msgs)-1)), nil
}

func (c refCodec) Decode(b []byte) (proc.Message, error) {
	i, k := binary.Uvarint(b)
	c.mu.Lock()
	defer c.mu.Unlock()
	if k <= 0 || int(i) >= len(*c.msgs) {
		return nil, fmt.Errorf("bad reference")
	}
	return (*c.msgs)[i], nil
}

func cluster(t *testing.T, n int, a proc.Algorithm) []*live.Node {
	t.Helper()
	net := newChanNet(n)
	var mu sync.Mutex
	var table []proc.Message
	codec := func([]proc.Message) (live.Codec, error) { return refCodec{&mu, &table}, nil }
	var nodes []*live.Node
	for i := 0; i < n; i++ {
		node, err := live.NewNode(live.Config{Self: proc.ID(i), N: n, Transport: net.endpoint(proc.ID(i)), NewCodec: codec,
			Resolve: Resolver(a)})
		if err != nil {
			t.Fatal(err)
		}
		if err := node.Start(); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, node)
	}
	t.Cleanup(func() {
		for _, node := range nodes {
			node.Close()
		}
	})
	return nodes
}

func algo(t *testing.T, name string) proc.Algorithm {
	f, err := catalog.Lookup("mutex")
	if err != nil {
		t.Fatal(err)
	}
	a, err := f.Algorithm(name)
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
			if name == "ricart-agrawala" || name == "lamport" {
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
	for i, node := range nodes {
		srv := httptest.NewServer(NewServer(ServerConfig{Node: node, Self: i, N: 3, Algorithm: a, Token: "s3cret"}).Handler())
		t.Cleanup(srv.Close)
		eps = append(eps, srv.URL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c0 := &Client{Endpoints: eps[:1], Token: "s3cret"}
	c2 := &Client{Endpoints: eps[2:], Token: "s3cret"}

	h, err := c0.Acquire(ctx, "jobs", 150*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.KeepAlive(ctx); err != nil {
		t.Fatal(err)
	}
	// The holder stops renewing: its lease expires and node 2 gets the lock
	// with a larger token.
	start := time.Now()
	h2, err := c2.Acquire(ctx, "jobs", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 100*time.Millisecond {
		t.Errorf("node 2 got the lock after %v, before the lease could expire", waited)
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
	var b strings.Builder
	nodes[0].WriteMetrics(&b)
	for _, want := range []string{
		`cohort_messages_sent_total{service="lock/m",algo="ricart-agrawala",kind="request"} 1`,
		`cohort_messages_received_total{service="lock/m",algo="ricart-agrawala"} 1`,
		`# TYPE cohort_handler_seconds summary`,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("metrics lack %q:\n%s", want, b.String())
		}
	}
}
