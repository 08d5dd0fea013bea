package transport

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// recordingConn remembers what is written to it.
type recordingConn struct {
	net.Conn
	written bytes.Buffer
}

func (c *recordingConn) Write(p []byte) (int, error) {
	c.written.Write(p)
	return c.Conn.Write(p)
}

// hostile is a client that misbehaves against member 0. start runs the
// first part of the attack, up to where it waits to be disconnected; the
// rest, if any, it returns to run in the background.
type hostile struct {
	name      string
	start     func(conn net.Conn) (rest func())
	reason    string // expected in the log line
	handshake bool   // rejected during the handshake
}

// handshakeAs authenticates conn to member 0 as member from, with the test
// secret.
func handshakeAs(conn net.Conn, from proc.ID) bool {
	_, _, err := (&auth{secret: testSecret}).dial(conn, from, 0)
	if err == nil { // announce itself and say where to resume, as a member does
		_, err = conn.Write(appendAck(appendMembers(nil, []member{{from, "127.0.0.1:1"}}), 0))
	}
	return err == nil
}

// sendHello returns an attack that sends h and waits.
func sendHello(h hello) func(net.Conn) func() {
	return func(c net.Conn) func() {
		c.Write(h.marshal())
		return nil
	}
}

// asMember returns an attack that authenticates as member id, then writes
// frames.
func asMember(id proc.ID, wire []byte) func(net.Conn) func() {
	return func(c net.Conn) func() {
		if handshakeAs(c, id) {
			c.Write(wire)
		}
		return nil
	}
}

// trickle writes b one byte every hostileTimeout/20.
func trickle(conn net.Conn, b []byte) {
	tick := time.NewTicker(hostileTimeout / 20) // 20 bytes per timeout: slower than any timeout lets through
	defer tick.Stop()
	for i := range b {
		if _, err := conn.Write(b[i : i+1]); err != nil {
			return
		}
		<-tick.C
	}
}

// TestHostileConnections: connections that fail the handshake or break the
// framing are closed and the reason logged, nothing they send reaches the
// handler, and a healthy member keeps exchanging messages meanwhile.
//
// Member 0 is attacked; member 1 is healthy; members 2-9 never run, and the
// clients that pass the handshake use their identities, as a buggy member
// would (one each, since a member's newer connection replaces its older).
// hostileTimeout is TestHostileConnections' handshake and idle timeout.
const hostileTimeout = 1500 * time.Millisecond

