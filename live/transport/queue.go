package transport

import (
	"encoding/binary"
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
//
// Keeping what was sent. A member's queue (keep set) moves frames, as they
// are taken to be written, to unacked, where they stay until the member
// acknowledges them. They count against the bound in bytes, which thus
// covers all the memory the queue holds, as a TCP send buffer does; the
// bound in frames is on those not yet written, as before, so that the
// window (what may be in flight) is as large as the bytes allow: on
// loopback, 4096 small frames in flight are not enough to keep a stream
// going. When a connection fails, what is unacknowledged is written again
// on the next one, from where the member says it stopped (ack.go). Frames
// enter unacked before the write, since the member may acknowledge them
// before the write returns.
//
// Acknowledgements. The connection is the pair's, so the member's frames
// arrive on it too, and this side's acks of them leave by it. They are
// written by whoever holds the connection (so that they leave in order),
// in front of the data it writes when any are owed (piggybacked: an
// exchange of requests and replies needs no ack segments), or alone when
// one is due and there is no data to carry it (rx).
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
	up        bool            // a connection is attached
	lastWrite time.Time       // when the last write to the connection ended
	scratch   []byte          // a direct Send encodes its frame here
	resume    []byte          // the frames a direct Send wrote only part of
	resumeAt  int             // how much of resume was written
	resumeN   int             // how many frames resume holds

	keep     bool
	unacked  []byte // from acked on: frames taken to be written and not acknowledged, oldest first
	acked    int    // bytes at the head of unacked acknowledged, kept until compacted
	nUnacked int
	base     uint64 // the number of the first frame of unacked (or of pending, if unacked is empty)
	peerInc  uint64 // the member's incarnation, 0 before the first connection
	asked    bool   // an acknowledgement was asked for since the last one came
	flushed  bool   // closed, written and acknowledged: Close's flush is done

	// rewrite: the bytes, nRewrite frames, at the head of pending that a
	// resumption put back (reconnected), written before and not
	// acknowledged, until a connection takes them.
	rewrite, nRewrite int

	// rx is the receiving side of the link, whose acks this queue's
	// writers send (nil: none, as for Sends to Self).
	rx *rx
	// rd is the reader of the connection attached, whose quiet deadline
	// the writers shorten when they write data frames (keepalive.go).
	rd *readWatch
	// demand, if set (Config.LinkIdle), is called by a push that queues
	// frames while no connection is attached: the member is dialed.
	demand func()
	// lastData: when a data frame last passed either way (mono).
	lastData atomic.Int64
	// fullSince: when a Send was first refused since the member last
	// showed progress (zero: none since): acknowledged frames, or sent a
	// data frame (heard). A member that reads nothing for long while its
	// queue is full is cut off (stalled).
	fullSince time.Time
	full      atomic.Bool // fullSince is set (read without mu)

	backpressured            atomic.Uint64
	sent, sentBytes, nWrites atomic.Uint64
	resent, droppedRestart   atomic.Uint64
	acks                     atomic.Uint64 // ack frames received
	ackWrites                atomic.Uint64 // writes that carried only an ack (none piggybacked)
	// What else than data frames was written (PeerStats.ControlBytes)
	// and the writes that carried nothing else (ControlWrites).
	controlBytes, controlWrites atomic.Uint64
	// Direct writes that the socket took whole, in part, or not at all.
	directWhole, directPart, directNone atomic.Uint64
}

// directGap: a Send at least this long after the connection's last write
// may write directly; closer Sends are batched by the writer.
const directGap = 5 * time.Microsecond

// directMax is the largest payload written directly.
const directMax = 16 << 10

