package transport

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// InProcConfig configures an in-process Network. Zero values mean the same
// defaults as Config.
type InProcConfig struct {
	// QueueLen bounds, in frames, what one endpoint has sent to another and
	// the other has not yet finished handling. 0 means DefaultQueueLen.
	QueueLen int
	// QueueBytes bounds the same queue in payload bytes. 0 means
	// DefaultQueueBytes; it must be at least MaxFrame.
	QueueBytes int
	// MaxFrame is the largest payload, in bytes. 0 means DefaultMaxFrame.
	MaxFrame int
	// Latency delays every delivery: a payload reaches the handler no
	// earlier than Latency after Send. One constant for all pairs, so FIFO
	// order is kept. 0 means as soon as possible.
	Latency time.Duration
}

// Network is an in-process cluster: endpoints 0 .. n-1, connected by
// bounded queues, with the semantics of TCP (per-sender FIFO, Send never
// blocks and fails with ErrBackpressure when the queue to a member is full)
// minus the wire: payloads are copied, not encoded, and nothing is lost
// unless the destination is closed.
type Network struct {
	cfg      InProcConfig
	eps      []*InProc
	isolated []atomic.Bool // by endpoint: cut off from every other (Isolate)
}

// NewInProc creates a network of n endpoints.
func NewInProc(n int, cfg InProcConfig) (*Network, error) {
	switch {
	case n < 1:
		return nil, fmt.Errorf("%w: NewInProc: %d endpoints: at least 1 is required", ErrConfig, n)
	case cfg.QueueLen < 0 || cfg.QueueBytes < 0 || cfg.MaxFrame < 0 || cfg.Latency < 0:
		return nil, fmt.Errorf("%w: InProcConfig %+v: fields must be >= 0", ErrConfig, cfg)
	}
	setDefault(&cfg.QueueLen, DefaultQueueLen)
	setDefault(&cfg.QueueBytes, DefaultQueueBytes)
	setDefault(&cfg.MaxFrame, DefaultMaxFrame)
	if cfg.QueueBytes < cfg.MaxFrame {
		return nil, fmt.Errorf("%w: InProcConfig.QueueBytes = %d is less than MaxFrame = %d", ErrConfig, cfg.QueueBytes, cfg.MaxFrame)
	}
	nw := &Network{cfg: cfg, eps: make([]*InProc, n), isolated: make([]atomic.Bool, n)}
	for i := range nw.eps {
		nw.eps[i] = &InProc{
			nw:            nw,
			id:            proc.ID(i),
			fromFrames:    make([]int, n),
			fromBytes:     make([]int, n),
			wake:          make(chan struct{}, 1),
			done:          make(chan struct{}),
			sent:          make([]atomic.Uint64, n),
			sentBytes:     make([]atomic.Uint64, n),
			backpressured: make([]atomic.Uint64, n),
			dropped:       make([]atomic.Uint64, n),
			received:      make([]atomic.Uint64, n),
			receivedBytes: make([]atomic.Uint64, n),
		}
	}
	return nw, nil
}

// Endpoint returns endpoint id.
func (nw *Network) Endpoint(id proc.ID) (*InProc, error) {
	if id < 0 || int(id) >= len(nw.eps) {
		return nil, fmt.Errorf("%w: %v (the network has %d endpoints)", ErrUnknownPeer, id, len(nw.eps))
	}
	return nw.eps[id], nil
}

// Isolate cuts endpoint id off from every other (cut true), as a network
// partition would, or joins it again (false). While it is cut off, what it
// sends and what is sent to it is lost: Send succeeds, as a write into a
// dead TCP connection's buffer does, and the sender counts the payload as
// Dropped. Payloads queued before the cut are still delivered.
func (nw *Network) Isolate(id proc.ID, cut bool) error {
	if id < 0 || int(id) >= len(nw.eps) {
		return fmt.Errorf("%w: %v (the network has %d endpoints)", ErrUnknownPeer, id, len(nw.eps))
	}
	nw.isolated[id].Store(cut)
	return nil
}

// Close closes every endpoint.
func (nw *Network) Close() error {
	for _, e := range nw.eps {
		e.Close()
	}
	return nil
}

// InProc is one endpoint of a Network.
type InProc struct {
	nw *Network
	id proc.ID

	mu         sync.Mutex
	queue      []inprocMsg // messages to this endpoint, oldest at head
	head       int
	fromFrames []int // per sender: messages queued or being handled
	fromBytes  []int
	handler    Handler
	started    bool
	closed     bool
	parked     bool
	wake       chan struct{} // capacity 1
	done       chan struct{} // closed by Close
	isClosed   atomic.Bool
	wg         sync.WaitGroup

	// Indexed by the other endpoint.
	sent, sentBytes, backpressured, dropped []atomic.Uint64
	received, receivedBytes                 []atomic.Uint64
}

var _ Transport = (*InProc)(nil)

type inprocMsg struct {
	from    proc.ID
	payload []byte
	due     time.Time
}

