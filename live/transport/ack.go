package transport

import (
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// Acknowledgement and resending: what TCP gives within one connection,
// across the connections of a link. A link is a pair of incarnations
// (handshake.go), and carries two streams, one each way, over the pair's
// connection; while both processes live, nothing sent on either is lost
// or delivered twice, however often the connection breaks. What follows
// holds for each direction alone: the sender is the member whose frames
// they are, the receiver the other.
//
// Numbering. The data frames a member sends over a link are numbered 0, 1,
// 2 ... The numbers are not written on the wire: as TCP numbers bytes by
// their place in the stream, a frame's number is the number the connection
// started from plus its place among the data frames on it. The receiver
// counts, per sender, the data frames it has handed to the handler (next).
//
// Acknowledgement. The receiver sends ack frames carrying next on the same
// connection, cumulative, as TCP's are. Whoever writes to the connection
// (the writer goroutine, or a Send writing directly) puts the ack owed in
// front of the data it writes, if frames have been delivered since the
// last: so in an exchange of requests and replies every reply carries the
// ack of the request, and no segment carries an ack alone. When there is
// no data to carry it, the receiver acknowledges a batch of frames
// (everything read before its reader waits on the socket again) ackDelay
// after the batch (the delayed ACK of RFC 1122, 4.2.3.2); at the end of
// the batch when many frames or bytes have come since the last (as TCP
// acknowledges every second full segment), or when the sender asks with a
// ping; within a batch when eight times as many have (a stream the reader
// never catches up with has no end of batch); and with every keepalive
// (keepalive.go).
// The sender asks when half its QueueBytes is taken by frames not
// acknowledged, so that the window never closes while acknowledgements are
// delayed. Acks leave in order: only the party holding the connection
// (sendQueue.writing) writes one, and reads next as it does.
//
// Resending. The sender keeps each frame from the moment it is written
// until it is acknowledged (sendQueue.unacked, within QueueBytes). A new
// connection starts, after the handshake, with an ack from each side: each
// sends it only once the reader of the connection it replaces has stopped,
// so it says exactly which frames were delivered, and acts on the other's
// only once its own writer on the old connection has stopped. The dialer
// sends its ack first; the acceptor reads it before it takes the
// connection up (replacing the one it has), judges it (below), and only
// then sends its own. (This interoperates with members that each write
// first and read second: such an acceptor is answered by a dialer that
// writes first too, and such a dialer by an acceptor that reads first.)
// Each drops what the other has and writes the rest again, first, on the
// new connection, numbered from there: nothing is delivered twice, and
// nothing is skipped, in either direction. This is the resumption etcd's
// rafthttp leaves to raft; here the transport does it, for algorithms
// that assume reliable channels.
//
// Stale resumptions. The two sides need not take up a pair's connections
// in the same order. Member 1 dials; member 0 welcomes the dial, and its
// goroutine is slow to go on. Meanwhile member 0's own dial reaches member
// 1, wins there (doc.go, "Connections"), carries frames both ways and
// ends. Member 1 gave its dial up when that one replaced it, but the
// resumption it wrote on it, before the frames that came since, is still
// in the socket, and member 0, taking the dial up at last, reads it. A
// resumption is sent once the reader of the connection it replaces has
// stopped, and nothing is delivered on a connection until both sides have
// resumed it; so a member's count of frames delivered changes only on the
// connection it has taken up last, and never goes back (within one
// incarnation). A resumption that says less than the member has already
// acknowledged is therefore stale: the member has given that connection
// up and reads nothing more from it. The sender drops nothing, closes the
// connection, and resumes on the next one from where the member really
// is. The acceptor judges the dialer's resumption before it takes the
// connection up, so a stale one never replaces the pair's live
// connection; and a dial cannot bring its dialer a stale resumption of
// the acceptor, who writes its own only once it has taken the connection
// up. A stale resumption that says no less than the member acknowledged
// cannot be told apart by its count (the order in which the member's
// connections were opened tells most of them: peer.admissible), and
// needs none: the frames the member had after all are still counted as
// sent (the queue's rewrite) and dropped by the next resumption, and what
// is written meanwhile to the connection given up is not read. Only a new
// incarnation (below) is a restart. A connection of a process that is
// gone can be taken up late as well, after its successor's; it is refused
// before it is taken up, since its successor's were all opened after it
// (peer.admissible), so the counts of a member's earlier incarnations are
// never needed: each side keeps those of the current one only.
//
// Restarts. If the receiver's incarnation has changed, the process the
// unacknowledged frames were sent to is gone; they are dropped and counted
// (PeerStats.DroppedRestart), and the link starts again from what the new
// process says (0). Frames never written go to the new process. If the
// sender's incarnation has changed, the receiver counts its frames from 0
// again.

// ackDelay is how long after a batch of frames the receiver acknowledges
// it (if no data going the other way has carried the ack), unless asked sooner, or unless the frames not acknowledged reach
// ackFrames or ackBytes: then it acknowledges at the end of the batch, so
// that a fast stream's window keeps opening.
const (
	ackDelay  = 10 * time.Millisecond
	ackFrames = 128
	ackBytes  = 64 << 10
)

// appendAck appends an ack frame carrying next to dst.
func appendAck(dst []byte, next uint64) []byte {
	var v [binary.MaxVarintLen64]byte
	body := binary.AppendUvarint(v[:0], next)
	dst = binary.AppendUvarint(dst, uint64(len(body))<<2|kindAck)
	return append(dst, body...)
}

// parseAck decodes an ack frame's payload: exactly one uvarint.
func parseAck(b []byte) (uint64, error) {
	next, k := binary.Uvarint(b)
	if k <= 0 || k != len(b) {
		return 0, errors.New("malformed ack frame")
	}
	return next, nil
}

// newIncarnation draws a process's incarnation: random, never 0 (which
// stands for none yet).
func newIncarnation() uint64 {
	var b [8]byte
	for {
		crand.Read(b[:])
		if inc := binary.BigEndian.Uint64(b[:]); inc != 0 {
			return inc
		}
	}
}

// ack drops the frames the member has acknowledged: those numbered below
// next. An acknowledgement of frames not sent is an error.
func (q *sendQueue) ack(next uint64) error {
	q.acks.Add(1)
	q.mu.Lock()
	q.asked = false
	if next < q.base || next-q.base > uint64(q.nUnacked) {
		q.mu.Unlock()
		return fmt.Errorf("ack of frames up to %d, but %d to %d are those sent and not acknowledged", next, q.base, q.base+uint64(q.nUnacked))
	}
	if next > q.base && q.full.Load() {
		q.fullSince = time.Time{}
		q.full.Store(false)
	}
	q.dropUnacked(int(next - q.base))
	// Close's flush waits for the last acknowledgement.
	wake := q.parked && q.closed && q.work()
	if wake {
		q.parked = false
	}
	q.mu.Unlock()
	if wake {
		q.signal()
	}
	return nil
}

// unackedBytes is the size of the frames not acknowledged. mu is held.
func (q *sendQueue) unackedBytes() int { return len(q.unacked) - q.acked }

// dropUnacked drops the first k unacknowledged frames. mu is held.
func (q *sendQueue) dropUnacked(k int) {
	for range k {
		size, _ := splitFrame(q.unacked[q.acked:])
		q.acked += size
	}
	q.nUnacked -= k
	q.base += uint64(k)
	// The buffer is reused rather than outgrown: emptied when everything
	// is acknowledged, and what remains moved to its front once at least
	// half of it is acknowledged (so at most one byte is copied per byte
	// acknowledged).
	switch {
	case q.nUnacked == 0:
		q.unacked, q.acked = q.unacked[:0], 0
		if cap(q.unacked) > q.maxBytes {
			q.unacked = nil
		}
	case q.acked >= q.unackedBytes():
		n := copy(q.unacked, q.unacked[q.acked:])
		q.unacked, q.acked = q.unacked[:n], 0
	}
}

// errStale: a resumption older than what the member has acknowledged
// since (reconnected).
var errStale = errors.New("stale resumption: the member gave this connection up (it lost a race of dials)")

// reconnected prepares the queue for a new connection to the member's
// incarnation inc, which expects the frame numbered next: the frames it
// has are dropped, and those it lacks go back to the head of the queue to
// be written again. It returns how many frames are resent and how many
// dropped.
//
// If inc is not the incarnation the frames were sent to, that process is
// gone: its frames are dropped and counted (PeerStats.DroppedRestart), and
// the numbering starts again from next. A next below what the process has
// acknowledged is stale (see "Stale resumptions" above): nothing changes,
// and the caller closes the connection (errStale). (A connection of a
// process before the one the frames were sent to is refused before it
// gets here: peer.admissible.) Frames put back by a resumption and not
// written since still count as sent (rewrite), so that the next
// resumption drops those the member had. A next beyond the frames sent
// cannot come from the same process; it is taken as a new start, as for
// a new process. Nothing may be writing.
func (q *sendQueue) reconnected(inc, next uint64) (resent, dropped int, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.unrewrite()
	switch {
	case q.staleLocked(inc, next):
		return 0, 0, errStale
	case inc != q.peerInc || next-q.base > uint64(q.nUnacked):
		dropped = q.nUnacked
		q.unacked, q.acked, q.nUnacked = q.unacked[:0], 0, 0
		q.peerInc, q.base = inc, next
		q.droppedRestart.Add(uint64(dropped))
	default:
		q.dropUnacked(int(next - q.base))
	}
	q.asked = false
	q.fullSince = time.Time{}
	q.full.Store(false)
	resent = q.nUnacked
	if resent > 0 {
		q.rewrite, q.nRewrite = q.unackedBytes(), resent
		p := make([]byte, 0, q.unackedBytes()+len(q.pending))
		q.pending = append(append(p, q.unacked[q.acked:]...), q.pending...)
		q.nPending += resent
		q.unacked, q.acked, q.nUnacked = q.unacked[:0], 0, 0
		q.resent.Add(uint64(resent))
	}
	return resent, dropped, nil
}

// stale reports whether a resumption of the member's incarnation inc that
// expects the frame numbered next is stale (reconnected), without
// changing anything: the acceptor judges the dialer's before it takes the
// connection up (peer.runLink).
func (q *sendQueue) stale(inc, next uint64) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.staleLocked(inc, next)
}

// staleLocked is stale: a resumption of another process than the one
// the frames were sent to is a restart (or of a process gone, which
// peer.admissible refuses), never stale. mu is held.
func (q *sendQueue) staleLocked(inc, next uint64) bool {
	return inc == q.peerInc && next < q.base
}

// unrewrite takes the frames a resumption put back at the head of the
// queue, if no connection has taken them since, back to unacked: they were
// written before, and the member may have them. mu is held.
func (q *sendQueue) unrewrite() {
	if q.nRewrite == 0 {
		return
	}
	u := make([]byte, 0, q.rewrite+q.unackedBytes())
	u = append(append(u, q.pending[:q.rewrite]...), q.unacked[q.acked:]...)
	q.unacked, q.acked, q.nUnacked = u, 0, q.nUnacked+q.nRewrite
	q.pending, q.nPending = q.pending[q.rewrite:], q.nPending-q.nRewrite
	q.rewrite, q.nRewrite = 0, 0
}
