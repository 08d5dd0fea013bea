package transport

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// peer is the sending side of one member: its queue and the goroutine that
// dials it and writes the queue to the connection. It also holds the
// member's counters, including those of the receiving side.
type peer struct {
	t    *TCP
	id   proc.ID
	addr string
	q    *sendQueue
	log  *slog.Logger

	mu       sync.Mutex
	conn     net.Conn  // the current outbound connection, if any
	deadline time.Time // set by Close: flush by then

	spare []byte // owned by the run goroutine

	// The receiving side of the link from the member (ack.go), used by
	// one inbound connection at a time: the member's incarnation, and how
	// many of its data frames the handler has been given.
	recvInc  uint64
	recvNext atomic.Uint64

	connected                     atomic.Bool
	received, receivedBytes       atomic.Uint64
	reconnects, rejected, dropped atomic.Uint64
}

func (p *peer) stats() PeerStats {
	queued, unacked := p.q.len()
	return PeerStats{
		Connected:      p.connected.Load(),
		Queued:         queued,
		Unacked:        unacked,
		Sent:           p.q.sent.Load(),
		SentBytes:      p.q.sentBytes.Load(),
		Received:       p.received.Load(),
		ReceivedBytes:  p.receivedBytes.Load(),
		Backpressured:  p.q.backpressured.Load(),
		Reconnects:     p.reconnects.Load(),
		Rejected:       p.rejected.Load(),
		Dropped:        p.dropped.Load(),
		Resent:         p.q.resent.Load(),
		DroppedRestart: p.q.droppedRestart.Load(),
	}
}

// errClosing ends a connection that Close has flushed.
var errClosing = errors.New("transport closing")

// run connects to the member, serves the connection until it fails,
// and reconnects, until Close.
func (p *peer) run() {
	ctx := p.t.ctx
	established := false
	for attempt := 0; ; {
		if attempt > 0 && !sleep(ctx, backoff(attempt, p.t.cfg.DialBackoffMin, p.t.cfg.DialBackoffMax)) {
			break
		}
		conn, fr, inc, next, err := p.dial(ctx)
		if ctx.Err() != nil {
			if conn != nil {
				conn.Close()
			}
			break
		}
		if err != nil {
			attempt++
			continue
		}
		if established {
			p.reconnects.Add(1)
		}
		established = true
		resent, dropped := p.q.reconnected(inc, next)
		p.log.Info("transport: connected", "resent", resent)
		if dropped > 0 {
			p.log.Warn("transport: the member restarted: frames it had not acknowledged are dropped", "frames", dropped)
		}
		err = p.serve(conn, fr)
		if err == errClosing {
			break
		}
		p.log.Info("transport: disconnected", "reason", err.Error())
		attempt = 1
	}
	if n := p.q.discard(); n > 0 {
		p.dropped.Add(uint64(n))
		p.log.Warn("transport: closed with frames unsent or unacknowledged", "frames", n)
	}
}

// dial connects and authenticates. It returns the connection, its reader,
// the member's incarnation and the number of the first frame it expects
// (ack.go). Handshake failures are logged and counted; connection failures
// (nobody listening yet) are only logged at debug level, since they are
// routine while a cluster starts.
func (p *peer) dial(ctx context.Context) (conn net.Conn, fr *frameReader, inc, next uint64, err error) {
	cfg := &p.t.cfg
	d := net.Dialer{Timeout: cfg.HandshakeTimeout}
	raw, err := d.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		p.log.Debug("transport: dial failed", "err", err)
		return nil, nil, 0, 0, err
	}
	setNoDelay(raw)
	stop := context.AfterFunc(ctx, func() { raw.Close() })
	defer stop()
	raw.SetDeadline(time.Now().Add(cfg.HandshakeTimeout))
	conn, inc, err = p.t.auth.dial(raw, cfg.Self, p.id)
	if err != nil {
		raw.Close()
		if ctx.Err() == nil {
			p.rejected.Add(1)
			p.log.Warn("transport: handshake failed", "remote", raw.RemoteAddr().String(), "reason", err.Error())
		}
		return nil, nil, 0, 0, err
	}
	// The first frame announces this member and the address to dial it at.
	if _, err := conn.Write(appendMembers(nil, []member{{cfg.Self, p.t.advertised()}})); err != nil {
		raw.Close()
		return nil, nil, 0, 0, err
	}
	// The acceptor answers with its member table and an ack saying where
	// to resume.
	fr = newFrameReader(conn, pingReadBuf, cfg.HandshakeTimeout, cfg.MaxFrame)
	for {
		kind, payload, err := fr.next()
		if err == nil && kind == kindData {
			err = errors.New("data frame on an outbound connection")
		}
		if err != nil {
			raw.Close()
			p.log.Info("transport: no acknowledgement after the handshake", "reason", err.Error())
			return nil, nil, 0, 0, err
		}
		if kind == kindMembers {
			p.t.learn(p.id, payload)
		}
		if kind == kindAck {
			if next, err = parseAck(payload); err != nil {
				raw.Close()
				return nil, nil, 0, 0, err
			}
			break
		}
	}
	raw.SetDeadline(time.Time{})
	fr.idle = cfg.IdleTimeout
	return conn, fr, inc, next, nil
}

