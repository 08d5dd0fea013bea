//go:build unix

package transport

import (
	"bytes"
	"os"
	"testing"
)

// A batch written directly to a socket (here a pipe) that takes only part
// of it: the rest is written by the writer, or, if the connection goes,
// every frame of the batch is written again whole on the next.
func TestQueueBatchWrittenInPart(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	raw, err := w.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	// Fill the pipe, then free one page of it.
	page := make([]byte, 4096)
	for writeNow(raw, page) > 0 {
	}
	if _, err := r.Read(page); err != nil {
		t.Fatal(err)
	}
	q := newSendQueue(10, 1<<20, true)
	q.reconnected(1, 0)
	q.attach(raw)
	payloads := [][]byte{bytes.Repeat([]byte("a"), 2000), bytes.Repeat([]byte("b"), 2000), bytes.Repeat([]byte("c"), 2000)}
	if err := q.push(payloads...); err != nil {
		t.Fatal(err)
	}
	if q.directPart.Load() != 1 || q.resumeN != 3 || q.resumeAt <= 0 || q.resumeAt >= len(q.resume) {
		t.Fatalf("direct partial %d, resume %d frames from %d of %d bytes; want the batch written in part",
			q.directPart.Load(), q.resumeN, q.resumeAt, len(q.resume))
	}
	q.detach()
	if resent, _, _ := q.reconnected(1, 0); resent != 3 {
		t.Fatalf("reconnecting: %d frames resent, want 3", resent)
	}
	batch, n, from := q.take(nil)
	if got := frames(batch); n != 3 || from != 0 || len(got) != 3 || got[0] != string(payloads[0]) || got[2] != string(payloads[2]) {
		t.Fatalf("after detach, take: %d frames (n=%d, from=%d)", len(got), n, from)
	}
	if _, unacked := q.len(); unacked != 3 {
		t.Errorf("unacked %d, want 3", unacked)
	}
}
