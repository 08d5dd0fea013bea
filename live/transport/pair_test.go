package transport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// pairConns checks that every pair of trs shares exactly one TCP
// connection: each member holds one connection per other member (Close's
// list of open connections holds nothing else), and the two ends of each
// pair's are the two ends of one socket pair.
func pairConns(trs []*TCP) error {
	for i, a := range trs {
		a.mu.Lock()
		n := len(a.conns)
		a.mu.Unlock()
		if n != len(trs)-1 {
			return fmt.Errorf("p%d holds %d connections, want %d", i, n, len(trs)-1)
		}
		for j, b := range trs {
			if j <= i {
				continue
			}
			la, _ := a.peer(proc.ID(j)).current()
			lb, _ := b.peer(proc.ID(i)).current()
			if la == nil || lb == nil {
				return fmt.Errorf("p%d–p%d: no connection (%v, %v)", i, j, la != nil, lb != nil)
			}
			// Installed is not yet up: a connection that settles a race of
			// dials is the pair's before both sides said where to resume.
			if !a.peer(proc.ID(j)).connected.Load() || !b.peer(proc.ID(i)).connected.Load() {
				return fmt.Errorf("p%d–p%d: the connection is not up yet", i, j)
			}
			if la.raw.LocalAddr().String() != lb.raw.RemoteAddr().String() || la.raw.RemoteAddr().String() != lb.raw.LocalAddr().String() {
				return fmt.Errorf("p%d–p%d: the two ends are different connections (%v→%v, %v→%v)", i, j,
					la.raw.LocalAddr(), la.raw.RemoteAddr(), lb.raw.LocalAddr(), lb.raw.RemoteAddr())
			}
		}
	}
	return nil
}

// TestOneConnectionPerPair: once every member has sent to every other,
// each pair shares exactly one TCP connection, which carries both
// directions.
func TestOneConnectionPerPair(t *testing.T) {
	const n = 5
	trs := newTCPCluster(t, n, nil)
	all := make([]Transport, n)
	for i, tr := range trs {
		all[i] = tr
	}
	exchange(t, all, 2000)
	var last error
	if !waitProgress(5*time.Second, func() bool { last = pairConns(trs); return last == nil }) {
		t.Fatal(last)
	}
	for i, tr := range trs {
		for id, s := range tr.Stats().Peers {
			if !s.Connected || s.Reconnects != 0 {
				t.Errorf("p%d's stats for %v: %+v; want connected, never reconnected", i, id, s)
			}
		}
	}
}

// TestSimultaneousDials: two members start at the same instant with
// frames queued for each other, and dial each other at once (no head
// start for the lower ID); whichever connections the race leaves, the
// pair ends with one, and every frame arrives once, in order, both ways.
func TestSimultaneousDials(t *testing.T) {
	iterations := 60
	if testing.Short() || raceEnabled {
		iterations = 15
	}
	var races uint64
	for it := range iterations {
		trs := newTCPCluster(t, 2, func(c *Config) { c.DialBackoffMin = time.Microsecond })
		const n = 300
		boxes := [2]*inbox{newInbox(), newInbox()}
		done := [2]<-chan struct{}{boxes[0].expect(1, n), boxes[1].expect(0, n)}
		for i, tr := range trs {
			if err := sendAll(tr, proc.ID(1-i), 0, n, 16, time.Second); err != nil {
				t.Fatal(err)
			}
		}
		var start sync.WaitGroup
		start.Add(1)
		var started sync.WaitGroup
		for i, tr := range trs {
			started.Go(func() {
				start.Wait()
				tr.Start(boxes[i].handle)
			})
		}
		start.Done()
		started.Wait()
		for i := range trs {
			waitClosed(t, done[i], 10*time.Second, fmt.Sprintf("iteration %d: every frame to p%d", it, i))
			boxes[i].check(t)
		}
		var last error
		if !waitProgress(5*time.Second, func() bool { last = pairConns(trs); return last == nil }) {
			t.Fatalf("iteration %d: %v", it, last)
		}
		for i, tr := range trs {
			// A race of dials is not a reconnection.
			if s := tr.Stats().Peers[proc.ID(1-i)]; s.DroppedRestart != 0 || s.Received != n || s.Reconnects != 0 {
				t.Errorf("iteration %d: p%d's stats %+v", it, i, s)
			}
			races += tr.races.Load()
		}
		for _, tr := range trs {
			tr.Close()
		}
		if t.Failed() {
			break
		}
	}
	t.Logf("%d iterations: %d connections given up to a race of dials", iterations, races)
}

