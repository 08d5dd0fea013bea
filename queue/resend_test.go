package queue_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/internal/backoff"
	"github.com/cohort-go/cohort/internal/httpapi"
	"github.com/cohort-go/cohort/queue"
)

// replyGate is a TCP proxy in front of a node that can hold back the
// node's replies while its requests still reach it, and cut every
// connection: a put the node applied whose acknowledgement is lost. A
// connection that carried a request or a reply while muted holds back
// every later reply until cut (a reply the node writes just after muted
// is cleared is not let through).
// Retarget points it at another address (the node restarted).
type replyGate struct {
	ln    net.Listener
	muted atomic.Bool
	// mutePosts holds back the replies on a connection once a POST went
	// through it (a stream; not the Publisher's GET before it).
	mutePosts atomic.Bool

	mu    sync.Mutex
	to    string
	conns []net.Conn
}

// gatedOwnPair starts two nodes, A and B, each serving its own queues, and
// a Client whose first endpoint reaches A through a reply gate, B's next:
// the start of every resend-to-the-same-node test. dirA is A's data
// directory, to restart it on.
func gatedOwnPair(t *testing.T) (a, b *ownNode, dirA string, gate *replyGate, c *queue.Client) {
	t.Helper()
	dirA = t.TempDir()
	a, b = startOwnNode(t, dirA), startOwnNode(t, t.TempDir())
	gate = newReplyGate(t, a.addr())
	// Attempt far above a loaded machine's delays: a kind lookup through
	// the gate unanswered within the default 3 s (seen under -race beside
	// the whole suite) would count A quiet and send the puts to B, which
	// these tests are not about.
	return a, b, dirA, gate, &queue.Client{Endpoints: []string{gate.URL(), b.srv.URL}, Token: token, Attempt: time.Minute}
}

// gatedReplicated starts three nodes with replicated queues, waits for
// a leader, and puts a reply gate in front of node k, drawn by rng: the
// start of every resend-through-another-node test.
func gatedReplicated(t *testing.T, rng *rand.Rand) (ctx context.Context, cl *cluster, k int, gate *replyGate) {
	t.Helper()
	cl = startCluster(t, 3, t.TempDir(), queue.ReplicatedConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	waitUntil(ctx, t, "a leader", func() bool {
		return cl.rs[0].Leading() || cl.rs[1].Leading() || cl.rs[2].Leading()
	})
	k = rng.IntN(3)
	return ctx, cl, k, newReplyGate(t, cl.srvs[k].Listener.Addr().String())
}

func newReplyGate(t *testing.T, to string) *replyGate {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &replyGate{ln: ln, to: to}
	t.Cleanup(func() { ln.Close(); g.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			g.mu.Lock()
			to := g.to
			g.mu.Unlock()
			s, err := net.Dial("tcp", to)
			if err != nil {
				c.Close()
				continue
			}
			g.mu.Lock()
			g.conns = append(g.conns, c, s)
			g.mu.Unlock()
			var posted atomic.Bool
			// held: a request went, or a reply came, while muted: the
			// connection's replies are held back until cut.
			var held atomic.Bool
			go func() {
				buf := make([]byte, 32<<10)
				for {
					n, err := c.Read(buf)
					if n > 0 && strings.Contains(string(buf[:n]), "POST ") {
						posted.Store(true)
					}
					if n > 0 && g.muted.Load() {
						held.Store(true)
					}
					if n > 0 {
						if _, werr := s.Write(buf[:n]); werr != nil {
							break
						}
					}
					if err != nil {
						break
					}
				}
				s.Close()
			}()
			go func() {
				buf := make([]byte, 32<<10)
				for {
					n, err := s.Read(buf)
					if n > 0 && g.muted.Load() {
						held.Store(true)
					}
					if n > 0 && !held.Load() && !(posted.Load() && g.mutePosts.Load()) {
						if _, werr := c.Write(buf[:n]); werr != nil {
							break
						}
					}
					if err != nil {
						break
					}
				}
				c.Close()
			}()
		}
	}()
	return g
}

func (g *replyGate) URL() string { return "http://" + g.ln.Addr().String() }

// cut closes every connection through the gate.
func (g *replyGate) cut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.conns {
		c.Close()
	}
	g.conns = nil
}

