package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// cutProxy forwards loopback connections to a member and cuts them on
// demand, with a reset (SO_LINGER 0), so that whatever the kernels and the
// proxy hold in between is lost, as in a network failure.
type cutProxy struct {
	ln     net.Listener
	target string
	rate   int // bytes per second each way; 0: as fast as loopback

	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	refuse  bool // close new connections at once
	cuts    int
	wg      sync.WaitGroup
	stopped bool

	// up and down: bytes forwarded from the dialers to the target, and
	// back.
	up, down atomic.Uint64
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	return newPacedProxy(t, target, 0)
}

// newPacedProxy returns a cutProxy that forwards at most rate bytes a
// second each way (0: no limit), as a slow link does.
func newPacedProxy(t *testing.T, target string, rate int) *cutProxy {
	p := &cutProxy{ln: listen(t), target: target, rate: rate, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refuse := p.refuse || p.stopped
		p.mu.Unlock()
		if refuse {
			reset(c)
			continue
		}
		s, err := net.DialTimeout("tcp", p.target, time.Second)
		if err != nil {
			reset(c)
			continue
		}
		p.mu.Lock()
		if p.stopped {
			p.mu.Unlock()
			reset(c)
			reset(s)
			return
		}
		p.conns[c], p.conns[s] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Go(func() { p.pipe(c, s, &p.up) })
		p.wg.Go(func() { p.pipe(s, c, &p.down) })
	}
}

// pipe copies from one end to the other until either fails, and counts
// the bytes.
func (p *cutProxy) pipe(from, to net.Conn, count *atomic.Uint64) {
	w := countingWriter{to, count}
	if p.rate == 0 {
		io.Copy(w, from)
	} else {
		pace(w, from, p.rate)
	}
	reset(from)
	reset(to)
	p.mu.Lock()
	delete(p.conns, from)
	delete(p.conns, to)
	p.mu.Unlock()
}

// countingWriter counts what it writes.
type countingWriter struct {
	w     io.Writer
	count *atomic.Uint64
}

func (c countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.count.Add(uint64(n))
	return n, err
}

// pace copies from src to dst at rate bytes a second, in slices of at
// most a hundredth of a second's worth, each held for as long as its
// bytes take at that rate (after the one before it), until either fails.
func pace(dst io.Writer, src io.Reader, rate int) {
	buf := make([]byte, max(rate/100, 1))
	next := time.Now()
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if now := time.Now(); next.Before(now) {
				next = now
			}
			next = next.Add(time.Duration(n) * time.Second / time.Duration(rate))
			// The link's pace, not a wait for a condition.
			time.Sleep(time.Until(next))
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// cut resets every connection through the proxy.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cuts++
	for c := range p.conns {
		reset(c)
	}
}

// setRefuse makes the proxy close new connections (true), or forward
// them again.
func (p *cutProxy) setRefuse(refuse bool) {
	p.mu.Lock()
	p.refuse = refuse
	p.mu.Unlock()
}

func (p *cutProxy) close() {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	p.ln.Close()
	p.cut()
	p.wg.Wait()
}

// reset closes c with a TCP reset: data not yet read is discarded.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// proxiedPair creates members 0 and 1, each reaching the other through a
// cutProxy (nil where direct is set), not started.
func proxiedPair(t *testing.T, edit func(*Config)) (a, b *TCP, toB, toA *cutProxy) {
	return pacedPair(t, 0, edit)
}

// pacedPair is proxiedPair over proxies that forward at most rate bytes
// a second each way (0: no limit).
func pacedPair(t *testing.T, rate int, edit func(*Config)) (a, b *TCP, toB, toA *cutProxy) {
	lnA, lnB := listen(t), listen(t)
	toB, toA = newPacedProxy(t, lnB.Addr().String(), rate), newPacedProxy(t, lnA.Addr().String(), rate)
	a, b = pairVia(t, lnA, lnB, toB.addr(), toA.addr(), edit)
	return a, b, toB, toA
}

// pairVia creates members 0 and 1 on lnA and lnB, member 0 reaching
// member 1 at addrB and member 1 reaching member 0 at addrA (proxies'
// addresses), not started, closed when the test ends.
func pairVia(t *testing.T, lnA, lnB net.Listener, addrB, addrA string, edit func(*Config)) (a, b *TCP) {
	logger := testLogger(t)
	mk := func(self proc.ID, ln net.Listener, peer proc.ID, addr string) *TCP {
		cfg := fastConfig(self, ln, map[proc.ID]string{peer: addr}, logger)
		if edit != nil {
			edit(&cfg)
		}
		return newTCP(t, cfg)
	}
	return mk(0, lnA, 1, addrB), mk(1, lnB, 0, addrA)
}

// checkedPayload is the seq-th payload of a stream whose sizes sizeOf
// gives: seq, then bytes the receiver can check.
func checkedPayload(seq uint64, size int) []byte {
	p := seqPayload(seq, size)
	for i := 8; i < len(p); i++ {
		p[i] = byte(seq) + byte(i)
	}
	return p
}

// verifier checks a stream of checkedPayloads: each once, in order,
// whole, with the size sizeOf gives.
type verifier struct {
	box    *inbox
	sizeOf func(seq uint64) int
	bad    atomic.Value // string: the first corrupted payload
}

func newVerifier(sizeOf func(uint64) int) *verifier {
	return &verifier{box: newInbox(), sizeOf: sizeOf}
}

