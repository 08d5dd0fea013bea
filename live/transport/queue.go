package transport

import (
	"sync"
	"sync/atomic"
)

// sendQueue holds, for one destination, the frames Send accepted that have
// not yet been written. Send encodes each frame straight into pending; the
// writer takes all of pending at once (swapping in an empty buffer) and
// writes it with one call, so while one write is in the kernel the next
// batch collects behind it, and a burst of Sends leaves in a few large
// writes. Frames the writer has taken still count against the bound until
// they are written, so the bound covers all the memory the queue holds.
type sendQueue struct {
	maxFrames, maxBytes int
	wake                chan struct{} // capacity 1; signalled when a parked writer has work

	mu        sync.Mutex
	pending   []byte // encoded frames not yet taken by the writer
	nPending  int
	nHeld     int // frames taken by the writer and not yet written
	heldBytes int
	parked    bool // the writer waits on wake
	closed    bool

	backpressured atomic.Uint64
}

func newSendQueue(maxFrames, maxBytes int) *sendQueue {
	return &sendQueue{maxFrames: maxFrames, maxBytes: maxBytes, wake: make(chan struct{}, 1)}
}

// push appends a frame carrying payload, or reports why it cannot.
func (q *sendQueue) push(payload []byte) error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return ErrClosed
	}
	n := q.nPending + q.nHeld
	if n >= q.maxFrames || n > 0 && len(q.pending)+q.heldBytes+frameLen(len(payload)) > q.maxBytes {
		q.mu.Unlock()
		q.backpressured.Add(1)
		return ErrBackpressure
	}
	q.pending = appendFrame(q.pending, payload)
	q.nPending++
	wake := q.parked
	q.parked = false
	q.mu.Unlock()
	if wake {
		q.signal()
	}
	return nil
}

func (q *sendQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take hands the pending frames to the writer, which now holds them, and
// gives the queue spare (emptied) as its next buffer. n is 0 if nothing is
// pending.
func (q *sendQueue) take(spare []byte) (batch []byte, n int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.nPending == 0 {
		return nil, 0
	}
	batch, n = q.pending, q.nPending
	q.pending, q.nPending = spare[:0], 0
	q.nHeld += n
	q.heldBytes += len(batch)
	return batch, n
}

// park arranges for the next push to signal wake. It returns false, without
// parking, when there is something to do: frames are pending or the queue
// has been closed.
func (q *sendQueue) park() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.nPending > 0 || q.closed {
		return false
	}
	q.parked = true
	return true
}

// release gives back n frames, size bytes, that the writer held.
func (q *sendQueue) release(n, size int) {
	q.mu.Lock()
	q.nHeld -= n
	q.heldBytes -= size
	q.mu.Unlock()
}

// close makes push fail with ErrClosed and wakes the writer, which then
// writes what is pending and stops.
func (q *sendQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

func (q *sendQueue) isClosed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closed
}

// len is the number of frames queued or held.
func (q *sendQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.nPending + q.nHeld
}

// discard drops everything queued or held and returns how many frames that
// was. The writer must not be running.
func (q *sendQueue) discard() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := q.nPending + q.nHeld
	q.pending, q.nPending, q.nHeld, q.heldBytes = nil, 0, 0, 0
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