func (g *replyGate) retarget(to string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.to = to
}

// ownNode is a node serving its own queues (a Manager) on dir.
type ownNode struct {
	m   *queue.Manager
	srv *httptest.Server
}

func startOwnNode(t *testing.T, dir string) *ownNode {
	t.Helper()
	m, err := queue.Open(queue.Config{Dir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	n := &ownNode{m: m, srv: httptest.NewServer(httpapi.RequireToken(token, queue.Handler(m)))}
	t.Cleanup(n.stop)
	return n
}

func (n *ownNode) addr() string { return n.srv.Listener.Addr().String() }

// stop kills the node: its connections cut, its queues closed.
func (n *ownNode) stop() {
	n.srv.CloseClientConnections()
	n.srv.Close()
	n.m.Close()
}

// drain takes every message of queue name from b, and counts each body.
func drain(t *testing.T, b queue.Backend, name string, seen map[string]int) {
	t.Helper()
	for {
		m, ok, err := b.Poll(name, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return
		}
		seen[string(m.Body)]++
	}
}

// ready is how many messages of queue name b holds ready.
func ready(b queue.Backend, name string) int {
	for _, s := range b.Queues() {
		if s.Name == name {
			return s.Ready
		}
	}
	return 0
}

// waitLeader waits until one of rs leads the queues' log, and returns
// its index.
func waitLeader(ctx context.Context, t *testing.T, rs []*queue.Replicated) int {
	t.Helper()
	lead := -1
	waitUntil(ctx, t, "a leader", func() bool {
		lead = slices.IndexFunc(rs, (*queue.Replicated).Leading)
		return lead >= 0
	})
	return lead
}

// waitUntil waits for cond, or fails the test at ctx's end.
func waitUntil(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if ctx.Err() != nil {
			t.Fatalf("%s: not within the deadline", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// A Publisher to node A of its own queues, with B as the next endpoint:
// A applies puts whose acknowledgements are lost (the replies held back,
// then the connection cut; or A killed and restarted on its disk). The
// Publisher sends them again to A alone — which answers them as copies —
// never to B, whose queue of the same name is another queue: every put is
// stored once, on A. Seeded: where the loss comes and what follows.
// Without the rule (a resend to the next endpoint that answers) the puts
// in doubt are on A and on B.
func TestPublisherResendsOwnQueuesToTheSameNode(t *testing.T) {
	seeds := 12
	if testing.Short() {
		seeds = 4
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 17))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			a, b, dirA, gate, c := gatedOwnPair(t)
			ps := publish(ctx, t, c)
			before, doubt, after := ps.inDoubt(ctx, t, rng, gate)
			waitUntil(ctx, t, "the puts in doubt applied", func() bool { return ready(a.m, "jobs") == before+doubt })
			restart := rng.IntN(2) == 0
			if restart { // killed, and back on its disk at another address
				a.stop()
				a = startOwnNode(t, dirA)
				gate.retarget(a.addr())
			}
			gate.muted.Store(false)
			gate.cut()
			ps.put(after)
			dups := ps.settle(ctx, t)
			seen := map[string]int{}
			drain(t, a.m, "jobs", seen)
			onB := map[string]int{}
			drain(t, b.m, "jobs", onB)
			if len(onB) != 0 {
				t.Errorf("B holds %d puts sent to A: a resend to another node of its own queues", len(onB))
			}
			for k, v := range onB {
				seen[k] += v
			}
			for i := range ps.acks {
				if k := fmt.Sprintf("m%04d", i); seen[k] != 1 {
					t.Errorf("%s stored %d times, want once", k, seen[k])
				}
			}
			if dups == 0 || ps.p.Streams() < 2 {
				t.Errorf("%d puts answered as copies on %d streams: want the puts in doubt resent on a second stream", dups, ps.p.Streams())
			}
			t.Logf("%d+%d+%d puts, restart %v: %d answered as copies, %d streams", before, doubt, after, restart, dups, ps.p.Streams())
		})
	}
}

// A node of its own queues that does not come back: the puts in doubt
// there fail, after Retry, with ErrInDoubt, and are not sent to the other
// node.
func TestPublisherGivesUpOnPutsInDoubt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, b := startOwnNode(t, t.TempDir()), startOwnNode(t, t.TempDir())
	gate := newReplyGate(t, a.addr())
	c := &queue.Client{Endpoints: []string{gate.URL(), b.srv.URL}, Token: token}
	p, err := c.Publish(ctx, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	p.Retry = 300 * time.Millisecond
	if _, err := p.Put(ctx, []byte("acknowledged")); err != nil {
		t.Fatal(err)
	}
	gate.muted.Store(true)
	ack := p.PutAsync([]byte("in doubt"))
	waitUntil(ctx, t, "the put applied", func() bool { return ready(a.m, "jobs") == 2 })
	a.stop()
	gate.cut()
	if _, err := ack.Wait(ctx); !errors.Is(err, queue.ErrInDoubt) {
		t.Fatalf("the put in doubt: %v, want ErrInDoubt", err)
	}
	if n := ready(b.m, "jobs"); n != 0 {
		t.Fatalf("B holds %d messages, want none", n)
	}
	_, err = ack.Result()
	t.Logf("the put in doubt: %v", err)
}

// A Publisher to node k of three with replicated queues (the leader or a
// follower, by seed): the node applies puts whose acknowledgements are
// lost, and is killed; the Publisher resends them through another node,
// where the log's duplicate table answers them as copies: every put is
// stored once, in the order put.
func TestPublisherResendsReplicatedThroughAnotherNode(t *testing.T) {
	seeds := 4
	if testing.Short() || queue.RaceEnabled {
		seeds = 2
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 23))
			ctx, cl, k, gate := gatedReplicated(t, rng)
			others := []string{cl.eps[(k+1)%3], cl.eps[(k+2)%3]}
			c := &queue.Client{Endpoints: append([]string{gate.URL()}, others...), Token: token}
			ps := publish(ctx, t, c)
			before, doubt, after := ps.inDoubt(ctx, t, rng, gate)
			survivor := cl.rs[(k+1)%3]
			waitUntil(ctx, t, "the puts in doubt committed", func() bool { return ready(survivor, "jobs") == before+doubt })
			leading := cl.rs[k].Leading()
			cl.nodes[k].Close()
			cl.srvs[k].CloseClientConnections()
			go cl.srvs[k].Close()
			gate.muted.Store(false)
			gate.cut()
			ps.put(after)
			dups := ps.settle(ctx, t)
			ms, err := survivor.PollN("jobs", time.Hour, len(ps.acks)+10)
			if err != nil {
				t.Fatal(err)
			}
			for i, m := range ms {
				if want := fmt.Sprintf("m%04d", i); string(m.Body) != want {
					t.Fatalf("message %d of %d is %s, want %s: each put once, in order", i, len(ms), m.Body, want)
				}
			}
			if len(ms) != len(ps.acks) {
				t.Fatalf("%d messages, want the %d puts", len(ms), len(ps.acks))
			}
			if dups == 0 || ps.p.Streams() < 2 {
				t.Errorf("%d puts answered as copies on %d streams: want the puts in doubt resent on a second stream", dups, ps.p.Streams())
			}
			t.Logf("node %d killed (leading %v) after %d+%d puts, %d after: %d answered as copies, %d streams", k, leading, before, doubt, after, dups, ps.p.Streams())
		})
	}
}