func (v *verifier) handle(from proc.ID, p []byte) {
	if len(p) >= 8 {
		seq := binary.BigEndian.Uint64(p)
		want := checkedPayload(seq, v.sizeOf(seq))
		if string(p) != string(want) {
			v.bad.CompareAndSwap(nil, fmt.Sprintf("payload %d: %d bytes, corrupted or resized (want %d)", seq, len(p), len(want)))
		}
	} else {
		v.bad.CompareAndSwap(nil, fmt.Sprintf("a payload of %d bytes", len(p)))
	}
	v.box.handle(from, p)
}

func (v *verifier) check(t *testing.T) {
	t.Helper()
	v.box.check(t)
	if s := v.bad.Load(); s != nil {
		t.Error(s)
	}
}

// delivered is how many payloads from member from have arrived.
func (v *verifier) delivered(from proc.ID) uint64 {
	v.box.mu.Lock()
	defer v.box.mu.Unlock()
	return v.box.next[from]
}

// sendStream sends payloads from..n-1 of sizes sizeOf to member to,
// retrying on backpressure; batch, if not nil, says how many to give one
// SendBatch; it fails once Send has refused for timeout without a
// payload taken.
func sendStream(tr *TCP, to proc.ID, n uint64, sizeOf func(uint64) int, batch func() int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for seq := uint64(0); seq < n; {
		k := uint64(1)
		if batch != nil {
			k = min(uint64(batch()), n-seq)
		}
		ps := make([][]byte, k)
		for i := range ps {
			ps[i] = checkedPayload(seq+uint64(i), sizeOf(seq+uint64(i)))
		}
		var err error
		if k == 1 {
			err = tr.Send(to, ps[0])
		} else {
			err = tr.SendBatch(to, ps)
		}
		switch {
		case err == nil:
			seq += k
			deadline = time.Now().Add(timeout) // a slow stream is not a stalled one
		case errors.Is(err, ErrBackpressure):
			if time.Now().After(deadline) {
				return fmt.Errorf("send to %v: backpressured for %v without progress at seq %d", to, timeout, seq)
			}
			time.Sleep(20 * time.Microsecond) // pace retries; Send offers nothing to wait on
		default:
			return fmt.Errorf("send to %v: %w", to, err)
		}
	}
	return nil
}

// waitProgress waits until cond holds, or for at most timeout; it reports
// whether cond held.
func waitProgress(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Microsecond)
	}
	return true
}

// TestResendAcrossCuts: the connection carrying a stream is reset again
// and again while thousands of frames are in flight (in the sender's
// socket, the proxy and the receiver's socket); every payload arrives
// exactly once, in order, whole. Without acknowledgements and resending,
// the frames in flight at each cut are lost.
func TestResendAcrossCuts(t *testing.T) {
	t.Run("secret", func(t *testing.T) { testResendAcrossCuts(t, 60_000, nil) })
	// TLS: no direct writes, and the frames lost include those in the
	// TLS records cut short.
	t.Run("tls", func(t *testing.T) {
		dir := t.TempDir()
		if err := GenerateCerts(dir, 2); err != nil {
			t.Fatal(err)
		}
		testResendAcrossCuts(t, 20_000, func(c *Config) {
			cfg, err := LoadTLS(dir, c.Self)
			if err != nil {
				t.Fatal(err)
			}
			c.Secret, c.TLS = nil, cfg
		})
	})
}

// testResendAcrossCuts streams n payloads each way at once over the
// pair's connection and cuts it (whichever member dialed it) cuts times.
func testResendAcrossCuts(t *testing.T, n uint64, edit func(*Config)) {
	const cuts = 25
	a, b, toB, toA := proxiedPair(t, edit)
	size := func(seq uint64) int { return 16 + int(seq%7)*40 }
	va, vb := newVerifier(size), newVerifier(size)
	a.Start(va.handle)
	b.Start(vb.handle)
	doneA, doneB := va.box.expect(1, n), vb.box.expect(0, n)
	sendErr := make(chan error, 2)
	go func() { sendErr <- sendStream(a, 1, n, size, nil, 30*time.Second) }()
	go func() { sendErr <- sendStream(b, 0, n, size, nil, 30*time.Second) }()

	// Cut whenever another share of the streams has arrived on a new
	// connection, so that every cut finds frames in flight both ways.
	progress := func() uint64 { return min(va.delivered(1), vb.delivered(0)) }
	cut := map[*link]bool{}
	up := func(tr *TCP, peer proc.ID) *link { // the pair's connection, if up and not cut yet
		p := tr.peer(peer)
		p.mu.Lock()
		defer p.mu.Unlock()
		if l := p.link; l != nil && l.served && !cut[l] {
			return l
		}
		return nil
	}
	for i := range uint64(cuts) {
		target := (i + 1) * n / (cuts + 2)
		var la, lb *link
		if !waitProgress(10*time.Second, func() bool {
			la, lb = up(a, 1), up(b, 0)
			return progress() >= target && la != nil && lb != nil
		}) {
			t.Fatalf("cut %d: stuck at %d and %d of %d payloads delivered; p0 %+v; p1 %+v", i, vb.delivered(0), va.delivered(1), n, a.Stats().Peers[1], b.Stats().Peers[0])
		}
		cut[la], cut[lb] = true, true
		toB.cut()
		toA.cut()
	}
	for range 2 {
		if err := <-sendErr; err != nil {
			t.Fatal(err)
		}
	}
	waitClosed(t, doneB, 20*time.Second, "every payload p0→p1 to arrive")
	waitClosed(t, doneA, 20*time.Second, "every payload p1→p0 to arrive")
	va.check(t)
	vb.check(t)
	waitUntil(t, 5*time.Second, "both reconnect after the last cut", func() bool { return up(a, 1) != nil && up(b, 0) != nil })
	for _, s := range []PeerStats{a.Stats().Peers[1], b.Stats().Peers[0]} {
		// Reconnects is approximate when both members dial: a
		// reconnection made by one member before the other has noticed
		// the cut may be taken by the other for a race of dials, and
		// not counted; a connection that loses a race after it was up
		// is counted.
		if s.Reconnects < cuts/2 || s.Reconnects > 2*cuts {
			t.Errorf("%d reconnections counted for %d cuts", s.Reconnects, cuts)
		}
		t.Logf("%d cuts: %+v", cuts, s)
		if s.Resent == 0 || s.DroppedRestart != 0 {
			t.Errorf("stats %+v: want frames resent, none dropped", s)
		}
		if s.Received != n {
			t.Errorf("%d received, want %d", s.Received, n)
		}
	}
}