func TestHostileConnections(t *testing.T) {
	logs := newLogBuffer()
	lnA, lnB := listen(t), listen(t)
	dead := deadAddr(t)
	peersOf := func(self proc.ID, other string) map[proc.ID]string {
		m := map[proc.ID]string{}
		for id := proc.ID(1); id < 10; id++ {
			m[id] = dead
		}
		delete(m, self)
		if self == 0 {
			m[1] = other
		} else {
			m[0] = other
		}
		return m
	}
	cfgA := fastConfig(0, lnA, peersOf(0, lnB.Addr().String()), logs.logger())
	cfgB := fastConfig(1, lnB, peersOf(1, lnA.Addr().String()), testLogger(t))
	for _, c := range []*Config{&cfgA, &cfgB} {
		// Short enough that the silent and slow attacks end soon, long
		// enough that the attacks' own legitimate handshakes and the
		// healthy pair's pings get through on a loaded machine under the
		// race detector.
		c.HandshakeTimeout, c.PingInterval, c.IdleTimeout = hostileTimeout, 100*time.Millisecond, hostileTimeout
	}
	a, err := NewTCP(cfgA)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := NewTCP(cfgB)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("member 0's log:\n%s", logs)
		}
	})

	// Healthy traffic both ways, all through the attacks.
	boxA, boxB := newInbox(), newInbox()
	var intruded atomic.Value
	a.Start(func(from proc.ID, p []byte) {
		if from != 1 || bytes.Contains(p, []byte("EVIL")) {
			intruded.Store(from.String() + ": " + string(p))
			return
		}
		boxA.handle(from, p)
	})
	b.Start(boxB.handle)
	stop := make(chan struct{})
	var sent [2]uint64
	var traffic sync.WaitGroup
	for i, pair := range [][2]Transport{{a, b}, {b, a}} {
		traffic.Go(func() {
			// 50 messages a millisecond: steady traffic that leaves the
			// CPU to the attacks.
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			to := proc.ID(1 - i)
			for seq := uint64(0); ; {
				select {
				case <-stop:
					sent[i] = seq
					return
				case <-tick.C:
				}
				for range 50 {
					if pair[0].Send(to, seqPayload(seq, 16)) != nil {
						break
					}
					seq++
				}
			}
		})
	}

	// A legitimate handshake by member 2, recorded for the replay attack.
	rec := &recordingConn{Conn: dial(t, a.Addr())}
	if !handshakeAs(rec, 2) {
		t.Fatal("legitimate handshake failed")
	}
	rec.Close()
	recorded := rec.written.Bytes()

	frame := func(n, kind uint64, body string) []byte {
		return append(binary.AppendUvarint(nil, n<<2|kind), body...)
	}
	attacks := []hostile{
		{"garbage", func(c net.Conn) func() {
			c.Write([]byte("GET / HTTP/1.1\r\nHost: EVIL\r\n\r\n"))
			return nil
		}, "not a cohort connection (bad magic)", true},
		{"silent", func(net.Conn) func() { return nil }, "handshake timeout", true},
		{"slow-loris-handshake", func(c net.Conn) func() {
			return func() { trickle(c, (&hello{version: protocolVersion, mode: modeSecret, from: 1, to: 0}).marshal()) }
		}, "handshake timeout", true},
		{"wrong-secret", func(c net.Conn) func() {
			// Answer the challenge with a MAC under the wrong key (a
			// well-behaved dialer would hang up on the acceptor first).
			wrong := &auth{secret: []byte("not the cluster secret, 32 bytes")}
			hb := (&hello{version: protocolVersion, mode: modeSecret, from: 1, to: 0}).marshal()
			c.Write(hb)
			var ch [nonceLen + macLen]byte
			if _, err := io.ReadFull(c, ch[:]); err == nil {
				c.Write(wrong.mac(labelDialer, hb, ch[:nonceLen]))
			}
			return nil
		}, "authentication failed", true},
		{"replayed-handshake", func(c net.Conn) func() {
			c.Write(recorded)
			return nil
		}, "authentication failed (wrong secret or replayed handshake)", true},
		{"impostor-self", sendHello(hello{version: protocolVersion, mode: modeSecret, from: 0, to: 0}),
			"peer claims to be this node (p0)", true},
		{"unknown-id", sendHello(hello{version: protocolVersion, mode: modeSecret, from: 42, to: 0}),
			"unknown member p42", true},
		{"misaddressed", sendHello(hello{version: protocolVersion, mode: modeSecret, from: 3, to: 5}),
			"hello addressed to p5, this node is p0", true},
		{"wrong-version", sendHello(hello{version: 9, mode: modeSecret, from: 3, to: 0}),
			"unsupported protocol version 9", true},
		{"version-1-hello", func(c net.Conn) func() {
			// A member of the previous version: its hello is shorter, and
			// is refused for its version, not left to time out.
			c.Write((&hello{version: 1, mode: modeSecret, from: 3, to: 0}).marshal()[:48])
			return nil
		}, "unsupported protocol version 1", true},
		{"version-2-hello", func(c net.Conn) func() {
			// A member of the previous version (a connection per
			// direction): same hello, refused for its version.
			c.Write((&hello{version: 2, mode: modeSecret, from: 3, to: 0}).marshal())
			return nil
		}, "unsupported protocol version 2 (this node speaks 3)", true},
		{"wrong-mode", sendHello(hello{version: protocolVersion, mode: modeTLS, from: 3, to: 0}),
			"peer authenticates with TLS, this node with a shared secret", true},
		{"oversized-frame", asMember(4, frame(DefaultMaxFrame+1, kindData, "EVIL")),
			"frame of 1048577 bytes exceeds MaxFrame 1048576", false},
		{"truncated-frame", func(c net.Conn) func() {
			asMember(5, frame(100, kindData, "EVIL EVIL!"))(c)
			c.(*net.TCPConn).CloseWrite()
			return nil
		}, "truncated frame", false},
		{"slow-loris-frame", func(c net.Conn) func() {
			if !handshakeAs(c, 6) {
				return nil
			}
			return func() { trickle(c, frame(40, kindData, strings.Repeat("EVIL", 10))) }
		}, fmt.Sprintf("read timeout: no complete frame within %v", hostileTimeout), false},
		{"ack-of-frames-never-sent", asMember(7, frame(1, kindAck, "\x05")), "ack of frames up to 5, but 0 to 0 are those sent and not acknowledged", false},
		{"data-before-resumption", func(c net.Conn) func() {
			if _, _, err := (&auth{secret: testSecret}).dial(c, 8, 0); err == nil {
				c.Write(appendFrame(appendMembers(nil, []member{{8, "127.0.0.1:1"}}), []byte("EVIL")))
			}
			return nil
		}, "data frame before the member said where to resume", false},
	}
	// All at once, on their own connections.
	var clients sync.WaitGroup
	for _, h := range attacks {
		clients.Go(func() {
			conn, err := net.DialTimeout("tcp", a.Addr().String(), time.Second)
			if err != nil {
				t.Errorf("%s: %v", h.name, err)
				return
			}
			defer conn.Close()
			local := conn.LocalAddr().String()
			var rest sync.WaitGroup
			if f := h.start(conn); f != nil {
				rest.Go(f)
			}
			err = waitEOF(conn, 4*hostileTimeout)
			conn.Close()
			rest.Wait()
			if err != nil {
				t.Errorf("%s: %v", h.name, err)
				return
			}
			msg := "transport: closed connection"
			if h.handshake {
				msg = "transport: handshake rejected"
			}
			if _, err := logs.waitLine(4*hostileTimeout, msg, "remote="+local, h.reason); err != nil {
				t.Errorf("%s: %v", h.name, err)
			}
		})
	}
	clients.Wait()

	close(stop)
	traffic.Wait()
	waitClosed(t, boxB.expect(0, sent[0]), 5*time.Second, "healthy traffic p0→p1")
	waitClosed(t, boxA.expect(1, sent[1]), 5*time.Second, "healthy traffic p1→p0")
	boxA.check(t)
	boxB.check(t)
	if v := intruded.Load(); v != nil {
		t.Errorf("a hostile client's frame reached the handler: %v", v)
	}
	if sent[0] == 0 || sent[1] == 0 {
		t.Errorf("healthy traffic stalled: sent %v", sent)
	}
	handshakes := 0
	for _, h := range attacks {
		if h.handshake {
			handshakes++
		}
	}
	st := a.Stats()
	if st.Rejected != uint64(handshakes) {
		t.Errorf("Stats.Rejected = %d, want %d", st.Rejected, handshakes)
	}
	if st.Peers[1].Rejected != 1 || st.Peers[1].Reconnects != 0 || b.Stats().Peers[0].Reconnects != 0 {
		t.Errorf("member 1: p0's stats %+v, p1's %+v; want 1 rejection (wrong secret) and no reconnects", st.Peers[1], b.Stats().Peers[0])
	}
	t.Logf("healthy traffic during the attacks: %d and %d messages", sent[0], sent[1])
}

