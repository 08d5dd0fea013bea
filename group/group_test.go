package group

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/livetest"
	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/multicast"
	"github.com/cohort-go/cohort/proc"
)

func algo(t testing.TB, name string) proc.Algorithm {
	for _, a := range multicast.Algorithms {
		if a.Name == name {
			return a
		}
	}
	t.Fatalf("no multicast algorithm %q", name)
	return proc.Algorithm{}
}

func inprocCluster(t testing.TB, n int, a proc.Algorithm) []*live.Node {
	t.Helper()
	return livetest.Start(t, n, live.Config{Resolve: Resolver(a)})
}

func nodes(t testing.TB, trs []live.Transport, a proc.Algorithm) []*live.Node {
	t.Helper()
	var ns []*live.Node
	for i, tr := range trs {
		node, err := live.NewNode(live.Config{Self: proc.ID(i), N: len(trs), Transport: tr, Resolve: Resolver(a)})
		if err != nil {
			t.Fatal(err)
		}
		if err := node.Start(); err != nil {
			t.Fatal(err)
		}
		ns = append(ns, node)
	}
	t.Cleanup(func() {
		for _, node := range ns {
			node.Close()
		}
	})
	return ns
}

// exchange has every node multicast k messages at once and collects what
// every node delivers, until each has n·k deliveries.
func exchange(t *testing.T, ns []*live.Node, a proc.Algorithm, k int) [][]Delivery {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var gs []*Group
	for _, node := range ns {
		g, err := New(node, "g", a)
		if err != nil {
			t.Fatal(err)
		}
		gs = append(gs, g)
	}
	got := make([][]Delivery, len(ns))
	var wg sync.WaitGroup
	for i, g := range gs {
		ds, _ := g.Deliveries(ctx)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range ds {
				got[i] = append(got[i], d)
				if len(got[i]) == len(ns)*k {
					return
				}
			}
		}()
	}
	var send sync.WaitGroup
	for i, g := range gs {
		send.Add(1)
		go func() {
			defer send.Done()
			for j := 1; j <= k; j++ {
				id, err := g.Multicast(ctx, []byte(fmt.Sprintf("m%d.%d", i, j)))
				if err != nil {
					t.Errorf("node %d multicast %d: %v", i, j, err)
					return
				}
				if id.Origin != proc.ID(i) || id.Seq != uint64(j) {
					t.Errorf("node %d multicast %d got id %+v", i, j, id)
				}
			}
		}()
	}
	send.Wait()
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("not every node delivered %d messages: %v", len(ns)*k, lens(got))
	}
	return got
}

func lens(got [][]Delivery) []int {
	var l []int
	for _, g := range got {
		l = append(l, len(g))
	}
	return l
}

// Every node delivers every message once, with the body that was sent, and
// each origin's messages in the order it sent them (TCP and in-process
// channels are FIFO, and these algorithms keep it); total orders give every
// node the same sequence.
func TestGroupsDeliverInOrder(t *testing.T) {
	for _, name := range []string{"total-sequencer", "total-isis", "total-lamport", "fifo", "causal", "reliable"} {
		t.Run(name, func(t *testing.T) {
			a := algo(t, name)
			got := exchange(t, inprocCluster(t, 5, a), a, 40)
			for i, ds := range got {
				seen := map[ID]bool{}
				next := map[proc.ID]uint64{}
				for _, d := range ds {
					if seen[d.ID] {
						t.Fatalf("node %d delivered %+v twice", i, d.ID)
					}
					seen[d.ID] = true
					if want := fmt.Sprintf("m%d.%d", d.Origin, d.Seq); string(d.Body) != want {
						t.Fatalf("node %d: %+v carries %q, want %q", i, d.ID, d.Body, want)
					}
					if next[d.Origin]++; next[d.Origin] != d.Seq && name != "reliable" {
						t.Fatalf("node %d delivered %+v out of its sender's order", i, d.ID)
					}
				}
			}
			if strings.HasPrefix(name, "total") {
				for i := 1; i < len(got); i++ {
					if !slices.EqualFunc(got[0], got[i], func(a, b Delivery) bool { return a.ID == b.ID }) {
						t.Fatalf("nodes 0 and %d delivered in different orders", i)
					}
				}
			}
		})
	}
}

// The same over the TCP transport on loopback, with its handshake.
func TestGroupOverTCP(t *testing.T) {
	a := algo(t, "total-isis")
	got := exchange(t, nodes(t, tcpTransports(t, 3, 0), a), a, 30)
	for i := 1; i < len(got); i++ {
		if !slices.EqualFunc(got[0], got[i], func(a, b Delivery) bool { return a.ID == b.ID }) {
			t.Fatalf("nodes 0 and %d delivered in different orders over TCP", i)
		}
	}
}

