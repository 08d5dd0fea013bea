package transport

import (
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// sendQueue holds, for one destination, the frames Send accepted that have
// not yet been written, and arbitrates who writes to the connection.
//
// Batching. Send encodes each frame straight into pending; the writer
// goroutine takes all of pending at once (swapping in an empty buffer) and
// writes it with one call, so while one write is in the kernel the next
// batch collects behind it, and a burst of Sends leaves in a few large
// writes. Frames the writer has taken still count against the bound until
// they are written, so the bound covers all the memory the queue holds.
//
// Direct writes. Handing a lone frame to the writer costs a goroutine
// wake-up, often a thread wake-up too, which on loopback is as much as the
// system call itself. So when the connection is idle (nothing queued or
// being written, and nothing written for directGap) Send writes the frame
// itself with one non-blocking system call. If the socket takes only part
// of it, the writer writes the rest; if the socket takes none (its buffer is
// full, or the connection has failed), the frame goes to the head of the
// queue. Only plain TCP connections on Unix offer direct writes; a burst
// (Sends closer together than directGap) is always batched.
//
// Who writes. At most one party writes to the connection at a time: writing
// is set by the writer for each batch or ping, and by a Send for its direct
// write.
type sendQueue struct {
	maxFrames, maxBytes int
	wake                chan struct{} // capacity 1; signalled when a parked writer has work

	mu        sync.Mutex
	idle      sync.Cond // L is &mu; broadcast when writing ends
	pending   []byte    // encoded frames not yet taken by the writer
	nPending  int
	nHeld     int // frames taken by the writer or a direct Send, not yet written
	heldBytes int
	writing   bool // the connection's write side is taken
	parked    bool // the writer waits on wake
	closed    bool

	raw       syscall.RawConn // while set, Sends may write directly
	lastWrite time.Time       // when the last write to the connection ended
	scratch   []byte          // a direct Send encodes its frame here
	resume    []byte          // the frames a direct Send wrote only part of
	resumeAt  int             // how much of resume was written
	resumeN   int             // how many frames resume holds

	backpressured            atomic.Uint64
	sent, sentBytes, nWrites atomic.Uint64
	// Direct writes that the socket took whole, in part, or not at all.
	directWhole, directPart, directNone atomic.Uint64
}

// directGap: a Send at least this long after the connection's last write
// may write directly; closer Sends are batched by the writer.
const directGap = 5 * time.Microsecond

// directMax is the largest payload written directly.
const directMax = 16 << 10

func newSendQueue(maxFrames, maxBytes int) *sendQueue {
	q := &sendQueue{maxFrames: maxFrames, maxBytes: maxBytes, wake: make(chan struct{}, 1)}
	q.idle.L = &q.mu
	return q
}

// push queues frames carrying payloads, in order (or writes them
// directly), or reports why it cannot: it takes all of them or none.
func (q *sendQueue) push(payloads ...[]byte) error {
	k, size, bytes := len(payloads), 0, 0
	for _, p := range payloads {
		size += frameLen(len(p))
		bytes += len(p)
	}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return ErrClosed
	}
	n := q.nPending + q.nHeld
	if q.raw != nil && n == 0 && !q.writing && bytes <= directMax && time.Since(q.lastWrite) >= directGap {
		q.writeDirect(payloads) // unlocks
		return nil
	}
	// One frame may exceed the byte bound if it is alone (it is at most
	// MaxFrame, which the bound allows for).
	if n+k > q.maxFrames || (n > 0 || k > 1) && len(q.pending)+q.heldBytes+size > q.maxBytes {
		q.mu.Unlock()
		q.backpressured.Add(1)
		return ErrBackpressure
	}
	for _, p := range payloads {
		q.pending = appendFrame(q.pending, p)
	}
	q.nPending += k
	wake := q.parked
	q.parked = false
	q.mu.Unlock()
	if wake {
		q.signal()
	}
	return nil
}

