package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// peer is one member: its send queue, the receiving side of the link from
// it, the pair's connection (link), and the goroutine that dials the
// member whenever the pair has no connection.
type peer struct {
	t    *TCP
	id   proc.ID
	addr string
	q    *sendQueue
	rx   rx
	log  *slog.Logger

	// learnt: the member was learnt from its own connection (it joined),
	// so it has the pair's connection already or soon; dial it only if
	// that fails.
	learnt bool

	mu          sync.Mutex
	link        *link         // the pair's connection, if any
	last        *link         // the last one that was up, once it has ended
	established bool          // a link has been served
	deadline    time.Time     // set by Close: flush by then
	changed     chan struct{} // closed and replaced whenever link changes

	// What the connections installed so far say of the member's
	// processes (admissible): the newest incarnation one was installed
	// for, the first such connection (its link.opened), and the newest
	// of those the member dialed.
	newestInc               uint64
	newestFirst, newestDial uint64

	spare  []byte // owned by the writer of the current link
	joined []byte // the writer's: an ack and a batch, for TLS

	// recvInc is the member's incarnation whose frames rx counts. Used
	// by one link at a time.
	recvInc uint64

	connected                     atomic.Bool
	received                      atomic.Uint64
	reconnects, rejected, dropped atomic.Uint64
	stalls, idleClosed, evicted   atomic.Uint64
	lastRecv                      atomic.Int64 // when a data frame last came (mono)

	// running: the dialer (run) is running. With Config.LinkIdle it runs
	// only while there is something to send and no connection (kick).
	running atomic.Bool
}

// rx is the receiving side of a link: how many of the member's data frames
// the handler has been given, and their bytes (ack.go); what the last ack
// sent said; and whether one is due.
type rx struct {
	next, bytes             atomic.Uint64
	ackedFrames, ackedBytes atomic.Uint64
	now                     atomic.Bool // an ack is due at once
	armed                   atomic.Bool // an ack is due within ackDelay
	busy                    atomic.Bool // the handler holds one of the member's frames
}

// link is a connection of the pair, dialed by dialer, to the member's
// incarnation inc.
type link struct {
	conn    net.Conn
	raw     net.Conn // under TLS
	dialer  proc.ID
	inc     uint64
	log     *slog.Logger
	done    chan struct{} // closed once nothing reads or writes it
	flushed chan struct{} // closed by its writer when Close's flush is done
	ackSoon chan struct{} // the reader asks the writer for a delayed ack
	cut     atomic.Bool   // closed because the member stopped reading
	started time.Time     // when it was dialed, or accepted
	opened  uint64        // its place in the order this process opened connections (TCP.opened)
	takeBy  time.Time     // installed by then, or not at all (admissible)
	race    bool          // it settles a race of dials (not a reconnection)
	follows *link         // the other side's connection it replaced, until it is up (p.mu)
	served  bool          // it got past the resumption (p.mu)
	upAt    time.Time     // when it did
	// Config.MaxLinks: when it was counted (mono), and whether it was
	// closed to make room for another (linkCap).
	admitted int64
	evicted  atomic.Bool
	reserved bool // its dial holds a slot admit has not used yet (linkCap.mu)
}

func (p *peer) newLink(conn, raw net.Conn, dialer proc.ID, inc uint64, started time.Time, opened uint64, takeBy time.Time) *link {
	return &link{conn: conn, raw: raw, dialer: dialer, inc: inc, started: started, opened: opened, takeBy: takeBy,
		log:  p.log.With("remote", raw.RemoteAddr().String()),
		done: make(chan struct{}), flushed: make(chan struct{}), ackSoon: make(chan struct{}, 1)}
}