// TestRestartMidStream: streams flow both ways when one member's process
// is replaced by a new incarnation at the same address (the higher ID,
// then the lower). The survivor's stream to it resumes in order with the
// frames the old process had not acknowledged dropped and counted, and
// the new process's stream arrives whole, in order, from its start.
func TestRestartMidStream(t *testing.T) {
	for _, restarted := range []proc.ID{1, 0} {
		t.Run(restarted.String(), func(t *testing.T) { testRestartMidStream(t, restarted) })
	}
}

// tagged is payload seq of incarnation gen: seq, then gen.
func tagged(seq uint64, gen byte) []byte {
	p := seqPayload(seq, 16)
	p[8] = gen
	return p
}

// genInbox checks the stream from one member across its incarnations
// (tagged): within each, seqs increase by one from the first received.
type genInbox struct {
	mu     sync.Mutex
	first  map[byte]uint64
	last   map[byte]int64 // gen → last seq, -1 before the first
	errors []string
}

func newGenInbox() *genInbox { return &genInbox{first: map[byte]uint64{}, last: map[byte]int64{}} }

func (b *genInbox) handle(_ proc.ID, p []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	seq, gen := binary.BigEndian.Uint64(p), p[8]
	last, ok := b.last[gen]
	if !ok {
		b.first[gen] = seq
	} else if int64(seq) != last+1 && len(b.errors) < 5 {
		b.errors = append(b.errors, fmt.Sprintf("gen %d: seq %d after %d", gen, seq, last))
	}
	b.last[gen] = int64(seq)
}

func (b *genInbox) lastSeq(gen byte) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if l, ok := b.last[gen]; ok {
		return l
	}
	return -1
}

// firstSeq is the first seq of gen received (-1: none).
func (b *genInbox) firstSeq(gen byte) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if f, ok := b.first[gen]; ok {
		return int64(f)
	}
	return -1
}

// streamer sends tagged payloads to member to until stopped, retrying on
// backpressure; it reports how many it sent.
func streamer(tr *TCP, to proc.ID, gen byte, stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		var seq uint64
		defer func() { out <- seq }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			switch err := tr.Send(to, tagged(seq, gen)); {
			case err == nil:
				seq++
				if seq%64 == 0 {
					time.Sleep(100 * time.Microsecond) // a steady stream, not a flood
				}
			case errors.Is(err, ErrBackpressure):
				time.Sleep(50 * time.Microsecond)
			default:
				return
			}
		}
	}()
	return out
}

