package transport

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// TestQuietConnectionWritesNothing: a connection on which nothing is
// outstanding either way carries no keepalives at PingInterval (there
// were one per PingInterval from each side), and stays up for many
// IdleTimeouts: the reader waits with the quiet deadline.
func TestQuietConnectionWritesNothing(t *testing.T) {
	const ping = 50 * time.Millisecond
	trs := newTCPCluster(t, 2, func(c *Config) {
		c.PingInterval, c.IdleTimeout = ping, 10*ping
	})
	a, b := trs[0], trs[1]
	boxA, boxB := newInbox(), newInbox()
	a.Start(boxA.handle)
	b.Start(boxB.handle)
	// A request and a reply, and everything acknowledged both ways.
	doneA, doneB := boxA.expect(1, 1), boxB.expect(0, 1)
	if err := a.Send(1, seqPayload(0, 16)); err != nil {
		t.Fatal(err)
	}
	if err := b.Send(0, seqPayload(0, 16)); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, doneB, 5*time.Second, "the payload 0→1")
	waitClosed(t, doneA, 5*time.Second, "the payload 1→0")
	// (Each side's frame acknowledged by the other: no ack owed either
	// way.)
	settled := func(s PeerStats) bool { return s.Connected && s.Queued == 0 && s.Unacked == 0 }
	waitUntil(t, 5*time.Second, "everything acknowledged both ways", func() bool {
		return settled(a.Stats().Peers[1]) && settled(b.Stats().Peers[0])
	})
	before := [2]PeerStats{a.Stats().Peers[1], b.Stats().Peers[0]}

	time.Sleep(40 * ping) // quiet time: what is measured, not a wait for a condition

	after := [2]PeerStats{a.Stats().Peers[1], b.Stats().Peers[0]}
	for i := range after {
		writes := after[i].ControlWrites - before[i].ControlWrites
		bytes := after[i].ControlBytes - before[i].ControlBytes
		t.Logf("member %d, quiet for %v: %d control writes, %d bytes", i, 40*ping, writes, bytes)
		// (An ack that was owed when the wait above saw none may go.)
		if writes > 1 {
			t.Errorf("member %d wrote %d keepalives or acks on a quiet connection in %v (PingInterval %v)", i, writes, 40*ping, ping)
		}
		if !after[i].Connected || after[i].Reconnects != before[i].Reconnects {
			t.Errorf("member %d: the quiet connection did not stay up: %+v", i, after[i])
		}
	}
	// And it still carries data.
	doneB = boxB.expect(0, 2)
	if err := a.Send(1, seqPayload(1, 16)); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, doneB, 5*time.Second, "a payload after the quiet time")
	boxA.check(t)
	boxB.check(t)
}

// TestVanishedPeerNoticedOnSend: the pair's connection goes silent both
// ways without a reset (a proxy stops forwarding, as a machine that
// vanished, or a partition): nothing notices while nothing is sent, and a
// Send after the silence is followed by the connection's end within
// about IdleTimeout, a new connection, and the payload's delivery there
// (resent). With a direct write (one payload to a quiet connection) and
// through the writer (a burst).
func TestVanishedPeerNoticedOnSend(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    uint64
	}{{"direct", 1}, {"burst", 200}} {
		t.Run(tc.name, func(t *testing.T) {
			const idle = time.Second
			a, b, toB, toA := holedPair(t, func(c *Config) {
				c.PingInterval, c.IdleTimeout = 100*time.Millisecond, idle
			})
			boxA, boxB := newInbox(), newInbox()
			a.Start(boxA.handle)
			b.Start(boxB.handle)
			doneB := boxB.expect(0, 1)
			if err := a.Send(1, seqPayload(0, 16)); err != nil {
				t.Fatal(err)
			}
			waitClosed(t, doneB, 5*time.Second, "the first payload")
			waitUntil(t, 5*time.Second, "acknowledged", func() bool {
				s := a.Stats().Peers[1]
				return s.Connected && s.Unacked == 0
			})
			before := a.Stats().Peers[1]

			toB.blackhole()
			toA.blackhole()
			start := time.Now()
			doneB = boxB.expect(0, 1+tc.n)
			if err := sendAll(a, 1, 1, 1+tc.n, 16, 10*time.Second); err != nil {
				t.Fatal(err)
			}
			// IdleTimeout, then a dial, a handshake and a resumption
			// (bounded by HandshakeTimeout, 2 s here).
			waitClosed(t, doneB, idle+4*time.Second, "the payloads sent into the silence")
			took := time.Since(start)
			after := a.Stats().Peers[1]
			t.Logf("delivered %v after the Send into the silence (IdleTimeout %v): %+v", took, idle, after)
			if after.Reconnects == before.Reconnects {
				t.Errorf("no new connection: %+v", after)
			}
			if after.Resent == before.Resent {
				t.Errorf("nothing resent: %+v", after)
			}
			if took < idle/2 {
				t.Errorf("delivered after %v: the silent connection was not the one written to", took)
			}
			// And the other way, on the new connection.
			doneA := boxA.expect(1, 1)
			if err := b.Send(0, seqPayload(0, 16)); err != nil {
				t.Fatal(err)
			}
			waitClosed(t, doneA, 5*time.Second, "a payload 1→0 after the reconnection")
			boxA.check(t)
			boxB.check(t)
		})
	}
}