func (p *peer) stats() PeerStats {
	queued, unacked := p.q.len()
	return PeerStats{
		Connected:      p.connected.Load(),
		Queued:         queued,
		Unacked:        unacked,
		Sent:           p.q.sent.Load(),
		SentBytes:      p.q.sentBytes.Load(),
		ControlWrites:  p.q.controlWrites.Load(),
		ControlBytes:   p.q.controlBytes.Load(),
		Received:       p.received.Load(),
		ReceivedBytes:  p.rx.bytes.Load(),
		Backpressured:  p.q.backpressured.Load(),
		Reconnects:     p.reconnects.Load(),
		Rejected:       p.rejected.Load(),
		Dropped:        p.dropped.Load(),
		Resent:         p.q.resent.Load(),
		DroppedRestart: p.q.droppedRestart.Load(),
		Stalled:        p.stalls.Load(),
		IdleClosed:     p.idleClosed.Load(),
		Evicted:        p.evicted.Load(),
	}
}

// current returns the pair's connection (nil if none) and a channel
// closed when that changes.
func (p *peer) current() (*link, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.link, p.changed
}

// setLink makes l the pair's connection. mu is held.
func (p *peer) setLink(l *link) {
	p.link = l
	if p.changed != nil {
		close(p.changed)
	}
	p.changed = make(chan struct{})
}

// keeps reports whether a connection dialed by the member's incarnation
// inc loses to the one the pair has: both members dialed (the pair's was
// dialed by this one, to the same incarnation), and the connection dialed
// by the lower ID wins.
func (p *peer) keeps(cur *link, dialer proc.ID, inc uint64) bool {
	return cur != nil && cur.inc == inc && cur.dialer != dialer && cur.dialer < dialer
}

// install makes l the pair's connection and returns the one it replaces,
// unless the transport is closing (errClosing), l is one the member has
// given up (admissible), or the one the pair has wins (keeps: errLost).
func (p *peer) install(l *link) (old *link, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.t.closing.Load() {
		return nil, errClosing
	}
	if err := p.admissible(l); err != nil {
		return nil, err
	}
	if p.keeps(p.link, l.dialer, l.inc) {
		return nil, errLost
	}
	if l.inc != p.newestInc {
		p.newestInc, p.newestFirst, p.newestDial = l.inc, l.opened, 0
	}
	if l.dialer == p.id {
		p.newestDial = max(p.newestDial, l.opened)
	}
	old = p.link
	// A connection that follows one dialed by the other side to the same
	// process, and was dialed (or accepted) before that one was up,
	// settles a race of dials: it is not a reconnection.
	prev := old
	if prev == nil {
		prev = p.last
	}
	if prev != nil && prev.inc == l.inc && prev.dialer != l.dialer {
		if prev.served && p.settlesRace(prev, l) {
			p.t.races.Add(1)
			l.race = true
		}
		// prev may yet come up before l does (it was in its resumption
		// when l replaced it): judged again then.
		l.follows = prev
	}
	p.setLink(l)
	if !p.deadline.IsZero() {
		l.conn.SetWriteDeadline(p.deadline)
	}
	return old, nil
}

// Connections the member has given up. The other side of a connection may
// give it up before this side takes it up (installs it), if this side's
// goroutine is slow; and a connection, once installed, closes the one it
// replaces. So a connection the member has given up must not be installed
// (a live one would be closed for nothing, and frames written into it
// written again), nor one of a process of the member that is gone (what
// its successor was sent would be dropped as if the member had restarted
// again). Three rules tell them, each from what this process saw itself:
//
//   - A connection of an incarnation other than the newest installed,
//     opened here before the first connection of the newest was: a
//     connection of a process that is gone (errGone). A connection is
//     taken up only once the member has finished its handshake (read the
//     welcome, or the hello and its answer), which it did after this
//     side opened the connection (accepted it, or connected), and before
//     it died; its successor opened its connections after that. So of
//     two processes of a member, the connections of the older one were
//     all opened here before any of the newer one's, whichever side
//     dialed; incarnations themselves are random and say nothing of
//     their order.
//   - A connection the member dialed, opened here before another it
//     dialed from the same process that was installed (errSuperseded):
//     the member dials one connection at a time, and dials again only
//     once it has given the last one up.
//   - A connection not installed within HandshakeTimeout of being opened
//     here (errLate): the member gives a connection up when the
//     resumption of this side has not come within HandshakeTimeout
//     (runLink), counted from a moment after this side opened it.
//
// Two dials of the two members, to and from the same processes, are left
// to keeps. mu is held.
func (p *peer) admissible(l *link) error {
	switch {
	case l.inc != p.newestInc && p.newestInc != 0 && l.opened < p.newestFirst:
		return errGone
	case l.inc == p.newestInc && l.dialer == p.id && l.opened < p.newestDial:
		return errSuperseded
	case time.Now().After(l.takeBy):
		return errLate
	}
	return nil
}

