package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// TCP is a Transport over TCP (optionally TLS). Each member dials one
// connection to every other member and sends only on it; what it receives
// arrives on the connections the others dialed to it. See the package
// documentation.
type TCP struct {
	cfg  Config // with defaults
	log  *slog.Logger
	ln   net.Listener
	auth *auth
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
	inbound     map[proc.ID]*inbound  // the live inbound connection of each member
	conns       map[net.Conn]struct{} // accepted connections, closed by Close
	connsClosed bool

	rejected  atomic.Uint64
	warns     warnLimit // of rejected handshakes
	closeOnce sync.Once
	peerWG    sync.WaitGroup // one dialer/writer per member
	wg        sync.WaitGroup // accept loop, accepted connections, self delivery
}

var _ Transport = (*TCP)(nil)

// inbound is an accepted, authenticated connection.
type inbound struct {
	conn net.Conn
	done chan struct{} // closed when its reader has stopped calling the handler

	// Acks are written by the reader when they are due at once, and by
	// ackLoop when they are due soon (the reader signals ackSoon) and
	// every PingInterval. wmu orders their writes.
	ackSoon chan struct{}
	armed   atomic.Bool // an ack is due: ackSoon need not be signalled
	wmu     sync.Mutex
	ackBuf  []byte
	// What the last ack acknowledged: frames, and the member's received
	// bytes then.
	ackedFrames, ackedBytes atomic.Uint64
}

// NewTCP validates cfg and listens; Start begins dialing and accepting.
// Configuration errors wrap ErrConfig and name the field.
func NewTCP(cfg Config) (*TCP, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := cfg.withDefaults()
	ln := c.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", c.Listen); err != nil {
			return nil, fmt.Errorf("transport: listen on %q: %w", c.Listen, err)
		}
	}
	t := &TCP{
		cfg:     c,
		log:     c.Logger.With("self", c.Self.String()),
		ln:      ln,
		auth:    newAuth(&c),
		self:    newSendQueue(c.QueueLen, c.QueueBytes, false),
		inbound: make(map[proc.ID]*inbound),
		conns:   make(map[net.Conn]struct{}),
	}
	t.auth.incarnation = newIncarnation()
	t.ctx, t.cancel = context.WithCancel(context.Background())
	peers := make(map[proc.ID]*peer, len(c.Peers))
	for id, addr := range c.Peers {
		peers[id] = t.newPeer(id, addr)
	}
	t.peers.Store(&peers)
	return t, nil
}

func (t *TCP) newPeer(id proc.ID, addr string) *peer {
	return &peer{t: t, id: id, addr: addr, q: newSendQueue(t.cfg.QueueLen, t.cfg.QueueBytes, true),
		log: t.log.With("peer", id.String(), "addr", addr)}
}

// peer is member id, or nil.
func (t *TCP) peer(id proc.ID) *peer { return (*t.peers.Load())[id] }

// AddPeer makes id, listening at addr, a member from now on, as if it had
// been in Config.Peers: this transport dials it, accepts its connections,
// and Send reaches it. It is how the members of a running cluster learn of
// one that joins. Adding a member already known at the same address does
// nothing; at another address, or adding Self, is an error that names
// both. Safe for concurrent use with Send.
func (t *TCP) AddPeer(id proc.ID, addr string) error {
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
	next[id] = p
	t.peers.Store(&next)
	if t.started {
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
	for _, p := range *t.peers.Load() {
		t.peerWG.Go(p.run)
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
	return s
}

// Close implements Transport. It first flushes every outbound queue (for at
// most CloseTimeout) and only then closes the accepted connections, so the
// members this one is leaving can finish sending to it meanwhile.
func (t *TCP) Close() error {
	t.closeOnce.Do(func() {
		t.mu.Lock()
		t.closed = true
		started := t.started
		t.mu.Unlock()
		t.ln.Close()
		deadline := time.Now().Add(t.cfg.CloseTimeout)
		for _, p := range *t.peers.Load() { // AddPeer adds none once closed is set
			p.shutdown(deadline, started)
		}
		t.self.close()
		t.cancel()
		t.peerWG.Wait()
		t.mu.Lock()
		t.connsClosed = true
		for c := range t.conns {
			c.Close()
		}
		t.mu.Unlock()
		t.wg.Wait()
	})
	return nil
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
		t.mu.Lock()
		if t.connsClosed {
			t.mu.Unlock()
			raw.Close()
			continue
		}
		t.conns[raw] = struct{}{}
		t.mu.Unlock()
		t.wg.Go(func() { t.serveInbound(raw) })
	}
}

// serveInbound authenticates an accepted connection and delivers what
// arrives on it.
func (t *TCP) serveInbound(raw net.Conn) {
	defer func() {
		raw.Close()
		t.mu.Lock()
		delete(t.conns, raw)
		t.mu.Unlock()
	}()
	setNoDelay(raw)
	remote := raw.RemoteAddr().String()
	raw.SetDeadline(time.Now().Add(t.cfg.HandshakeTimeout))
	conn, from, inc, err := t.auth.accept(raw, t.cfg.Self, func(id proc.ID) bool { return t.isMember(id) || t.cfg.Joins })
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
	// The dialer's first frame announces it: a member not known yet (a
	// node joining, Config.Joins) is learnt at the address it gives. The
	// answer is this node's member table, so that a newcomer learns the
	// cluster from any one member, and an ack saying where to resume.
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
	log := t.log.With("peer", from.String(), "remote", remote)

	// One inbound connection per member: a newer one replaces an older
	// one, which is closed, and delivery from the newer starts only once
	// the older's reader has stopped, so the handler sees the member's
	// frames in order, and the ack that tells the dialer where to resume
	// counts every frame the older delivered.
	in := &inbound{conn: conn, done: make(chan struct{}), ackSoon: make(chan struct{}, 1)}
	t.mu.Lock()
	old := t.inbound[from]
	t.inbound[from] = in
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		if t.inbound[from] == in {
			delete(t.inbound, from)
		}
		t.mu.Unlock()
		close(in.done)
	}()
	if old != nil {
		old.conn.Close()
		<-old.done
	}
	if p.recvInc != inc {
		if p.recvInc != 0 {
			log.Info("transport: the member restarted", "delivered_from_previous", p.recvNext.Load())
		}
		p.recvInc = inc
		p.recvNext.Store(0)
	}
	next := p.recvNext.Load()
	in.ackedFrames.Store(next)
	in.ackedBytes.Store(p.receivedBytes.Load())
	if _, err := conn.Write(appendAck(appendMembers(nil, t.table()), next)); err != nil {
		return
	}
	raw.SetDeadline(time.Time{})
	fr.idle = t.cfg.IdleTimeout
	log.Debug("transport: accepted")

	stop := make(chan struct{})
	var acker sync.WaitGroup
	acker.Go(func() { t.ackLoop(p, in, stop) })
	err = t.readFrames(fr, p, in)
	close(stop)
	if err == io.EOF {
		// The dialer has finished sending (Close): a last ack tells it
		// that everything arrived.
		t.writeAck(in, p)
	}
	conn.Close()
	acker.Wait()

	t.mu.Lock()
	closing := t.connsClosed
	t.mu.Unlock()
	switch {
	case err == io.EOF:
		log.Debug("transport: peer closed its connection")
	case closing || errors.Is(err, net.ErrClosed):
		// Closed by this node: Close, or replaced by a newer connection.
	default:
		log.Warn("transport: closed connection", "reason", err.Error())
	}
}

