package transport

import (
	"errors"
	"net"
	"strconv"

	"github.com/cohort-go/cohort/proc"
)

// Transport moves opaque payloads between the members of a cluster. TCP and
// InProc implement it with the same ordering and backpressure semantics.
type Transport interface {
	// Start begins delivery: handler is called once for every payload that
	// arrives from an authenticated member. Calls carrying payloads from one
	// sender are sequential and in the order that sender sent them; calls
	// for different senders may run concurrently, on the transport's own
	// goroutines. The handler owns the payload it is given. It should
	// return quickly (the host puts the payload into its inbox): while it
	// runs, nothing more is read from that sender, and once the sender's
	// queue is full its Sends fail with ErrBackpressure.
	//
	// Start may be called once. Sends made before it are queued.
	Start(handler Handler) error

	// Send queues a copy of payload for member to and returns at once; it
	// never blocks. If to's queue is full (QueueLen frames not yet handed
	// to the connection, or QueueBytes bytes not yet acknowledged by to;
	// InProc: not yet delivered) it returns ErrBackpressure and the caller
	// decides whether to drop or retry later: a slow or unreachable member
	// can never make this node run out of memory.
	// Sending to Self is allowed and is delivered to this node's own
	// handler. Send is safe for concurrent use; payloads sent from one
	// goroutine are delivered in order.
	Send(to proc.ID, payload []byte) error

	// Addr is the address other members dial.
	Addr() net.Addr

	// Stats reports counters for each member other than Self.
	Stats() Stats

	// Close stops the transport gracefully: Send fails with ErrClosed from
	// now on, queued frames are flushed to connected members for at most
	// CloseTimeout, connections are closed, and Close waits for every
	// goroutine, including handler calls in progress. After Close returns
	// the handler is not called again. Close is idempotent.
	Close() error
}

// Handler receives a payload from an authenticated member; see Start.
type Handler func(from proc.ID, payload []byte)

// Errors returned by Send (test with errors.Is).
var (
	// ErrBackpressure: the destination's queue is full; nothing was queued.
	ErrBackpressure = errors.New("transport: peer queue full")
	// ErrUnknownPeer: the destination is not a member of the cluster.
	ErrUnknownPeer = errors.New("transport: unknown peer")
	// ErrTooLarge: the payload is longer than MaxFrame.
	ErrTooLarge = errors.New("transport: payload exceeds MaxFrame")
	// ErrClosed: the transport has been closed.
	ErrClosed = errors.New("transport: closed")
	// ErrConfig wraps every configuration error.
	ErrConfig = errors.New("transport: invalid config")
)

// Stats is a snapshot of a transport's counters.
type Stats struct {
	// Peers has one entry for each member other than Self.
	Peers map[proc.ID]PeerStats
	// QueueLen is the bound, in frames, of the queue to each member
	// (PeerStats.Queued).
	QueueLen int
	// Rejected counts inbound connections closed during the handshake,
	// whatever (if anything) they claimed to be.
	Rejected uint64
	// Links and PeakLinks: with Config.MaxLinks, the connections this
	// member holds, and the most it held at once. 0 without. (TCP only.)
	Links, PeakLinks int
	// LinksRefused: with Config.MaxLinks, connections refused as they
	// came up because MaxLinks were up, none with everything on it
	// acknowledged; their dialer backs off.
	LinksRefused uint64
	// Datagrams: what went, came and was dropped as datagrams
	// (Config.Datagrams; TCP only).
	Datagrams DatagramStats
	// HandshakeBytes: bytes this member wrote in connection handshakes
	// (hello, proofs, welcome), whichever member they were with; TLS's
	// own handshake and record overhead are not counted. (TCP only.)
	HandshakeBytes uint64
}

// PeerStats are the counters for one member. Bytes are wire bytes, frame
// headers included, for TCP, and payload bytes for InProc.
type PeerStats struct {
	// Connected: the pair's connection to the member is up and
	// authenticated (InProc: the member's endpoint is started and open).
	Connected bool
	// Queued: frames accepted by Send and not yet handed to the connection
	// (InProc: not yet delivered). Never more than QueueLen.
	Queued int
	// Unacked: frames handed to the connection that the member has not
	// acknowledged yet; they are written again on the next connection if
	// this one fails. The bytes of the frames queued and unacknowledged
	// are never more than QueueBytes. (TCP only.)
	Unacked int
	// Sent and SentBytes: frames handed to the connection (to the kernel),
	// frames written again after a reconnection included.
	Sent, SentBytes uint64
	// ControlWrites and ControlBytes: what else this member wrote to the
	// member's connections — acks (alone, or ahead of data frames), pings,
	// keepalives, and the member tables and acks that open a connection.
	// ControlWrites counts the writes that carried no data frame. So
	// SentBytes+ControlBytes is every byte written to the member
	// (besides Stats.HandshakeBytes and TLS's overhead), and
	// Sent+ControlWrites bounds the segments that carried them. (TCP
	// only.)
	ControlWrites, ControlBytes uint64
	// Received and ReceivedBytes: frames from the member delivered to the
	// handler.
	Received, ReceivedBytes uint64
	// Backpressured: Sends refused with ErrBackpressure.
	Backpressured uint64
	// Reconnects: connections to the member established after the first,
	// less those that settle a race of dials (a connection that follows
	// one the other member dialed, and was itself dialed before that one
	// was up, or was accepted from the lower ID within HandshakeTimeout of
	// this member's own dial coming up).
	Reconnects uint64
	// Rejected: handshakes with a connection claiming to be this member, or
	// with this member's address, that failed.
	Rejected uint64
	// Dropped: frames discarded without being delivered for sure: queued,
	// or sent and not acknowledged, when Close gave up, or (InProc) sent
	// to a closed endpoint.
	Dropped uint64
	// Resent: frames written again on a new connection because the member
	// had not acknowledged them when the previous one failed (it had not
	// received them, or its acknowledgement was lost with the connection;
	// it gets each frame once either way). (TCP only.)
	Resent uint64
	// DroppedRestart: frames sent but not acknowledged when the member
	// restarted, dropped since the process they were sent to is gone.
	// (TCP only.)
	DroppedRestart uint64
	// Stalled: connections cut because the member stopped reading: Sends
	// to it were refused (its queue full) for IdleTimeout and meanwhile
	// it acknowledged nothing and sent no data frame; or it passed the
	// handshake of a new connection and did not resume it within
	// HandshakeTimeout (its handler has not returned). What it had not
	// acknowledged is resent when it comes back. (TCP only.)
	Stalled uint64
	// IdleClosed: connections this member closed because no data had
	// passed either way for Config.LinkIdle. (TCP only.)
	IdleClosed uint64
	// Evicted: connections this member closed to stay within
	// Config.MaxLinks (the least recently used). (TCP only.)
	Evicted uint64
}

// CertName is the name a member's certificate must carry, as a DNS subject
// alternative name, for the member to be accepted as id under mutual TLS:
// "node-3" for process 3.
func CertName(id proc.ID) string { return "node-" + strconv.Itoa(int(id)) }