// TestResendRandomCuts: seeded random schedules of cuts, either
// direction or both, across streams both ways of random sizes, sent
// alone or in batches, through queues of random bounds (so that the
// window, the backpressure and the direct writes all take part): every
// payload arrives once, in order, whole.
func TestResendRandomCuts(t *testing.T) {
	seeds := 6
	if testing.Short() {
		seeds = 2
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint("seed-", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			queueLen := 16 << rng.IntN(7) // 16 .. 1024
			maxSize := []int{8, 200, 4 << 10, 40 << 10}[rng.IntN(4)]
			n := uint64(3000 + rng.IntN(20_000))
			if maxSize > 1<<10 {
				n /= 8 // some 40 MB each way at most
			}
			cuts := 5 + rng.IntN(15)
			sizeSeed := rng.Uint64()
			size := func(seq uint64) int {
				return 8 + int((seq*0x9e3779b97f4a7c15^sizeSeed)>>33)%maxSize
			}
			t.Logf("queue %d, %d payloads each way up to %d bytes, %d cuts", queueLen, n, maxSize, cuts)
			a, b, toB, toA := proxiedPair(t, func(c *Config) {
				c.QueueLen = queueLen
				// Every cut is a reset that both members see at once:
				// there is no silent connection to detect. A window of
				// up to 16 MB resent both ways at once takes a loaded
				// machine (and the race detector) longer than
				// fastConfig's 2 s, and an IdleTimeout that short cuts
				// the connection mid-resend — for a frame not read in
				// time, or a window acknowledged too late — again and
				// again, each cut costing another whole resend.
				c.IdleTimeout = time.Minute
			})
			va, vb := newVerifier(size), newVerifier(size)
			a.Start(va.handle)
			b.Start(vb.handle)
			doneA, doneB := va.box.expect(1, n), vb.box.expect(0, n)
			var senders sync.WaitGroup
			for i, pair := range [][2]*TCP{{a, b}, {b, a}} {
				batchRng := rand.New(rand.NewPCG(seed, uint64(i)+2))
				senders.Go(func() {
					batch := func() int { return 1 + batchRng.IntN(8) }
					if err := sendStream(pair[0], proc.ID(1-i), n, size, batch, 60*time.Second); err != nil {
						t.Error(err)
					}
				})
			}
			defer func() {
				// A failure below ends the test before the senders: stop
				// them first, so that none reports to a finished test.
				if t.Failed() {
					a.Close()
					b.Close()
				}
				senders.Wait()
			}()
			progress := func() uint64 { return va.delivered(1) + vb.delivered(0) }
			for i := range cuts {
				// A cut after a random share of the traffic, sometimes
				// at once (during or right after a reconnection).
				target := progress()
				if rng.IntN(4) > 0 {
					target += uint64(rng.IntN(int(2 * n / uint64(cuts))))
				}
				if !waitProgress(time.Minute, func() bool { return progress() >= min(target, 2*n) }) {
					t.Fatalf("cut %d: stuck at %d of %d payloads; p0 %+v; p1 %+v", i, progress(), 2*n, a.Stats().Peers[1], b.Stats().Peers[0])
				}
				switch rng.IntN(3) {
				case 0:
					toB.cut()
				case 1:
					toA.cut()
				default:
					toB.cut()
					toA.cut()
				}
			}
			senders.Wait()
			waitClosed(t, doneA, 30*time.Second, "every payload p1→p0")
			waitClosed(t, doneB, 30*time.Second, "every payload p0→p1")
			va.check(t)
			vb.check(t)
			for _, s := range []PeerStats{a.Stats().Peers[1], b.Stats().Peers[0]} {
				if s.DroppedRestart != 0 {
					t.Errorf("frames dropped for a restart that did not happen: %+v", s)
				}
			}
			t.Logf("p0→p1 %+v", a.Stats().Peers[1])
		})
	}
}

