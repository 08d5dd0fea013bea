package queue_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-go/cohort/queue"
)

// plan is a seeded list of a Client's requests: each a Put (one body) or
// a PutBatch (more), of the bodies m0000, m0001, … in turn.
type plan struct {
	rng  *rand.Rand
	next int
}

// draw returns n requests.
func (p *plan) draw(n int) [][]string {
	reqs := make([][]string, n)
	for i := range reqs {
		k := 1
		if p.rng.IntN(3) == 0 {
			k = 2 + p.rng.IntN(4)
		}
		for range k {
			reqs[i] = append(reqs[i], fmt.Sprintf("m%04d", p.next))
			p.next++
		}
	}
	return reqs
}

// sendAll sends reqs through c from workers goroutines at once and
// returns how many were answered as copies (ids 0).
func sendAll(ctx context.Context, c *queue.Client, reqs [][]string, workers int) (copies int, err error) {
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		next atomic.Int32
		dups atomic.Int32
	)
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(reqs) {
					return
				}
				var ids []uint64
				var e error
				if len(reqs[i]) == 1 {
					var id uint64
					id, e = c.Put(ctx, "jobs", []byte(reqs[i][0]))
					ids = []uint64{id}
				} else {
					bodies := make([][]byte, len(reqs[i]))
					for j, b := range reqs[i] {
						bodies[j] = []byte(b)
					}
					ids, e = c.PutBatch(ctx, "jobs", bodies)
				}
				if e == nil && len(ids) != len(reqs[i]) {
					e = fmt.Errorf("%d ids for %d puts", len(ids), len(reqs[i]))
				}
				if e != nil {
					mu.Lock()
					err = cmpErr(err, fmt.Errorf("%v: %w", reqs[i], e))
					mu.Unlock()
					continue
				}
				if ids[0] == 0 {
					dups.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return int(dups.Load()), err
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// bodies counts the bodies of reqs.
func bodies(reqs [][]string) int {
	n := 0
	for _, r := range reqs {
		n += len(r)
	}
	return n
}

// checkStoredOnce takes every message of queue jobs at r and fails
// unless it holds each of the first n bodies once.
func checkStoredOnce(t *testing.T, r *queue.Replicated, n int) {
	t.Helper()
	ms, err := r.PollN("jobs", time.Hour, n+10)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, m := range ms {
		seen[string(m.Body)]++
	}
	checkOnce(t, seen, n)
}

// checkOnce fails unless seen holds each of the first n bodies once.
func checkOnce(t *testing.T, seen map[string]int, n int) {
	t.Helper()
	for i := range n {
		if k := fmt.Sprintf("m%04d", i); seen[k] != 1 {
			t.Errorf("%s stored %d times, want once", k, seen[k])
		}
	}
	if len(seen) != n {
		t.Errorf("%d bodies stored, want %d", len(seen), n)
	}
}

// A Client's puts and batches to node A of its own queues, B next: A
// applies some whose replies are lost (held back, then the connection
// cut; or A killed after it synced them and restarted on its disk). The
// Client sends each again to A alone, which answers it as a copy: every
// put stored once, on A, none on B. Seeded: the requests, how many at
// once, and the restart. Without the numbers (each copy a new put, sent
// to the next endpoint that answers, as before) the puts in doubt were
// stored on A and on B.
func TestClientPutResendsOwnQueuesToTheSameNode(t *testing.T) {
	seeds := 50
	if testing.Short() {
		seeds = 8
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 31))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			a, b, dirA, gate, c := gatedOwnPair(t)
			p := &plan{rng: rng}
			workers := 1 + rng.IntN(8)
			if _, err := sendAll(ctx, c, p.draw(1+rng.IntN(20)), workers); err != nil {
				t.Fatal(err)
			}
			applied := p.next
			gate.muted.Store(true)
			doubt := p.draw(workers) // one each: all under way at once
			type outcome struct {
				copies int
				err    error
			}
			done := make(chan outcome, 1)
			go func() {
				n, err := sendAll(ctx, c, doubt, workers)
				done <- outcome{n, err}
			}()
			waitUntil(ctx, t, "the puts in doubt applied", func() bool { return ready(a.m, "jobs") == applied+bodies(doubt) })
			restart := rng.IntN(2) == 0
			if restart { // killed after the sync, back on its disk at another address
				a.stop()
				a = startOwnNode(t, dirA)
				gate.retarget(a.addr())
			}
			gate.muted.Store(false)
			gate.cut()
			o := <-done
			if o.err != nil {
				t.Fatal(o.err)
			}
			if o.copies != len(doubt) {
				t.Errorf("%d of the %d requests in doubt answered as copies, want all", o.copies, len(doubt))
			}
			if _, err := sendAll(ctx, c, p.draw(rng.IntN(20)), workers); err != nil {
				t.Fatal(err)
			}
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
			checkOnce(t, seen, p.next)
			t.Logf("%d puts, %d requests in doubt, %d at once, restart %v", p.next, len(doubt), workers, restart)
		})
	}
}