func testRestartMidStream(t *testing.T, restarted proc.ID) {
	lns := [2]net.Listener{listen(t), listen(t)}
	addrs := [2]string{lns[0].Addr().String(), lns[1].Addr().String()}
	logger := testLogger(t)
	start := func(self proc.ID, ln net.Listener, h Handler) *TCP {
		cfg := fastConfig(self, ln, map[proc.ID]string{1 - self: addrs[1-self]}, logger)
		if ln == nil {
			cfg.Listen = addrs[self]
		}
		tr := newTCP(t, cfg)
		tr.Start(h)
		return tr
	}
	survivor := 1 - restarted
	// What the survivor receives, from both incarnations of the other;
	// what each incarnation of the restarted member receives.
	atSurvivor, atOld, atNew := newGenInbox(), newGenInbox(), newGenInbox()
	surv := start(survivor, lns[survivor], atSurvivor.handle)
	old := start(restarted, lns[restarted], atOld.handle)

	stopSurv, stopOld := make(chan struct{}), make(chan struct{})
	sentSurv := streamer(surv, restarted, 1, stopSurv)
	sentOld := streamer(old, survivor, 1, stopOld)
	if !waitProgress(10*time.Second, func() bool { return atOld.lastSeq(1) >= 3000 && atSurvivor.lastSeq(1) >= 3000 }) {
		t.Fatalf("streams stuck: %d and %d", atOld.lastSeq(1), atSurvivor.lastSeq(1))
	}
	// The member crashes mid-stream (Close does not wait for the
	// streams to drain: its queue is still being fed).
	close(stopOld)
	oldSent := <-sentOld
	old.Close()
	oldDelivered := atOld.lastSeq(1) + 1

	// Its next incarnation streams from 0, and receives the survivor's
	// stream where it stands.
	nw := start(restarted, nil, atNew.handle)
	stopNew := make(chan struct{})
	sentNew := streamer(nw, survivor, 2, stopNew)
	if !waitProgress(10*time.Second, func() bool { return atNew.lastSeq(1) >= oldDelivered+3000 && atSurvivor.lastSeq(2) >= 3000 }) {
		t.Fatalf("streams stuck after the restart: %d and %d", atNew.lastSeq(1), atSurvivor.lastSeq(2))
	}
	close(stopSurv)
	close(stopNew)
	nSurv, nNew := <-sentSurv, <-sentNew
	waitUntil(t, 10*time.Second, "both streams delivered", func() bool {
		return atNew.lastSeq(1) == int64(nSurv)-1 && atSurvivor.lastSeq(2) == int64(nNew)-1
	})
	for name, b := range map[string]*genInbox{"survivor": atSurvivor, "old": atOld, "new": atNew} {
		b.mu.Lock()
		for _, e := range b.errors {
			t.Errorf("%s: %s", name, e)
		}
		b.mu.Unlock()
	}
	if atSurvivor.firstSeq(1) != 0 || atSurvivor.firstSeq(2) != 0 || atOld.firstSeq(1) != 0 {
		t.Errorf("streams did not start at 0: %d, %d, %d", atSurvivor.firstSeq(1), atSurvivor.firstSeq(2), atOld.firstSeq(1))
	}
	// The old incarnation's stream reached the survivor in order, up to
	// what was flushed.
	if l := atSurvivor.lastSeq(1); l >= int64(oldSent) {
		t.Errorf("the survivor got seq %d of the old incarnation, which sent %d", l, oldSent)
	}
	// The new incarnation gets none of what the old one got; it misses at
	// most what the survivor dropped for the restart (written to the old
	// one, not acknowledged).
	s := surv.Stats().Peers[restarted]
	skipped := atNew.firstSeq(1) - oldDelivered
	if skipped < 0 || uint64(skipped) > s.DroppedRestart {
		t.Errorf("the new incarnation's first frame is %d, the old one got %d; the survivor dropped %d for the restart (%+v)",
			atNew.firstSeq(1), oldDelivered, s.DroppedRestart, s)
	}
	t.Logf("old incarnation: sent %d, got %d; the new one's first: %d; survivor's stats %+v", oldSent, oldDelivered, atNew.firstSeq(1), s)
}