// A stream's run of puts lost on its way to the log (as at a change of
// leader), and proposed again only once a run after it was refused as
// early: the next one overtakes it and is refused, and both are proposed
// again, in order, on the same stream. Every put is stored once, in the
// order put. Seeded: which run is lost. Without the refusal (runs applied
// whatever came before) the overtaking run is stored ahead of the lost
// one; with the early run ending the stream (the Publisher resending the
// rest on a new one), a resumed stream could take the refusal of an older
// copy of its run for its own, and streams were opened again and again
// on a busy machine.
func TestStreamRunOvertakenByTheNext(t *testing.T) {
	cl := startCluster(t, 3, t.TempDir(), queue.ReplicatedConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lead := waitLeader(ctx, t, cl.rs)
	seeds := 6
	if testing.Short() || queue.RaceEnabled {
		seeds = 3
	}
	body := make([]byte, 30<<10) // two puts to a run
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 29))
		name := fmt.Sprint("jobs", seed)
		// Through the leader or a follower (which hands runs to the leader).
		via := rng.IntN(3)
		lost := 2 + rng.IntN(6) // the run lost: the 2nd to the 7th
		var mu sync.Mutex
		runs, lostSeq := 0, uint64(0)
		early := queue.Early(cl.rs[via])
		// Its proposals are lost until a run after it was refused as early.
		queue.LoseProposals(cl.rs[via], func(run consensus.QueuePutRun, n int) bool {
			mu.Lock()
			defer mu.Unlock()
			if run.Queue != name {
				return false
			}
			if n == 1 {
				if runs++; runs == lost {
					lostSeq = run.Seq
				}
			}
			return run.Seq == lostSeq && queue.Early(cl.rs[via]) == early
		})
		c := &queue.Client{Endpoints: []string{cl.eps[via]}, Token: token}
		p, err := c.Publish(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		const n = 40
		var acks []*queue.PutAck
		for i := range n {
			b := append(fmt.Appendf(nil, "m%04d ", i), body...)
			acks = append(acks, p.PutAsync(b))
		}
		for i, a := range acks {
			if _, err := a.Wait(ctx); err != nil {
				t.Fatalf("seed %d: put %d: %v", seed, i, err)
			}
		}
		if err := p.Close(ctx); err != nil {
			t.Fatal(err)
		}
		queue.LoseProposals(cl.rs[via], nil)
		ms, err := cl.rs[lead].PollN(name, time.Hour, 2*n)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range ms {
			if want := fmt.Sprintf("m%04d ", i); string(m.Body[:len(want)]) != want {
				t.Fatalf("seed %d: message %d of %d is %.6s, want %s: each put once, in order", seed, i, len(ms), m.Body, want)
			}
		}
		if len(ms) != n {
			t.Fatalf("seed %d: %d messages, want %d", seed, len(ms), n)
		}
		if e := queue.Early(cl.rs[via]) - early; e == 0 || p.Streams() != 1 {
			t.Fatalf("seed %d: %d runs refused as early, %d streams: want the overtaking run refused and proposed again on the one stream", seed, e, p.Streams())
		}
		t.Logf("seed %d: via node %d (leader %d), run %d lost: %d refused as early", seed, via, lead, lost, queue.Early(cl.rs[via])-early)
	}
}

