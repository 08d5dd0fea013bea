package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// TCP is a Transport over TCP (optionally TLS). Each pair of members
// shares one connection, which carries the frames of both directions and
// their acknowledgements; either member may dial it. See the package
// documentation.
type TCP struct {
	cfg  Config // with defaults
	log  *slog.Logger
	ln   net.Listener
	auth *auth
	dg   *datagrams // Config.Datagrams; nil without
	// peers is every other member, read without a lock on every Send and
	// replaced, never changed, when AddPeer adds one (under mu).
	peers  atomic.Pointer[map[proc.ID]*peer]
	self   *sendQueue // Sends to Self
	ctx    context.Context
	cancel context.CancelFunc // stops dialing and backoff waits; called by Close

	mu          sync.Mutex
	handler     Handler
	started     bool
	closed      bool
	conns       map[net.Conn]struct{} // open connections, closed by Close
	connsClosed bool
	closing     atomic.Bool // Close has begun: no connection is installed any more
	cap         *linkCap    // Config.MaxLinks; nil: no bound
	// quiet: how long a reader waits for a frame when this side awaits
	// nothing of the member (quietFor; tests shorten it before Start).
	quiet time.Duration

	rejected atomic.Uint64
	races    atomic.Uint64 // connections given up because both members dialed (tests)
	// opened numbers the connections in the order they are opened here
	// (accepted, or connected): link.opened, peer.admissible.
	opened    atomic.Uint64
	tables    atomic.Uint64 // member tables sent to dialers (tests)
	warns     warnLimit     // of rejected handshakes
	closeOnce sync.Once
	peerWG    sync.WaitGroup // one dialer per member
	wg        sync.WaitGroup // accept loop, accepted connections, self delivery

	// acceptedHook, if set (tests), is called by the goroutine of an
	// accepted connection once it has welcomed the dialer, before it reads
	// the dialer's first frame: a test can hold the connection there.
	acceptedHook func(from proc.ID)
	// dialedHook, if set (tests), is called by a member's dialer once its
	// dial has passed the handshake and announced this member, before
	// the connection is taken up: a test can hold the dial there.
	dialedHook func(to proc.ID)
}

var _ Transport = (*TCP)(nil)

// NewTCP validates cfg and listens; Start begins dialing and accepting.
// Configuration errors wrap ErrConfig and name the field.
func NewTCP(cfg Config) (*TCP, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := cfg.withDefaults()
	ln, pc := c.Listener, c.DatagramConn
	if ln == nil {
		var err error
		if c.Datagrams && pc == nil {
			ln, pc, err = ListenBoth(c.Listen)
		} else {
			ln, err = net.Listen("tcp", c.Listen)
		}
		if err != nil {
			return nil, fmt.Errorf("transport: listen on %q: %w", c.Listen, err)
		}
	}
	if c.Datagrams && pc == nil {
		var err error
		if pc, err = net.ListenPacket("udp", ln.Addr().String()); err != nil {
			return nil, fmt.Errorf("transport: datagrams on %s: %w", ln.Addr(), err)
		}
	}
	t := &TCP{
		cfg:   c,
		log:   c.Logger.With("self", c.Self.String()),
		ln:    ln,
		auth:  newAuth(&c),
		self:  newSendQueue(c.QueueLen, c.QueueBytes, false),
		conns: make(map[net.Conn]struct{}),
		cap:   newLinkCap(c.MaxLinks),
		quiet: quietFor(c.IdleTimeout),
	}
	t.auth.incarnation = newIncarnation()
	if c.Datagrams {
		t.dg = newDatagrams(t, pc, c.Secret, c.MaxDatagram)
	}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	peers := make(map[proc.ID]*peer, len(c.Peers))
	for id, addr := range c.Peers {
		peers[id] = t.newPeer(id, addr)
	}
	t.peers.Store(&peers)
	return t, nil
}