// TestReceiverRestartDropsStaleFrames: frames sent to a member that then
// restarts (a new incarnation, on the same address) are not delivered to
// the new process, nor do they keep the sender's queue full: they are
// dropped and counted, and the stream to the new process flows.
func TestReceiverRestartDropsStaleFrames(t *testing.T) {
	lnA, lnB := listen(t), listen(t)
	addrB := lnB.Addr().String()
	toB := newCutProxy(t, addrB)
	logger := testLogger(t)
	cfgA := fastConfig(0, lnA, map[proc.ID]string{1: toB.addr()}, logger)
	cfgA.MaxFrame, cfgA.QueueBytes = 64, 2048 // some hundred frames in flight
	a, err := NewTCP(cfgA)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	a.Start(func(proc.ID, []byte) {})

	// The first incarnation takes one frame and hangs in its handler:
	// everything else A sends stays unacknowledged.
	release := make(chan struct{})
	var stale atomic.Uint64
	cfgB := fastConfig(1, lnB, map[proc.ID]string{0: lnA.Addr().String()}, logger)
	b1, err := NewTCP(cfgB)
	if err != nil {
		t.Fatal(err)
	}
	var first sync.Once
	b1.Start(func(proc.ID, []byte) { first.Do(func() { <-release }) })
	// Both dial at the start. Let the race settle before the handler
	// hangs: a connection that replaced a hanging one would wait for its
	// reader for ever, and nothing would flow.
	waitUntil(t, 5*time.Second, "one connection between the two", func() bool {
		la, _ := a.peer(1).current()
		lb, _ := b1.peer(0).current()
		a.mu.Lock()
		na := len(a.conns)
		a.mu.Unlock()
		b1.mu.Lock()
		nb := len(b1.conns)
		b1.mu.Unlock()
		return la != nil && lb != nil && la.dialer == lb.dialer && na == 1 && nb == 1 &&
			a.Stats().Peers[1].Connected && b1.Stats().Peers[0].Connected
	})
	old := func(seq uint64) []byte { p := seqPayload(seq, 16); p[8] = 'O'; return p }
	var sent uint64
	for ; ; sent++ {
		if err := a.Send(1, old(sent)); errors.Is(err, ErrBackpressure) {
			break
		} else if err != nil {
			t.Fatalf("send %d: %v", sent, err)
		}
		// Let the writer take each frame, so that all are written.
		waitUntil(t, 5*time.Second, "the frame written", func() bool { return a.Stats().Peers[1].Queued == 0 })
	}
	waitUntil(t, 5*time.Second, "every frame written, none acknowledged", func() bool {
		s := a.Stats().Peers[1]
		return s.Queued == 0 && s.Unacked == int(sent)
	})

	// The member dies: the network to it first, then the process.
	toB.setRefuse(true)
	toB.cut()
	close(release)
	b1.Close()

	// Its next incarnation, at the same address.
	cfgB.Listener, cfgB.Listen = nil, addrB
	b2, err := NewTCP(cfgB)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	box := newInbox()
	b2.Start(func(from proc.ID, p []byte) {
		if p[8] == 'O' {
			stale.Add(1)
			return
		}
		box.handle(from, p)
	})
	toB.setRefuse(false)
	const n = 2000
	done := box.expect(0, n)
	if err := sendAll(a, 1, 0, n, 16, 10*time.Second); err != nil {
		t.Fatalf("the sender hangs after the restart: %v", err)
	}
	waitClosed(t, done, 10*time.Second, "the stream to the new incarnation")
	box.check(t)
	if k := stale.Load(); k != 0 {
		t.Errorf("the new incarnation got %d frames sent to the old one", k)
	}
	s := a.Stats().Peers[1]
	// (Resent may count frames for the new process, written on a
	// connection that lost a race of dials and written again.)
	if s.DroppedRestart != sent {
		t.Errorf("stats %+v: want %d dropped for the restart", s, sent)
	}
}

// TestAcksAreDelayed: request-response traffic is acknowledged without
// ack segments: each reply carries the ack of the request it answers
// (piggybacked), and an ack that finds no data to ride on waits ackDelay
// (or ackFrames) rather than follow every frame, so the acks do not
// double the segments of an exchange.
func TestAcksAreDelayed(t *testing.T) {
	const rounds = 2000
	trs := newTCPCluster(t, 2, nil)
	a, b := trs[0], trs[1]
	pong := make(chan struct{}, 1)
	a.Start(func(proc.ID, []byte) { pong <- struct{}{} })
	b.Start(func(from proc.ID, p []byte) { b.Send(from, p) })
	waitUntil(t, 5*time.Second, "both connected", func() bool {
		return a.Stats().Peers[1].Connected && b.Stats().Peers[0].Connected
	})
	qa, qb := a.peer(1).q, b.peer(0).q
	beforeA, beforeB, acks := qa.ackWrites.Load(), qb.ackWrites.Load(), qa.acks.Load()
	start := time.Now()
	for i := range rounds {
		if err := a.Send(1, seqPayload(uint64(i), 32)); err != nil {
			t.Fatal(err)
		}
		select {
		case <-pong:
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: no answer", i)
		}
	}
	elapsed := time.Since(start)
	alone := qa.ackWrites.Load() - beforeA + qb.ackWrites.Load() - beforeB
	// At most one ack alone per ackFrames frames, one per ackDelay, and
	// one per keepalive (PingInterval, 100 ms here), each way, with some
	// slack for timers.
	most := 2 * (rounds/ackFrames + 2*int(elapsed/ackDelay) + 2*int(elapsed/(100*time.Millisecond)) + 4)
	t.Logf("%d round trips in %v: %d acks received by p0, %d writes of an ack alone (at most %d allowed)", rounds, elapsed, qa.acks.Load()-acks, alone, most)
	if alone > uint64(most) || alone > rounds/4 {
		t.Errorf("%d writes of an ack alone for %d round trips in %v: acks neither piggybacked nor delayed", alone, rounds, elapsed)
	}
	if qa.acks.Load()-acks == 0 {
		t.Error("p1 acknowledged nothing")
	}
	waitUntil(t, 5*time.Second, "everything acknowledged", func() bool {
		return a.Stats().Peers[1].Unacked == 0 && b.Stats().Peers[0].Unacked == 0
	})
}

