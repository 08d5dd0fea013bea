package transport

import (
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

func TestQueueDirectWriteRefused(t *testing.T) {
	q := newSendQueue(10, 1<<20)
	q.attach(refusingConn{meanwhile: func() {
		if err := q.push([]byte("second")); err != nil {
			t.Error(err)
		}
	}})
	if err := q.push([]byte("first")); err != nil {
		t.Fatal(err)
	}
	if q.directNone.Load() != 1 || q.len() != 2 {
		t.Fatalf("direct refused %d, queued %d; want 1, 2", q.directNone.Load(), q.len())
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
	q.written(n, len(batch))
	if q.nHeld != 0 || q.writing || q.sent.Load() != 2 || q.directNone.Load() != 1 {
		t.Fatalf("after written: held %d, writing %v, sent %d", q.nHeld, q.writing, q.sent.Load())
	}
}

func TestQueueDetachRequeuesPartialFrame(t *testing.T) {
	q := newSendQueue(10, 1<<20)
	whole := appendFrame(nil, []byte("partly written"))
	// As a direct Send leaves it when the socket took 3 bytes.
	q.resume, q.resumeAt, q.resumeN, q.nHeld, q.heldBytes = whole, 3, 1, 1, len(whole)
	q.pending, q.nPending = appendFrame(nil, []byte("queued after")), 1
	q.detach()
	batch, n, from := q.take(nil)
	if got := frames(batch); n != 2 || from != 0 || len(got) != 2 || got[0] != "partly written" || got[1] != "queued after" {
		t.Fatalf("after detach, take: %q (n=%d, from=%d)", got, n, from)
	}
	if q.len() != 2 {
		t.Errorf("queued %d, want 2", q.len())
	}
}

func TestQueueBounds(t *testing.T) {
	q := newSendQueue(3, 100)
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
	q.written(n, len(batch))
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

func TestQueueBatchTakesAllOrNone(t *testing.T) {
	q := newSendQueue(3, 100)
	if err := q.push(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	if err := q.push(make([]byte, 10), make([]byte, 10), make([]byte, 10)); !errors.Is(err, ErrBackpressure) {
		t.Fatalf("three frames behind one, bound 3: %v, want ErrBackpressure", err)
	}
	if err := q.push(make([]byte, 40), make([]byte, 50)); !errors.Is(err, ErrBackpressure) {
		t.Fatalf("beyond the byte bound: %v, want ErrBackpressure", err)
	}
	if q.len() != 1 {
		t.Fatalf("%d frames queued after refused batches, want 1", q.len())
	}
	if err := q.push([]byte("a"), []byte("b")); err != nil {
		t.Fatal(err)
	}
	batch, n, _ := q.take(nil)
	if got := frames(batch); n != 3 || len(got) != 3 || got[1] != "a" || got[2] != "b" {
		t.Fatalf("take: %q (n=%d)", got, n)
	}
}
