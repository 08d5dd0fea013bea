package transport

import (
	"bytes"
	"errors"
	"testing"
)

// refusingConn is a connection whose socket takes nothing; during the
// attempt, meanwhile runs (standing in for concurrent Sends).
type refusingConn struct{ meanwhile func() }

func (refusingConn) Control(func(uintptr)) error   { return nil }
func (refusingConn) Read(func(uintptr) bool) error { return nil }
func (c refusingConn) Write(func(uintptr) bool) error {
	c.meanwhile()
	return errors.New("connection reset")
}

// frames decodes a batch into its payloads.
func frames(batch []byte) []string {
	var out []string
	for len(batch) > 0 {
		size, p := splitFrame(batch)
		out = append(out, string(p))
		batch = batch[size:]
	}
	return out
}

// queued is the number of frames q holds that no connection has taken.
func queued(q *sendQueue) int {
	n, _ := q.len()
	return n
}

func TestQueueDirectWriteRefused(t *testing.T) {
	q := newSendQueue(10, 1<<20, true)
	q.attach(refusingConn{meanwhile: func() {
		if err := q.push([]byte("second")); err != nil {
			t.Error(err)
		}
	}})
	if err := q.push([]byte("first")); err != nil {
		t.Fatal(err)
	}
	if q.directNone.Load() != 1 || queued(q) != 2 || q.nUnacked != 0 {
		t.Fatalf("direct refused %d, queued %d, unacked %d; want 1, 2, 0", q.directNone.Load(), queued(q), q.nUnacked)
	}
	// Back at the head of the queue, ahead of what was queued meanwhile.
	batch, n, from := q.take(nil)
	if got := frames(batch); n != 2 || from != 0 || len(got) != 2 || got[0] != "first" || got[1] != "second" {
		t.Fatalf("take: %q (n=%d, from=%d)", got, n, from)
	}
	// While the writer holds the connection, nothing is written directly.
	if err := q.push([]byte("third")); err != nil {
		t.Fatal(err)
	}
	q.written(batch, n)
	if q.nHeld != 0 || q.writing || q.sent.Load() != 2 || q.directNone.Load() != 1 || q.nUnacked != 2 {
		t.Fatalf("after written: held %d, writing %v, sent %d, unacked %d", q.nHeld, q.writing, q.sent.Load(), q.nUnacked)
	}
	if err := q.ack(3); err == nil {
		t.Error("an ack of a frame not sent was accepted")
	}
	if err := q.ack(2); err != nil || q.nUnacked != 0 || q.unackedBytes() != 0 || q.base != 2 {
		t.Errorf("ack(2): %v; unacked %d frames, %d bytes, base %d", err, q.nUnacked, q.unackedBytes(), q.base)
	}
}

// A frame a direct Send wrote only part of is unacknowledged: the next
// connection to the same incarnation writes it again, whole, first.
func TestQueueDetachRequeuesPartialFrame(t *testing.T) {
	q := newSendQueue(10, 1<<20, true)
	q.peerInc = 7
	whole := appendFrame(nil, []byte("partly written"))
	// As a direct Send leaves it when the socket took 3 bytes.
	q.unacked, q.nUnacked = bytes.Clone(whole), 1
	q.resume, q.resumeAt, q.resumeN = whole, 3, 1
	q.pending, q.nPending = appendFrame(nil, []byte("queued after")), 1
	q.detach()
	if resent, dropped, err := q.reconnected(7, 0); resent != 1 || dropped != 0 || err != nil {
		t.Fatalf("reconnected: %d resent, %d dropped, %v; want 1, 0", resent, dropped, err)
	}
	batch, n, from := q.take(nil)
	if got := frames(batch); n != 2 || from != 0 || len(got) != 2 || got[0] != "partly written" || got[1] != "queued after" {
		t.Fatalf("after detach, take: %q (n=%d, from=%d)", got, n, from)
	}
	if _, unacked := q.len(); unacked != 2 {
		t.Errorf("unacked %d, want 2", unacked)
	}
}