func dial(t *testing.T, addr net.Addr) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr.String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitEOF reads (and discards: pings, a challenge) until the other end
// closes conn.
func waitEOF(conn net.Conn, timeout time.Duration) error {
	conn.SetReadDeadline(time.Now().Add(timeout))
	buf := make([]byte, 512)
	for {
		_, err := conn.Read(buf)
		var ne net.Error
		switch {
		case err == nil:
		case errors.As(err, &ne) && ne.Timeout():
			return fmt.Errorf("connection still open after %v", timeout)
		default:
			return nil
		}
	}
}

// TestReconnect: a member's process goes away and comes back on the same
// address; the sender queues meanwhile (up to the bound), reconnects and
// delivers the queue.
func TestReconnect(t *testing.T) {
	const queueLen = 256
	lnA, lnB := listen(t), listen(t)
	addrB := lnB.Addr().String()
	logger := testLogger(t)
	cfgA := fastConfig(0, lnA, map[proc.ID]string{1: addrB}, logger)
	cfgA.QueueLen = queueLen
	a, err := NewTCP(cfgA)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	boxA := newInbox()
	a.Start(boxA.handle)

	startB := func(ln net.Listener) (*TCP, *inbox) {
		cfg := fastConfig(1, ln, map[proc.ID]string{0: lnA.Addr().String()}, logger)
		if ln == nil {
			cfg.Listen = addrB
		}
		b, err := NewTCP(cfg)
		if err != nil {
			t.Fatal(err)
		}
		box := newInbox()
		b.Start(box.handle)
		return b, box
	}

	b1, box1 := startB(lnB)
	if err := sendAll(a, 1, 0, 1000, 16, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, box1.expect(0, 1000), 5*time.Second, "delivery before the outage")
	// Frames not acknowledged count against the bound: let the
	// acknowledgements come, so the whole queue is free for the outage.
	waitUntil(t, 5*time.Second, "p1 acknowledges what it received", func() bool { return a.Stats().Peers[1].Unacked == 0 })
	b1.Close()
	waitUntil(t, 5*time.Second, "p0 notices p1 is gone", func() bool { return !a.Stats().Peers[1].Connected })

	// During the outage the queue fills to its bound, then Send refuses.
	var accepted, refused uint64
	for i := range uint64(queueLen + 100) {
		switch err := a.Send(1, seqPayload(1000+i, 16)); {
		case err == nil:
			accepted++
		case errors.Is(err, ErrBackpressure):
			refused++
		default:
			t.Fatal(err)
		}
	}
	if accepted != queueLen || refused != 100 || a.Stats().Peers[1].Queued != queueLen {
		t.Fatalf("during the outage: %d accepted, %d refused, %d queued; want %d, 100, %d", accepted, refused, a.Stats().Peers[1].Queued, queueLen, queueLen)
	}

	b2, box2 := startB(nil)
	defer b2.Close()
	box2.mu.Lock()
	box2.next[0] = 1000 // the new incarnation picks up where the old left off
	box2.mu.Unlock()
	waitClosed(t, box2.expect(0, 1000+queueLen), 5*time.Second, "the queue delivered after reconnecting")
	box2.check(t)
	// The writer counts what it wrote once the write returns, which may be
	// after the receiver has handled it.
	defer func() {
		if t.Failed() {
			t.Logf("p0 stats at the end: %+v", a.Stats().Peers[1])
		}
	}()
	waitUntil(t, 5*time.Second, "p0's stats show the queue written after a reconnection", func() bool {
		s := a.Stats().Peers[1]
		return s.Reconnects >= 1 && s.Connected && s.Queued == 0 && s.Sent == 1000+queueLen
	})
	if s := a.Stats().Peers[1]; s.Resent != 0 || s.DroppedRestart != 0 {
		t.Errorf("p0's stats %+v: nothing was unacknowledged at the restart, so nothing to resend or drop", s)
	}

	// And the other direction: p1's new incarnation reaches p0.
	boxA.mu.Lock()
	boxA.next[1] = 0
	boxA.mu.Unlock()
	if err := sendAll(b2, 0, 0, 100, 16, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, boxA.expect(1, 100), 5*time.Second, "delivery from the restarted member")
}

