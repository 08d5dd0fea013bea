// Package transport moves opaque payloads between the members of a live
// Cohort cluster. It knows nothing of messages or codecs: the host encodes a
// message into a []byte, Sends it to a member, and the member's handler
// receives the same bytes.
//
// Two implementations share the Transport interface and its semantics: TCP
// (NewTCP), for clusters of processes, authenticated by a shared secret or
// mutual TLS; and InProc (NewInProc), a Network of endpoints in one process
// joined by bounded queues, for tests and `cohort cluster up --inproc`.
//
// # Semantics
//
//   - FIFO per sender: payloads from one member arrive in the order it sent
//     them (from one goroutine), each at most once.
//   - Send never blocks. Each destination has a queue bounded in frames
//     (QueueLen) and bytes (QueueBytes); when it is full, Send returns
//     ErrBackpressure and the caller decides whether to drop the payload or
//     retry later. A member that stops reading, or is unreachable, costs its
//     senders at most the bound in memory; one that stops reading for
//     IdleTimeout with its queue full is cut off (see Connections).
//   - The handler runs on the transport's goroutines and owns the payload.
//     Calls carrying one sender's payloads never overlap; calls for
//     different senders may. While a call runs, nothing more is read from
//     that sender, so the handler should hand the payload on (to the host's
//     inbox) and return.
//   - Close flushes what is queued to connected members, for at most
//     CloseTimeout, and returns once no goroutine remains.
//
// # What can be lost
//
// Nothing, while both processes live: a link (a pair of processes, each in
// one incarnation) loses and duplicates no payload in either direction,
// however often its connections fail, as TCP loses and duplicates nothing
// within one connection. When a connection fails (the network broke, a
// frame awaited did not come within IdleTimeout), the members
// redial with exponential backoff and jitter; meanwhile Sends queue up to
// the bound, then fail with ErrBackpressure. The sender keeps every frame it has written until
// the receiver acknowledges it, and on the new connection each direction
// starts where the receiver's delivery stopped: what the receiver lacks, including frames
// lost in the failed connection's kernel buffers, is written again, and
// what it already has is not. The frames kept count against QueueBytes,
// so the bound still caps the memory a member can cost its senders
// (PeerStats.Unacked; Resent counts the frames written again).
// See ack.go for the protocol.
//
// What is lost is what a process takes with it. A member that crashes
// loses what it had received and not yet handled, and what it had queued
// to send. When a member restarts, its senders drop the frames they had
// sent to the previous process and it had not acknowledged
// (PeerStats.DroppedRestart): they may have reached it or not, and the
// new process starts afresh. Frames queued and never written are sent to
// the new process. Close flushes for at most CloseTimeout; what it has not
// seen acknowledged by then is dropped and counted (PeerStats.Dropped).
// InProc loses nothing unless the destination endpoint is closed.
//
// The algorithms Cohort runs assume reliable FIFO channels between live
// processes, and recover from crashes and restarts by their own means;
// that is what the transport provides. A host may treat a growing DroppedRestart as the
// message losses that come with a restart, and report them with the run.
//
// # Connections
//
// A pair of members shares one TCP connection, which carries the frames of
// both directions and the acknowledgements of each. Each direction is one
// ordered stream within it, FIFO by construction. Either member may dial:
// a member dials another whenever the pair has no connection (at start,
// after a failure), so the pair is joined as soon as either can reach the
// other, and a member that joins, known at first only to itself and the
// member it dials, is reached by the connection it makes.
//
// Both may dial at once: at start, after a partition heals, after one of
// them restarts. The rule that settles it is the same on both sides, so
// they keep the same connection: a connection replaces the pair's current
// one unless that one was dialed by the other member, to the same
// process (incarnation), and the dialer of the current one has the lower
// ID; that is, of two connections dialed by the two members, the one the
// lower ID dialed wins, and otherwise the newer replaces the older (a
// member dials only when it has no connection, so a newer connection
// from the same member, or one to a new incarnation, means the older is
// dead). An acceptor that keeps its own connection says so in its welcome
// (welcomeKeep), and the dialer drops its attempt quietly; a dialer whose
// connection arrives second drops it itself. Of two members that lose
// their connection together, the lower ID redials first (its backoff is
// the shorter), so that races are the exception. A connection replaced
// while its own reader still delivers frames is closed, and the new one
// starts only once the old one's reader and writer have stopped, so each
// direction stays in order. A connection the member has given up may
// still wait, welcomed, in a goroutine of this side that is slow to take
// it up: a dial that lost a race of dials, one that failed at the other
// end, one of a process that is gone. It never replaces the pair's
// connection: the member's later dials, its successor's connections, and
// the time by which a connection must be taken up tell it (peer.go,
// "Connections the member has given up"), and so does its resumption,
// read before the connection is taken up (ack.go, "Stale resumptions").
//
// Lazy links. A member of a large group that talks to a few random
// members at a time (SWIM probes one a period) needs no connection to
// most of the others most of the time. With Config.LinkIdle, a member is
// dialed only when a Send has something for it (the first Send starts a
// dialer, which stops once the pair has a connection or nothing is left
// to send), and a connection over which no data frame has passed either
// way for LinkIdle, with everything on it acknowledged both ways, is
// closed by whichever side notices first (PeerStats.IdleClosed). A link
// outlives its connections, so closing one is a reconnection like any
// other: a payload sent while the connection closes stays unacknowledged,
// dials again, and the resumption delivers it once. A member then holds
// about as many connections as it has peers it talked to within LinkIdle.
// Config.MaxLinks bounds that number: a connection that comes up when
// MaxLinks are up closes the least recently used of the others with
// everything on it acknowledged both ways (PeerStats.Evicted), or, if
// none is, is itself refused and its dialer backs off (Stats.LinksRefused)
// — so that a process holding a thousand members stays within its file
// descriptors while they form (maxlinks.go).
//
// After the handshake (below), each side's first ack tells the other the
// number of the first of its frames it expects (resumption, ack.go): the
// dialer's first, and the acceptor's once it has judged the dialer's and
// taken the connection up; each then writes again what the other lacks,
// and nothing it has. The acceptor's first frame is also its member
// table. From then on each side writes its queue and acknowledges the
// other's frames: cumulatively, piggybacked in front of the data it
// writes when it has some, and otherwise alone, delayed a little
// (ackDelay, as TCP's delayed ACK), so that request–response traffic
// costs no acknowledgement segments; at once when many frames have come
// or the other side asks (a ping, sent when half its QueueBytes awaits
// acknowledgement).
//
// Keepalives go only where something is outstanding (keepalive.go). A
// side that awaits an acknowledgement closes the connection if nothing
// comes within IdleTimeout, so a dead connection is noticed within about
// IdleTimeout of the first Send on it; the member acknowledges within
// ackDelay, and while its handler holds a frame it writes an ack as a
// keepalive every PingInterval. A connection on which nothing is
// outstanding either way carries nothing: its reader waits up to the
// quiet timeout (ten IdleTimeouts, at least five minutes), a backstop that
// closes connections to machines that vanished, and each side writes a
// keepalive every third of it. In a full mesh that SWIM uses a pair at a
// time, the connections idle at any moment cost (almost) nothing.
//
// A member that stops reading (its handler is stuck, say) is not only
// capped but cut off: when Sends to it have been refused for IdleTimeout
// (its queue at the bound) and meanwhile it has acknowledged nothing and
// sent no data frame, the connection is closed, the WARN line says why,
// and PeerStats.Stalled counts it. Its data frames count as progress,
// since its acks leave behind them: on a slow link two members may each
// write a window that takes longer than IdleTimeout to pass, reading the
// other's all along, and neither has stopped reading. (The price: a
// member that stops reading but keeps sending is not cut.)
//
// A stuck member whose connection fails cannot take a new one: the one
// it replaces still has a reader, waiting in the handler. Its sender
// passes the handshake and gets no resumption within HandshakeTimeout,
// and reports that as a stall too (the WARN line says the member does
// not resume). What the member had not acknowledged is kept, within the
// bound, and written again if it reads again.
//
// A connection starts with a handshake (see handshake.go for the messages):
// the dialer sends a hello naming the protocol version, the authentication
// mode, its ID, the ID it means to reach, its incarnation and a nonce; the
// acceptor's welcome names its incarnation. A process draws its
// incarnation at random when its transport is created, so a restarted
// member is told apart from a reconnected one. With a shared Secret,
// each side then proves it knows the secret with an HMAC-SHA256 over the
// hello (both IDs, the dialer's nonce) and a fresh nonce of the acceptor,
// so a recorded handshake cannot be replayed and neither side can be
// impersonated without the secret (the frames that follow are not
// authenticated: see Config.Secret). With TLS, both sides present
// certificates from the cluster CA; a member's certificate names it as
// CertName(id) ("node-3"), the dialer checks the acceptor's against the
// member it dialed, and the acceptor checks the dialer's against the ID its
// hello claims. The handshake must finish within HandshakeTimeout (the
// dialer's counted from before it connects), and each side must take the
// connection up within it too (the acceptor once it has the dialer's
// resumption: see "Connections"). A connection that fails it — wrong
// secret, certificate from another CA, an ID it cannot prove, an ID not
// in Peers, the acceptor's own ID, another version (version 2, a
// connection per direction, included) or mode, bytes that are not a
// hello, or too slow — is closed, the reason is logged with the remote
// address, Stats counts it, and nothing it sent reaches the handler.
//
// After the handshake a connection carries frames: a varint header
// (length<<2 | kind) and the payload. A 32-byte payload costs 34 bytes:
// frames are numbered by their place in the stream, not on the wire. A
// frame announcing more than MaxFrame bytes closes the connection before
// its body is read; so does a frame cut short by the end of the
// connection, a malformed ping or ack, an ack of frames never sent, or
// data before the resumption. While this side awaits something of the
// member, every frame must arrive whole within IdleTimeout of the reader
// starting to wait for it, so a silent peer is disconnected; and any
// frame must arrive whole within IdleTimeout of its first byte, so one
// that trickles bytes is disconnected.
//
// # Writing
//
// Send encodes the frame into the destination's queue. A writer goroutine
// per connection takes everything queued at once and writes it with one
// call (after the ack owed, if any), so a burst of small payloads leaves in a few large writes (TCP
// NODELAY is on; batching, not Nagle, fills the segments). Waking the
// writer for a lone payload costs about as much as the write, so a Send to
// an idle connection (nothing queued, nothing written for a few
// microseconds) writes its frame itself (after the ack owed, if any), with
// one non-blocking system call;
// whatever the socket does not take is left to the writer. On loopback
// this saves about a quarter of the CPU time of a request–response
// exchange. TLS connections always go through the writer.
//
// TCP.SendBatch queues several payloads for one member at once, all or
// none; to an idle connection they leave together in one direct write. The
// host sends with it what one event (or a run of inputs given together)
// addressed to one member, so that, say, a lock's reply to a node and the
// request that follows it to the same node cost one system call.
//
// # Members that join
//
// A dialer's first frame on every connection announces it: its ID and the
// address it can be dialed at (Config.Advertise); the acceptor answers
// with its member table. The newcomer's connection is the pair's: the
// member it reaches does not dial it back. In a cluster that takes joins (Config.Joins on
// every member), a node joins by listing any one member in Peers: it
// authenticates as any member does (shared secret or a certificate naming
// its ID), learns the table from that member's answer, connects to every
// member, and each learns it — at the address it announced — when it
// connects; nobody restarts. This is the "join through any seed" of SWIM
// and memberlist, without their failure detection. TCP.AddPeer adds a
// member by hand; TCP.Members reads the table. With lazy links the
// newcomer dials a member only when it first sends to it, so each learns
// it then (or from the application, by AddPeer: Cohort's membership
// service spreads the addresses in its replicated map); and a member
// sends its table on the first connection from each process of another,
// not on every connection.
//
// # Datagrams
//
// With Config.Datagrams, a TCP transport also has a UDP socket on its
// listener's address and port, and SendDatagram sends a small payload
// (MaxDatagram) as one datagram: no connection, no acknowledgement, no
// resend, no order, and it may be lost. Each datagram carries an HMAC
// under a key derived from the Secret (TLS has none to derive: Datagrams
// needs Secret), and a receiver takes each at most once and only fresh;
// what fails is dropped and counted (Stats.Datagrams), never handed on.
// The handler is called for datagrams from one reader goroutine, which
// may overlap with the calls for the same member's stream: FIFO holds for
// the stream only. The live host sends messages marked proc.Lossy this
// way — SWIM's probes, as memberlist does, and the membership map's
// rumors and the checksums that open its exchanges — and everything else
// on the stream. datagram.go holds the whole of it: the format, the key, the
// replay window and why.
//
// # Certificates
//
// GenerateCerts writes a development CA and a certificate per member;
// LoadTLS reads a member's back as a *tls.Config for Config.TLS.
package transport