// TestStalledPeerIsCut: a member whose handler stops (it reads nothing)
// caps its sender's queue; after IdleTimeout at the cap with nothing
// acknowledged the sender cuts the connection and reports it, and once
// the member reads again the resend protocol delivers everything, once,
// in order.
func TestStalledPeerIsCut(t *testing.T) {
	logs := newLogBuffer()
	trs := newTCPCluster(t, 2, func(c *Config) {
		c.PingInterval, c.IdleTimeout = 50*time.Millisecond, 400*time.Millisecond
		c.QueueBytes, c.MaxFrame = 64<<10, 1<<10
		if c.Self == 0 {
			c.Logger = logs.logger()
		}
	})
	a, b := trs[0], trs[1]
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()
	box := newInbox()
	var handled atomic.Uint64
	a.Start(func(proc.ID, []byte) {})
	b.Start(func(from proc.ID, p []byte) {
		if handled.Add(1) == 100 {
			<-release
		}
		box.handle(from, p)
	})
	// The pair settles on one connection first. Both members dial at
	// start, and a connection that replaces another is served only once
	// the reader of the one it replaces has stopped: a reader blocked in
	// the handler never does, so a member that stopped reading during the
	// race left its sender not connected (5 runs in 80 under -race at
	// load 23): nothing lost, nothing to cut, and the stall reported is
	// a connection not resumed (TestStalledPeerDoesNotResume), not the
	// cut this test is about.
	var last error
	if !waitProgress(10*time.Second, func() bool { last = pairConns(trs); return last == nil }) {
		t.Fatalf("the pair did not settle on one connection: %v", last)
	}
	const n = 5000
	done := box.expect(0, n)
	sendErr := make(chan error, 1)
	go func() { sendErr <- sendAll(a, 1, 0, n, 200, 20*time.Second) }()
	line, err := logs.waitLine(10*time.Second, "transport: the member stopped reading: connection cut", "peer=p1")
	if err != nil {
		t.Fatalf("%v; p0 %+v; p1 handled %d, %+v", err, a.Stats().Peers[1], handled.Load(), b.Stats().Peers[0])
	}
	if s := a.Stats().Peers[1]; s.Stalled == 0 || s.Backpressured == 0 {
		t.Errorf("stats %+v: want a stall counted, Sends refused", s)
	}
	if !bytes.Contains([]byte(line), []byte("after=400ms")) {
		t.Errorf("log line does not say after how long: %s", line)
	}
	unblock()
	if err := <-sendErr; err != nil {
		t.Fatal(err)
	}
	waitClosed(t, done, 20*time.Second, "every payload after the member reads again")
	box.check(t)
	s := a.Stats().Peers[1]
	if s.DroppedRestart != 0 || b.Stats().Peers[0].Received != n {
		t.Errorf("p0's stats %+v, p1 received %d; want nothing dropped, %d received", s, b.Stats().Peers[0].Received, n)
	}
	t.Logf("p0's stats %+v", s)
}

// TestAdmissible: the rules by which a member's connection is known for
// given up before it is taken up, each from the order in which this
// process opened connections (peer.admissible).
func TestAdmissible(t *testing.T) {
	const member, self = proc.ID(1), proc.ID(0)
	later := time.Now().Add(time.Hour)
	// The pair has installed connections of incarnation 7 opened 10th
	// (the first) and after; the member's newest dial of them was 12th.
	p := &peer{id: member, newestInc: 7, newestFirst: 10, newestDial: 12}
	for _, c := range []struct {
		name   string
		l      *link
		reason error
	}{
		{"the member's later dial", &link{inc: 7, dialer: member, opened: 13, takeBy: later}, nil},
		{"the member's earlier dial", &link{inc: 7, dialer: member, opened: 11, takeBy: later}, errSuperseded},
		{"this side's dial, opened before the member's newest", &link{inc: 7, dialer: self, opened: 11, takeBy: later}, nil},
		{"a new process's", &link{inc: 8, dialer: member, opened: 14, takeBy: later}, nil},
		{"a new process's, to which this side dialed", &link{inc: 8, dialer: self, opened: 14, takeBy: later}, nil},
		{"a process's before the newest", &link{inc: 6, dialer: member, opened: 9, takeBy: later}, errGone},
		{"this side's dial to a process before the newest", &link{inc: 6, dialer: self, opened: 9, takeBy: later}, errGone},
		{"taken up too late", &link{inc: 7, dialer: member, opened: 13, takeBy: time.Now().Add(-time.Millisecond)}, errLate},
	} {
		if err := p.admissible(c.l); err != c.reason {
			t.Errorf("%s: %v, want %v", c.name, err, c.reason)
		}
	}
	// The first connection from a member is taken up, whatever its place.
	if err := (&peer{id: member}).admissible(&link{inc: 6, dialer: member, opened: 1, takeBy: later}); err != nil {
		t.Errorf("the first connection: %v", err)
	}
}