// TestSecretMismatchDialSide: the dialer also refuses an acceptor that does
// not know the secret.
func TestSecretMismatchDialSide(t *testing.T) {
	logs := newLogBuffer()
	lnC := listen(t)
	cfg := fastConfig(1, lnC, map[proc.ID]string{0: deadAddr(t)}, testLogger(t))
	cfg.Secret = []byte("another cluster's secret, 32 b.")
	c, err := NewTCP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Start(func(proc.ID, []byte) {})

	// Member 0 of the test cluster dials c, believing it is member 1.
	cfgA := fastConfig(0, listen(t), map[proc.ID]string{1: lnC.Addr().String()}, logs.logger())
	a, err := NewTCP(cfgA)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	a.Start(func(proc.ID, []byte) {})
	line, err := logs.waitLine(3*time.Second, "transport: handshake failed", "peer failed authentication (wrong secret)")
	if err != nil {
		t.Fatalf("%v; log:\n%s", err, logs)
	}
	if !strings.Contains(line, "peer=p1") {
		t.Errorf("log line does not name the peer: %s", line)
	}
	if s := a.Stats().Peers[1]; s.Connected || s.Rejected == 0 {
		t.Errorf("stats %+v", s)
	}
	if a.Send(1, []byte("x")) != nil {
		t.Error("Send to an unreachable member must queue")
	}
}