// TestStatsCountEveryByteWritten: what a member's stats say it wrote —
// data frames (SentBytes), acks, pings and keepalives (ControlBytes) and
// handshakes (HandshakeBytes) — is exactly what crossed the wire from it,
// counted by the proxies in between; ControlWrites counts the writes that
// carried no data. A benchmark that compares bytes with another system's
// counts all of them, not only the data frames.
func TestStatsCountEveryByteWritten(t *testing.T) {
	a, b, toB, toA := proxiedPair(t, func(c *Config) { c.PingInterval = 20 * time.Millisecond })
	boxA, boxB := newInbox(), newInbox()
	a.Start(boxA.handle)
	b.Start(boxB.handle)
	const n = 40
	doneA, doneB := boxA.expect(1, n), boxB.expect(0, n)
	for seq := range uint64(n) {
		// A request and a reply, then a pause of a few ack delays now
		// and then, so that acks go alone (keepalives go on a quiet
		// connection only every third of the quiet timeout).
		if err := sendAll(a, 1, seq, seq+1, 24, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := sendAll(b, 0, seq, seq+1, 8, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		if seq%10 == 9 {
			time.Sleep(50 * time.Millisecond) // idle time for keepalives, not a wait for a condition
		}
	}
	waitClosed(t, doneB, 10*time.Second, "every payload 0→1")
	waitClosed(t, doneA, 10*time.Second, "every payload 1→0")
	a.Close()
	b.Close()
	toB.close()
	toA.close()
	written := func(tr *TCP, peer proc.ID) (total, control, writes uint64) {
		st := tr.Stats()
		ps := st.Peers[peer]
		return ps.SentBytes + ps.ControlBytes + st.HandshakeBytes, ps.ControlBytes, ps.ControlWrites
	}
	wa, ca, na := written(a, 1)
	wb, cb, nb := written(b, 0)
	if crossed := toB.up.Load() + toA.down.Load(); wa != crossed {
		t.Errorf("member 0's stats count %d bytes written (control %d), %d crossed the wire", wa, ca, crossed)
	}
	if crossed := toA.up.Load() + toB.down.Load(); wb != crossed {
		t.Errorf("member 1's stats count %d bytes written (control %d), %d crossed the wire", wb, cb, crossed)
	}
	if na == 0 || nb == 0 {
		t.Errorf("control writes %d and %d: keepalives or lone acks should have gone", na, nb)
	}
	t.Logf("member 0 wrote %d bytes, %d of them control in %d writes; member 1 %d, %d in %d", wa, ca, na, wb, cb, nb)
}

// TestStaleResumptionIsNotARestart: a dial that lost a race of dials can
// reach the acceptor's resumption long after its dialer gave it up. Here
// member 1 dials, and member 0 takes the connection only after its own
// dial has replaced it at member 1, carried frames both ways, and been cut
// with one of member 0's frames unacknowledged. The resumption member 1
// wrote on its dial says it expects frame 0, though it has acknowledged
// frame 0 since: member 0 must not take the member for restarted and drop
// the unacknowledged frame (nor number its frames from there), but give
// the connection up. Every payload arrives once, in order, and nothing is
// counted as dropped. Member 0 judges the stale resumption before it takes
// the connection up: so with MaxLinks 1, its quiet connection to member 2
// is not closed to make room for it.
func TestStaleResumptionIsNotARestart(t *testing.T) {
	trs := newTCPCluster(t, 3, func(c *Config) {
		c.LinkIdle = time.Minute         // dial on demand, and no idle closes here
		c.HandshakeTimeout = time.Minute // the connection held must not time out
		if c.Self == 0 {
			// Once cut, member 0 does not redial within the test:
			// member 1's next dial joins the pair again.
			c.DialBackoffMin, c.DialBackoffMax = time.Minute, time.Minute
			c.MaxLinks = 1
		}
	})
	a, b, c := trs[0], trs[1], trs[2]
	hold := holdFirstAccepted(t, a)
	gotSecond, unblock := make(chan struct{}), make(chan struct{})
	var unblockOnce sync.Once
	t.Cleanup(func() {
		hold.release()
		unblockOnce.Do(func() { close(unblock) })
	})
	boxA, boxB := newInbox(), newInbox()
	a.Start(boxA.handle)
	c.Start(func(proc.ID, []byte) {})
	b.Start(func(from proc.ID, p []byte) {
		if binary.BigEndian.Uint64(p) == 1 { // member 0's second payload
			close(gotSecond)
			<-unblock
		}
		boxB.handle(from, p)
	})
	send := func(tr *TCP, to proc.ID, seq uint64) {
		t.Helper()
		if err := tr.Send(to, seqPayload(seq, 16)); err != nil {
			t.Fatal(err)
		}
	}
	settled := func(tr *TCP, id proc.ID) func() bool {
		return func() bool { s := tr.Stats().Peers[id]; return s.Queued == 0 && s.Unacked == 0 }
	}

	// Member 1 dials; member 0 welcomes the connection and holds it.
	send(b, 0, 0)
	hold.wait(t, "member 1's dial")
	waitUntil(t, 10*time.Second, "member 1 to take its dial for the pair's connection", func() bool {
		l, _ := b.peer(0).current()
		return l != nil && l.dialer == 1
	})
	// Member 0 dials too; its dial wins at member 1 (the lower ID's) and
	// carries a payload each way, acknowledged.
	send(a, 1, 0)
	waitClosed(t, boxA.expect(1, 1), 10*time.Second, "member 1's first payload")
	waitClosed(t, boxB.expect(0, 1), 10*time.Second, "member 0's first payload")
	waitUntil(t, 10*time.Second, "both payloads acknowledged", func() bool { return settled(a, 1)() && settled(b, 0)() })
	// A second payload from member 0 stays unacknowledged (member 1's
	// handler holds it), and member 0's connection is cut.
	send(a, 1, 1)
	waitClosed(t, gotSecond, 10*time.Second, "member 0's second payload to reach the handler")
	l, _ := a.peer(1).current()
	l.conn.Close()
	waitUntil(t, 10*time.Second, "member 0 without a connection", func() bool { l, _ := a.peer(1).current(); return l == nil })

	// Member 2 dials member 0, and their connection goes quiet.
	if err := c.Send(0, seqPayload(0, 16)); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, boxA.expect(2, 1), 10*time.Second, "member 2's payload")
	waitUntil(t, 10*time.Second, "member 2's payload acknowledged", settled(c, 0))

	// Only now does member 0 take up member 1's first dial, and its stale
	// resumption.
	hold.releaseAndWait(t)
	if s := a.Stats().Peers[1]; s.DroppedRestart != 0 {
		t.Errorf("member 0 dropped %d frames as if member 1 had restarted", s.DroppedRestart)
	}
	if s := a.Stats().Peers[2]; s.Evicted != 0 || !s.Connected {
		t.Errorf("member 0's connection to member 2: %+v; want it up, none evicted", s)
	}

	// The pair joins again (member 1 dials): everything arrives once.
	unblockOnce.Do(func() { close(unblock) })
	send(b, 0, 1)
	waitClosed(t, boxA.expect(1, 2), 10*time.Second, "member 1's second payload")
	waitClosed(t, boxB.expect(0, 2), 10*time.Second, "member 0's second payload")
	waitUntil(t, 10*time.Second, "everything acknowledged", func() bool { return settled(a, 1)() && settled(b, 0)() })
	boxA.check(t)
	boxB.check(t)
	for _, s := range []PeerStats{a.Stats().Peers[1], b.Stats().Peers[0]} {
		if s.DroppedRestart != 0 || s.Dropped != 0 {
			t.Errorf("stats %+v: nothing should be dropped", s)
		}
	}
}

// TestStaleResumptionOfAProcessGone: the stale dial member 0 takes up late
// may come from a process of member 1 that is gone, after member 0 has
// talked with its successor, and when the pair has no connection. Taken
// up, it would make member 0 count that process's frames instead of the
// successor's: its next resumption would say less than it has
// acknowledged, which the successor rightly takes for stale, again and
// again, and the pair would never join again. It is refused before it is
// taken up (peer.admissible: errGone), so member 0 keeps counting the
// successor's frames, the only ones it counts.
func TestStaleResumptionOfAProcessGone(t *testing.T) {
	a, old, successor := pairWithSuccessor(t)
	hold := holdFirstAccepted(t, a)
	boxA, boxNew := newGenInbox(), newInbox()
	a.Start(boxA.handle)
	old.Start(func(proc.ID, []byte) {})
	settled := func(tr *TCP, id proc.ID) bool {
		s := tr.Stats().Peers[id]
		return s.Queued == 0 && s.Unacked == 0
	}

	// The old process dials; member 0 holds the connection; the process
	// is gone.
	goneWithItsDialHeld(t, old, hold)

	// Its successor, at the same address, talks with member 0 both ways.
	nw := successor()
	nw.Start(boxNew.handle)
	if err := nw.Send(0, tagged(0, 2)); err != nil {
		t.Fatal(err)
	}
	if err := a.Send(1, seqPayload(0, 16)); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, boxNew.expect(0, 1), 10*time.Second, "member 0's first payload")
	waitUntil(t, 10*time.Second, "the successor's first payload, both acknowledged", func() bool {
		return boxA.lastSeq(2) == 0 && settled(a, 1) && settled(nw, 0)
	})
	l, _ := a.peer(1).current()
	l.conn.Close()
	waitUntil(t, 10*time.Second, "member 0 without a connection", func() bool { l, _ := a.peer(1).current(); return l == nil })

	// Member 0 takes up the old process's dial at last.
	hold.releaseAndWait(t)

	// The successor and member 0 join again, and go on where they were.
	secondPayloads(t, a, nw, boxA, boxNew)
	if s := nw.Stats().Peers[0]; s.DroppedRestart != 0 {
		t.Errorf("the successor dropped %d frames as if member 0 had restarted", s.DroppedRestart)
	}
}