// newSendQueue returns a queue bounded by maxFrames and maxBytes; keep says
// whether it keeps written frames until they are acknowledged.
func newSendQueue(maxFrames, maxBytes int, keep bool) *sendQueue {
	q := &sendQueue{maxFrames: maxFrames, maxBytes: maxBytes, keep: keep, wake: make(chan struct{}, 1)}
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
	queued := q.nPending + q.nHeld
	if q.raw != nil && queued == 0 && q.resume == nil && !q.writing && bytes <= directMax && time.Since(q.lastWrite) >= directGap &&
		k <= q.maxFrames && q.unackedBytes()+size <= q.maxBytes {
		q.writeDirect(payloads) // unlocks
		return nil
	}
	// One frame may exceed the byte bound if it is alone (it is at most
	// MaxFrame, which the bound allows for).
	if queued+k > q.maxFrames || (queued > 0 || k > 1 || q.nUnacked > 0) && len(q.pending)+q.heldBytes+q.unackedBytes()+size > q.maxBytes {
		if q.fullSince.IsZero() {
			q.fullSince = time.Now()
			q.full.Store(true)
		}
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
	dial := q.demand != nil && !q.up
	q.mu.Unlock()
	if wake {
		q.signal()
	}
	if dial {
		q.demand()
	}
	return nil
}

// writeDirect writes frames carrying payloads to the idle connection, with
// one system call, after the ack owed to the member if any. It is called
// with mu held and returns with it released.
func (q *sendQueue) writeDirect(payloads [][]byte) {
	q.writing = true
	buf := q.appendAck(q.scratch[:0], false)
	a := len(buf)
	for _, p := range payloads {
		buf = appendFrame(buf, p)
	}
	frames := buf[a:]
	k := len(payloads)
	q.hold(frames, k)
	raw := q.raw
	q.mu.Unlock()

	w := writeNow(raw, buf)
	q.nWrites.Add(1)
	if w > 0 {
		q.controlBytes.Add(uint64(a))
	}

	q.mu.Lock()
	switch {
	case w == len(buf):
		q.lastData.Store(mono())
		q.directWhole.Add(1)
		q.release(frames, k)
		q.sent.Add(uint64(k))
		q.sentBytes.Add(uint64(len(frames)))
	case w == 0:
		q.directNone.Add(1)
		// To the head of the queue, ahead of frames queued meanwhile;
		// the ack is owed again.
		q.unhold(frames, k)
		p := make([]byte, 0, len(frames)+len(q.pending))
		q.pending = append(append(p, frames...), q.pending...)
		q.nPending += k
		if a > 0 {
			q.rx.now.Store(true)
		}
	default:
		q.directPart.Add(1)
		q.resume, q.resumeAt, q.resumeN = append([]byte(nil), buf...), w, k
	}
	if cap(buf) <= 1<<10 {
		q.scratch = buf[:0]
	}
	q.writing = false
	q.lastWrite = time.Now()
	q.idle.Broadcast()
	wake := q.parked && q.work()
	if wake {
		q.parked = false
	}
	q.mu.Unlock()
	if wake {
		q.signal()
	}
}

// hold records that frames, k of them, are being written: a keeping
// queue moves them to unacked at once (the member may acknowledge them
// before the write returns); another counts them as held. mu is held.
func (q *sendQueue) hold(frames []byte, k int) {
	if q.rd != nil {
		q.rd.shorten()
	}
	if q.keep {
		q.unacked = append(q.unacked, frames...)
		q.nUnacked += k
		return
	}
	q.nHeld += k
	q.heldBytes += len(frames)
}

// release records that frames, k of them, held for writing, have been
// written (or that their write failed, when the connection did: what was
// kept is written again on the next). mu is held.
func (q *sendQueue) release(frames []byte, k int) {
	if !q.keep {
		q.nHeld -= k
		q.heldBytes -= len(frames)
	}
}

// unhold undoes hold for frames that no connection took: the last held.
// mu is held.
func (q *sendQueue) unhold(frames []byte, k int) {
	if q.keep {
		q.unacked = q.unacked[:len(q.unacked)-len(frames)]
		q.nUnacked -= k
		return
	}
	q.release(frames, k)
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
	q.rewrite, q.nRewrite = 0, 0
	q.hold(batch, n)
	q.writing = true
	return batch, n, 0
}

// written is the writer's report that it has written batch, the n frames
// take gave it, or failed to (the connection broke); it gives the
// connection back.
func (q *sendQueue) written(batch []byte, n int) {
	if n > 0 {
		q.lastData.Store(mono())
	}
	q.sent.Add(uint64(n))
	q.sentBytes.Add(uint64(len(batch)))
	q.mu.Lock()
	q.release(batch, n)
	q.done()
	q.mu.Unlock()
}

// done gives the connection back. mu is held.
func (q *sendQueue) done() {
	q.writing = false
	q.lastWrite = time.Now()
	q.idle.Broadcast()
}

// pinged is the writer's report that it has written a ping; it gives the
// connection back.
func (q *sendQueue) pinged() {
	q.mu.Lock()
	q.done()
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

// acquireAsk gives the writer the connection to ask the member for an
// acknowledgement (with a ping), if half the bound in bytes is taken by
// frames not acknowledged and none has been asked for since the last came.
func (q *sendQueue) acquireAsk() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.writing || !q.wantAck() {
		return false
	}
	q.writing, q.asked = true, true
	return true
}

// wantAck reports whether to ask for an acknowledgement: when half the
// bound in bytes is unacknowledged, or when Close flushes and everything
// is written. mu is held.
func (q *sendQueue) wantAck() bool {
	return q.keep && !q.asked && q.nUnacked > 0 &&
		(2*q.unackedBytes() >= q.maxBytes || q.closed && q.nPending == 0 && q.resume == nil)
}

// work reports whether the writer has something to do: frames to write,
// an acknowledgement to ask for or to send, or a flush to finish. mu is
// held.
func (q *sendQueue) work() bool {
	return q.nPending > 0 || q.resume != nil || q.closed && !q.flushed && q.nUnacked == 0 ||
		q.wantAck() || q.rx != nil && q.rx.now.Load()
}

// park arranges for the next push (or the end of a direct write that leaves
// work, or an ack that falls due) to signal wake. It returns false,
// without parking, if the writer has something to do and no direct write
// is in progress.
func (q *sendQueue) park() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.writing && q.work() {
		return false
	}
	q.parked = true
	return true
}