// Start implements Transport.
func (e *InProc) Start(handler Handler) error {
	if handler == nil {
		return errors.New("transport: Start: nil handler")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.closed:
		return ErrClosed
	case e.started:
		return errors.New("transport: Start called twice")
	}
	e.started, e.handler = true, handler
	e.wg.Go(e.deliver)
	return nil
}

// Send implements Transport. Sending to a closed endpoint succeeds and the
// payload is dropped (counted in Stats), as it would be lost with the
// connection to a crashed process.
func (e *InProc) Send(to proc.ID, payload []byte) error {
	if e.isClosed.Load() {
		return ErrClosed
	}
	if to < 0 || int(to) >= len(e.nw.eps) {
		return fmt.Errorf("%w: %v", ErrUnknownPeer, to)
	}
	if len(payload) > e.nw.cfg.MaxFrame {
		return fmt.Errorf("%w: %d bytes, MaxFrame %d", ErrTooLarge, len(payload), e.nw.cfg.MaxFrame)
	}
	if e.nw.isolated[e.id].Load() || e.nw.isolated[to].Load() {
		e.dropped[to].Add(1)
		return nil
	}
	r := e.nw.eps[to]
	var due time.Time
	if e.nw.cfg.Latency > 0 {
		due = time.Now().Add(e.nw.cfg.Latency)
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		e.dropped[to].Add(1)
		return nil
	}
	if f := r.fromFrames[e.id]; f >= e.nw.cfg.QueueLen || f > 0 && r.fromBytes[e.id]+len(payload) > e.nw.cfg.QueueBytes {
		r.mu.Unlock()
		e.backpressured[to].Add(1)
		return ErrBackpressure
	}
	if r.head > 0 && len(r.queue) == cap(r.queue) {
		n := copy(r.queue, r.queue[r.head:])
		clear(r.queue[n:])
		r.queue, r.head = r.queue[:n], 0
	}
	r.queue = append(r.queue, inprocMsg{from: e.id, payload: bytes.Clone(payload), due: due})
	r.fromFrames[e.id]++
	r.fromBytes[e.id] += len(payload)
	wake := r.parked
	r.parked = false
	r.mu.Unlock()
	if wake {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
	e.sent[to].Add(1)
	e.sentBytes[to].Add(uint64(len(payload)))
	return nil
}

// deliver hands queued messages to the handler, oldest first.
func (e *InProc) deliver() {
	timer := time.NewTimer(0)
	<-timer.C
	for {
		e.mu.Lock()
		for e.head == len(e.queue) && !e.closed {
			e.parked = true
			e.mu.Unlock()
			select {
			case <-e.wake:
			case <-e.done:
			}
			e.mu.Lock()
		}
		if e.closed {
			e.mu.Unlock()
			return
		}
		m := e.queue[e.head]
		e.queue[e.head] = inprocMsg{}
		if e.head++; e.head == len(e.queue) {
			e.queue, e.head = e.queue[:0], 0
		}
		e.mu.Unlock()

		if wait := time.Until(m.due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-e.done:
				return
			}
		}
		e.received[m.from].Add(1)
		e.receivedBytes[m.from].Add(uint64(len(m.payload)))
		e.handler(m.from, m.payload)
		e.mu.Lock()
		e.fromFrames[m.from]--
		e.fromBytes[m.from] -= len(m.payload)
		e.mu.Unlock()
	}
}

// Addr implements Transport: "inproc/p3".
func (e *InProc) Addr() net.Addr { return inprocAddr(e.id) }

type inprocAddr proc.ID

func (inprocAddr) Network() string  { return "inproc" }
func (a inprocAddr) String() string { return "inproc/" + proc.ID(a).String() }

// Stats implements Transport.
func (e *InProc) Stats() Stats {
	s := Stats{Peers: make(map[proc.ID]PeerStats, len(e.nw.eps)-1), QueueLen: e.nw.cfg.QueueLen}
	for i, r := range e.nw.eps {
		if r == e {
			continue
		}
		r.mu.Lock()
		up, queued := r.started && !r.closed && !e.isClosed.Load(), r.fromFrames[e.id]
		r.mu.Unlock()
		s.Peers[proc.ID(i)] = PeerStats{
			Connected:     up,
			Queued:        queued,
			Sent:          e.sent[i].Load(),
			SentBytes:     e.sentBytes[i].Load(),
			Received:      e.received[i].Load(),
			ReceivedBytes: e.receivedBytes[i].Load(),
			Backpressured: e.backpressured[i].Load(),
			Dropped:       e.dropped[i].Load(),
		}
	}
	return s
}

// Close implements Transport. Messages still queued to this endpoint are
// dropped (and counted as Dropped by their senders); messages it sent are
// still delivered.
func (e *InProc) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.isClosed.Store(true)
	for _, m := range e.queue[e.head:] {
		e.nw.eps[m.from].dropped[e.id].Add(1)
	}
	e.queue, e.head = nil, 0
	e.mu.Unlock()
	close(e.done)
	e.wg.Wait()
	e.mu.Lock()
	clear(e.fromFrames)
	clear(e.fromBytes)
	e.mu.Unlock()
	return nil
}
