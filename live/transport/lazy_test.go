package transport

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// lazy makes a test cluster's links lazy, closed after idle.
func lazy(idle time.Duration) func(*Config) {
	return func(c *Config) { c.LinkIdle = idle }
}

// open is the members tr holds a connection to.
func open(tr *TCP) []proc.ID {
	var ids []proc.ID
	for id, s := range tr.Stats().Peers {
		if s.Connected {
			ids = append(ids, id)
		}
	}
	return ids
}

// TestLazyLinkClosesWhenIdleAndResumes: with LinkIdle, nobody dials until
// there is something to send; a pair that has been idle longer than
// LinkIdle has its connection closed, and the next payload, either way,
// dials again and arrives exactly once, in order, with nothing resent or
// dropped.
func TestLazyLinkClosesWhenIdleAndResumes(t *testing.T) {
	trs := newTCPCluster(t, 2, lazy(300*time.Millisecond))
	a, b := trs[0], trs[1]
	boxA, boxB := newInbox(), newInbox()
	a.Start(boxA.handle)
	b.Start(boxB.handle)
	if a.peer(1).running.Load() || b.peer(0).running.Load() {
		t.Fatal("a dialer runs before anything was sent")
	}

	sent := map[proc.ID]uint64{} // payloads sent to each member
	for round := range 4 {
		// Alternate the direction: whoever sends dials.
		from, to, box := a, proc.ID(1), boxB
		if round%2 == 1 {
			from, to, box = b, proc.ID(0), boxA
		}
		self := proc.ID(1 - to)
		done := box.expect(self, sent[to]+1)
		if err := from.Send(to, seqPayload(sent[to], 32)); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		sent[to]++
		waitClosed(t, done, 5*time.Second, "the payload to arrive")
		waitUntil(t, 5*time.Second, "the idle connection to be closed on both sides", func() bool {
			return len(open(a)) == 0 && len(open(b)) == 0
		})
	}
	boxA.check(t)
	boxB.check(t)
	sa, sb := a.Stats().Peers[1], b.Stats().Peers[0]
	if sa.IdleClosed+sb.IdleClosed < 4 {
		t.Errorf("idle closes counted %d and %d, want at least one per round (4)", sa.IdleClosed, sb.IdleClosed)
	}
	for _, s := range []PeerStats{sa, sb} {
		if s.Resent != 0 || s.DroppedRestart != 0 || s.Dropped != 0 {
			t.Errorf("stats %+v: nothing should be resent or dropped", s)
		}
	}
	t.Logf("member 0: %+v", sa)
	t.Logf("member 1: %+v", sb)
}