// wakeWriter wakes the writer if it is parked (an ack fell due).
func (q *sendQueue) wakeWriter() {
	q.mu.Lock()
	wake := q.parked
	q.parked = false
	q.mu.Unlock()
	if wake {
		q.signal()
	}
}

// appendAck appends to dst the ack owed to the member, if any (frames
// delivered since the last ack, or one is due), or in any case if force
// is set. The caller holds the connection (writing), so acks leave in
// order.
func (q *sendQueue) appendAck(dst []byte, force bool) []byte {
	rx := q.rx
	if rx == nil {
		return dst
	}
	// Disarm before reading the count: a frame delivered after the read
	// arms the next ack.
	rx.armed.Store(false)
	now := rx.now.Swap(false)
	next := rx.next.Load()
	if !force && !now && next == rx.ackedFrames.Load() {
		return dst
	}
	rx.ackedFrames.Store(next)
	rx.ackedBytes.Store(rx.bytes.Load())
	return appendAck(dst, next)
}

// wroteControl counts a write of n bytes that carried no data frame, if
// it succeeded.
func (q *sendQueue) wroteControl(n int, err error) {
	if err == nil {
		q.controlWrites.Add(1)
		q.controlBytes.Add(uint64(n))
	}
}

// acquireAck gives the writer the connection to write an ack that is due
// (rx.now).
func (q *sendQueue) acquireAck() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.writing || q.rx == nil || !q.rx.now.Load() {
		return false
	}
	q.writing = true
	return true
}