func (t *TCP) newPeer(id proc.ID, addr string) *peer {
	p := &peer{t: t, id: id, addr: addr, q: newSendQueue(t.cfg.QueueLen, t.cfg.QueueBytes, true),
		log: t.log.With("peer", id.String(), "addr", addr)}
	p.q.rx = &p.rx
	if t.cfg.LinkIdle > 0 {
		p.q.demand = p.kick
	}
	return p
}

// peer is member id, or nil.
func (t *TCP) peer(id proc.ID) *peer { return (*t.peers.Load())[id] }

// AddPeer makes id, listening at addr, a member from now on, as if it had
// been in Config.Peers: this transport dials it, accepts its connections,
// and Send reaches it. It is how the members of a running cluster learn of
// one that joins. Adding a member already known at the same address does
// nothing; at another address, or adding Self, is an error that names
// both. Safe for concurrent use with Send.
func (t *TCP) AddPeer(id proc.ID, addr string) error { return t.addPeer(id, addr, false) }

// addPeer is AddPeer; learnt says the member is learnt from its own
// connection (it joined), so it need not be dialed at once.
func (t *TCP) addPeer(id proc.ID, addr string, learnt bool) error {
	if id < 0 || id == t.cfg.Self {
		return fmt.Errorf("transport: AddPeer(%v, %q): not another member's id", id, addr)
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("transport: AddPeer(%v, %q): %v", id, addr, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	cur := *t.peers.Load()
	if p := cur[id]; p != nil {
		if p.addr == addr {
			return nil
		}
		return fmt.Errorf("transport: AddPeer(%v, %q): %v is a member at %q already", id, addr, id, p.addr)
	}
	next := maps.Clone(cur)
	p := t.newPeer(id, addr)
	p.learnt = learnt
	next[id] = p
	t.peers.Store(&next)
	if t.started && t.cfg.LinkIdle == 0 {
		t.peerWG.Go(p.run)
	}
	t.log.Info("transport: member added", "peer", id.String(), "addr", addr)
	return nil
}

// Members returns every member's address, this one's included.
func (t *TCP) Members() map[proc.ID]string {
	m := map[proc.ID]string{t.cfg.Self: t.ln.Addr().String()}
	for id, p := range *t.peers.Load() {
		m[id] = p.addr
	}
	return m
}

// MemberAddr returns the address member id listens at, this one's
// included, and whether it is known: Members for one member, without a
// copy of the whole table.
func (t *TCP) MemberAddr(id proc.ID) (string, bool) {
	if id == t.cfg.Self {
		return t.ln.Addr().String(), true
	}
	if p := t.peer(id); p != nil {
		return p.addr, true
	}
	return "", false
}

// Start implements Transport.
func (t *TCP) Start(handler Handler) error {
	if handler == nil {
		return errors.New("transport: Start: nil handler")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.closed:
		return ErrClosed
	case t.started:
		return errors.New("transport: Start called twice")
	}
	t.started, t.handler = true, handler
	t.wg.Go(t.acceptLoop)
	t.wg.Go(t.deliverToSelf)
	if t.dg != nil {
		t.wg.Go(t.dg.read)
	}
	for _, p := range *t.peers.Load() {
		// Lazy links (LinkIdle) are dialed when there is something to
		// send: here, what was sent before Start.
		if t.cfg.LinkIdle == 0 || p.q.wants() && p.running.CompareAndSwap(false, true) {
			t.peerWG.Go(p.run)
		}
	}
	return nil
}

// Send implements Transport.
func (t *TCP) Send(to proc.ID, payload []byte) error {
	if len(payload) > t.cfg.MaxFrame {
		return fmt.Errorf("%w: %d bytes, MaxFrame %d", ErrTooLarge, len(payload), t.cfg.MaxFrame)
	}
	if p := t.peer(to); p != nil {
		return p.q.push(payload)
	}
	if to == t.cfg.Self {
		return t.self.push(payload)
	}
	return fmt.Errorf("%w: %v", ErrUnknownPeer, to)
}

// SendBatch queues copies of payloads for member to, in order, as many
// Sends would, except that it takes all of them or none (ErrBackpressure)
// and that, to an idle connection, they leave together in one write.
func (t *TCP) SendBatch(to proc.ID, payloads [][]byte) error {
	for _, p := range payloads {
		if len(p) > t.cfg.MaxFrame {
			return fmt.Errorf("%w: %d bytes, MaxFrame %d", ErrTooLarge, len(p), t.cfg.MaxFrame)
		}
	}
	if p := t.peer(to); p != nil {
		return p.q.push(payloads...)
	}
	if to == t.cfg.Self {
		return t.self.push(payloads...)
	}
	return fmt.Errorf("%w: %v", ErrUnknownPeer, to)
}

// Addr implements Transport.
func (t *TCP) Addr() net.Addr { return t.ln.Addr() }

// Stats implements Transport.
func (t *TCP) Stats() Stats {
	peers := *t.peers.Load()
	s := Stats{Peers: make(map[proc.ID]PeerStats, len(peers)), Rejected: t.rejected.Load(), QueueLen: t.cfg.QueueLen}
	for id, p := range peers {
		s.Peers[id] = p.stats()
	}
	s.Links, s.PeakLinks, s.LinksRefused = t.cap.stats()
	s.Datagrams = t.dg.stats()
	s.HandshakeBytes = t.auth.wrote.Load()
	return s
}

// Close implements Transport. It first flushes every queue (for at most
// CloseTimeout): it writes what is queued and waits for the members to
// acknowledge it, reading and acknowledging what they send meanwhile; only
// then does it close the connections.
func (t *TCP) Close() error {
	t.closeOnce.Do(func() {
		t.mu.Lock()
		t.closed = true
		started := t.started
		t.mu.Unlock()
		t.closing.Store(true)
		t.ln.Close()
		if t.dg != nil {
			t.dg.conn.Close()
		}
		deadline := time.Now().Add(t.cfg.CloseTimeout)
		peers := *t.peers.Load() // AddPeer adds none once closed is set
		for _, p := range peers {
			p.shutdown(deadline)
		}
		t.self.close()
		t.cancel()
		if started {
			for _, p := range peers {
				p.waitFlushed(deadline)
			}
		}
		t.mu.Lock()
		t.connsClosed = true
		for c := range t.conns {
			c.Close()
		}
		t.mu.Unlock()
		t.peerWG.Wait()
		t.wg.Wait()
		for _, p := range peers {
			if n := p.q.discard(); n > 0 {
				p.dropped.Add(uint64(n))
				p.log.Warn("transport: closed with frames unsent or unacknowledged", "frames", n)
			}
		}
	})
	return nil
}

// track records an open connection for Close to close; it reports false
// (and the caller closes c) if Close has closed them already.
func (t *TCP) track(c net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.connsClosed {
		return false
	}
	t.conns[c] = struct{}{}
	return true
}

func (t *TCP) untrack(c net.Conn) {
	t.mu.Lock()
	delete(t.conns, c)
	t.mu.Unlock()
}

func (t *TCP) isMember(id proc.ID) bool { return t.peer(id) != nil }

func (t *TCP) acceptLoop() {
	for {
		raw, err := t.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors, say: back off briefly rather
			// than spin.
			t.log.Warn("transport: accept failed", "err", err)
			select {
			case <-t.ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		if !t.track(raw) {
			raw.Close()
			continue
		}
		t.wg.Go(func() { t.serveInbound(raw) })
	}
}

// serveInbound authenticates an accepted connection and, unless the pair
// keeps the connection this member dialed, serves it (peer.runLink).
func (t *TCP) serveInbound(raw net.Conn) {
	started, opened := time.Now(), t.opened.Add(1)
	takeBy := started.Add(t.cfg.HandshakeTimeout)
	defer func() {
		raw.Close()
		t.untrack(raw)
	}()
	setNoDelay(raw)
	remote := raw.RemoteAddr().String()
	raw.SetDeadline(takeBy)
	conn, from, inc, err := t.auth.accept(raw, t.cfg.Self, func(id proc.ID) bool { return t.isMember(id) || t.cfg.Joins })
	if err == nil {
		// Both members dialed: the connection dialed by the lower ID
		// wins (peer.keeps), and the dialer is told so.
		code := byte(welcomeOK)
		if p := t.peer(from); p != nil {
			if cur, _ := p.current(); p.keeps(cur, from, inc) {
				code = welcomeKeep
			}
		}
		if err = t.auth.welcome(conn, code); err == nil && code == welcomeKeep {
			t.races.Add(1)
			t.log.Debug("transport: both members dialed; keeping the connection this one dialed", "peer", from.String(), "remote", remote)
			return
		}
	}
	if err != nil {
		t.rejected.Add(1)
		attrs := []any{"remote", remote, "reason", err.Error()}
		if p := t.peer(from); p != nil {
			p.rejected.Add(1)
			attrs = append(attrs, "peer", from.String())
		}
		if ok, unlogged := t.warns.allow(time.Now()); ok {
			if unlogged > 0 {
				attrs = append(attrs, "unlogged_before", unlogged)
			}
			t.log.Warn("transport: handshake rejected", attrs...)
		}
		return
	}
	if h := t.acceptedHook; h != nil {
		h(from)
	}
	// The dialer's first frame announces it: a member not known yet (a
	// node joining, Config.Joins) is learnt at the address it gives.
	fr := newFrameReader(conn, dataReadBuf, t.cfg.HandshakeTimeout, t.cfg.MaxFrame)
	kind, payload, err := fr.next()
	if err != nil || kind != kindMembers {
		t.rejected.Add(1)
		t.log.Warn("transport: connection without its announcement", "remote", remote, "peer", from.String(), "err", err)
		return
	}
	t.learn(from, payload)
	p := t.peer(from)
	if p == nil {
		t.rejected.Add(1)
		t.log.Warn("transport: an unknown member did not announce an address", "remote", remote, "peer", from.String())
		return
	}
	l := p.newLink(conn, raw, from, inc, started, opened, takeBy)
	p.logEnd(l, p.runLink(l, fr))
	if t.cfg.LinkIdle > 0 && p.q.wants() {
		p.kick() // a lazy link's dialer is not running: what is left needs a connection
	}
}

// signal wakes the receiver of ch (capacity 1), if it is not already due
// to wake.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// deliverToSelf hands Sends addressed to Self to the handler, in order.
func (t *TCP) deliverToSelf() {
	q := t.self
	var spare []byte
	for {
		batch, n, _ := q.take(spare)
		if n == 0 {
			if q.drained() {
				return
			}
			if q.park() {
				<-q.wake
			}
			continue
		}
		for b := batch; len(b) > 0; {
			size, payload := splitFrame(b)
			t.handler(t.cfg.Self, bytes.Clone(payload))
			b = b[size:]
		}
		q.written(batch, n)
		spare = recycle(batch)
	}
}

func setNoDelay(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
}

// maxWarnsPerSecond bounds the WARN lines of rejected handshakes: a flood
// of bad connections must not flood the log. (Stats counts every one.)
const maxWarnsPerSecond = 20

// warnLimit lets maxWarnsPerSecond lines through per second, and counts
// the others for the next line that goes through.
type warnLimit struct {
	mu       sync.Mutex
	window   time.Time
	n        int
	unlogged int
}

func (w *warnLimit) allow(now time.Time) (ok bool, unlogged int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if now.Sub(w.window) >= time.Second {
		w.window, w.n = now, 0
	}
	if w.n >= maxWarnsPerSecond {
		w.unlogged++
		return false, 0
	}
	w.n++
	unlogged, w.unlogged = w.unlogged, 0
	return true, unlogged
}