// TestDirectWrites: a Send to an idle connection writes its frame itself.
// When the socket's buffer fills, a frame the socket takes only part of is
// finished by the writer, one it refuses goes back to the head of the
// queue, and the receiver gets every payload whole and in order.
func TestDirectWrites(t *testing.T) {
	// No pings: a ping the writer sends could be the write that fills the
	// socket, and then no direct write would ever find it full.
	//
	// The receiver's socket buffer is small and fixed (SO_RCVBUF on its
	// listener, which its connections inherit), so that the socket fills
	// after a few hundred KiB whatever the kernel's autotuning allows
	// (tcp_rmem can let it grow to 32 MiB).
	trs := newTCPCluster(t, 2, func(c *Config) {
		c.PingInterval, c.IdleTimeout = time.Minute, 2*time.Minute
		if c.Self == 1 {
			addr := c.Listener.Addr().String()
			c.Listener.Close()
			lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
				var err error
				rc.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 64<<10) })
				return err
			}}
			ln, err := lc.Listen(context.Background(), "tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			c.Listener = ln
		}
	})
	a, b := trs[0], trs[1]
	const size = 16 << 10 // directMax
	payload := func(seq uint64) []byte {
		p := bytes.Repeat([]byte{byte(seq)}, size)
		binary.BigEndian.PutUint64(p, seq)
		return p
	}
	var block atomic.Bool
	release := make(chan struct{})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	box := newInbox()
	var corrupt atomic.Int64
	corrupt.Store(-1)
	a.Start(func(proc.ID, []byte) {})
	b.Start(func(from proc.ID, p []byte) {
		if block.CompareAndSwap(true, false) {
			<-release
		}
		seq := binary.BigEndian.Uint64(p)
		if !bytes.Equal(p, payload(seq)) {
			corrupt.CompareAndSwap(-1, int64(seq))
		}
		box.handle(from, p)
	})
	waitUntil(t, 5*time.Second, "p0 is connected to p1", func() bool { return a.Stats().Peers[1].Connected })
	q := a.peer(1).q

	// Idle: each Send writes directly.
	var seq uint64
	for ; seq < 10; seq++ {
		done := box.expect(0, seq+1)
		if err := a.Send(1, payload(seq)); err != nil {
			t.Fatal(err)
		}
		waitClosed(t, done, 5*time.Second, "a payload sent to an idle connection")
	}
	if n := q.directWhole.Load(); n < 5 {
		t.Errorf("%d of 10 Sends to an idle connection were written directly", n)
	}

	// The receiver stops reading; Send until the socket is full and a
	// frame stays queued.
	block.Store(true)
	deadline := time.Now().Add(10 * time.Second)
	for q.directPart.Load()+q.directNone.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the socket never filled: %d payloads sent", seq)
		}
		if err := a.Send(1, payload(seq)); err != nil {
			t.Fatal(err)
		}
		seq++
		// The next Send must find the connection idle, and its last write
		// at least directGap ago, or it would queue its frame for the
		// writer, which would block on the full socket instead.
		waitUntil(t, 5*time.Second, "the connection to be idle", func() bool {
			if q.directPart.Load()+q.directNone.Load() > 0 {
				return true // the socket is full: done
			}
			q.mu.Lock()
			defer q.mu.Unlock()
			return q.nPending+q.nHeld == 0 && !q.writing && time.Since(q.lastWrite) >= directGap
		})
	}
	for range 5 { // these queue behind
		if err := a.Send(1, payload(seq)); err != nil {
			t.Fatal(err)
		}
		seq++
	}
	done := box.expect(0, seq)
	close(release)
	waitClosed(t, done, 5*time.Second, "everything sent to arrive")
	box.check(t)
	if c := corrupt.Load(); c >= 0 {
		t.Errorf("payload %d arrived corrupted", c)
	}
	t.Logf("%d payloads; direct writes: %d whole, %d partial, %d refused", seq,
		q.directWhole.Load(), q.directPart.Load(), q.directNone.Load())
}