// The same through node k of three with replicated queues (by seed): k
// commits puts whose replies are lost, and is killed; the Client sends
// them again through another node, where the log's duplicate table
// answers them as copies. Without the numbers they were stored twice.
func TestClientPutResendsReplicatedThroughAnotherNode(t *testing.T) {
	seeds := 4
	if testing.Short() || queue.RaceEnabled {
		seeds = 2
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 37))
			ctx, cl, k, gate := gatedReplicated(t, rng)
			c := &queue.Client{Endpoints: []string{gate.URL(), cl.eps[(k+1)%3], cl.eps[(k+2)%3]}, Token: token}
			p := &plan{rng: rng}
			workers := 1 + rng.IntN(8)
			if _, err := sendAll(ctx, c, p.draw(1+rng.IntN(20)), workers); err != nil {
				t.Fatal(err)
			}
			applied := p.next
			gate.muted.Store(true)
			doubt := p.draw(workers) // one each: all under way at once
			done := make(chan error, 1)
			var copies int
			go func() {
				var err error
				copies, err = sendAll(ctx, c, doubt, workers)
				done <- err
			}()
			survivor := cl.rs[(k+1)%3]
			waitUntil(ctx, t, "the puts in doubt committed", func() bool { return ready(survivor, "jobs") == applied+bodies(doubt) })
			leading := cl.rs[k].Leading()
			cl.nodes[k].Close()
			cl.srvs[k].CloseClientConnections()
			go cl.srvs[k].Close()
			gate.muted.Store(false)
			gate.cut()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if copies != len(doubt) {
				t.Errorf("%d of the %d requests in doubt answered as copies, want all", copies, len(doubt))
			}
			if _, err := sendAll(ctx, c, p.draw(rng.IntN(20)), workers); err != nil {
				t.Fatal(err)
			}
			checkStoredOnce(t, survivor, p.next)
			t.Logf("node %d killed (leading %v): %d puts, %d requests in doubt, %d at once", k, leading, p.next, len(doubt), workers)
		})
	}
}

// A node of replicated queues that takes puts and never answers (cut off
// from the majority, or its replies lost): after Attempt each put goes
// through the next endpoint and is stored once there. Without the bound
// every put waited at that node until its deadline and failed.
func TestClientPutMovesOnFromANodeThatDoesNotAnswer(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 37))
	ctx, cl, k, gate := gatedReplicated(t, rng)
	gate.muted.Store(true)
	c := &queue.Client{Endpoints: []string{gate.URL(), cl.eps[(k+1)%3], cl.eps[(k+2)%3]}, Token: token, Attempt: 200 * time.Millisecond}
	p := &plan{rng: rng}
	reqs := p.draw(10)
	for _, r := range reqs {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := sendAll(pctx, c, [][]string{r}, 1)
		cancel()
		if err != nil {
			t.Fatalf("a put with node %d silent: %v", k, err)
		}
	}
	survivor := cl.rs[(k+1)%3]
	waitUntil(ctx, t, "every put applied", func() bool { return ready(survivor, "jobs") >= p.next })
	checkStoredOnce(t, survivor, p.next)
}

