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
//     senders at most the bound in memory.
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
// one incarnation) loses and duplicates no payload, however often its
// connections fail, as TCP loses and duplicates nothing within one
// connection. When a connection fails (the network broke, pings stopped,
// a partition outlasted IdleTimeout), the sender redials with exponential
// backoff and jitter; meanwhile Sends queue up to the bound, then fail
// with ErrBackpressure. The sender keeps every frame it has written until
// the receiver acknowledges it, and the new connection starts where the
// receiver's delivery stopped: what the receiver lacks, including frames
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
// Each member dials one connection to every other member and sends its
// frames only on it; what it receives arrives on the connections the others
// dialed. Each direction is thus one TCP stream, FIFO by construction, and
// the two members need not agree on who dials. If a member dials again
// (after a failure or a restart), its new connection replaces the old one,
// which is closed; frames from the new one reach the handler only after the
// old one's reader has stopped. Only then does the acceptor tell the dialer
// how many of its frames it has delivered, and the dialer resumes from
// there. On the way back, a connection carries the acceptor's
// acknowledgements, cumulative and delayed a little (as TCP's), so that
// request–response traffic does not double its segments; they double as
// the acceptor's pings.
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
// hello claims. The handshake must finish within HandshakeTimeout. A
// connection that fails it — wrong secret, certificate from another CA,
// an ID it cannot prove, an ID not in Peers, the acceptor's own ID, another
// version or mode, bytes that are not a hello, or too slow — is closed, the
// reason is logged with the remote address, Stats counts it, and nothing it
// sent reaches the handler.
//
// After the handshake a connection carries frames: a varint header
// (length<<2 | kind) and the payload. A 32-byte payload costs 34 bytes:
// frames are numbered by their place in the stream, not on the wire. A
// frame announcing more than MaxFrame bytes closes the connection before
// its body is read; so does a frame cut short by the end of the
// connection, a malformed ping or ack, or an ack of frames never sent.
// Every frame must arrive whole within IdleTimeout of the reader starting
// to wait for it, so a silent peer, or one that trickles bytes, is
// disconnected. The dialer pings when it has written nothing for about
// PingInterval, the acceptor sends an ack every PingInterval, so a quiet
// but healthy connection stays up and a dead one is noticed from either
// end.
//
// # Writing
//
// Send encodes the frame into the destination's queue. A writer goroutine
// per destination takes everything queued at once and writes it with one
// call, so a burst of small payloads leaves in a few large writes (TCP
// NODELAY is on; batching, not Nagle, fills the segments). Waking the
// writer for a lone payload costs about as much as the write, so a Send to
// an idle connection (nothing queued, nothing written for a few
// microseconds) writes its frame itself, with one non-blocking system call;
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
// with its member table. In a cluster that takes joins (Config.Joins on
// every member), a node joins by listing any one member in Peers: it
// authenticates as any member does (shared secret or a certificate naming
// its ID), learns the table from that member's answer, connects to every
// member, and each learns it — at the address it announced — when it
// connects; nobody restarts. This is the "join through any seed" of SWIM
// and memberlist, without their failure detection. TCP.AddPeer adds a
// member by hand; TCP.Members reads the table.
//
// # Certificates
//
// GenerateCerts writes a development CA and a certificate per member;
// LoadTLS reads a member's back as a *tls.Config for Config.TLS.
package transport