// TestStaleDialNeverReplacesTheLiveConnection: a connection its dialer
// has given up can still be waiting in the acceptor, welcomed and not yet
// taken up. Here member 1 dials, member 0 holds the connection, member 1
// gives it up (it fails at member 1's end) and dials again, and the new
// connection comes up and carries a payload. When member 0 takes up the
// first dial at last, that dial must not replace the live connection: it
// is refused before it is installed, the pair keeps the connection it
// has, and neither member counts a reconnection.
func TestStaleDialNeverReplacesTheLiveConnection(t *testing.T) {
	trs := newTCPCluster(t, 2, func(c *Config) {
		c.LinkIdle = time.Minute         // dial on demand, and no idle closes here
		c.HandshakeTimeout = time.Minute // the connection held must not time out
	})
	a, b := trs[0], trs[1]
	hold := holdFirstAccepted(t, a)
	boxA, boxB := newInbox(), newInbox()
	a.Start(boxA.handle)
	b.Start(boxB.handle)

	// Member 1 dials; member 0 welcomes the connection and holds it.
	if err := b.Send(0, seqPayload(0, 16)); err != nil {
		t.Fatal(err)
	}
	hold.wait(t, "member 1's dial")
	var first *link
	waitUntil(t, 10*time.Second, "member 1 to take its dial for the pair's connection", func() bool {
		first, _ = b.peer(0).current()
		return first != nil
	})
	// It fails at member 1's end, and member 1 dials again.
	first.conn.Close()
	waitClosed(t, boxA.expect(1, 1), 10*time.Second, "member 1's payload over its second dial")
	live, _ := a.peer(1).current()
	if live == nil || live.dialer != 1 {
		t.Fatalf("member 0's connection %+v: want member 1's second dial", live)
	}
	reconnects := b.Stats().Peers[0].Reconnects

	// Member 0 takes up the first dial at last.
	hold.releaseAndWait(t)
	if l, _ := a.peer(1).current(); l != live {
		t.Fatalf("member 0's connection was replaced by %+v", l)
	}
	carriesOn(t, a, b, boxA, boxB, 0, 1)
	if l, _ := a.peer(1).current(); l != live {
		t.Errorf("member 0's connection was replaced by %+v", l)
	}
	if n := b.Stats().Peers[0].Reconnects; n != reconnects {
		t.Errorf("member 1 counted %d reconnections after the stale dial was taken up, want none", n-reconnects)
	}
}