// settlesRace reports whether l, following prev (a connection dialed by
// the other side of the pair to the same process), settles a race of dials
// rather than reconnecting: l was dialed, or accepted, before prev was up.
// An acceptor learns of a dial only when it accepts it, which under load
// can be after its own dial came up, and the winner of the race closes
// that one when its own comes up. So a connection this member accepts
// from the lower ID (the one that wins a race) also settles a race if it
// follows this member's own dial and was accepted within HandshakeTimeout
// of that one coming up: the member dialed before it could have seen
// this member's connection up, since its dial gives up after
// HandshakeTimeout. (A connection that fails that soon after coming up,
// and is redialed at once by the lower ID, is not counted either.)
func (p *peer) settlesRace(prev, l *link) bool {
	if l.started.Before(prev.upAt) {
		return true
	}
	self := p.t.cfg.Self
	return prev.dialer == self && l.dialer < self &&
		l.started.Before(prev.upAt.Add(p.t.cfg.HandshakeTimeout))
}

// Why a link ends, besides I/O errors.
var (
	errClosing  = errors.New("transport closing")
	errLost     = errors.New("both members dialed; the other connection is kept")
	errLinkIdle = errors.New("no data either way for LinkIdle")

	errGone       = errors.New("a connection of a process of the member that is gone: its successor's came after it")
	errSuperseded = errors.New("a connection the member gave up: it has dialed again since")
	errLate       = errors.New("not taken up within HandshakeTimeout of being opened: the member may have given it up")
)