// On a new connection, the frames the member acknowledged in its first
// ack are dropped and the rest resent; if it is another incarnation, the
// unacknowledged frames are dropped and counted, and frames never sent go
// to it.
func TestQueueReconnected(t *testing.T) {
	q := newSendQueue(10, 1<<20, true)
	q.reconnected(7, 0)
	for _, p := range []string{"a", "b", "c", "d"} {
		if err := q.push([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	batch, n, _ := q.take(nil)
	q.written(batch, n)
	if err := q.ack(1); err != nil {
		t.Fatal(err)
	}
	// The connection fails; the member had delivered a and b.
	if resent, dropped, err := q.reconnected(7, 2); resent != 2 || dropped != 0 || err != nil {
		t.Fatalf("same incarnation: %d resent, %d dropped, %v; want 2, 0", resent, dropped, err)
	}
	if err := q.push([]byte("e")); err != nil {
		t.Fatal(err)
	}
	batch, n, _ = q.take(nil)
	if got := frames(batch); n != 3 || len(got) != 3 || got[0] != "c" || got[2] != "e" || q.base != 2 {
		t.Fatalf("take after reconnecting: %q, base %d", got, q.base)
	}
	q.written(batch, n)
	if err := q.push([]byte("f")); err != nil {
		t.Fatal(err)
	}
	// The member restarts: c, d, e are dropped; f, never sent, goes to it.
	if resent, dropped, err := q.reconnected(8, 0); resent != 0 || dropped != 3 || err != nil {
		t.Fatalf("new incarnation: %d resent, %d dropped, %v; want 0, 3", resent, dropped, err)
	}
	batch, _, _ = q.take(nil)
	if got := frames(batch); len(got) != 1 || got[0] != "f" || q.base != 0 {
		t.Fatalf("take after the restart: %q, base %d", got, q.base)
	}
	// An acknowledgement outside what was sent is refused; a first ack
	// beyond it is taken as a new start.
	if err := q.ack(5); err == nil {
		t.Error("ack(5) of 1 frame sent: accepted")
	}
	if resent, dropped, err := q.reconnected(8, 9); resent != 0 || dropped != 1 || err != nil || q.base != 9 {
		t.Errorf("resuming at 9 with frame 0 unacknowledged: %d resent, %d dropped, %v; base %d", resent, dropped, err, q.base)
	}
	if q.resent.Load() != 2 || q.droppedRestart.Load() != 4 {
		t.Errorf("counters: resent %d, dropped %d; want 2, 4", q.resent.Load(), q.droppedRestart.Load())
	}
}

// A resumption below what the member has acknowledged is stale (the
// member wrote it on a connection it has given up since): nothing is
// dropped or resent, and the numbering stays where it was. A stale
// resumption not below it puts frames back in the queue; if its
// connection fails before they are written again, the next resumption
// still counts them as sent, and drops those the member had after all.
func TestQueueStaleResumption(t *testing.T) {
	q := newSendQueue(10, 1<<20, true)
	q.reconnected(7, 0)
	for _, p := range []string{"a", "b", "c", "d"} {
		if err := q.push([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	batch, n, _ := q.take(nil)
	q.written(batch, n)
	if err := q.ack(2); err != nil {
		t.Fatal(err)
	}
	// The member delivered a and b, acknowledged them, and then c: a
	// resumption it wrote before it had b is stale.
	if resent, dropped, err := q.reconnected(7, 1); !errors.Is(err, errStale) || resent != 0 || dropped != 0 {
		t.Errorf("resuming at 1 after an ack of 2: %d resent, %d dropped, %v; want errStale", resent, dropped, err)
	}
	if q.base != 2 || q.nUnacked != 2 || q.droppedRestart.Load() != 0 {
		t.Fatalf("after a stale resumption: base %d, %d unacknowledged, %d dropped; want 2, 2, 0", q.base, q.nUnacked, q.droppedRestart.Load())
	}
	// One it wrote when it had b (not below the ack): c and d go back to
	// the queue, and the connection fails before they are written.
	if resent, dropped, err := q.reconnected(7, 2); resent != 2 || dropped != 0 || err != nil {
		t.Fatalf("resuming at 2: %d resent, %d dropped, %v; want 2, 0", resent, dropped, err)
	}
	if err := q.push([]byte("e")); err != nil {
		t.Fatal(err)
	}
	// The member really had c: d and e are what it lacks.
	if resent, dropped, err := q.reconnected(7, 3); resent != 1 || dropped != 0 || err != nil {
		t.Fatalf("resuming at 3 with c and d put back: %d resent, %d dropped, %v; want 1, 0", resent, dropped, err)
	}
	batch, n, _ = q.take(nil)
	if got := frames(batch); n != 2 || len(got) != 2 || got[0] != "d" || got[1] != "e" || q.base != 3 {
		t.Fatalf("take: %q, base %d; want d, e from 3", got, q.base)
	}
	if q.droppedRestart.Load() != 0 {
		t.Errorf("%d frames counted as dropped for a restart", q.droppedRestart.Load())
	}
}

func TestQueueBounds(t *testing.T) {
	q := newSendQueue(3, 100, false)
	for i := range 3 {
		if err := q.push(make([]byte, 10)); err != nil {
			t.Fatalf("push %d: %v", i, err)
		}
	}
	if err := q.push(nil); !errors.Is(err, ErrBackpressure) {
		t.Fatalf("fourth frame: %v, want ErrBackpressure", err)
	}
	batch, n, _ := q.take(nil) // held frames still count
	if err := q.push(nil); !errors.Is(err, ErrBackpressure) {
		t.Fatalf("while held: %v, want ErrBackpressure", err)
	}
	q.written(batch, n)
	if err := q.push(make([]byte, 90)); err != nil {
		t.Fatalf("after written: %v", err)
	}
	if err := q.push(make([]byte, 10)); !errors.Is(err, ErrBackpressure) {
		t.Fatalf("beyond the byte bound: %v, want ErrBackpressure", err)
	}
	q.close()
	if err := q.push(nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v, want ErrClosed", err)
	}
	if q.backpressured.Load() != 3 {
		t.Errorf("backpressured = %d, want 3", q.backpressured.Load())
	}
}

// Frames written and not acknowledged count against the bound in bytes;
// the bound in frames is on those not yet written.
func TestQueueBoundsCountUnacked(t *testing.T) {
	q := newSendQueue(3, 100, true)
	for range 2 {
		if err := q.push(make([]byte, 40)); err != nil {
			t.Fatal(err)
		}
	}
	batch, n, _ := q.take(nil)
	q.written(batch, n) // 82 bytes unacknowledged
	if err := q.push(make([]byte, 20)); !errors.Is(err, ErrBackpressure) {
		t.Fatalf("82 bytes unacknowledged, 21 more, bound 100: %v, want ErrBackpressure", err)
	}
	for range 3 {
		if err := q.push(nil); err != nil {
			t.Fatalf("three empty frames: %v", err)
		}
	}
	if err := q.push(nil); !errors.Is(err, ErrBackpressure) {
		t.Fatalf("a fourth frame queued, bound 3: %v, want ErrBackpressure", err)
	}
	if !q.acquireAsk() {
		t.Fatal("half the bytes are unacknowledged and no ack was asked for")
	}
	q.pinged()
	if q.acquireAsk() {
		t.Fatal("asked for an ack twice")
	}
	if err := q.ack(1); err != nil {
		t.Fatal(err)
	}
	batch, n, _ = q.take(nil)
	q.written(batch, n)
	if err := q.push(make([]byte, 20)); err != nil {
		t.Fatalf("after an ack of one 40-byte frame: %v", err)
	}
}

func TestQueueBatchTakesAllOrNone(t *testing.T) {
	q := newSendQueue(3, 100, true)
	if err := q.push(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	if err := q.push(make([]byte, 10), make([]byte, 10), make([]byte, 10)); !errors.Is(err, ErrBackpressure) {
		t.Fatalf("three frames behind one, bound 3: %v, want ErrBackpressure", err)
	}
	if err := q.push(make([]byte, 40), make([]byte, 50)); !errors.Is(err, ErrBackpressure) {
		t.Fatalf("beyond the byte bound: %v, want ErrBackpressure", err)
	}
	if queued(q) != 1 {
		t.Fatalf("%d frames queued after refused batches, want 1", queued(q))
	}
	if err := q.push([]byte("a"), []byte("b")); err != nil {
		t.Fatal(err)
	}
	batch, n, _ := q.take(nil)
	if got := frames(batch); n != 3 || len(got) != 3 || got[1] != "a" || got[2] != "b" {
		t.Fatalf("take: %q (n=%d)", got, n)
	}
}