// readFrames delivers the data frames from p until the connection fails,
// and has them acknowledged (ack.go) at the end of each batch (when the
// reader is about to wait on the socket): at once if the dialer asked with
// a ping or many have arrived since the last ack, else soon; and within a
// batch once very many have.
func (t *TCP) readFrames(fr *frameReader, p *peer, in *inbound) error {
	delivered, asked := false, false
	for {
		kind, payload, err := fr.next()
		if err != nil {
			return err
		}
		switch kind {
		case kindData:
			p.received.Add(1)
			p.receivedBytes.Add(uint64(frameLen(len(payload))))
			t.handler(p.id, payload)
			p.recvNext.Add(1)
			delivered = true
		case kindPing:
			asked = true
		case kindMembers:
			t.learn(p.id, payload)
		case kindAck:
			return errors.New("ack frame on an inbound connection")
		}
		// Within a batch, only a long run of frames is acknowledged, so
		// that a stream the reader never catches up with still opens
		// its sender's window.
		if fr.br.Buffered() > 0 && !ackDue(p, in, 8) {
			continue
		}
		switch {
		case asked || ackDue(p, in, 1):
			// Written here rather than by ackLoop: waking a goroutine
			// would delay the ack, and a sender whose window is full
			// waits for it.
			if err := t.writeAck(in, p); err != nil {
				return err
			}
		case delivered && !in.armed.Load() && in.armed.CompareAndSwap(false, true):
			signal(in.ackSoon)
		}
		delivered, asked = false, false
	}
}

// ackDue reports whether k times ackFrames frames, or k times ackBytes
// bytes, have come from p since the last ack on in.
func ackDue(p *peer, in *inbound, k uint64) bool {
	return p.recvNext.Load()-in.ackedFrames.Load() >= k*ackFrames || p.receivedBytes.Load()-in.ackedBytes.Load() >= k*ackBytes
}

// ackLoop writes the acks that are due soon, and one every PingInterval,
// so that the dialer also notices if this node goes away.
func (t *TCP) ackLoop(p *peer, in *inbound, stop <-chan struct{}) {
	tick := time.NewTicker(t.cfg.PingInterval)
	defer tick.Stop()
	delay := time.NewTimer(ackDelay)
	delay.Stop()
	for {
		select {
		case <-stop:
			return
		case <-in.ackSoon:
			delay.Reset(ackDelay)
			continue
		case <-delay.C:
		case <-tick.C:
		}
		if t.writeAck(in, p) != nil {
			in.conn.Close()
			return
		}
	}
}

// writeAck acknowledges every frame from p delivered so far.
func (t *TCP) writeAck(in *inbound, p *peer) error {
	in.wmu.Lock()
	defer in.wmu.Unlock()
	// Disarm before reading the count: a frame delivered after the read
	// arms the next ack.
	in.armed.Store(false)
	next := p.recvNext.Load()
	in.ackedFrames.Store(next)
	in.ackedBytes.Store(p.receivedBytes.Load())
	in.ackBuf = appendAck(in.ackBuf[:0], next)
	in.conn.SetWriteDeadline(time.Now().Add(t.cfg.IdleTimeout))
	_, err := in.conn.Write(in.ackBuf)
	return err
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