// runLink serves l, a connection to the member that has passed the
// handshake, until it fails: it makes l the pair's connection, waits for
// the one it replaces to stop, exchanges with the member where each
// direction resumes (ack.go), then writes the queue and reads the member's
// frames. The dialer has sent its announcement; the acceptor has read it.
//
// The dialer resumes first; the acceptor reads and judges the dialer's
// resumption before it makes l the pair's connection, so that a stale one
// (ack.go, "Stale resumptions") never replaces a live connection.
func (p *peer) runLink(l *link, fr *frameReader) error {
	t := p.t
	accepted := l.dialer != t.cfg.Self
	var next uint64
	if accepted {
		var err error
		next, err = p.resumption(l, fr, time.Until(l.takeBy))
		if err == nil && p.q.stale(l.inc, next) {
			t.races.Add(1)
			err = errStale
		}
		if err != nil {
			close(l.done)
			l.conn.Close()
			return err
		}
	}
	old, err := p.install(l)
	if err != nil {
		close(l.done)
		if err == errLost {
			t.races.Add(1)
		}
		return err
	}
	admitted := p.t.cap.admit(p, l, old)
	defer func() {
		p.t.cap.release(l)
		p.mu.Lock()
		if p.link == l {
			p.setLink(nil)
		}
		if l.served {
			p.last = l
		}
		p.mu.Unlock()
		close(l.done)
	}()
	if !admitted {
		// (A connection that replaces a counted one is always admitted:
		// old, if any, was evicted and is ending.)
		if old != nil {
			old.conn.Close()
		}
		l.conn.Close()
		return errLinkBusy
	}
	if old != nil {
		// Frames from l reach the handler only after old's reader has
		// stopped, and l's writer starts after old's: so each direction
		// stays in order, and the resumption below counts everything
		// old carried.
		old.conn.Close()
		<-old.done
	}
	fresh := p.recvInc != l.inc // the first connection from this process of the member
	if fresh {
		if p.recvInc != 0 {
			l.log.Info("transport: the member restarted", "delivered_from_previous", p.rx.next.Load())
		}
		p.countFor(l.inc)
	}

	// Each side tells the other the first of its frames it expects; the
	// acceptor's comes with its member table (members.go) — with lazy
	// links, which connect again and again, on the first connection from
	// each process only (the table is O(members) bytes).
	l.conn.SetDeadline(time.Now().Add(t.cfg.HandshakeTimeout))
	var hello []byte
	if accepted && (t.cfg.LinkIdle == 0 || fresh) {
		hello = appendMembers(nil, t.table())
		t.tables.Add(1)
	}
	hello = p.q.appendAck(hello, true)
	_, err = l.conn.Write(hello)
	p.q.wroteControl(len(hello), err)
	if err != nil {
		l.conn.Close()
		return err
	}
	if !accepted {
		if next, err = p.resumption(l, fr, t.cfg.HandshakeTimeout); err != nil {
			l.conn.Close()
			return err
		}
	}
	// The member's resumption is stale if it has given this connection up
	// since it wrote it (a dial that lost a race of dials, taken up late
	// here): then nothing changes, and the connection is closed.
	resent, dropped, err := p.q.reconnected(l.inc, next)
	if err != nil {
		l.conn.Close()
		if err == errStale && !l.race {
			t.races.Add(1)
		}
		return err
	}
	l.conn.SetDeadline(time.Time{})
	fr.idle = t.cfg.IdleTimeout
	p.mu.Lock()
	if !p.deadline.IsZero() {
		l.conn.SetWriteDeadline(p.deadline)
	}

	// Counted once it is up, so that a connection that loses a race of
	// dials before it is (the other side drops it) is not.
	if f := l.follows; f != nil && !l.race && f.served && p.settlesRace(f, l) {
		l.race = true
	}
	l.follows = nil
	if p.established && !l.race {
		p.reconnects.Add(1)
	}
	p.established, l.served, l.upAt = true, true, time.Now()
	p.mu.Unlock()
	p.q.lastData.Store(mono()) // a new connection is not idle yet
	l.log.Info("transport: connected", "dialed_by", l.dialer.String(), "resent", resent)
	if dropped > 0 {
		l.log.Warn("transport: the member restarted: frames it had not acknowledged are dropped", "frames", dropped)
	}
	return p.serve(l, fr)
}

// resumption reads the member's resumption on l (ack.go), the first ack
// it writes there, waiting up to wait for it, and learns the member table
// that may come before it. A member that passed the handshake and does not
// resume in time is reported as stalled.
func (p *peer) resumption(l *link, fr *frameReader, wait time.Duration) (next uint64, err error) {
	if wait <= 0 {
		return 0, errLate
	}
	fr.idle = wait
	for {
		kind, payload, err := fr.next()
		if err == nil && kind == kindData {
			err = errors.New("data frame before the member said where to resume")
		}
		if err == io.EOF {
			return 0, err // the member dropped it: it lost a race of dials, say
		}
		if errors.Is(err, errIdle) {
			// The member lives (it passed the handshake) but does not
			// resume: it serves a connection only once the reader of
			// the one it replaces has stopped, and that reader waits in
			// a handler that does not return. It has stopped reading.
			p.stalls.Add(1)
			l.cut.Store(true)
			queued, unacked := p.q.len()
			l.log.Warn("transport: the member stopped reading: it does not resume the connection", "after", wait.Round(time.Millisecond).String(), "frames", queued+unacked)
		}
		if err != nil {
			return 0, fmt.Errorf("no resumption after the handshake: %w", err)
		}
		switch kind {
		case kindMembers:
			p.t.learn(p.id, payload)
		case kindAck:
			return parseAck(payload)
		}
	}
}