func TestBackoff(t *testing.T) {
	lo, hi := 10*time.Millisecond, time.Second
	for attempt := 1; attempt <= 20; attempt++ {
		ceil := min(lo<<(attempt-1), hi)
		if attempt > 10 {
			ceil = hi
		}
		for range 50 {
			if d := backoff(attempt, lo, hi); d < ceil/2 || d > ceil {
				t.Fatalf("attempt %d: %v outside [%v, %v]", attempt, d, ceil/2, ceil)
			}
		}
	}
}

// TestCloseLeavesNoGoroutines: Close waits for everything the transports
// started, including after reconnections and rejected connections.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	trs := newTCPCluster(t, 3, nil)
	all := []Transport{trs[0], trs[1], trs[2]}
	exchange(t, all, 1000)
	// A rejected connection and a replaced one.
	c := dial(t, trs[0].Addr())
	c.Write([]byte("not a hello at all, but long enough to read"))
	waitEOF(c, 3*time.Second)
	c.Close()
	for _, tr := range trs {
		tr.Close()
	}
	// A goroutine that has signalled Close takes a moment to exit.
	deadline := time.Now().Add(time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines before, %d after Close:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

// TestCloseGivesUp: Close flushes for at most CloseTimeout, even when the
// peer has stopped reading and the writer is stuck in a write; what it
// could not send is counted as dropped.
func TestCloseGivesUp(t *testing.T) {
	trs := newTCPCluster(t, 2, func(c *Config) { c.CloseTimeout = 200 * time.Millisecond })
	a, b := trs[0], trs[1]
	release := make(chan struct{})
	defer close(release)
	a.Start(func(proc.ID, []byte) {})
	b.Start(func(proc.ID, []byte) { <-release })
	payload := make([]byte, 1024)
	// The queue fills once the kernel's socket buffers have: megabytes,
	// which a loaded machine under -race took more than 5 s to write.
	deadline := time.Now().Add(time.Minute)
	for refused := 0; refused < 100; {
		if time.Now().After(deadline) {
			t.Fatal("the queue never filled")
		}
		if a.Send(1, payload) != nil {
			refused++
			runtime.Gosched()
		}
	}
	start := time.Now()
	a.Close()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v with CloseTimeout 200ms", d)
	}
	if s := a.Stats().Peers[1]; s.Dropped == 0 || s.Queued != 0 {
		t.Errorf("after Close: %+v; want frames dropped, none queued", s)
	}
}