// TestLazyLinkRacesIdleClose: payloads both ways, paced so that sends
// fall before, during and after the closing of idle connections (LinkIdle
// of a few milliseconds): every payload arrives exactly once, in order,
// over many connections.
func TestLazyLinkRacesIdleClose(t *testing.T) {
	const n = 300
	trs := newTCPCluster(t, 2, func(c *Config) {
		c.PingInterval = 2 * time.Millisecond
		c.LinkIdle = 3 * time.Millisecond
	})
	boxes := []*inbox{newInbox(), newInbox()}
	for i, tr := range trs {
		tr.Start(boxes[i].handle)
	}
	done := []<-chan struct{}{boxes[0].expect(1, n), boxes[1].expect(0, n)}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for i, tr := range trs {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			to := proc.ID(1 - i)
			for seq := range uint64(n) {
				// Pauses from none to three times LinkIdle.
				time.Sleep(time.Duration(rng.IntN(10_000)) * time.Microsecond)
				if err := sendAll(tr, to, seq, seq+1, 16, 10*time.Second); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	waitClosed(t, done[0], 10*time.Second, "every payload 1→0")
	waitClosed(t, done[1], 10*time.Second, "every payload 0→1")
	boxes[0].check(t)
	boxes[1].check(t)
	s0, s1 := trs[0].Stats().Peers[1], trs[1].Stats().Peers[0]
	if s0.Received != n || s1.Received != n {
		t.Errorf("received %d and %d, want %d each", s1.Received, s0.Received, n)
	}
	if s0.IdleClosed+s1.IdleClosed < 10 {
		t.Errorf("only %d idle closes: the test did not race them with sends", s0.IdleClosed+s1.IdleClosed)
	}
	t.Logf("member 0: %+v", s0)
	t.Logf("member 1: %+v", s1)
}

// TestLazyLinksRaceIdleClosesInPairs: four pairs at once (so that the
// machine is busy and goroutines are slow to go on), LinkIdle 1 ms, each
// member sending bursts of one or two payloads after pauses of up to three
// times LinkIdle: hundreds of idle closes per pair, dials crossing, and
// dials taken up late by the acceptor, after the other member's dial came
// and went (ack.go, "Stale resumptions"). Every payload arrives once, in
// order, and nothing is dropped as if a member had restarted.
func TestLazyLinksRaceIdleClosesInPairs(t *testing.T) {
	const pairs, rounds = 4, 500
	for pair := range pairs {
		t.Run(fmt.Sprint(pair), func(t *testing.T) {
			t.Parallel()
			idle := time.Millisecond
			trs := newTCPCluster(t, 2, func(c *Config) {
				c.PingInterval = idle
				c.LinkIdle = idle
			})
			boxes := []*inbox{newInbox(), newInbox()}
			for i, tr := range trs {
				tr.Start(boxes[i].handle)
			}
			var sent [2]uint64
			var wg sync.WaitGroup
			errs := make(chan error, 2)
			for i, tr := range trs {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(pair), uint64(i)))
					for range rounds {
						time.Sleep(time.Duration(rng.IntN(int(3 * idle))))
						k := uint64(1 + rng.IntN(2))
						if err := sendAll(tr, proc.ID(1-i), sent[i], sent[i]+k, 16, 10*time.Second); err != nil {
							errs <- err
							return
						}
						sent[i] += k
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			waitClosed(t, boxes[0].expect(1, sent[1]), 10*time.Second, "every payload 1→0")
			waitClosed(t, boxes[1].expect(0, sent[0]), 10*time.Second, "every payload 0→1")
			boxes[0].check(t)
			boxes[1].check(t)
			s0, s1 := trs[0].Stats().Peers[1], trs[1].Stats().Peers[0]
			if s0.DroppedRestart != 0 || s1.DroppedRestart != 0 {
				t.Errorf("dropped %d and %d frames as if a member had restarted", s0.DroppedRestart, s1.DroppedRestart)
			}
			if s0.IdleClosed+s1.IdleClosed < 10 {
				t.Errorf("only %d idle closes: the test did not race them with sends", s0.IdleClosed+s1.IdleClosed)
			}
			t.Logf("member 0: %+v", s0)
			t.Logf("member 1: %+v", s1)
		})
	}
}

// TestLazyLinksStayBounded: in a cluster where each member talks to two
// others (a ring, both ways) the open connections per member stay within
// those two and the two of the previous pattern while it goes idle; when
// the pattern moves on, the old connections close; when the traffic
// stops, all do. Eager links would hold n−1 each.
func TestLazyLinksStayBounded(t *testing.T) {
	const n = 16
	idle := 300 * time.Millisecond
	trs := newTCPCluster(t, n, lazy(idle))
	boxes := make([]*inbox, n)
	for i, tr := range trs {
		boxes[i] = newInbox()
		tr.Start(boxes[i].handle)
	}
	sent := make([]map[proc.ID]uint64, n)
	for i := range sent {
		sent[i] = map[proc.ID]uint64{}
	}
	maxOpen := 0
	// talk sends, every 20 ms for d, from every member to its
	// neighbours at distance k on the ring, counting open links; then on,
	// until until holds (if not nil), failing if it does not within 10 s.
	talk := func(k int, d time.Duration, until func() bool, what string) {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		start := time.Now()
		for ; ; <-tick.C {
			if elapsed := time.Since(start); elapsed >= d && (until == nil || until()) {
				return
			} else if elapsed > d+10*time.Second {
				t.Fatalf("talking at distance %d for %v: not yet %s", k, elapsed, what)
			}
			for i, tr := range trs {
				for _, j := range []int{(i + k) % n, (i - k + n) % n} {
					to := proc.ID(j)
					if err := sendAll(tr, to, sent[i][to], sent[i][to]+1, 16, 5*time.Second); err != nil {
						t.Fatal(err)
					}
					sent[i][to]++
				}
				maxOpen = max(maxOpen, len(open(tr)))
			}
		}
	}
	neighbours := func(k int) func() bool {
		return func() bool {
			for i, tr := range trs {
				o := open(tr)
				if len(o) != 2 {
					return false
				}
				for _, id := range o {
					if d := (int(id) - i + n) % n; d != k && d != n-k {
						return false
					}
				}
			}
			return true
		}
	}
	talk(1, time.Second, nil, "")
	if maxOpen > 2 {
		t.Errorf("talking to 2 neighbours, a member held %d connections", maxOpen)
	}
	maxOpen = 0
	// The old connections close once idle, while the new ones carry the
	// talk: the members go on talking until each holds just those (a
	// wait after the talk would race the new ones' own idle close).
	talk(3, 3*idle, neighbours(3), "every member holding just its new neighbours' connections")
	if maxOpen > 4 {
		t.Errorf("moving to 2 other neighbours, a member held %d connections", maxOpen)
	}
	waitUntil(t, 10*time.Second, "every connection to close once idle", func() bool {
		for _, tr := range trs {
			if len(open(tr)) > 0 {
				return false
			}
		}
		return true
	})
	for i := range trs {
		for j := range trs {
			if want := sent[j][proc.ID(i)]; want > 0 {
				waitClosed(t, boxes[i].expect(proc.ID(j), want), 5*time.Second, "every payload to arrive")
			}
		}
		boxes[i].check(t)
	}
}

// TestLazyJoin: with lazy links, a newcomer that knows one member joins
// through it when it first sends to it, learns the table from its answer,
// and reaches every member, each of which learns it as it connects (when
// the newcomer first sends to it); once
// the connections have closed for idleness, the members talk again over
// new ones that carry no member table (one per process is enough).
func TestLazyJoin(t *testing.T) {
	idle := 200 * time.Millisecond
	trs := newTCPCluster(t, 3, func(c *Config) { c.Joins, c.LinkIdle = true, idle })
	inbox := startInboxes(t, trs, 4)
	cfg := fastConfig(3, listen(t), map[proc.ID]string{2: trs[2].Members()[2]}, testLogger(t)) // knows member 2 only
	cfg.Joins, cfg.LinkIdle = true, idle
	nc, err := NewTCP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	if err := nc.Start(func(_ proc.ID, p []byte) { inbox[3] <- string(p) }); err != nil {
		t.Fatal(err)
	}
	if err := nc.Send(2, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if m := <-inbox[2]; m != "hello" {
		t.Fatalf("member 2 got %q", m)
	}
	waitUntil(t, 10*time.Second, "the newcomer learns the table", func() bool { return len(nc.Members()) == 4 })
	// The others learn it when it first talks to them (it does not dial
	// them unasked), or from the application (AddPeer).
	for _, id := range []proc.ID{0, 1} {
		if err := nc.Send(id, []byte("hello")); err != nil {
			t.Fatal(err)
		}
		if m := <-inbox[id]; m != "hello" {
			t.Fatalf("member %v got %q", id, m)
		}
	}
	all := append(trs, nc)
	for _, tr := range all {
		if len(tr.Members()) != 4 {
			t.Fatalf("member %v knows %v", tr.cfg.Self, tr.Members())
		}
	}
	exchangeAll(t, all, inbox)
	tables := func() (n uint64) {
		for _, tr := range all {
			n += tr.tables.Load()
		}
		return n
	}
	before := tables()
	if before > 6 { // a table for each pair's first connection
		t.Errorf("%d member tables sent for 6 pairs", before)
	}
	for range 2 {
		waitUntil(t, 10*time.Second, "every connection to close once idle", func() bool {
			for _, tr := range all {
				if len(open(tr)) > 0 {
					return false
				}
			}
			return true
		})
		exchangeAll(t, all, inbox)
	}
	if after := tables(); after != before {
		t.Errorf("reconnections sent %d member tables more", after-before)
	}
}