// Two runs of a stream lost together, as in-flight proposals are at a
// change of leader, the older one after it had already been proposed
// again (and lost) once: the older has backed off further than the
// younger. They are proposed again in the order of the stream, the
// older first, and both commit on the one stream. Proposed again each on
// its own timer, the younger went first (after one retry interval, the
// older after two more), was refused for coming after a put not applied,
// and the stream ended.
func TestStreamRunsProposedAgainInOrder(t *testing.T) {
	cl := startCluster(t, 3, t.TempDir(), queue.ReplicatedConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	waitUntil(ctx, t, "a leader", func() bool {
		return cl.rs[0].Leading() || cl.rs[1].Leading() || cl.rs[2].Leading()
	})
	r := cl.rs[0]
	c := &queue.Client{Endpoints: []string{cl.eps[0]}, Token: token}
	p, err := c.Publish(ctx, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if _, err := p.Put(ctx, fmt.Appendf(nil, "m%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	// The fifth put (number 5) is a run whose first two proposals are
	// lost; the sixth is sent once the fifth was proposed twice, and its
	// first proposal is lost too.
	var mu sync.Mutex
	var older, younger int // proposals seen
	queue.LoseProposals(r, func(run consensus.QueuePutRun, n int) bool {
		mu.Lock()
		defer mu.Unlock()
		switch run.Seq {
		case 5:
			older = n
			return n <= 2
		case 6:
			younger = n
			return n == 1
		}
		return false
	})
	acks := []*queue.PutAck{p.PutAsync([]byte("m4"))}
	waitUntil(ctx, t, "the older run proposed twice", func() bool { mu.Lock(); defer mu.Unlock(); return older >= 2 })
	acks = append(acks, p.PutAsync([]byte("m5")))
	for i, a := range acks {
		if _, err := a.Wait(ctx); err != nil {
			t.Fatalf("put %d: %v", 4+i, err)
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	ms, err := r.PollN("jobs", time.Hour, 10)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range ms {
		if want := fmt.Sprintf("m%d", i); string(m.Body) != want {
			t.Fatalf("message %d of %d is %s, want %s: each put once, in order", i, len(ms), m.Body, want)
		}
	}
	if len(ms) != 6 {
		t.Fatalf("%d messages, want 6", len(ms))
	}
	mu.Lock()
	defer mu.Unlock()
	if p.Streams() != 1 {
		t.Fatalf("%d streams (the runs proposed %d and %d times): want the lost runs proposed again in order on the one stream", p.Streams(), older, younger)
	}
	t.Logf("the runs proposed %d and %d times", older, younger)
}

// A stream's run whose proposals are lost for a while (as while the
// log has no leader to take them): the node proposes it again, under the
// same numbers, after the retry interval and then after twice as long
// each time, and the run commits once the loss ends. Its copies grow with
// the logarithm of the wait, not with the wait: at a fixed interval, a
// log slower to commit than the interval (a busy machine) is given a copy
// of every run under way at each interval, which slows it further, until
// it carries copies only and the stream's puts are not acknowledged.
// When the log moves again after a quiet spell (as the loss ends, or
// where a busy machine delays heartbeats and the log elects a leader),
// the run is proposed at once and the waits start over: so the test
// judges the waits between proposals, which only a loaded machine's
// delays lengthen, rather than their count. Without the backoff the
// second wait is the first again, and the run is proposed 11 times here,
// not 5.
func TestStreamRunProposedAgainWithBackoff(t *testing.T) {
	cl := startCluster(t, 3, t.TempDir(), queue.ReplicatedConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	waitUntil(ctx, t, "a leader", func() bool {
		return cl.rs[0].Leading() || cl.rs[1].Leading() || cl.rs[2].Leading()
	})
	r := cl.rs[0]
	retry := queue.Retry(r)
	lost := 10 * retry // proposals at 0, 1, 3 and 7 retries lost; the one at 15 commits
	type proposal struct {
		at    time.Time
		woken bool
	}
	var mu sync.Mutex
	var ps []proposal
	queue.LoseProposalsWoken(r, func(run consensus.QueuePutRun, n int, woken bool) bool {
		mu.Lock()
		defer mu.Unlock()
		ps = append(ps, proposal{time.Now(), woken})
		return time.Since(ps[0].at) < lost
	})
	c := &queue.Client{Endpoints: []string{cl.eps[0]}, Token: token}
	p, err := c.Publish(ctx, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	id, err := p.Put(ctx, []byte("late"))
	if err != nil || id == 0 {
		t.Fatalf("the put: id %d, %v; want it committed once the loss ends", id, err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ps) < 2 {
		t.Fatalf("the run was proposed %d times: want it proposed again while its proposals were lost", len(ps))
	}
	// The k-th wait since the first proposal or the last one woken is at
	// least ¾ of the retry interval doubled k times (the jitter shortens a
	// wait by at most a quarter), up to backoff's bound.
	k, woken := 0, 0
	for i := 1; i < len(ps); i++ {
		if ps[i].woken {
			k, woken = 0, woken+1
			continue
		}
		w := max(backoff.Max, retry)
		if k < 20 {
			w = min(retry<<k, w)
		}
		if gap := ps[i].at.Sub(ps[i-1].at); gap < w-w/4 {
			t.Fatalf("proposal %d came %v after the one before, the wait %d since a start: want at least %v, the interval doubling", i+1, gap.Round(time.Millisecond), k+1, (w - w/4).Round(time.Millisecond))
		}
		k++
	}
	if m := ready(r, "jobs"); m != 1 {
		t.Fatalf("%d messages, want 1", m)
	}
	t.Logf("proposed %d times, %d of them at once as the log moved again; committed after %v", len(ps), woken, ps[len(ps)-1].at.Sub(ps[0].at).Round(time.Millisecond))
}

// A stream lost before its reply started, while the Publisher has
// nothing more to send: an HTTP client then waits for the reply's status
// until it next writes the body, which would be never. The Publisher
// bounds that wait (streamStart), and resends the put in doubt to its
// node, which answers it as a copy. Without the bound the put's outcome
// never comes.
func TestPublisherNoticesALostStreamWhileIdle(t *testing.T) {
	defer queue.SetStreamStart(queue.SetStreamStart(300 * time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := startOwnNode(t, t.TempDir())
	gate := newReplyGate(t, a.addr())
	gate.mutePosts.Store(true) // the stream's reply never starts
	c := &queue.Client{Endpoints: []string{gate.URL()}, Token: token}
	p, err := c.Publish(ctx, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	ack := p.PutAsync([]byte("in doubt"))
	waitUntil(ctx, t, "the put applied", func() bool { return ready(a.m, "jobs") == 1 })
	gate.mutePosts.Store(false)
	gate.cut()
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	id, err := ack.Wait(wctx)
	if err != nil || id != 0 {
		t.Fatalf("the put in doubt: id %d, %v; want it answered as a copy (id 0) on a new stream", id, err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := ready(a.m, "jobs"); n != 1 || p.Streams() < 2 {
		t.Fatalf("%d messages on %d streams, want 1 on 2 or more", n, p.Streams())
	}
}

// numbered is a Publisher's puts of m0000, m0001, …, and their
// acknowledgements in order.
type numbered struct {
	p    *queue.Publisher
	acks []*queue.PutAck
}

func publish(ctx context.Context, t *testing.T, c *queue.Client) *numbered {
	t.Helper()
	p, err := c.Publish(ctx, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	return &numbered{p: p}
}

// put publishes the next n.
func (ps *numbered) put(n int) {
	for range n {
		ps.acks = append(ps.acks, ps.p.PutAsync(fmt.Appendf(nil, "m%04d", len(ps.acks))))
	}
}

// inDoubt puts a few (before) and waits for the last one's ack, so the
// stream's reply has started; then it mutes gate and puts more (doubt)
// whose replies gate holds back. It draws the numbers, and how many to
// put after (after), from rng.
func (ps *numbered) inDoubt(ctx context.Context, t *testing.T, rng *rand.Rand, gate *replyGate) (before, doubt, after int) {
	t.Helper()
	before, doubt, after = 1+rng.IntN(50), 1+rng.IntN(200), rng.IntN(50)
	ps.put(before)
	if _, err := ps.acks[before-1].Wait(ctx); err != nil {
		t.Fatal(err)
	}
	gate.muted.Store(true)
	ps.put(doubt)
	return before, doubt, after
}

// settle waits for every put's ack, closes the Publisher, and returns
// how many were answered as copies (id 0).
func (ps *numbered) settle(ctx context.Context, t *testing.T) (dups int) {
	t.Helper()
	for i, ack := range ps.acks {
		id, err := ack.Wait(ctx)
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		if id == 0 {
			dups++
		}
	}
	if err := ps.p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return dups
}

// A Get given up while its lease is being granted (its context ends as
// the entry commits: a relay whose turn ended, a client that hung up):
// nobody holds the messages, so the node gives the lease back at once
// rather than leave them to wait out their visibility. Without that the
// message here stays leased for an hour.
func TestGetGivenUpGivesItsLeaseBack(t *testing.T) {
	cl := startCluster(t, 3, t.TempDir(), queue.ReplicatedConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := cl.rs[0]
	if _, err := r.Put("jobs", []byte("m")); err != nil {
		t.Fatal(err)
	}
	gctx, giveUp := context.WithCancel(ctx)
	returned, gaveUp := make(chan error, 1), make(chan error, 1)
	var once sync.Once
	queue.OnGot(r, func(consensus.QueueGot) {
		// The lease is granted; its caller gives up before it hears so.
		first := false
		once.Do(func() { first = true })
		if !first {
			return
		}
		giveUp()
		select {
		case err := <-returned:
			gaveUp <- err
		case <-ctx.Done():
		}
	})
	go func() {
		_, err := r.Get(gctx, "jobs", time.Hour)
		returned <- err
	}()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("the Get given up returned %v, want its context's end", err)
	}
	waitUntil(ctx, t, "the message ready again", func() bool { return ready(r, "jobs") == 1 })
	m, err := r.Get(ctx, "jobs", time.Hour)
	if err != nil || string(m.Body) != "m" {
		t.Fatalf("the next Get: %q %v, want the message given back", m.Body, err)
	}
}