// writeDirect writes frames carrying payloads to the idle connection, with
// one system call. It is called with mu held and returns with it released.
func (q *sendQueue) writeDirect(payloads [][]byte) {
	q.writing = true
	frames := q.scratch[:0]
	for _, p := range payloads {
		frames = appendFrame(frames, p)
	}
	k := len(payloads)
	q.nHeld, q.heldBytes = k, len(frames)
	raw := q.raw
	q.mu.Unlock()

	w := writeNow(raw, frames)
	q.nWrites.Add(1)

	q.mu.Lock()
	switch {
	case w == len(frames):
		q.directWhole.Add(1)
		q.nHeld, q.heldBytes = 0, 0
		q.sent.Add(uint64(k))
		q.sentBytes.Add(uint64(len(frames)))
	case w == 0:
		q.directNone.Add(1)
		// To the head of the queue, ahead of frames queued meanwhile.
		p := make([]byte, 0, len(frames)+len(q.pending))
		q.pending = append(append(p, frames...), q.pending...)
		q.nPending += k
		q.nHeld, q.heldBytes = 0, 0
	default:
		q.directPart.Add(1)
		q.resume, q.resumeAt, q.resumeN = append([]byte(nil), frames...), w, k
	}
	if cap(frames) <= 1<<10 {
		q.scratch = frames[:0]
	}
	q.writing = false
	q.lastWrite = time.Now()
	q.idle.Broadcast()
	wake := q.parked && (q.nPending > 0 || q.resume != nil || q.closed)
	if wake {
		q.parked = false
	}
	q.mu.Unlock()
	if wake {
		q.signal()
	}
}

func (q *sendQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take gives the writer the connection and what to write next: the rest of
// a frame a direct Send left unfinished (from is where to continue), or all
// pending frames, giving the queue spare (emptied) as its next buffer. n is
// 0 if there is nothing to write, or a direct Send is writing.
func (q *sendQueue) take(spare []byte) (batch []byte, n, from int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.writing:
		return nil, 0, 0
	case q.resume != nil:
		batch, n, from = q.resume, q.resumeN, q.resumeAt
		q.resume = nil
		q.writing = true
		return batch, n, from
	case q.nPending == 0:
		return nil, 0, 0
	}
	batch, n = q.pending, q.nPending
	q.pending, q.nPending = spare[:0], 0
	q.nHeld += n
	q.heldBytes += len(batch)
	q.writing = true
	return batch, n, 0
}

// written is the writer's report that n frames it held, size bytes, reached
// the kernel; it gives the connection back.
func (q *sendQueue) written(n, size int) {
	q.sent.Add(uint64(n))
	q.sentBytes.Add(uint64(size))
	q.mu.Lock()
	q.nHeld -= n
	q.heldBytes -= size
	q.writing = false
	q.lastWrite = time.Now()
	q.idle.Broadcast()
	q.mu.Unlock()
}

// acquireIdle gives the writer the connection for a ping if nothing has
// been written to it for at least d and nothing is waiting to be.
func (q *sendQueue) acquireIdle(d time.Duration) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.writing || q.nPending > 0 || q.resume != nil || time.Since(q.lastWrite) < d {
		return false
	}
	q.writing = true
	return true
}

// park arranges for the next push (or the end of a direct write that leaves
// work) to signal wake. It returns false, without parking, if the writer
// has something to do: frames to write, or the queue closed and no direct
// write in progress.
func (q *sendQueue) park() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.writing && (q.nPending > 0 || q.resume != nil || q.closed) {
		return false
	}
	q.parked = true
	return true
}

// drained reports whether the queue is closed and everything in it written.
func (q *sendQueue) drained() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closed && !q.writing && q.nPending == 0 && q.resume == nil
}

// attach makes Sends write directly to raw (nil: they may not). The
// writer calls it once the connection is up and it holds no frames.
func (q *sendQueue) attach(raw syscall.RawConn) {
	q.mu.Lock()
	q.raw = raw
	q.mu.Unlock()
}

// detach stops direct writes to the connection, which is going away, and
// waits for one in progress. A frame a direct Send wrote only part of goes
// back to the head of the queue whole: the peer discards a partial frame.
// The writer must not hold the connection.
func (q *sendQueue) detach() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.raw = nil
	for q.writing {
		q.idle.Wait()
	}
	if q.resume != nil {
		p := make([]byte, 0, len(q.resume)+len(q.pending))
		q.pending = append(append(p, q.resume...), q.pending...)
		q.nPending += q.resumeN
		q.nHeld -= q.resumeN
		q.heldBytes -= len(q.resume)
		q.resume = nil
	}
}

// close makes push fail with ErrClosed and wakes the writer, which then
// writes what is pending and stops.
func (q *sendQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

// len is the number of frames queued or held.
func (q *sendQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.nPending + q.nHeld
}

// discard drops everything queued or held and returns how many frames that
// was. Nothing may be writing.
func (q *sendQueue) discard() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := q.nPending + q.nHeld
	q.pending, q.nPending, q.nHeld, q.heldBytes, q.resume = nil, 0, 0, 0, nil
	return n
}

// recycle returns buf emptied for reuse as a batch buffer, or nil if it has
// grown so large (after an outage, say) that keeping it would pin memory.
func recycle(buf []byte) []byte {
	if cap(buf) > 1<<20 {
		return nil
	}
	return buf[:0]
}
