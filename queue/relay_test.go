package queue

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/livetest"
)

// flakyNode is a destination node that can be down, lose its replies
// after doing the work, and restart (its manager reopened from disk).
type flakyNode struct {
	mu       sync.Mutex
	m        *Manager
	down     bool
	loseEach int // lose the reply of every loseEach-th put (0: none)
	puts     int
}

func (f *flakyNode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	m, down := f.m, f.down
	f.puts++
	lose := f.loseEach > 0 && f.puts%f.loseEach == 0
	f.mu.Unlock()
	if down {
		http.Error(w, `{"error":"down"}`, http.StatusServiceUnavailable)
		return
	}
	if !lose {
		Handler(m).ServeHTTP(w, r)
		return
	}
	Handler(m).ServeHTTP(httptest.NewRecorder(), r) // done, but the reply is lost
	http.Error(w, `{"error":"reply lost"}`, http.StatusServiceUnavailable)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRelayStoreAndForward relays a source queue on one manager to a
// destination queue served over HTTP by another, while the destination
// is down, loses replies, restarts, and the source's power is cut: every
// message arrives once, in order.
func TestRelayStoreAndForward(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	destDir := t.TempDir()
	dm, err := Open(Config{Dir: destDir, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	dest := &flakyNode{m: dm, down: true}
	srv := httptest.NewServer(dest)
	defer srv.Close()
	defer func() { dest.m.Close() }()

	fs := newMemFS()
	srcCfg := func() Config { return Config{Dir: "/src", FS: fs.Mount(), Logger: quiet} }
	src, err := Open(srcCfg())
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	for i := range n {
		if _, err := src.Put("outbox", []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	relay := func(m *Manager) (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			m.Relay(ctx, RelayConfig{Source: "outbox", Destination: &Client{Endpoints: []string{srv.URL}},
				Queue: "inbox", Origin: "a/outbox", Retry: time.Millisecond, MaxRetry: 10 * time.Millisecond, Logger: quiet})
		}()
		return func() { cancel(); <-done }
	}
	stop := relay(src)
	time.Sleep(30 * time.Millisecond)
	if src.Len("outbox") != n || dest.m.Len("inbox") != 0 {
		t.Fatalf("with the destination down: source %d, destination %d", src.Len("outbox"), dest.m.Len("inbox"))
	}

	// Back, losing a reply in three.
	dest.mu.Lock()
	dest.down, dest.loseEach = false, 3
	dest.mu.Unlock()
	waitFor(t, "a first part forwarded", func() bool { return src.Len("outbox") <= 3*n/4 })

	// The destination restarts.
	dest.mu.Lock()
	dest.down = true
	dest.m.Close()
	if dest.m, err = Open(Config{Dir: destDir, Logger: quiet}); err != nil {
		t.Fatal(err)
	}
	dest.down = false
	dest.mu.Unlock()
	waitFor(t, "a second part forwarded", func() bool { return src.Len("outbox") <= n/2 })

	// The source's power is cut: acknowledgements in flight are lost, so
	// messages the destination has are sent again.
	fs.Crash()
	stop()
	src.Close()
	if src, err = Open(srcCfg()); err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	stop = relay(src)
	defer stop()
	waitFor(t, "everything forwarded", func() bool { return src.Len("outbox") == 0 })

	dest.mu.Lock()
	dm = dest.m
	dest.mu.Unlock()
	for i := range n {
		msg, ok, err := dm.Poll("inbox", 0)
		if !ok || err != nil || string(msg.Body) != fmt.Sprint(i) {
			t.Fatalf("destination message %d: %q %v %v", i, msg.Body, ok, err)
		}
	}
	if msg, ok, _ := dm.Poll("inbox", 0); ok {
		t.Fatalf("a duplicate at the destination: %q", msg.Body)
	}
}

func TestRelayLocalAndDuplicates(t *testing.T) {
	m := open(t, Config{Dir: t.TempDir()})
	if id, err := m.PutFrom("in", []byte("a"), "x/q", 5); err != nil || id == 0 {
		t.Fatal(id, err)
	}
	for _, seq := range []uint64{5, 4} {
		if id, err := m.PutFrom("in", []byte("again"), "x/q", seq); err != nil || id != 0 {
			t.Fatalf("seq %d after 5: id %d, %v; want a duplicate", seq, id, err)
		}
	}
	if m.Len("in") != 1 {
		t.Fatal("a duplicate was stored")
	}
	mustPut(t, m, "src", "hello")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- m.Relay(ctx, RelayConfig{Source: "src", Destination: Local{m}, Queue: "dst", Origin: "here/src"})
	}()
	msg, err := m.Get(context.Background(), "dst", 0)
	cancel()
	if err != nil || string(msg.Body) != "hello" {
		t.Fatalf("relayed locally: %q %v", msg.Body, err)
	}
	if err := <-done; err != context.Canceled {
		t.Fatalf("relay ended with %v", err)
	}
	if err := m.Relay(context.Background(), RelayConfig{Source: "src", Queue: "dst", Origin: "o"}); err == nil {
		t.Fatal("a relay without a destination ran")
	}
}

// Compaction deletes old segments; the next id and what was taken from
// each origin live on in every segment's start record.
func TestCompactionKeepsOriginsAndIDs(t *testing.T) {
	fs := newMemFS()
	cfg := Config{Dir: "/q", FS: fs, SegmentBytes: 1 << 10}
	m := open(t, cfg)
	if _, err := m.PutFrom("in", []byte("a"), "x/q", 10); err != nil {
		t.Fatal(err)
	}
	msg, _ := m.Get(context.Background(), "in", 0)
	m.Ack("in", msg.ID)
	var last uint64
	for range 200 {
		last = mustPut(t, m, "churn", "0123456789012345678901234567890123456789")
		got, _ := m.Get(context.Background(), "churn", 0)
		m.Ack("churn", got.ID)
	}
	if segs := fs.segments(); len(segs) > 3 || segs[0] == "/q/"+segName(1) {
		t.Fatalf("segments %v: the first was not deleted", segs)
	}
	m.Close()
	m = open(t, cfg)
	if id, err := m.PutFrom("in", []byte("a"), "x/q", 10); err != nil || id != 0 {
		t.Fatalf("a duplicate after compaction and a restart: id %d, %v", id, err)
	}
	if id := mustPut(t, m, "churn", "x"); id <= last {
		t.Fatalf("id %d reused (had %d)", id, last)
	}
}

// A relay from a replicated queue: messages put through any node of the
// cluster wait in the replicated source while the destination is down,
// and arrive once each, in order, when it is up — the first of them held
// back by a relay of an earlier run (leased, never acked), which its
// successor waits out rather than send what comes after it first.
func TestRelayFromAReplicatedQueue(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	dm, err := Open(Config{Dir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer dm.Close()
	dest := &flakyNode{m: dm, down: true, loseEach: 7}
	srv := httptest.NewServer(dest)
	defer srv.Close()

	const n = 60
	_, rs := outboxOnThree(t, n)
	// An earlier relay took the head and died with it.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if m, err := rs[2].Get(ctx, "outbox", 300*time.Millisecond); err != nil || string(m.Body) != "0" {
		t.Fatalf("the earlier relay's get: %q %v", m.Body, err)
	}
	// Every node runs the relay; only the leader relays. A loaded machine
	// may change the leader during the test, so which nodes led is
	// sampled throughout (a leadership lasts an election timeout at least).
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 3)
	var by [3]atomic.Int64
	var led [3]atomic.Bool
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for rctx.Err() == nil {
			for i, r := range rs {
				if r.Leading() {
					led[i].Store(true)
				}
			}
			time.Sleep(time.Millisecond)
		}
	}()
	for i, r := range rs {
		go func() {
			done <- r.Relay(rctx, RelayConfig{Source: "outbox", Queue: "inbox", Origin: "cluster/outbox",
				Destination: countingDest{&Client{Endpoints: []string{srv.URL}}, &by[i]}, Retry: 5 * time.Millisecond,
				MaxRetry: 20 * time.Millisecond, Visibility: time.Second, Logger: quiet})
		}()
	}
	waitFor(t, "the relay to find the destination down", func() bool {
		dest.mu.Lock()
		defer dest.mu.Unlock()
		return dest.puts >= 2
	})
	dest.mu.Lock()
	dest.down = false
	dest.mu.Unlock()
	var got []string
	for len(got) < n {
		m, err := dm.Get(ctx, "inbox", time.Minute)
		if err != nil {
			t.Fatalf("after %d messages: %v", len(got), err)
		}
		got = append(got, string(m.Body))
		dm.Ack("inbox", m.ID)
	}
	for i, b := range got {
		if b != fmt.Sprint(i) {
			t.Fatalf("message %d at the destination is %q: got %q", i, b, got)
		}
	}
	waitFor(t, "the source to drain", func() bool {
		for _, s := range rs[0].Queues() {
			if s.Name == "outbox" {
				return false
			}
		}
		return true
	})
	if dm.Len("inbox") != 0 {
		t.Fatalf("a duplicate at the destination: %d more", dm.Len("inbox"))
	}
	stop()
	<-sampled
	relayed, leaders := 0, 0
	for i := range by {
		if led[i].Load() {
			leaders++
		}
		if by[i].Load() > 0 {
			relayed++
			if !led[i].Load() {
				t.Errorf("node %d relayed, and never led", i)
			}
		}
	}
	if relayed == 0 || relayed > leaders || leaders == 1 && relayed != 1 {
		t.Fatalf("%d nodes relayed (puts per node %d %d %d), %d led: want the leaders alone", relayed, by[0].Load(), by[1].Load(), by[2].Load(), leaders)
	}
	for range rs {
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("a relay ended with %v", err)
		}
	}
}

// countingDest counts the puts of one node's relay.
type countingDest struct {
	Destination
	n *atomic.Int64
}

func (d countingDest) PutFrom(ctx context.Context, queue string, body []byte, origin string, seq uint64) error {
	d.n.Add(1)
	return d.Destination.PutFrom(ctx, queue, body, origin, seq)
}

// The relay of a replicated queue, run by every node, moves with the
// leadership: the leader is stopped half-way and the new one carries on;
// every message arrives once, in order.
func TestRelayMovesWithTheLeader(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	dm, err := Open(Config{Dir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer dm.Close()
	const n = 40
	nodes, rs := outboxOnThree(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var by [3]atomic.Int64
	var gate sync.Mutex // held: the destination takes nothing
	for i, r := range rs {
		go r.Relay(ctx, RelayConfig{Source: "outbox", Queue: "inbox", Origin: "cluster/outbox",
			Destination: countingDest{gatedDest{Local{dm}, &gate}, &by[i]}, Retry: 5 * time.Millisecond,
			MaxRetry: 20 * time.Millisecond, Visibility: 500 * time.Millisecond, Logger: quiet})
	}
	var got []string
	take := func(k int) {
		for range k {
			m, err := dm.Get(ctx, "inbox", time.Minute)
			if err != nil {
				t.Fatalf("after %d messages: %v", len(got), err)
			}
			got = append(got, string(m.Body))
			dm.Ack("inbox", m.ID)
		}
	}
	take(n / 2)
	gate.Lock() // the leader's next put waits: cut it off with a message under way
	old := slices.IndexFunc(rs, func(r *Replicated) bool { return r.Leading() })
	if old < 0 {
		t.Fatal("no leader")
	}
	nodes[old].Close()
	gate.Unlock()
	take(n - len(got))
	for i, b := range got {
		if b != fmt.Sprint(i) {
			t.Fatalf("message %d at the destination is %q: got %q", i, b, got)
		}
	}
	waitFor(t, "the source to drain", func() bool {
		for _, s := range rs[(old+1)%3].Queues() {
			if s.Name == "outbox" {
				return s.Ready+s.Leased == 0
			}
		}
		return true
	})
	if dm.Len("inbox") != 0 {
		t.Fatalf("a duplicate at the destination: %d more", dm.Len("inbox"))
	}
	movers := 0
	for i := range by {
		if by[i].Load() > 0 {
			movers++
		}
	}
	if movers != 2 {
		t.Fatalf("puts per node %d %d %d: want the old leader's and the new one's", by[0].Load(), by[1].Load(), by[2].Load())
	}
}

// gatedDest puts while it can take gate.
type gatedDest struct {
	Destination
	gate *sync.Mutex
}

func (d gatedDest) PutFrom(ctx context.Context, queue string, body []byte, origin string, seq uint64) error {
	d.gate.Lock()
	defer d.gate.Unlock()
	return d.Destination.PutFrom(ctx, queue, body, origin, seq)
}

// A relay into a replicated queue that is full: the destination refuses
// (507) and the relay sends the message again, with the same number,
// until there is room — then it is put, not taken for a duplicate of the
// put that was refused and dropped.
func TestRelayIntoAFullReplicatedQueue(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	nodes := livetest.Start(t, 1, live.Config{DataDir: t.TempDir()})
	dst, err := NewReplicated(nodes[0], ReplicatedConfig{Limits: consensus.QueueLimits{Messages: 1}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Handler(dst))
	defer srv.Close()
	if _, err := dst.Put("inbox", []byte("blocker")); err != nil {
		t.Fatal(err)
	}
	src, err := Open(Config{Dir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for _, b := range []string{"first", "second"} {
		if _, err := src.Put("outbox", []byte(b)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go src.Relay(ctx, RelayConfig{Source: "outbox", Queue: "inbox", Origin: "src/outbox",
		Destination: &Client{Endpoints: []string{srv.URL}}, Retry: 5 * time.Millisecond, MaxRetry: 20 * time.Millisecond, Logger: quiet})
	waitFor(t, "the destination to refuse the relay twice", func() bool { return dst.stats.refused.Load() >= 2 })
	var got []string
	for len(got) < 3 {
		m, err := dst.Get(ctx, "inbox", time.Minute)
		if err != nil {
			t.Fatalf("after %q: %v", got, err)
		}
		got = append(got, string(m.Body))
		if err := dst.Ack("inbox", m.ID); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"blocker", "first", "second"}; !slices.Equal(got, want) {
		t.Fatalf("the destination got %q, want %q", got, want)
	}
}

// outboxOnThree starts three nodes with replicated queues and puts the
// messages "0" to "n-1" into "outbox", through the nodes in turn.
func outboxOnThree(t *testing.T, n int) ([]*live.Node, []*Replicated) {
	t.Helper()
	nodes := livetest.Start(t, 3, live.Config{DataDir: t.TempDir()})
	var rs []*Replicated
	for _, nd := range nodes {
		r, err := NewReplicated(nd, ReplicatedConfig{})
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	for i := range n {
		if _, err := rs[i%3].Put("outbox", []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	return nodes, rs
}

// TestOriginsAreBounded: every publisher's stream is an origin, and a
// client may name any, so the origins a node remembers are bounded — in
// memory and in every segment's start record, across a restart — and
// the one that put longest ago goes first: a recent origin's copy is
// still dropped.
func TestOriginsAreBounded(t *testing.T) {
	fs := newMemFS()
	cfg := Config{Dir: "/q", FS: fs, SegmentBytes: 64 << 10}
	m := open(t, cfg)
	if _, err := m.PutFrom("in", []byte("a"), "relay", 1); err != nil {
		t.Fatal(err)
	}
	for i := range MaxOrigins + 100 {
		if _, err := m.PutFrom("in", []byte("p"), fmt.Sprintf("publisher-%d", i), 1); err != nil {
			t.Fatal(err)
		}
		if i == MaxOrigins/2 { // the relay puts again: it is not the oldest now
			if _, err := m.PutFrom("in", []byte("b"), "relay", 2); err != nil {
				t.Fatal(err)
			}
		}
	}
	m.mu.Lock()
	n, durable := len(m.origins), len(m.seg.durOrigins)
	m.mu.Unlock()
	if n > MaxOrigins || durable > MaxOrigins {
		t.Fatalf("%d origins remembered, %d durable: the most is %d", n, durable, MaxOrigins)
	}
	for _, o := range []string{"relay", fmt.Sprintf("publisher-%d", MaxOrigins+99)} {
		if id, err := m.PutFrom("in", []byte("again"), o, 1); err != nil || id != 0 {
			t.Fatalf("a copy from %s, which put recently: id %d, %v; want it dropped", o, id, err)
		}
	}
	if id, _ := m.PutFrom("in", []byte("again"), "publisher-0", 1); id == 0 {
		t.Fatal("publisher-0, the oldest, is still remembered")
	}
	m.Close()
	m = open(t, cfg)
	m.mu.Lock()
	n = len(m.origins)
	m.mu.Unlock()
	if n > MaxOrigins {
		t.Fatalf("%d origins after a restart: the most is %d", n, MaxOrigins)
	}
	if id, err := m.PutFrom("in", []byte("again"), "relay", 2); err != nil || id != 0 {
		t.Fatalf("the relay's copy after a restart: id %d, %v; want it dropped", id, err)
	}
}

// awayFor is a destination that is away for its first puts.
type awayFor struct {
	mu    sync.Mutex
	away  int // the puts still to fail
	taken int
}

func (d *awayFor) PutFrom(context.Context, string, []byte, string, uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.away > 0 {
		d.away--
		return errors.New("away")
	}
	d.taken++
	return nil
}

// A relay's waits for a destination that is away double from Retry up to
// MaxRetry, each shortened by less than a quarter at random; so two
// relays cut off from it together (two nodes' relays, say) do not try
// it again at the same instants (Floyd and Jacobson, "The
// Synchronization of Periodic Routing Messages", 1994).
func TestRelayWaitsForAnAwayDestinationWithJitter(t *testing.T) {
	const retry, maxRetry, away = 100 * time.Millisecond, time.Second, 8
	m := open(t, Config{Dir: t.TempDir()})
	var mu sync.Mutex
	waits := map[string][]time.Duration{}
	for _, src := range []string{"a", "b"} {
		mustPut(t, m, src, "hello")
		dst := &awayFor{away: away}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() {
			done <- m.Relay(ctx, RelayConfig{Source: src, Destination: dst, Queue: "dst", Origin: "here/" + src,
				Retry: retry, MaxRetry: maxRetry, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
				sleep: func(ctx context.Context, d time.Duration) error {
					mu.Lock()
					waits[src] = append(waits[src], d)
					mu.Unlock()
					return ctx.Err()
				}})
		}()
		waitFor(t, "the message relayed from "+src, func() bool {
			dst.mu.Lock()
			defer dst.mu.Unlock()
			return dst.taken == 1
		})
		cancel()
		if err := <-done; err != context.Canceled {
			t.Fatalf("relay from %s ended with %v", src, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for src, ws := range waits {
		if len(ws) != away {
			t.Fatalf("relay from %s waited %d times for %d failed puts", src, len(ws), away)
		}
		ceiling := retry
		for i, w := range ws {
			if w <= ceiling-ceiling/4 || w > ceiling {
				t.Errorf("relay from %s, wait %d: %v, want in (%v, %v]", src, i, w, ceiling-ceiling/4, ceiling)
			}
			ceiling = min(2*ceiling, maxRetry)
		}
	}
	if slices.Equal(waits["a"], waits["b"]) {
		t.Errorf("two relays cut off together waited alike: %v", waits["a"])
	}
}
