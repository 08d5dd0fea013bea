package transport

import (
	"sync"
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
		c.PingInterval, c.IdleTimeout = 100*time.Millisecond, time.Second
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