// tcpTransports makes n TCP transports on loopback whose queues hold
// queueLen frames per member (0: the default).
func tcpTransports(t *testing.T, n, queueLen int) []live.Transport {
	secret := []byte("a cluster secret of 32 bytes....")
	var addrs []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, ln.Addr().String())
		ln.Close()
	}
	var trs []live.Transport
	for i := range n {
		peers := map[proc.ID]string{}
		for j, addr := range addrs {
			if j != i {
				peers[proc.ID(j)] = addr
			}
		}
		tr, err := transport.NewTCP(transport.Config{Self: proc.ID(i), Listen: addrs[i], Peers: peers, Secret: secret, QueueLen: queueLen})
		if err != nil {
			t.Fatal(err)
		}
		trs = append(trs, tr)
	}
	return trs
}

// TestASequencerThatOutrunsTheGroupWaits: the sequencer's node delivers its
// own messages at once, so its senders are never slowed by the group —
// found as a stall of cohort bench multicast: node 0 flooded its queues,
// the transport refused frames, and a total order that lost one never
// delivered again. Multicast now waits while the node is congested (a
// queue a quarter full): with queues of 64 frames and 64 senders at node 0,
// every member delivers every message.
func TestASequencerThatOutrunsTheGroupWaits(t *testing.T) {
	a := algo(t, "total-sequencer")
	trs := tcpTransports(t, 3, 64)
	ns := nodes(t, trs, a)
	// Every link up first: a member not connected yet is not waited for
	// (its queue fills while it is down), and its frames would be refused.
	deadline := time.Now().Add(10 * time.Second)
	for _, tr := range trs {
		for {
			up := 0
			for _, p := range tr.Stats().Peers {
				if p.Connected {
					up++
				}
			}
			if up == len(trs)-1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the transports did not connect")
			}
			time.Sleep(time.Millisecond)
		}
	}
	var gs []*Group
	var streams []<-chan Delivery
	for _, nd := range ns {
		g, err := New(nd, "g", a)
		if err != nil {
			t.Fatal(err)
		}
		ds, _ := g.Deliveries(t.Context())
		gs, streams = append(gs, g), append(streams, ds)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const senders, each = 64, 40
	var wg sync.WaitGroup
	for range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if _, err := gs[0].Multicast(ctx, []byte("x")); err != nil {
					t.Errorf("multicast: %v", err)
					return
				}
			}
		}()
	}
	for i, ds := range streams {
		for k := range senders * each {
			select {
			case <-ds:
			case <-ctx.Done():
				t.Fatalf("node %d delivered %d of %d messages (node 0 dropped %d)", i, k, senders*each, gs[0].svc.Stats().Dropped)
			}
		}
	}
	wg.Wait()
}