// A node of its own queues that does not come back: a put in doubt there
// fails, after Retry, with ErrInDoubt, and is not sent to the other node.
func TestClientPutGivesUpOnAPutInDoubt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, b := startOwnNode(t, t.TempDir()), startOwnNode(t, t.TempDir())
	gate := newReplyGate(t, a.addr())
	c := &queue.Client{Endpoints: []string{gate.URL(), b.srv.URL}, Token: token, Retry: 300 * time.Millisecond}
	if _, err := c.Put(ctx, "jobs", []byte("acknowledged")); err != nil {
		t.Fatal(err)
	}
	gate.muted.Store(true)
	done := make(chan error, 1)
	go func() {
		_, err := c.Put(ctx, "jobs", []byte("in doubt"))
		done <- err
	}()
	waitUntil(ctx, t, "the put applied", func() bool { return ready(a.m, "jobs") == 2 })
	a.stop()
	gate.cut()
	if err := <-done; !errors.Is(err, queue.ErrInDoubt) {
		t.Fatalf("the put in doubt: %v, want ErrInDoubt", err)
	}
	if n := ready(b.m, "jobs"); n != 0 {
		t.Fatalf("B holds %d messages, want none", n)
	}
	// A put that cannot reach A at all (refused: nothing sent) goes to B.
	c = &queue.Client{Endpoints: []string{a.srv.URL, b.srv.URL}, Token: token}
	if _, err := c.Put(ctx, "jobs", []byte("to B")); err != nil || ready(b.m, "jobs") != 1 {
		t.Fatalf("a put with A down: %v, B holds %d; want it on B", err, ready(b.m, "jobs"))
	}
}

// Many goroutines put through one Client at once: each put is stored,
// none taken for a copy of another. A node's own queues keep an origin's
// highest number, so numbers of one origin that arrive out of order
// would be dropped; the Client's lanes keep each origin's numbers in
// order. Without the lanes (one origin for the Client) puts were lost.
func TestClientPutsAtOnceAreEachStored(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := startOwnNode(t, t.TempDir())
	c := &queue.Client{Endpoints: []string{a.srv.URL}, Token: token}
	p := &plan{rng: rand.New(rand.NewPCG(1, 41))}
	reqs := p.draw(600)
	copies, err := sendAll(ctx, c, reqs, 48)
	if err != nil {
		t.Fatal(err)
	}
	if copies != 0 {
		t.Errorf("%d puts answered as copies, want none", copies)
	}
	seen := map[string]int{}
	drain(t, a.m, "jobs", seen)
	checkOnce(t, seen, p.next)
}

// Two copies of one numbered put under way at once on one node — a
// client's resend while the first copy still waits — are each answered,
// and the put is stored once. Before, the later copy took the earlier
// one's place among the waiters, and the earlier waited out its timeout.
func TestCopiesUnderWayOnOneNodeAreEachAnswered(t *testing.T) {
	cl := startCluster(t, 3, t.TempDir(), queue.ReplicatedConfig{Timeout: 10 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	waitUntil(ctx, t, "a leader", func() bool {
		return cl.rs[0].Leading() || cl.rs[1].Leading() || cl.rs[2].Leading()
	})
	const puts = 20
	for seq := uint64(1); seq <= puts; seq++ {
		var wg sync.WaitGroup
		var ids [2]uint64
		var errs [2]error
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ids[i], errs[i] = cl.rs[1].PutFrom("q", []byte(fmt.Sprint(seq)), "resender", seq)
			}()
		}
		wg.Wait()
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("put %d, two copies at once: %v, %v", seq, errs[0], errs[1])
		}
		if ids[0] == 0 && ids[1] == 0 || ids[0] != 0 && ids[1] != 0 && ids[0] != ids[1] {
			t.Fatalf("put %d, two copies at once: ids %v, want one id (a copy answered 0)", seq, ids)
		}
	}
	ms, err := cl.rs[0].PollN("q", time.Minute, 2*puts)
	if err != nil || len(ms) != puts {
		t.Fatalf("%d messages stored for %d puts, each sent twice (%v)", len(ms), puts, err)
	}
}
