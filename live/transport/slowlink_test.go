package transport

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// TestSlowLinkFullWindowsBothWays: a pair joined by a slow link (a proxy
// pacing each direction well below a window per IdleTimeout) streams a
// window's worth and more each way at once, and its connection is cut
// once while both windows are full, so that each side writes a whole
// window again. Each side's frames take longer than IdleTimeout to pass
// the link, and so do the acknowledgements queued behind them; yet each
// side reads the other's frames all along, so neither has stopped
// reading: the connection must not be cut as stalled, and every payload
// arrives once, in order.
func TestSlowLinkFullWindowsBothWays(t *testing.T) {
	const (
		rate   = 256 << 10 // bytes a second each way
		window = 1 << 20   // QueueBytes: four seconds of the link
		size   = 1 << 10
		n      = 2 * window / size // two windows each way
	)
	a, b, toB, toA := pacedPair(t, rate, func(c *Config) {
		c.QueueBytes, c.MaxFrame = window, 64<<10
		// IdleTimeout well below the window's four seconds on the link,
		// and above a loaded machine's pauses of the paced proxy (a
		// second was not, beside two race-detected test suites).
		c.PingInterval, c.IdleTimeout = 200*time.Millisecond, 2*time.Second
	})
	sizeOf := func(uint64) int { return size }
	va, vb := newVerifier(sizeOf), newVerifier(sizeOf)
	a.Start(va.handle)
	b.Start(vb.handle)
	doneA, doneB := va.box.expect(1, n), vb.box.expect(0, n)
	var senders sync.WaitGroup
	for i, tr := range []*TCP{a, b} {
		senders.Go(func() {
			if err := sendStream(tr, proc.ID(1-i), n, sizeOf, nil, 30*time.Second); err != nil {
				t.Error(err)
			}
		})
	}
	defer func() {
		a.Close()
		b.Close()
		senders.Wait()
	}()
	stats := func() (PeerStats, PeerStats) { return a.Stats().Peers[1], b.Stats().Peers[0] }

	// Both windows full, and some of each delivered: cut, so that both
	// resend what the other has not acknowledged.
	if !waitProgress(30*time.Second, func() bool {
		sa, sb := stats()
		return sa.Backpressured > 0 && sb.Backpressured > 0 && va.delivered(1) > 0 && vb.delivered(0) > 0
	}) {
		sa, sb := stats()
		t.Fatalf("the windows did not fill: p0 %+v; p1 %+v", sa, sb)
	}
	toB.cut()
	toA.cut()

	deadline := time.After(60 * time.Second)
	for _, done := range []<-chan struct{}{doneA, doneB} {
		select {
		case <-done:
		case <-deadline:
			sa, sb := stats()
			t.Fatalf("stuck at %d and %d of %d payloads; p0 %+v; p1 %+v", vb.delivered(0), va.delivered(1), n, sa, sb)
		}
	}
	va.check(t)
	vb.check(t)
	sa, sb := stats()
	for _, s := range []PeerStats{sa, sb} {
		if s.Stalled != 0 {
			t.Errorf("a member reading all along was cut as stalled: %+v", s)
		}
		if s.Received != n || s.DroppedRestart != 0 {
			t.Errorf("%+v: want %d received, none dropped", s, n)
		}
	}
	t.Logf("p0 %+v", sa)
	t.Logf("p1 %+v", sb)
}

// TestStalledPeerDoesNotResume: a member whose handler blocks and whose
// connection then fails cannot take a new one (a connection is served
// only once the reader of the one it replaces has stopped, and that
// reader waits in the handler), so its sender dials, passes the
// handshake, and gets no resumption. The sender reports that as a stall,
// as it does a member that stops reading on a connection that stays up,
// rather than stay silently not connected; once the handler returns,
// everything arrives once, in order.
func TestStalledPeerDoesNotResume(t *testing.T) {
	logs := newLogBuffer()
	a, b, toB, toA := proxiedPair(t, func(c *Config) {
		c.QueueBytes, c.MaxFrame = 64<<10, 1<<10
		if c.Self == 0 {
			c.Logger = logs.logger()
		}
	})
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()
	box := newInbox()
	var handled atomic.Uint64
	blocked := make(chan struct{})
	a.Start(func(proc.ID, []byte) {})
	b.Start(func(from proc.ID, p []byte) {
		if handled.Add(1) == 100 {
			close(blocked)
			<-release
		}
		box.handle(from, p)
	})
	const n = 5000
	done := box.expect(0, n)
	sendErr := make(chan error, 1)
	go func() { sendErr <- sendAll(a, 1, 0, n, 200, 30*time.Second) }()
	waitClosed(t, blocked, 10*time.Second, "the handler to block")
	toB.cut()
	toA.cut()
	line, err := logs.waitLine(15*time.Second, "transport: the member stopped reading", "peer=p1")
	if err != nil {
		t.Fatalf("%v; p0 %+v; p1 handled %d, %+v", err, a.Stats().Peers[1], handled.Load(), b.Stats().Peers[0])
	}
	if s := a.Stats().Peers[1]; s.Stalled == 0 {
		t.Errorf("stats %+v: want a stall counted", s)
	}
	t.Log(line)
	unblock()
	if err := <-sendErr; err != nil {
		t.Fatal(err)
	}
	waitClosed(t, done, 20*time.Second, "every payload after the member reads again")
	box.check(t)
	if s := a.Stats().Peers[1]; s.DroppedRestart != 0 || b.Stats().Peers[0].Received != n {
		t.Errorf("p0's stats %+v, p1 received %d; want nothing dropped, %d received", s, b.Stats().Peers[0].Received, n)
	}
}