// TestConnectionOfAProcessGoneLeavesItsSuccessorAlone: a connection of a
// process of member 1 that is gone, taken up by member 0 after its
// successor's, must not touch the successor's link: not replace its
// connection, and not drop what member 0 has sent the successor and not
// seen acknowledged (the successor's handler holds it here) as if member 1
// had restarted again. It is refused, and the payload arrives once the
// handler lets it.
func TestConnectionOfAProcessGoneLeavesItsSuccessorAlone(t *testing.T) {
	a, old, successor := pairWithSuccessor(t)
	hold := holdFirstAccepted(t, a)
	gotFirst, unblock := make(chan struct{}), make(chan struct{})
	var unblockOnce sync.Once
	t.Cleanup(func() { unblockOnce.Do(func() { close(unblock) }) })
	boxA, boxNew := newGenInbox(), newInbox()
	a.Start(boxA.handle)
	old.Start(func(proc.ID, []byte) {})

	// The old process dials; member 0 holds the connection; the process
	// is gone.
	goneWithItsDialHeld(t, old, hold)

	// Its successor, at the same address, dials member 0; member 0's
	// first payload to it stays in its handler, unacknowledged.
	nw := successor()
	t.Cleanup(func() { unblockOnce.Do(func() { close(unblock) }) }) // before nw closes
	nw.Start(func(from proc.ID, p []byte) {
		if binary.BigEndian.Uint64(p) == 0 {
			close(gotFirst)
			<-unblock
		}
		boxNew.handle(from, p)
	})
	if err := nw.Send(0, tagged(0, 2)); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "the successor's first payload", func() bool { return boxA.lastSeq(2) == 0 })
	live, _ := a.peer(1).current()
	if err := a.Send(1, seqPayload(0, 16)); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, gotFirst, 10*time.Second, "member 0's payload to reach the successor's handler")

	// Member 0 takes up the old process's dial at last.
	hold.releaseAndWait(t)
	if l, _ := a.peer(1).current(); l != live {
		t.Errorf("the successor's connection was replaced by %+v", l)
	}
	if s := a.Stats().Peers[1]; s.DroppedRestart != 0 {
		t.Errorf("member 0 dropped %d frames sent to the successor", s.DroppedRestart)
	}

	// The successor's handler lets the payload go; the pair goes on.
	unblockOnce.Do(func() { close(unblock) })
	secondPayloads(t, a, nw, boxA, boxNew)
	for _, s := range []PeerStats{a.Stats().Peers[1], nw.Stats().Peers[0]} {
		if s.DroppedRestart != 0 || s.Dropped != 0 {
			t.Errorf("stats %+v: nothing should be dropped", s)
		}
	}
}

// carriesOn sends member 0's payload numbered fromA to member 1 and
// member 1's numbered fromB to member 0, and checks that each stream
// arrived whole, in order.
func carriesOn(t *testing.T, a, b *TCP, boxA, boxB *inbox, fromA, fromB uint64) {
	t.Helper()
	if err := a.Send(1, seqPayload(fromA, 16)); err != nil {
		t.Fatal(err)
	}
	if err := b.Send(0, seqPayload(fromB, 16)); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, boxB.expect(0, fromA+1), 10*time.Second, "member 0's payload")
	waitClosed(t, boxA.expect(1, fromB+1), 10*time.Second, "member 1's payload")
	boxA.check(t)
	boxB.check(t)
}

// secondPayloads sends member 0's second payload to member 1's
// successor, and the successor's second (tagged 2) to member 0, and checks
// that each stream arrived whole, in order.
func secondPayloads(t *testing.T, a, nw *TCP, boxA *genInbox, boxNew *inbox) {
	t.Helper()
	if err := a.Send(1, seqPayload(1, 16)); err != nil {
		t.Fatal(err)
	}
	if err := nw.Send(0, tagged(1, 2)); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, boxNew.expect(0, 2), 10*time.Second, "member 0's second payload")
	waitUntil(t, 10*time.Second, "the successor's second payload", func() bool { return boxA.lastSeq(2) == 1 })
	boxNew.check(t)
	boxA.mu.Lock()
	defer boxA.mu.Unlock()
	for _, e := range boxA.errors {
		t.Error(e)
	}
}

// goneWithItsDialHeld has old, a process of member 1, dial member 0 (a
// payload tagged 1), which holds the connection (hold), and closes old
// once it has taken the connection up.
func goneWithItsDialHeld(t *testing.T, old *TCP, hold *held) {
	t.Helper()
	if err := old.Send(0, tagged(0, 1)); err != nil {
		t.Fatal(err)
	}
	hold.wait(t, "the old process's dial")
	waitUntil(t, 10*time.Second, "the old process to take its dial for the pair's connection", func() bool {
		l, _ := old.peer(0).current()
		return l != nil
	})
	old.Close()
}

// held is the first connection a member accepts, held once welcomed
// (TCP.acceptedHook) until released: the goroutine that should take it up
// is slow. The connections accepted after it go on meanwhile.
type held struct {
	tr      *TCP
	conn    net.Conn // once it is held
	in      chan struct{}
	release func()
}

func holdFirstAccepted(t *testing.T, tr *TCP) *held { return holdFirst(t, tr, &tr.acceptedHook) }