// countFor makes rx count the data frames of the member's incarnation inc,
// a process not seen before, from 0. (A connection of a process before it
// is refused before it is taken up, peer.admissible: rx never counts for
// one again.)
func (p *peer) countFor(inc uint64) {
	p.rx.next.Store(0)
	p.recvInc = inc
}

// run dials the member whenever the pair has no connection, with backoff,
// and serves the connections it dials, until Close. Of two members that
// lose their connection together the lower dials first (its backoff is
// shorter), so that they seldom dial at once.
//
// With Config.LinkIdle, a member is dialed only when there is something to
// send it: run is started by the first Send that finds no connection
// (kick), dials at once, and returns when the pair has a connection it
// did not dial (whoever accepted it serves it) or nothing to send.
func (p *peer) run() {
	ctx := p.t.ctx
	lazy := p.t.cfg.LinkIdle > 0
	retry := 1
	if p.id < p.t.cfg.Self {
		retry = 2
	}
	attempt := 0
	if !lazy && (p.id < p.t.cfg.Self || p.learnt) {
		attempt = retry
	}
	for {
		if lazy && p.rest() {
			return
		}
		if l, _ := p.current(); l != nil {
			select {
			case <-l.done:
			case <-ctx.Done():
				return
			}
			attempt = retry
			continue
		}
		if attempt > 0 && !sleep(ctx, backoff(attempt, p.t.cfg.DialBackoffMin, p.t.cfg.DialBackoffMax)) {
			return
		}
		if !p.t.cap.reserve() {
			// MaxLinks connections up or being dialed, each busy:
			// dial once one is quiet, or ends (linkCap).
			if !sleep(ctx, backoff(1, p.t.cfg.DialBackoffMin, p.t.cfg.DialBackoffMax)) {
				return
			}
			continue
		}
		// The dial starts when this member sees the pair without a
		// connection: one the other member's dial brings up after this
		// is a race of dials, even if a busy scheduler delays this dial.
		decided := time.Now()
		if l, _ := p.current(); l != nil {
			p.t.cap.unreserve(nil)
			continue
		}
		l, fr, err := p.dial(ctx, decided)
		if l == nil {
			p.t.cap.unreserve(nil)
		} else if p.t.cap != nil {
			l.reserved = true // (not shared yet)
		}
		if ctx.Err() != nil {
			if l != nil {
				p.t.cap.unreserve(l)
				l.raw.Close()
				p.t.untrack(l.raw)
			}
			return
		}
		if err != nil {
			attempt++
			continue
		}
		if h := p.t.dialedHook; h != nil {
			h(p.id)
		}
		err = p.runLink(l, fr)
		p.t.cap.unreserve(l)
		l.raw.Close()
		p.t.untrack(l.raw)
		p.logEnd(l, err)
		switch {
		case err == errLost:
			attempt = 0 // the pair has a connection: wait on it
		case !l.served && p.t.cap != nil:
			// Refused (errLinkBusy, at either end) or failed before it
			// was up, under MaxLinks: back off further, as from a failed
			// dial, but by at most about half a second: a busy member is
			// busy for milliseconds (until its frames are acknowledged).
			// (Without MaxLinks nothing refuses: as before, at once.)
			attempt = min(max(attempt, retry)+1, 5)
		default:
			attempt = retry
		}
	}
}

// kick starts the dialer of a lazy link (Config.LinkIdle) unless it
// runs, or the transport is not started or is closed.
func (p *peer) kick() {
	if p.running.Load() {
		return
	}
	t := p.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.started && !t.closed && p.running.CompareAndSwap(false, true) {
		t.peerWG.Go(p.run)
	}
}

