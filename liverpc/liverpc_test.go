package liverpc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/rpc"
)

type addArgs struct {
	ID   int `json:"id"`
	A, B int
}

// ledger counts the executions of each call id at the server, across its
// restarts.
type ledger struct {
	mu   sync.Mutex
	runs map[int]int
}

func (l *ledger) run(id int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runs == nil {
		l.runs = map[int]int{}
	}
	l.runs[id]++
}

func (l *ledger) count(id int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.runs[id]
}

func testConfig() Config {
	c := DefaultConfig()
	c.RPC.Timeout = 300 * time.Millisecond
	c.RPC.Retry.InitialBackoff = 5 * time.Millisecond
	c.RPC.Retry.MaxBackoff = 50 * time.Millisecond
	return c
}

// registerAdd registers "add" (counted in l) and "fail".
func registerAdd(l *ledger) func(int, *Endpoint) {
	return func(_ int, ep *Endpoint) {
		Register(ep, "add", func(_ context.Context, a addArgs) (int, error) {
			l.run(a.ID)
			return a.A + a.B, nil
		})
		Register(ep, "fail", func(context.Context, int) (int, error) { return 0, errors.New("no such account") })
	}
}

func TestEachSemantics(t *testing.T) {
	var l ledger
	// A loss-free network: every call is answered, once. Maybe makes one
	// attempt, so its timeout must outlast a loaded machine's round trip
	// (300 ms did not, with two race-detected test suites on 2 cores).
	cfg := testConfig()
	cfg.RPC.Timeout = 10 * time.Second
	c := newCluster(t, 2, cfg, registerAdd(&l))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i, sem := range []rpc.Semantics{rpc.Maybe, rpc.AtLeastOnce, rpc.AtMostOnce} {
		for k := range 20 {
			id := i*100 + k
			got, err := Call[addArgs, int](ctx, c.eps[1], 0, "add", addArgs{ID: id, A: id, B: 1}, Options{Sem: sem})
			if err != nil || got != id+1 {
				t.Fatalf("%s: add(%d, 1) = %d, %v", sem, id, got, err)
			}
			if n := l.count(id); n != 1 {
				t.Fatalf("%s: call %d ran %d times on a loss-free network", sem, id, n)
			}
		}
	}
	_, err := Call[int, int](ctx, c.eps[1], 0, "fail", 1, Options{})
	var re *RemoteError
	if !errors.As(err, &re) || re.Msg != "no such account" {
		t.Fatalf("fail: err = %v; want the procedure's error", err)
	}
	_, err = Call[int, int](ctx, c.eps[1], 0, "nope", 1, Options{})
	if !errors.As(err, &re) || !strings.Contains(re.Msg, "unknown procedure") {
		t.Fatalf("unknown procedure: err = %v", err)
	}
	if got, err := Call[[]byte, []byte](ctx, c.eps[0], 1, "echo-none", []byte{1}, Options{}); err == nil {
		t.Fatalf("a procedure nobody registered returned %v", got)
	}
}

// blocker is a procedure that runs until released or cancelled, and
// reports that it started and how it ended.
type blocker struct {
	l        ledger
	started  chan int
	release  chan struct{}
	canceled chan int
}

func newBlocker() *blocker {
	return &blocker{started: make(chan int, 100), release: make(chan struct{}), canceled: make(chan int, 100)}
}

func (b *blocker) setup(_ int, ep *Endpoint) {
	Register(ep, "block", func(ctx context.Context, id int) (int, error) {
		b.l.run(id)
		b.started <- id
		select {
		case <-b.release:
			return id, nil
		case <-ctx.Done():
			b.canceled <- id
			return 0, ctx.Err()
		}
	})
}

