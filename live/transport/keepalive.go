package transport

import (
	"net"
	"time"
)

// Keepalives and read deadlines: how a dead connection is noticed, at no
// cost on the quiet ones.
//
// A connection on which nothing is outstanding either way needs no
// keepalive for correctness: nothing sent on it can be lost, so a
// connection that died meanwhile (a machine gone without a reset, a
// partition) does no harm until data is sent on it. Then the sender
// waits for an acknowledgement, which the member gives within ackDelay
// of the batch (ack.go), or, while its handler holds a frame, with a
// keepalive every PingInterval; so the sender's reader hears something
// within IdleTimeout of sending, or the connection is dead. It is the
// reasoning of TCP's own retransmission timer, which runs only while
// data is unacknowledged, against its keepalive (RFC 1122, 4.2.3.6:
// off by default, and then at intervals of no less than two hours).
//
// In a full mesh where each pair talks only now and then (SWIM probes a
// given member every n periods or so) this is the difference between a
// keepalive from each side of every connection every PingInterval, and
// almost no traffic on the connections nobody uses at the moment.
//
// The reader's deadline. Each time the reader waits for a frame it asks
// (readWatch.arm, under the queue's mutex) whether this side awaits
// something of the member: frames it wrote that the member has not
// acknowledged (the ping asking for an ack, and Close's flush, come
// only with such frames). If so, the frame must come within IdleTimeout,
// as always. If not, the reader waits up to the quiet timeout (quietFor:
// ten IdleTimeouts, at least five minutes), a backstop that reaps
// connections to machines that vanished; and once the first byte of a frame has
// come, the rest must follow within IdleTimeout (so a peer that trickles
// a frame in is cut as before; under TLS the reader sees a record only
// once it is whole, so a record trickled in while nothing is awaited is
// bounded by the quiet timeout alone, from a peer that passed the
// handshake with the cluster's certificates).
//
// Shortening. Whoever puts data frames on the connection (the writer, a
// Send writing directly) does so under the queue's mutex (hold), and if
// the reader waits with the quiet deadline it sets that deadline to
// IdleTimeout from now: in Go a deadline set from another goroutine
// applies to a Read already waiting. Both decide under the mutex, so a
// reader cannot arm the quiet deadline just after a write shortened it:
// either the reader armed first and the write shortens, or the write
// came first and the reader sees the frames unacknowledged.
//
// Keepalives. The writer writes an ack when nothing has been written for
// a while: every PingInterval while the member may await something of
// this side (the handler holds one of its frames, or frames delivered
// are not acknowledged yet), every third of the quiet timeout otherwise,
// so that the backstop never fires on a healthy connection. Five minutes
// keep that keepalive rare (in a 64-member mesh a keepalive a minute on
// each of 63 connections was a tenth of a quiet member's bytes) and
// within the idle timeouts of common NATs (AWS's gateway drops a
// connection idle for 350 s).
//
// What does not change: the handshake and the resumption are bounded by
// HandshakeTimeout; a member that stops reading is cut after IdleTimeout
// with its queue full (checkStalled); lazy links close on the writer's
// tick after LinkIdle; Close's flush waits for the last ack (so its
// reader waits IdleTimeout).

// quietFor is how long a reader waits for a frame when this side awaits
// nothing of the member, for a connection whose IdleTimeout is idle.
func quietFor(idle time.Duration) time.Duration { return max(5*time.Minute, 10*idle) }

// readWatch is what the writers see of a connection's reader: whether it
// waits with the quiet deadline, which a write of data frames shortens.
type readWatch struct {
	q           *sendQueue
	conn        net.Conn
	idle, quiet time.Duration
	long        bool // the last deadline armed was the quiet one (q.mu)
}

// arm sets the deadline of the reader's wait for a frame, IdleTimeout if
// this side awaits an acknowledgement and the quiet timeout if not, and
// reports which.
func (w *readWatch) arm() (long bool, err error) {
	q := w.q
	q.mu.Lock()
	defer q.mu.Unlock()
	w.long = q.nUnacked == 0
	d := w.idle
	if w.long {
		d = w.quiet
	}
	return w.long, w.conn.SetReadDeadline(time.Now().Add(d))
}

// shorten brings a quiet deadline to IdleTimeout from now: data frames
// are about to be written. q.mu is held.
func (w *readWatch) shorten() {
	if w.long {
		w.long = false
		w.conn.SetReadDeadline(time.Now().Add(w.idle))
	}
}

// expired reports whether the deadline that passed was the quiet one.
func (w *readWatch) expired() bool {
	w.q.mu.Lock()
	defer w.q.mu.Unlock()
	return w.long
}

// watch makes the writers of the queue shorten w's deadline (nil: none).
func (q *sendQueue) watch(w *readWatch) {
	q.mu.Lock()
	q.rd = w
	q.mu.Unlock()
}

// keepaliveEvery is how long the writer lets a connection go without a
// write before it writes a keepalive: PingInterval while the member may
// await something of this side — its frame is in the handler, or frames
// delivered are not acknowledged yet (the ack goes within ackDelay
// anyway) — and a third of the quiet timeout otherwise.
func (p *peer) keepaliveEvery() time.Duration {
	if p.rx.busy.Load() || p.rx.next.Load() != p.rx.ackedFrames.Load() {
		return p.t.cfg.PingInterval
	}
	return p.t.quiet / 3
}