// rest reports whether the dialer of a lazy link may stop: the pair has a
// connection, or nothing is to be sent. A Send that queues frames while
// no connection is attached kicks it after queueing them, so the second
// look, after running is cleared, sees those frames or the kick sees
// running cleared: either way one dialer runs.
func (p *peer) rest() bool {
	idle := func() bool {
		l, _ := p.current()
		return l != nil || !p.q.wants()
	}
	if !idle() {
		return false
	}
	p.running.Store(false)
	if !idle() && p.running.CompareAndSwap(false, true) {
		return false // a Send came meanwhile
	}
	return true
}

// idle reports whether a lazy link's connection may be closed: no data
// frame has passed either way for LinkIdle, and everything sent either
// way is acknowledged (so that neither side has a reason to dial again).
func (p *peer) idle() bool {
	d := p.t.cfg.LinkIdle
	return d > 0 && mono()-p.q.lastData.Load() >= int64(d) &&
		p.rx.next.Load() == p.rx.ackedFrames.Load() && p.q.quiet()
}

// logEnd logs why a connection ended.
func (p *peer) logEnd(l *link, err error) {
	switch {
	case err == errLost || err == errStale || err == errGone || err == errSuperseded || err == errLate:
		l.log.Debug("transport: " + err.Error())
	case err == io.EOF:
		l.log.Debug("transport: peer closed its connection")
	case err == errLinkIdle:
		l.log.Debug("transport: closed an idle connection", "after", p.t.cfg.LinkIdle.String())
	case err == errLinkBusy:
		l.log.Debug("transport: connection refused: "+err.Error(), "max_links", p.t.cfg.MaxLinks)
	case l.evicted.Load():
		l.log.Debug("transport: closed the least recently used connection", "max_links", p.t.cfg.MaxLinks)
	case l.cut.Load():
		// Logged when cut.
	case p.t.closing.Load() || err == errClosing || errors.Is(err, net.ErrClosed):
		// Closed by this node: Close, or replaced by a newer connection.
		l.log.Debug("transport: connection closed", "reason", err.Error())
	default:
		l.log.Warn("transport: closed connection", "reason", err.Error())
	}
}

// dial connects and authenticates, and announces this member (its first
// frame). Handshake failures are logged and counted; connection failures
// (nobody listening yet) are only logged at debug level, since they are
// routine while a cluster starts.
func (p *peer) dial(ctx context.Context, started time.Time) (*link, *frameReader, error) {
	cfg := &p.t.cfg
	// Connect, handshake and announcement within HandshakeTimeout of the
	// start, and the connection installed by then too (admissible).
	takeBy := started.Add(cfg.HandshakeTimeout)
	d := net.Dialer{Deadline: takeBy}
	raw, err := d.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		p.log.Debug("transport: dial failed", "err", err)
		return nil, nil, err
	}
	opened := p.t.opened.Add(1)
	if !p.t.track(raw) {
		raw.Close()
		return nil, nil, errClosing
	}
	setNoDelay(raw)
	stop := context.AfterFunc(ctx, func() { raw.Close() })
	defer stop()
	raw.SetDeadline(takeBy)
	conn, inc, err := p.t.auth.dial(raw, cfg.Self, p.id)
	if err == errKept {
		raw.Close()
		p.t.untrack(raw)
		p.log.Debug("transport: " + err.Error())
		return nil, nil, err
	}
	if err != nil {
		raw.Close()
		p.t.untrack(raw)
		if ctx.Err() == nil {
			p.rejected.Add(1)
			p.log.Warn("transport: handshake failed", "remote", raw.RemoteAddr().String(), "reason", err.Error())
		}
		return nil, nil, err
	}
	// The first frame announces this member and the address to dial it at.
	announce := appendMembers(nil, []member{{cfg.Self, p.t.advertised()}})
	_, err = conn.Write(announce)
	p.q.wroteControl(len(announce), err)
	if err != nil {
		raw.Close()
		p.t.untrack(raw)
		return nil, nil, err
	}
	l := p.newLink(conn, raw, cfg.Self, inc, started, opened, takeBy)
	return l, newFrameReader(conn, dataReadBuf, cfg.HandshakeTimeout, cfg.MaxFrame), nil
}