func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// The server crashes while an at-most-once call runs and restarts on its
// disk: the retransmission finds the call "lost" in the duplicate table
// and the caller learns ErrCrashed — the procedure never runs a second
// time. At-least-once runs it again after the restart; maybe gives up.
func TestServerCrashDuringCall(t *testing.T) {
	for _, tc := range []struct {
		sem     rpc.Semantics
		wantErr error
		runs    int
	}{
		{rpc.AtMostOnce, ErrCrashed, 1},
		{rpc.AtLeastOnce, nil, 2},
		{rpc.Maybe, ErrTimeout, 1},
	} {
		t.Run(tc.sem.String(), func(t *testing.T) {
			b := newBlocker()
			c := newCluster(t, 2, testConfig(), b.setup)
			type res struct {
				v   int
				err error
			}
			done := make(chan res, 1)
			go func() {
				v, err := Call[int, int](context.Background(), c.eps[1], 0, "block", 7, Options{Sem: tc.sem})
				done <- res{v, err}
			}()
			wait(t, b.started, "the call to start")
			c.restart(0)
			if tc.sem == rpc.AtLeastOnce {
				wait(t, b.started, "the retransmission to run")
				close(b.release)
			}
			r := wait(t, done, "the call to return")
			if !errors.Is(r.err, tc.wantErr) || (tc.wantErr == nil && r.v != 7) {
				t.Fatalf("call returned %d, %v; want error %v", r.v, r.err, tc.wantErr)
			}
			if n := b.l.count(7); n != tc.runs {
				t.Fatalf("the procedure ran %d times; want %d", n, tc.runs)
			}
		})
	}
}

// A stream of at-most-once calls while the server is killed and restarted
// on its disk, again and again: no call runs twice, and every call that
// returned a result ran exactly once.
func TestAtMostOnceAcrossRestarts(t *testing.T) {
	var l ledger
	c := newCluster(t, 2, testConfig(), func(_ int, ep *Endpoint) {
		Register(ep, "add", func(ctx context.Context, a addArgs) (int, error) {
			l.run(a.ID)
			select { // long enough to be cut by a crash now and then
			case <-time.After(time.Duration(a.ID%5) * time.Millisecond):
			case <-ctx.Done():
				return 0, ctx.Err()
			}
			return a.A + a.B, nil
		})
	})
	const workers, restarts = 8, 3
	var next atomic.Int64
	var ok, failed atomic.Int64
	okIDs := make(chan int, 100000)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				id := int(next.Add(1))
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				v, err := Call[addArgs, int](ctx, c.eps[1], 0, "add", addArgs{ID: id, A: id, B: 2}, Options{Sem: rpc.AtMostOnce})
				cancel()
				switch {
				case err == nil && v == id+2:
					ok.Add(1)
					okIDs <- id
				case err == nil:
					t.Errorf("call %d returned %d", id, v)
				default:
					failed.Add(1)
				}
			}
		})
	}
	// Each restart comes once a few calls have returned since the last
	// (not after a fixed time, which a loaded machine may fill with none).
	served := func(what string) {
		t.Helper()
		from := ok.Load()
		deadline := time.Now().Add(20 * time.Second)
		for ok.Load() < from+4 {
			if time.Now().After(deadline) {
				close(stop)
				wg.Wait()
				t.Fatalf("%s: %d calls returned in 20s (%d failed)", what, ok.Load()-from, failed.Load())
			}
			time.Sleep(time.Millisecond)
		}
	}
	for i := range restarts {
		served(fmt.Sprintf("before restart %d", i+1))
		c.restart(0)
	}
	served("after the last restart")
	close(stop)
	wg.Wait()
	close(okIDs)
	for id := range okIDs {
		if n := l.count(id); n != 1 {
			t.Fatalf("call %d returned a result and ran %d times", id, n)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, n := range l.runs {
		if n > 1 {
			t.Fatalf("call %d ran %d times under at-most-once", id, n)
		}
	}
	t.Logf("%d calls returned, %d failed across %d restarts; %d executions", ok.Load(), failed.Load(), restarts, len(l.runs))
}

// A deadline ends the call at the caller and cancels the procedure at the
// server; so does cancelling the caller's context.
func TestDeadlineAndCancel(t *testing.T) {
	b := newBlocker()
	c := newCluster(t, 2, testConfig(), b.setup)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Call[int, int](ctx, c.eps[1], 0, "block", 1, Options{Sem: rpc.AtMostOnce})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v; want the deadline", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the call returned %v after its 100ms deadline", d)
	}
	if id := wait(t, b.canceled, "the server to cancel the procedure"); id != 1 {
		t.Fatalf("cancelled %d", id)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := Call[int, int](ctx2, c.eps[1], 0, "block", 2, Options{Sem: rpc.AtLeastOnce})
		errc <- err
	}()
	for id := wait(t, b.started, "a call to start"); id != 2; id = wait(t, b.started, "call 2 to start") {
	}
	cancel2()
	if err := wait(t, errc, "the call to return"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v; want context.Canceled", err)
	}
	if id := wait(t, b.canceled, "the server to cancel call 2"); id != 2 {
		t.Fatalf("cancelled %d", id)
	}
}