// TestHandlerHoldingAFrameKeepsTheConnection: the member's handler holds
// a frame for several IdleTimeouts; the sender, which awaits its
// acknowledgement, hears the member's keepalives (every PingInterval
// while the handler is busy) and keeps the connection.
func TestHandlerHoldingAFrameKeepsTheConnection(t *testing.T) {
	const idle = 300 * time.Millisecond
	trs := newTCPCluster(t, 2, func(c *Config) {
		c.PingInterval, c.IdleTimeout = 50*time.Millisecond, idle
	})
	a, b := trs[0], trs[1]
	release := make(chan struct{})
	held := make(chan struct{})
	var once sync.Once
	a.Start(func(proc.ID, []byte) {})
	b.Start(func(proc.ID, []byte) {
		once.Do(func() {
			close(held)
			<-release
		})
	})
	if err := a.Send(1, seqPayload(0, 16)); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, held, 5*time.Second, "the handler to take the frame")
	before := a.Stats().Peers[1]
	time.Sleep(4 * idle) // the handler's hold: what is tested, not a wait for a condition
	close(release)
	waitUntil(t, 5*time.Second, "the frame acknowledged", func() bool {
		return a.Stats().Peers[1].Unacked == 0
	})
	after := a.Stats().Peers[1]
	if after.Reconnects != before.Reconnects || after.Resent != before.Resent { // a race of dials at start is not counted
		t.Errorf("the connection was cut while the member's handler held a frame: %+v", after)
	}
	if after.Stalled != 0 {
		t.Errorf("counted as stalled: %+v", after)
	}
}

// TestQuietBackstop: a quiet connection to a member that vanished is
// closed by the quiet timeout, though nothing is sent; a healthy quiet
// connection stays up past it (its keepalives, a third of it apart).
func TestQuietBackstop(t *testing.T) {
	const quiet = 1200 * time.Millisecond
	a, b, toB, toA := holedPair(t, func(c *Config) {
		c.PingInterval, c.IdleTimeout = 50*time.Millisecond, 500*time.Millisecond
	})
	a.quiet, b.quiet = quiet, quiet
	a.Start(func(proc.ID, []byte) {})
	b.Start(func(proc.ID, []byte) {})
	waitUntil(t, 5*time.Second, "connected", func() bool {
		return a.Stats().Peers[1].Connected && b.Stats().Peers[0].Connected
	})
	// Reconnects, not the link's identity: both members may dial at
	// first, and the race of dials settles (uncounted) after both are
	// connected.
	before := a.Stats().Peers[1]
	time.Sleep(2 * quiet) // quiet time: what is tested, not a wait for a condition
	after := a.Stats().Peers[1]
	if after.Reconnects != before.Reconnects || !after.Connected {
		t.Fatalf("a healthy quiet connection did not stay up past the quiet timeout: %+v", after)
	}
	if after.ControlWrites == before.ControlWrites {
		t.Errorf("no keepalive in %v (quiet timeout %v)", 2*quiet, quiet)
	}

	toB.blackhole()
	toA.blackhole()
	start := time.Now()
	waitUntil(t, quiet+4*time.Second, "the silent connection replaced", func() bool {
		s := a.Stats().Peers[1]
		return s.Reconnects > after.Reconnects && s.Connected
	})
	t.Logf("the silent quiet connection was replaced after %v (quiet timeout %v)", time.Since(start), quiet)
}

// holeProxy forwards loopback connections to a member and, on demand,
// stops forwarding those it has without closing them (blackhole): what
// either side writes is read and dropped, as by a machine that vanished
// or a partition, and neither side is told. New connections are
// forwarded.
type holeProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	holes  []*atomic.Bool // one per connection forwarded
	conns  []net.Conn
	wg     sync.WaitGroup
}

func newHoleProxy(t *testing.T, target string) *holeProxy {
	p := &holeProxy{ln: listen(t), target: target}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

func (p *holeProxy) addr() string { return p.ln.Addr().String() }

func (p *holeProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.DialTimeout("tcp", p.target, time.Second)
		if err != nil {
			c.Close()
			continue
		}
		hole := new(atomic.Bool)
		p.mu.Lock()
		p.holes = append(p.holes, hole)
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		pipe := func(from, to net.Conn) {
			io.Copy(holeWriter{to, hole}, from)
			from.Close()
			to.Close()
		}
		p.wg.Go(func() { pipe(c, s) })
		p.wg.Go(func() { pipe(s, c) })
	}
}

// blackhole drops, from now on, everything sent over the connections
// the proxy forwards now.
func (p *holeProxy) blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, h := range p.holes {
		h.Store(true)
	}
}

func (p *holeProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// holeWriter drops what it is given once hole is set.
type holeWriter struct {
	w    io.Writer
	hole *atomic.Bool
}

func (h holeWriter) Write(b []byte) (int, error) {
	if h.hole.Load() {
		return len(b), nil
	}
	return h.w.Write(b)
}

// holedPair creates members 0 and 1, each reaching the other through a
// holeProxy, not started.
func holedPair(t *testing.T, edit func(*Config)) (a, b *TCP, toB, toA *holeProxy) {
	lnA, lnB := listen(t), listen(t)
	toB, toA = newHoleProxy(t, lnB.Addr().String()), newHoleProxy(t, lnA.Addr().String())
	a, b = pairVia(t, lnA, lnB, toB.addr(), toA.addr(), edit)
	return a, b, toB, toA
}