// A batch to an idle connection leaves in one write and arrives whole and
// in order; batches sent while the connection is busy queue in order
// behind it.
func TestSendBatch(t *testing.T) {
	trs := newTCPCluster(t, 2, nil)
	a, b := trs[0], trs[1]
	box := newInbox()
	a.Start(func(proc.ID, []byte) {})
	b.Start(box.handle)
	waitUntil(t, 5*time.Second, "p0 is connected to p1", func() bool { return a.Stats().Peers[1].Connected })
	q := a.peer(1).q
	seqs := func(from, to uint64) [][]byte {
		var ps [][]byte
		for s := from; s < to; s++ {
			ps = append(ps, binary.BigEndian.AppendUint64(nil, s))
		}
		return ps
	}
	time.Sleep(time.Millisecond) // idle
	writes := q.nWrites.Load()
	done := box.expect(0, 3)
	if err := a.SendBatch(1, seqs(0, 3)); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, done, 5*time.Second, "a batch")
	waitUntil(t, 5*time.Second, "the write counted", func() bool { return q.nWrites.Load() > writes })
	if w := q.nWrites.Load() - writes; w != 1 || q.directWhole.Load() == 0 {
		t.Errorf("a batch to an idle connection took %d writes (direct %d), want 1 direct", w, q.directWhole.Load())
	}
	done = box.expect(0, 300)
	for s := uint64(3); s < 300; s += 3 {
		if err := a.SendBatch(1, seqs(s, s+3)); err != nil {
			t.Fatal(err)
		}
	}
	waitClosed(t, done, 5*time.Second, "100 batches")
	box.check(t)
	// The writer counts frames once its write returns, which may be after
	// the receiver has them.
	waitUntil(t, 5*time.Second, "Sent = 300", func() bool { return a.Stats().Peers[1].Sent == 300 })
	if err := a.SendBatch(7, seqs(0, 1)); !errors.Is(err, ErrUnknownPeer) {
		t.Errorf("batch to p7: %v, want ErrUnknownPeer", err)
	}
}

// TestRejectedHandshakesDoNotFloodTheLog: a flood of connections that fail
// the handshake is counted whole (Stats.Rejected) but logged at most
// maxWarnsPerSecond times a second; a later line says how many went
// unlogged.
func TestRejectedHandshakesDoNotFloodTheLog(t *testing.T) {
	logs := newLogBuffer()
	trs := newTCPCluster(t, 2, func(c *Config) { c.Logger = logs.logger() })
	if err := trs[0].Start(func(proc.ID, []byte) {}); err != nil {
		t.Fatal(err)
	}
	const flood = 200
	start := time.Now()
	for range flood {
		c, err := net.DialTimeout("tcp", trs[0].Addr().String(), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("GET / HTTP/1.1\r\n\r\n")) // not a cohort connection
		waitEOF(c, 3*time.Second)
		c.Close()
	}
	elapsed := time.Since(start)
	waitUntil(t, 10*time.Second, "every connection is counted", func() bool { return trs[0].Stats().Rejected == flood })
	lines := strings.Count(logs.String(), "transport: handshake rejected")
	if most := maxWarnsPerSecond * (int(elapsed/time.Second) + 2); lines > most || lines == 0 {
		t.Errorf("%d connections rejected in %v: %d log lines, want 1 to %d", flood, elapsed, lines, most)
	}
	// After a quiet second, the next rejection is logged with the count
	// of those that were not.
	time.Sleep(1100 * time.Millisecond) // the limiter's window, on the wall clock
	c, err := net.DialTimeout("tcp", trs[0].Addr().String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
	waitEOF(c, 3*time.Second)
	c.Close()
	if lines < flood {
		if _, err := logs.waitLine(5*time.Second, "transport: handshake rejected", "unlogged_before="); err != nil {
			t.Error(err)
		}
	}
}