// A node that does not know the cluster's secret cannot call: the
// transport refuses its connection before any request is read, and the
// procedure never runs.
func TestUnauthenticatedPeerCannotCall(t *testing.T) {
	var l ledger
	c := newCluster(t, 2, testConfig(), registerAdd(&l))
	c.stop(1) // node 1's place is taken by an impostor
	cfg := c.transportConfig(1, nil)
	cfg.Listen, cfg.Secret = "127.0.0.1:0", []byte("not the cluster's secret, 32b..!")
	tr, err := transport.NewTCP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	node, err := live.NewNode(live.Config{Self: 1, N: 2, Transport: tr, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	cfgRPC := testConfig()
	cfgRPC.RPC.Timeout = 50 * time.Millisecond
	ep, err := New(node, cfgRPC)
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { node.Close(); ep.Close() }()
	_, err = Call[addArgs, int](context.Background(), ep, 0, "add", addArgs{ID: 1, A: 1, B: 1}, Options{Sem: rpc.AtLeastOnce})
	if !errors.Is(err, ErrTimeout) && !errors.Is(err, ErrThrottled) {
		t.Fatalf("the impostor's call returned %v; want no reply", err)
	}
	if n := c.eps[0].Stats().Executed; n != 0 {
		t.Fatalf("the server ran %d procedures for an unauthenticated peer", n)
	}
}

func TestBadInput(t *testing.T) {
	c := newCluster(t, 2, testConfig(), nil)
	ctx := context.Background()
	for _, tc := range []struct {
		server proc.ID
		name   string
		args   []byte
		o      Options
	}{
		{5, "x", nil, Options{}},
		{0, "", nil, Options{}},
		{0, strings.Repeat("x", MaxProcName+1), nil, Options{}},
		{0, "x", make([]byte, MaxPayload+1), Options{}},
		{0, "x", nil, Options{Sem: 9}},
		{1, "x", nil, Options{}}, // itself
	} {
		if _, err := c.eps[1].Invoke(ctx, tc.server, tc.name, tc.args, tc.o); err == nil {
			t.Errorf("Invoke(%d, %.10q, %d bytes, %+v) accepted", tc.server, tc.name, len(tc.args), tc.o)
		}
	}
	if err := c.eps[0].Handle("", nil); err == nil {
		t.Error("Handle accepted an empty name")
	}
	if _, err := New(c.nodes[0], Config{RPC: rpc.Config{Orphans: 9}}); err == nil {
		t.Error("New accepted orphans = 9")
	}
	_ = fmt.Sprint()
}

// Orphans, live: a client crashes while its call runs at the server.
// Expiration: the call's lease lapses and the server kills it (the
// procedure's context is cancelled) without the client coming back.
// Reincarnation and extermination: the client's restart kills it.
func TestOrphansAreKilled(t *testing.T) {
	for _, o := range []rpc.Orphans{rpc.Expiration, rpc.Reincarnation, rpc.Extermination} {
		t.Run(o.String(), func(t *testing.T) {
			b := newBlocker()
			cfg := testConfig()
			cfg.RPC.Orphans, cfg.RPC.Lease = o, 150*time.Millisecond
			c := newCluster(t, 2, cfg, b.setup)
			go Call[int, int](context.Background(), c.eps[1], 0, "block", 9, Options{Sem: rpc.AtMostOnce})
			wait(t, b.started, "the call to start")
			c.stop(1) // the client crashes
			if o != rpc.Expiration {
				select {
				case id := <-b.canceled:
					t.Fatalf("call %d killed before the client came back", id)
				case <-time.After(300 * time.Millisecond): // two leases
				}
				c.start(1, nil)
			}
			if id := wait(t, b.canceled, "the orphan to be killed"); id != 9 {
				t.Fatalf("killed %d", id)
			}
		})
	}
}

// A call named by a key belongs to its key's owner, not to the node it
// was sent through: under every remedy against orphans, a restart of
// that node does not kill it while the owner's resend through another
// node waits for it, and the resend gets the one run's result.
func TestKeyedCallOutlivesItsFirstNodesRestart(t *testing.T) {
	for _, o := range []rpc.Orphans{rpc.Expiration, rpc.Reincarnation, rpc.Extermination} {
		t.Run(o.String(), func(t *testing.T) {
			b := newBlocker()
			cfg := testConfig()
			cfg.RPC.Orphans, cfg.RPC.Lease = o, time.Second
			c := newCluster(t, 3, cfg, b.setup)
			opts := Options{Sem: rpc.AtMostOnce, Key: "job-9", Attempt: 20 * time.Second}
			go Call[int, int](context.Background(), c.eps[0], 2, "block", 9, opts)
			wait(t, b.started, "the call to start")
			resent := make(chan error, 1)
			go func() {
				got, err := Call[int, int](context.Background(), c.eps[1], 2, "block", 9, opts)
				if err == nil && got != 9 {
					err = fmt.Errorf("result %d, want 9", got)
				}
				resent <- err
			}()
			c.restart(0) // the first node reboots: its requests are orphans
			select {
			case id := <-b.canceled:
				t.Fatalf("call %d killed though its resend waits", id)
			case err := <-resent:
				t.Fatalf("the resend ended before the call: %v", err)
			case <-time.After(2500 * time.Millisecond): // past two leases
			}
			close(b.release)
			if err := wait(t, resent, "the resend's reply"); err != nil {
				t.Fatal(err)
			}
			if n := b.l.count(9); n != 1 {
				t.Fatalf("ran %d times, want once", n)
			}
		})
	}
}

// A procedure's context carries its call's semantics: the one the call
// named, or, for a call that names none, the configured default; a
// context the endpoint did not make carries none.
func TestCallSemanticsReachTheProcedure(t *testing.T) {
	c := newCluster(t, 2, testConfig(), func(_ int, ep *Endpoint) {
		Register(ep, "sem", func(ctx context.Context, _ int) (string, error) {
			sem, ok := CallSemantics(ctx)
			if !ok {
				return "none", nil
			}
			return sem.String(), nil
		})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, sem := range []rpc.Semantics{rpc.Maybe, rpc.AtLeastOnce, rpc.AtMostOnce, 0} {
		want := sem
		if sem == 0 {
			want = testConfig().RPC.Semantics
		}
		got, err := Call[int, string](ctx, c.eps[1], 0, "sem", 0, Options{Sem: sem})
		if err != nil || got != want.String() {
			t.Fatalf("a call with semantics %d: the procedure saw %q, %v; want %s", sem, got, err, want)
		}
	}
	if _, ok := CallSemantics(ctx); ok {
		t.Fatal("a context the endpoint did not make carries semantics")
	}
}