func TestGroupBadInput(t *testing.T) {
	a := algo(t, "total-sequencer")
	ns := inprocCluster(t, 1, a)
	if _, err := New(ns[0], "a/b", a); err == nil {
		t.Error("bad name accepted")
	}
	mutexAlgo := a
	mutexAlgo.Family = "mutex"
	if _, err := New(ns[0], "x", mutexAlgo); err == nil {
		t.Error("a non-multicast algorithm accepted")
	}
	g, err := New(ns[0], "x", a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Multicast(context.Background(), make([]byte, MaxBody+1)); err == nil {
		t.Error("an oversized message accepted")
	}
	ns[0].Close()
	if _, err := g.Multicast(context.Background(), []byte("x")); !errors.Is(err, live.ErrClosed) {
		t.Errorf("multicast on a closed node: %v", err)
	}
}

// TestBacklogIsBoundedInBytes: a stream whose reader does not read holds
// at most MaxBacklogBytes of bodies; past it, the stream ends with
// ErrSlowReader instead of growing (or skipping a message).
func TestBacklogIsBoundedInBytes(t *testing.T) {
	s := &stream{wake: make(chan struct{}, 1)}
	body := make([]byte, 1<<20)
	for i := range MaxBacklogBytes>>20 + 10 {
		s.push(Delivery{ID: ID{Origin: 0, Seq: uint64(i + 1)}, Body: body})
	}
	if s.bytes > MaxBacklogBytes || !s.overflow {
		t.Fatalf("holding %d bytes (overflow %v), want at most %d and overflow", s.bytes, s.overflow, MaxBacklogBytes)
	}
	b, err := s.take()
	if len(b) != MaxBacklogBytes>>20 || err != nil {
		t.Fatalf("took %d deliveries, %v; want the %d that fit", len(b), err, MaxBacklogBytes>>20)
	}
	if _, err := s.take(); !errors.Is(err, ErrSlowReader) {
		t.Fatalf("after the backlog: %v, want ErrSlowReader", err)
	}
}

// TestNoAcknowledgementWithoutDelivery: a multicast is acknowledged once
// this node delivered it. With the sequencer (node 0) closed, a message
// sent through node 1 is never ordered: Multicast ends with its context
// and an error, instead of acknowledging a message the group will never
// deliver (it did before).
func TestNoAcknowledgementWithoutDelivery(t *testing.T) {
	a := algo(t, "total-sequencer")
	ns := inprocCluster(t, 3, a)
	g1, err := New(ns[1], "g", a)
	if err != nil {
		t.Fatal(err)
	}
	ds, _ := g1.Deliveries(t.Context())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := g1.Multicast(ctx, []byte("first"))
	if err != nil {
		t.Fatalf("with every member up: %v", err)
	}
	select {
	case d := <-ds:
		if d.ID != id {
			t.Fatalf("delivered %+v, acknowledged %+v", d.ID, id)
		}
	case <-ctx.Done():
		t.Fatal("acknowledged, never delivered here")
	}
	ns[0].Close()
	short, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	if id, err := g1.Multicast(short, []byte("second")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("with the sequencer gone: %+v, %v; want no acknowledgement", id, err)
	}
	g1.pendMu.Lock()
	defer g1.pendMu.Unlock()
	if len(g1.awaiting) != 0 {
		t.Errorf("%d waits left behind", len(g1.awaiting))
	}
}

// A member whose algorithm drops a message rather than hold it back
// (multicast.Overflow: its hold-back queue full, for a gap that does not
// fill) tells its listeners and senders so, instead of leaving them in
// silence: the delivery streams end with ErrOverflow, a multicast waiting
// for its delivery here ends with it, and later ones and later streams
// fail with it at once. The metrics count the dropped messages.
func TestOverflowEndsListenersAndSenders(t *testing.T) {
	a := algo(t, "total-sequencer")
	ns := inprocCluster(t, 3, a)
	srv := NewServer(ServerConfig{Node: ns[1], Algorithm: a})
	g, err := srv.Group("g")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ds, wait := g.Deliveries(ctx)
	ns[0].Close() // the sequencer: what is sent through node 1 now waits
	sent := make(chan error, 1)
	go func() { _, err := g.Multicast(ctx, []byte("m")); sent <- err }()
	for g.Dropped() == 0 {
		g.pendMu.Lock()
		waiting := len(g.awaiting)
		g.pendMu.Unlock()
		if waiting > 0 {
			g.output(multicast.Overflow{Group: "all", Origin: 2, Seq: 7, Held: 1 << 20})
			g.output(multicast.Overflow{Group: "all", Origin: 2, Seq: 8, Held: 1 << 20})
			break
		}
		time.Sleep(time.Millisecond)
	}
	for range ds {
	}
	if err := wait(); !errors.Is(err, ErrOverflow) {
		t.Errorf("the listener's stream ended with %v, want ErrOverflow", err)
	}
	if err := <-sent; !errors.Is(err, ErrOverflow) {
		t.Errorf("the multicast waiting for its delivery: %v, want ErrOverflow", err)
	}
	if _, err := g.Multicast(ctx, []byte("later")); !errors.Is(err, ErrOverflow) || !strings.Contains(err.Error(), "message 7 of node 2") {
		t.Errorf("a later multicast: %v, want ErrOverflow naming the dropped message", err)
	}
	ds, wait = g.Deliveries(ctx)
	for range ds {
	}
	if err := wait(); !errors.Is(err, ErrOverflow) {
		t.Errorf("a later stream ended with %v, want ErrOverflow", err)
	}
	var m strings.Builder
	srv.WriteMetrics(&m)
	if !strings.Contains(m.String(), `cohort_group_holdback_dropped_total{group="g"} 2`) {
		t.Errorf("metrics: want 2 dropped in group g\n%s", m.String())
	}
}

// A message of MaxBody bytes reaches every member: at 1 MiB it fit no
// transport frame, and only its sender delivered it (found by a test
// that sent the largest messages).
func TestLargestMessageReachesEveryMember(t *testing.T) {
	a := algo(t, "total-sequencer")
	ns := inprocCluster(t, 3, a)
	var gs []*Group
	for _, n := range ns {
		g, err := New(n, "g", a)
		if err != nil {
			t.Fatal(err)
		}
		gs = append(gs, g)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ds, _ := gs[2].Deliveries(ctx)
	if _, err := gs[0].Multicast(ctx, make([]byte, MaxBody)); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-ds:
		if len(d.Body) != MaxBody {
			t.Fatalf("delivered %d bytes, want %d", len(d.Body), MaxBody)
		}
	case <-ctx.Done():
		t.Fatal("a message of MaxBody bytes never reached node 2")
	}
}