// holdFirstDialed holds the first connection tr dials once it has passed
// the handshake (TCP.dialedHook), until released: the dialer is slow to
// take it up.
func holdFirstDialed(t *testing.T, tr *TCP) *held { return holdFirst(t, tr, &tr.dialedHook) }

// holdFirst sets hook, one of tr's, to hold the first connection that
// calls it until released.
func holdFirst(t *testing.T, tr *TCP, hook *func(proc.ID)) *held {
	h := &held{tr: tr, in: make(chan struct{})}
	out := make(chan struct{})
	var holding atomic.Bool
	*hook = func(proc.ID) {
		if holding.CompareAndSwap(false, true) {
			close(h.in)
			<-out
		}
	}
	h.release = sync.OnceFunc(func() { close(out) })
	t.Cleanup(h.release)
	return h
}

// wait waits until the member holds a connection, the one it has open.
func (h *held) wait(t *testing.T, what string) {
	t.Helper()
	waitClosed(t, h.in, 10*time.Second, "member "+h.tr.cfg.Self.String()+" to hold "+what)
	h.tr.mu.Lock()
	defer h.tr.mu.Unlock()
	if len(h.tr.conns) != 1 {
		t.Fatalf("%d connections open, want the one held", len(h.tr.conns))
	}
	for c := range h.tr.conns {
		h.conn = c
	}
}

// releaseAndWait lets the member take the connection up, and waits until
// it is done with it.
func (h *held) releaseAndWait(t *testing.T) {
	t.Helper()
	h.release()
	waitUntil(t, 10*time.Second, "the held connection to be done with", func() bool {
		h.tr.mu.Lock()
		defer h.tr.mu.Unlock()
		_, open := h.tr.conns[h.conn]
		return !open
	})
}

// pairWithSuccessor makes member 0 and a process of member 1 (old, which
// gives up what it has not flushed within a millisecond once closed),
// with lazy links and a HandshakeTimeout no test outlasts; successor
// starts another process of member 1 at the same address, once old has
// closed.
func pairWithSuccessor(t *testing.T) (a, old *TCP, successor func() *TCP) {
	lns := [2]net.Listener{listen(t), listen(t)}
	addr1 := lns[1].Addr().String()
	logger := testLogger(t)
	start := func(self proc.ID, ln net.Listener, peer string, edit func(*Config)) *TCP {
		cfg := fastConfig(self, ln, map[proc.ID]string{1 - self: peer}, logger)
		cfg.LinkIdle = time.Minute         // dial on demand, and no idle closes here
		cfg.HandshakeTimeout = time.Minute // the connection held must not time out
		if ln == nil {
			cfg.Listen = addr1
		}
		if edit != nil {
			edit(&cfg)
		}
		return newTCP(t, cfg)
	}
	a = start(0, lns[0], addr1, nil)
	old = start(1, lns[1], lns[0].Addr().String(), func(c *Config) { c.CloseTimeout = time.Millisecond })
	return a, old, func() *TCP { return start(1, nil, lns[0].Addr().String(), nil) }
}

// TestLateDialIsRefused: a dial whose dialer is slow to take it up, past
// HandshakeTimeout, has been given up by the acceptor (it waited that
// long for the dialer's resumption), which may have taken up another
// connection of the pair since. Here member 0 dials and holds its dial
// once through the handshake; member 1 gives it up, then dials member 0
// itself, and the pair's connection comes up and carries a payload each
// way. When member 0 takes its dial up at last, it must refuse it
// (errLate) rather than let it replace the live connection: it is not
// superseded (member 0 dialed it) nor of a process gone, and member 1's
// connection does not win a race of dials over member 0's (the lower ID
// wins).
func TestLateDialIsRefused(t *testing.T) {
	const handshake = 2 * time.Second
	trs := newTCPCluster(t, 2, func(c *Config) {
		c.LinkIdle = time.Minute // dial on demand, and no idle closes here
		c.HandshakeTimeout = handshake
	})
	a, b := trs[0], trs[1]
	hold := holdFirstDialed(t, a)
	boxA, boxB := newInbox(), newInbox()
	a.Start(boxA.handle)
	b.Start(boxB.handle)

	// Member 0 dials member 1, and holds its dial once through the
	// handshake; member 1 gives it up after HandshakeTimeout.
	if err := a.Send(1, seqPayload(0, 16)); err != nil {
		t.Fatal(err)
	}
	hold.wait(t, "member 0's dial")
	waitUntil(t, 5*handshake, "member 1 to give up member 0's dial", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.conns) == 0
	})

	// Member 1 dials; the pair's connection comes up, both ways.
	if err := b.Send(0, seqPayload(0, 16)); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, boxA.expect(1, 1), 10*time.Second, "member 1's payload")
	waitClosed(t, boxB.expect(0, 1), 10*time.Second, "member 0's payload")
	live, _ := a.peer(1).current()
	if live == nil || live.dialer != 1 {
		t.Fatalf("member 0's connection %+v: want member 1's dial", live)
	}
	reconnects := a.Stats().Peers[1].Reconnects + b.Stats().Peers[0].Reconnects

	// Member 0 takes up its dial at last, past HandshakeTimeout.
	hold.releaseAndWait(t)
	if l, _ := a.peer(1).current(); l != live {
		t.Fatalf("member 0's live connection was replaced by its late dial %+v", l)
	}
	carriesOn(t, a, b, boxA, boxB, 1, 1)
	if n := a.Stats().Peers[1].Reconnects + b.Stats().Peers[0].Reconnects; n != reconnects {
		t.Errorf("%d reconnections after the late dial was taken up, want none", n-reconnects)
	}
}