// serve writes the queue, and the acks of the member's frames, to l until
// the connection fails, returning why. A second goroutine reads the
// member's frames (read).
func (p *peer) serve(l *link, fr *frameReader) error {
	q, conn, t := p.q, l.conn, p.t
	p.connected.Store(true)
	defer func() {
		q.detach()
		p.connected.Store(false)
	}()

	// The reader waits long while this side awaits nothing of the
	// member, and writes of data frames shorten its wait (keepalive.go).
	w := &readWatch{q: q, conn: conn, idle: t.cfg.IdleTimeout, quiet: t.quiet}
	fr.watch = w
	q.watch(w)
	readErr := make(chan error, 1)
	t.wg.Go(func() {
		err := p.read(l, fr)
		conn.Close() // unblocks a write to a member that has gone
		readErr <- err
	})
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

	// The keepalive's tick; it also checks for a stalled member and,
	// with lazy links, for an idle connection.
	tick := t.cfg.PingInterval / 2
	if t.cfg.LinkIdle > 0 {
		tick = min(tick, t.cfg.LinkIdle/2)
	}
	ping := time.NewTicker(tick)
	defer ping.Stop()
	delay := time.NewTimer(ackDelay)
	delay.Stop()
	var ackBuf [1 + 10]byte
	for {
		if batch, n, from := q.take(p.spare); n > 0 {
			var ack []byte
			if from == 0 { // not in the middle of a frame
				ack = q.appendAck(ackBuf[:0], false)
			}
			if err := p.write(conn, ack, batch, n, from); err != nil {
				return fail(err)
			}
			continue
		}
		if q.acquireAck() {
			q.ackWrites.Add(1)
			b := q.appendAck(ackBuf[:0], true)
			_, err := conn.Write(b)
			q.wroteControl(len(b), err)
			q.pinged()
			if err != nil {
				return fail(err)
			}
			continue
		}
		if q.acquireAsk() {
			_, err := conn.Write(pingFrame)
			q.wroteControl(len(pingFrame), err)
			q.pinged()
			if err != nil {
				return fail(err)
			}
			continue
		}
		if q.finishFlush() {
			close(l.flushed)
		}
		if !q.park() {
			continue
		}
		select {
		case <-q.wake:
		case <-l.ackSoon:
			delay.Reset(ackDelay)
		case <-delay.C:
			if p.rx.next.Load() != p.rx.ackedFrames.Load() {
				p.rx.now.Store(true)
			}
		case <-ping.C:
			if p.checkStalled(l) {
				return fail(net.ErrClosed)
			}
			if p.idle() {
				p.idleClosed.Add(1)
				return fail(errLinkIdle)
			}
			// A keepalive: an ack, which tells the member this one
			// lives and where its frames stand; often only while the
			// member may await something of this one (keepalive.go).
			if q.acquireIdle(p.keepaliveEvery()) {
				q.ackWrites.Add(1)
				b := q.appendAck(ackBuf[:0], true)
				_, err := conn.Write(b)
				q.wroteControl(len(b), err)
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
// Send has already written to this connection, after ack (if any). Whether
// the write succeeds or fails part way, the frames are kept until the
// member acknowledges them, and those it did not get are written again on
// the next connection.
func (p *peer) write(conn net.Conn, ack, batch []byte, n, from int) error {
	var err error
	switch {
	case len(ack) == 0:
		_, err = conn.Write(batch[from:])
	case isTCP(conn):
		// Plain TCP: one writev.
		bufs := net.Buffers{ack, batch[from:]}
		_, err = bufs.WriteTo(conn)
	default:
		// TLS: one record, not two (a segment each, with NODELAY).
		p.joined = append(append(p.joined[:0], ack...), batch[from:]...)
		_, err = conn.Write(p.joined)
		p.joined = recycle(p.joined)
	}
	p.q.nWrites.Add(1)
	if err == nil {
		p.q.controlBytes.Add(uint64(len(ack)))
	}
	p.q.written(batch, n)
	p.spare = recycle(batch)
	return err
}

func isTCP(c net.Conn) bool {
	_, ok := c.(*net.TCPConn)
	return ok
}

// read delivers the member's data frames from l until the connection
// fails, takes its acks, and has its frames acknowledged (ack.go) at the
// end of each batch (when the reader is about to wait on the socket): at
// once if the member asked with a ping or many have arrived since the last
// ack, else soon (unless data going the other way carries the ack first);
// and within a batch once very many have.
func (p *peer) read(l *link, fr *frameReader) error {
	t, q, rx := p.t, p.q, &p.rx
	delivered, asked := false, false
	for {
		kind, payload, err := fr.next()
		if err != nil {
			return err
		}
		switch kind {
		case kindData:
			p.received.Add(1)
			p.lastRecv.Store(mono())
			rx.bytes.Add(uint64(frameLen(len(payload))))
			rx.busy.Store(true)
			t.handler(p.id, payload)
			rx.next.Add(1)
			rx.busy.Store(false)
			q.heard()
			delivered = true
		case kindPing:
			asked = true
		case kindMembers:
			t.learn(p.id, payload)
		case kindAck:
			next, err := parseAck(payload)
			if err == nil {
				err = q.ack(next)
			}
			if err != nil {
				return err
			}
			if p.checkStalled(l) {
				return net.ErrClosed
			}
		}
		// Within a batch, only a long run of frames is acknowledged, so
		// that a stream the reader never catches up with still opens
		// its sender's window.
		if fr.br.Buffered() > 0 && !rx.due(8) {
			continue
		}
		switch {
		case asked || rx.due(1):
			// Written here if the connection is idle: waking the writer
			// would delay the ack, and a sender whose window is full
			// waits for it.
			rx.now.Store(true)
			if !q.ackDirect() {
				q.wakeWriter()
			}
		case delivered && !rx.armed.Load() && rx.armed.CompareAndSwap(false, true):
			signal(l.ackSoon)
		}
		delivered, asked = false, false
	}
}

// due reports whether k times ackFrames frames, or k times ackBytes
// bytes, have been delivered since the last ack.
func (rx *rx) due(k uint64) bool {
	return rx.next.Load()-rx.ackedFrames.Load() >= k*ackFrames || rx.bytes.Load()-rx.ackedBytes.Load() >= k*ackBytes
}

// checkStalled cuts l if the member has stopped reading: Sends to it have
// been refused for IdleTimeout and it has acknowledged nothing meanwhile.
// Its frames are kept and resent if it comes back.
func (p *peer) checkStalled(l *link) bool {
	if !p.q.full.Load() {
		return l.cut.Load()
	}
	ok, frames, bytes := p.q.stalled(p.t.cfg.IdleTimeout)
	if !ok || !l.cut.CompareAndSwap(false, true) {
		return l.cut.Load()
	}
	p.stalls.Add(1)
	l.log.Warn("transport: the member stopped reading: connection cut", "after", p.t.cfg.IdleTimeout.String(), "frames", frames, "bytes", bytes)
	l.conn.Close()
	return true
}

// shutdown is called by Close: the writer flushes what is queued, with
// writes bounded by deadline, and reports when the member has
// acknowledged it all.
func (p *peer) shutdown(deadline time.Time) {
	p.mu.Lock()
	p.deadline = deadline
	if p.link != nil {
		p.link.conn.SetWriteDeadline(deadline)
	}
	p.mu.Unlock()
	p.q.close()
}

// waitFlushed waits, until deadline, for the pair's connection (if any)
// to have flushed the queue.
func (p *peer) waitFlushed(deadline time.Time) {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		l, _ := p.current()
		if l == nil {
			return
		}
		select {
		case <-l.flushed:
			return
		case <-l.done:
		case <-timer.C:
			return
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