// serve writes the queue to conn until the connection fails (returning
// why) or Close has flushed it (returning errClosing). A second goroutine
// reads the acceptor's pings, and closes conn if they stop.
func (p *peer) serve(conn net.Conn, fr *frameReader) error {
	q := p.q
	p.mu.Lock()
	p.conn = conn
	if !p.deadline.IsZero() {
		conn.SetWriteDeadline(p.deadline)
	}
	p.mu.Unlock()
	p.connected.Store(true)
	defer func() {
		q.detach()
		p.connected.Store(false)
		p.mu.Lock()
		p.conn = nil
		p.mu.Unlock()
	}()

	readErr := make(chan error, 1)
	go func() {
		err := p.readPings(fr)
		conn.Close() // unblocks a write to a peer that has gone
		readErr <- err
	}()
	fail := func(err error) error {
		q.detach()
		conn.Close()
		if rerr := <-readErr; errors.Is(err, net.ErrClosed) {
			err = rerr // the reader closed conn: its reason is the real one
		}
		return err
	}

	// What the member has not acknowledged is at the head of the queue
	// (reconnected), so Sends queue behind it rather than write directly.
	q.attach(rawConnOf(conn))

	interval := p.t.cfg.PingInterval
	ping := time.NewTicker(interval / 2)
	defer ping.Stop()
	for {
		if batch, n, from := q.take(p.spare); n > 0 {
			if err := p.write(conn, batch, n, from); err != nil {
				return fail(err)
			}
			continue
		}
		if q.acquireAsk() {
			_, err := conn.Write(pingFrame)
			q.pinged()
			if err != nil {
				return fail(err)
			}
			continue
		}
		if q.drained() {
			return p.finish(conn, readErr)
		}
		if !q.park() {
			continue
		}
		select {
		case <-q.wake:
		case <-ping.C:
			if q.acquireIdle(interval) {
				_, err := conn.Write(pingFrame)
				q.pinged()
				if err != nil {
					return fail(err)
				}
			}
		case err := <-readErr:
			return err
		}
	}
}

// write writes a batch of n frames, the first from bytes of which a direct
// Send has already written to this connection. Whether the write succeeds
// or fails part way, the frames are kept until the member acknowledges
// them, and those it did not get are written again on the next connection.
func (p *peer) write(conn net.Conn, batch []byte, n, from int) error {
	_, err := conn.Write(batch[from:])
	p.q.nWrites.Add(1)
	p.q.written(batch, n)
	p.spare = recycle(batch)
	return err
}

// finish ends a flushed connection gracefully: it shuts down the sending
// direction and waits (until Close's deadline) for the acceptor to read
// everything, acknowledge it and close its end. Closing first could reset
// the connection and discard frames the acceptor has not read yet.
func (p *peer) finish(conn net.Conn, readErr <-chan error) error {
	if cw, ok := conn.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	p.mu.Lock()
	wait := time.Until(p.deadline)
	p.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-readErr:
	case <-t.C:
		conn.Close()
		<-readErr
	}
	conn.Close()
	return errClosing
}

// shutdown is called by Close: the writer flushes what is queued, with
// writes bounded by deadline, and stops.
func (p *peer) shutdown(deadline time.Time, started bool) {
	p.mu.Lock()
	p.deadline = deadline
	if p.conn != nil {
		p.conn.SetWriteDeadline(deadline)
	}
	p.mu.Unlock()
	p.q.close()
	if !started {
		if n := p.q.discard(); n > 0 {
			p.dropped.Add(uint64(n))
		}
	}
}

// readPings reads what the acceptor sends on an outbound connection:
// acknowledgements, which also keep the connection alive, pings, and its
// member table (members.go).
func (p *peer) readPings(fr *frameReader) error {
	for {
		kind, payload, err := fr.next()
		if err != nil {
			return err
		}
		switch kind {
		case kindData:
			return errors.New("data frame on an outbound connection")
		case kindMembers:
			p.t.learn(p.id, payload)
		case kindAck:
			next, err := parseAck(payload)
			if err == nil {
				err = p.q.ack(next)
			}
			if err != nil {
				return err
			}
		}
	}
}

// backoff is the delay before the attempt-th retry (attempt >= 1):
// lo·2^(attempt-1), at most hi, drawn uniformly from its upper half so
// that members restarted together do not dial in lockstep.
func backoff(attempt int, lo, hi time.Duration) time.Duration {
	d := lo
	for i := 1; i < attempt && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	half := d / 2
	return half + rand.N(d-half+1)
}

// sleep waits for d, or until ctx is done, and reports whether it slept
// the whole time.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