// ackDirect writes the ack that is due with one non-blocking system call,
// if the connection is idle and allows direct writes; what the socket
// does not take the writer finishes. It reports whether it wrote the ack
// (else the writer will, and should be woken).
func (q *sendQueue) ackDirect() bool {
	q.mu.Lock()
	if q.raw == nil || q.writing || q.resume != nil || q.nPending > 0 {
		q.mu.Unlock()
		return false
	}
	q.writing = true
	raw := q.raw
	q.mu.Unlock()
	var a [1 + binary.MaxVarintLen64]byte
	b := q.appendAck(a[:0], true)
	w := writeNow(raw, b)
	q.ackWrites.Add(1)
	if w > 0 {
		q.wroteControl(w, nil)
	}
	q.mu.Lock()
	switch {
	case w == 0:
		q.rx.now.Store(true)
	case w < len(b):
		q.resume, q.resumeAt, q.resumeN = append([]byte(nil), b...), w, 0
	}
	q.writing = false
	q.lastWrite = time.Now()
	q.idle.Broadcast()
	wake := q.parked && q.work()
	if wake {
		q.parked = false
	}
	q.mu.Unlock()
	if wake {
		q.signal()
	}
	return w > 0
}

// finishFlush reports, once, that Close's flush is done: the queue is
// closed and everything in it written and acknowledged.
func (q *sendQueue) finishFlush() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.flushed || !q.closed || q.writing || q.nPending > 0 || q.resume != nil || q.nUnacked > 0 {
		return false
	}
	q.flushed = true
	return true
}

// heard records that a data frame from the member has arrived. Its
// acknowledgements leave behind the frames it writes, so while it writes
// a long run of them (on a slow link, a window resent takes longer than
// IdleTimeout to pass) they say nothing of whether it reads: its Sends
// are progress enough, and the stall clock starts again. A member that
// stops reading is then cut only once it also stops sending (or sends
// acks that acknowledge nothing).
func (q *sendQueue) heard() {
	if !q.full.Load() {
		return
	}
	q.mu.Lock()
	q.fullSince = time.Time{}
	q.full.Store(false)
	q.mu.Unlock()
}

// stalled reports whether Sends have been refused for at least d without
// the member acknowledging anything meanwhile, and what it leaves
// unacknowledged.
func (q *sendQueue) stalled(d time.Duration) (ok bool, frames, bytes int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.fullSince.IsZero() || time.Since(q.fullSince) < d || q.nUnacked+q.nPending == 0 {
		return false, 0, 0
	}
	return true, q.nUnacked + q.nPending, q.unackedBytes() + len(q.pending)
}

// wants reports whether the member has frames to get: queued, or written
// and not acknowledged (a connection must carry them again).
func (q *sendQueue) wants() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.nPending+q.nHeld+q.nUnacked > 0 || q.resume != nil
}

// quiet reports whether nothing is queued, being written, or awaiting
// the member's acknowledgement.
func (q *sendQueue) quiet() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return !q.writing && q.nPending+q.nHeld+q.nUnacked == 0 && q.resume == nil
}

// mono is a monotonic clock in nanoseconds, for times kept in atomics.
func mono() int64 { return int64(time.Since(monoEpoch)) }

var monoEpoch = time.Now()

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
	q.raw, q.up = raw, true
	q.mu.Unlock()
}

// detach stops direct writes to the connection, which is going away, and
// waits for one in progress. The frames a direct Send wrote only part of
// are unacknowledged: the next connection writes them again, whole (the
// member discards a partial frame). The writer must not hold the
// connection.
func (q *sendQueue) detach() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.raw, q.up, q.rd = nil, false, nil
	for q.writing {
		q.idle.Wait()
	}
	if q.resume != nil {
		q.release(q.resume, q.resumeN)
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

// len is the number of frames queued or held, and of those written and
// not acknowledged.
func (q *sendQueue) len() (queued, unacked int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.nPending + q.nHeld, q.nUnacked
}

// discard drops everything queued, held or unacknowledged and returns how
// many frames that was. Nothing may be writing.
func (q *sendQueue) discard() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := q.nPending + q.nHeld + q.nUnacked
	q.pending, q.nPending, q.nHeld, q.heldBytes, q.resume = nil, 0, 0, 0, nil
	q.rewrite, q.nRewrite = 0, 0
	q.unacked, q.acked, q.nUnacked = nil, 0, 0
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
