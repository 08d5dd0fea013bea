package live

import (
	"container/heap"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/live/wal"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/trace"
)

// Service is one algorithm instance on a node. Its events are handled one
// at a time: by the goroutine that posts one to an idle service, or else
// by the service's actor goroutine, from its inbox (see post).
type Service struct {
	node  *Node
	name  string
	algo  proc.Algorithm
	codec Codec
	proc  proc.Process
	tr    *tracer // the node's, if this service is traced
	step  uint64  // the tracer's step in progress (0: none); the holder of turn's
	// n is the process's N: the cluster's size, or for an algorithm whose
	// members join the running cluster (Assumes.Joins) the ID space
	// (Config.IDs). Messages from IDs at or above it are dropped.
	n int
	// wall: the process reads Now on the wall clock (since the Unix
	// epoch) instead of since the node started — the clock the members of
	// an open group, started at different times, share.
	wall bool
	// join: the process starts by Join(contact) (Node.Join).
	join    bool
	contact proc.ID

	inbox chan event
	// urgent holds the messages that go ahead of the inbox (proc.Urgent):
	// a probe's ping or ack that waited behind a backlog of news would
	// come too late to count. When it is full they join the inbox.
	urgent chan event
	done   chan struct{}
	once   sync.Once
	// clock is the service's one runtime timer, set to the soonest of its
	// timers; the actor goroutine waits on it beside the inbox (see tick).
	clock *time.Timer

	// turn is held by whoever runs the algorithm: the actor goroutine, or
	// a poster that found the service idle (see post). queued counts the
	// events in the inbox and the one the actor has taken and not yet
	// handled; while it is not 0, every event goes through the inbox.
	turn   sync.Mutex
	queued atomic.Int64

	// last is when the service last handled a message, input or timer
	// (the node's clock, in ns); posting counts the posts under way, and
	// reaping turns new ones away (see Node.Reap).
	last    atomic.Int64
	posting atomic.Int64
	reaping atomic.Bool

	// Owned by the holder of turn.
	env       *env
	timers    map[proc.TimerID]*timerEntry // set, not yet fired nor cancelled; nil: not on the clock (soon, SyncThen)
	wheel     timerHeap                    // the timers on the clock, soonest first
	armed     time.Time                    // when clock fires; zero: stopped
	ticking   bool                         // an evClock waits in the inbox
	nextTimer proc.TimerID
	rng       *rand.Rand
	self      []event              // messages to itself, handled after the current event
	soon      []event              // timers set to fire at once: handled when the inbox is empty
	out       outbox               // messages to others, sent when the event is handled
	held      map[proc.ID][][]byte // refused by a full queue, in order, per member (see hold)
	heldBytes int                  // what held costs, in bytes (heldCost)
	retrying  bool                 // an evRetry is on its way
	retryWait time.Duration        // until the next evRetry (0: none scheduled yet)
	store     proc.Storage
	wal       *wal.Log // store's file, when the node has a data directory

	// Where outputs go, in the order they were registered.
	subMu sync.Mutex
	sinks []sink
	nsink int

	// Counters, kept without a lock on the paths every message takes.
	sent, received, dropped, outputs, handled atomic.Int64
	handlerNanos                              atomic.Int64
	byKind                                    map[string]*atomic.Int64 // one per message type of the algorithm; read-only
	otherMu                                   sync.Mutex
	otherKinds                                map[string]int64 // sent messages of other kinds, if any
}

// A sink receives the outputs: a hook (OnOutput) or a channel (Subscribe).
type sink struct {
	id   int
	hook func(proc.Output)
	ch   chan proc.Output
}

// ServiceStats counts what a service did.
type ServiceStats struct {
	Sent, Received, Dropped int64
	ByKind                  map[string]int64 // messages sent, by kind
	Outputs                 int64
	Handled                 int64         // events handled
	HandlerTime             time.Duration // total time in the algorithm's handlers
	// Queued: the events waiting in the inbox now, with the one being
	// handled (a backlog that each event waits behind).
	Queued int64
}

type eventKind uint8

const (
	evMessage eventKind = iota + 1
	evTimer
	evInput
	evRetry // send again what the transport refused (see hold)
	evStop
	evWake  // nothing: its handling is a moment to run the soon timers
	evRead  // a caller's look at the process (Read)
	evClock // the clock fired: the timers due go off (the actor's own, never queued)
)

type event struct {
	kind  eventKind
	from  proc.ID
	msg   proc.Message
	input proc.Input
	timer proc.TimerID
	tag   any
	read  func() // evRead
	// failed: the background sync this timer awaited failed (SyncThen).
	failed error
	id     uint64   // traced message: its id
	vc     trace.VC // and the sender's vector clock
}

// Name is the service's name.
func (s *Service) Name() string { return s.name }

// Congested reports whether the service's node is congested (see
// Node.Congested).
func (s *Service) Congested() bool { return s.node.Congested() }

// Window is how many client requests a service whose every request sends
// a message to every member (a multicast) may have under way at once: if
// every node has that many, the messages they cause at one node fill at
// most half of a queue to a member. Services that admit clients'
// requests wait beyond it.
func (s *Service) Window() int {
	bound := s.node.cfg.Transport.Stats().QueueLen
	if bound <= 0 {
		bound = transport.DefaultQueueLen
	}
	return max(1, bound/(2*s.node.cfg.N))
}

// Algorithm is what the service runs.
func (s *Service) Algorithm() proc.Algorithm { return s.algo }

// Input hands the algorithm an application input (Acquire, Multicast ...).
// If the service is idle, the algorithm handles it before Input returns;
// otherwise it is queued. Input blocks while the inbox is full, and fails
// once the service stopped.
func (s *Service) Input(in proc.Input) error {
	return s.post(event{kind: evInput, input: in})
}

// Inputs hands the algorithm several inputs, one after another, as Input
// would each. If the service is idle it handles them all before Inputs
// returns, and the messages they send leave together at the end: those to
// one member in one write, when the connection is idle. A lock handed from
// one local caller to the next takes one write per member with
// Inputs(Release, Acquire), instead of a write for each reply and another
// for each request.
func (s *Service) Inputs(ins ...proc.Input) error {
	var buf [4]event
	es := buf[:0]
	for _, in := range ins {
		es = append(es, event{kind: evInput, input: in})
	}
	return s.post(es...)
}

// post hands the algorithm an event. If the service is idle — nothing in
// its inbox, nothing being handled — the caller handles the event itself,
// at once, instead of waking the actor goroutine: a message then goes from
// the transport's reader, and an input from the application's goroutine,
// straight into the algorithm, which saves two goroutine hand-offs on the
// way from one node's Unlock to the next node's Lock returning. Otherwise
// the event joins the inbox, behind those already there, so events posted
// one after another by one goroutine are handled in that order.
//
// Several events posted at once (Inputs) are handled one after another,
// and their messages sent together at the end.
func (s *Service) post(es ...event) error {
	s.posting.Add(1)
	defer s.posting.Add(-1)
	if s.reaping.Load() {
		return errReaped
	}
	select {
	case <-s.done:
		return ErrClosed
	default:
	}
	if s.queued.Load() == 0 && s.turn.TryLock() {
		if s.queued.Load() == 0 {
			defer s.turn.Unlock()
			select {
			case <-s.done:
				return ErrClosed
			default:
			}
			s.out.batching++
			defer func() {
				s.out.batching--
				s.flush()
			}()
			for i, e := range es {
				if i > 0 {
					select {
					case <-s.done: // the algorithm panicked
						return ErrClosed
					default:
					}
				}
				s.handle(e)
			}
			s.handleSoon()
			return nil
		}
		s.turn.Unlock()
	}
	for _, e := range es {
		s.queued.Add(1)
		if _, ok := e.msg.(proc.Urgent); ok && e.kind == evMessage {
			select {
			case s.urgent <- e:
				continue
			default: // full: behind the others
			}
		}
		select {
		case s.inbox <- e: // room, the usual case: no need to watch done (a cheaper send)
			continue
		default:
		}
		select {
		case s.inbox <- e:
		case <-s.done:
			s.queued.Add(-1)
			return ErrClosed
		}
	}
	return nil
}

// Read runs f on the service's process between two of its events, as a
// handler would run, and returns once it has: a way for the service's
// API to read the algorithm's state (a member list, a replica) without a
// race. f must not keep the process nor change it.
func (s *Service) Read(f func(p proc.Process)) error {
	// A service that stops may still be running f, or be about to (an
	// event taken just before it stopped): Read returns only once f has
	// run, or can no longer run, so the caller never reads what f writes
	// while f writes it.
	var mu sync.Mutex
	abandoned := false
	done := make(chan struct{})
	read := func() {
		mu.Lock()
		defer mu.Unlock()
		if !abandoned {
			f(s.proc)
			close(done)
		}
	}
	if err := s.post(event{kind: evRead, read: read}); err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case <-s.done:
		mu.Lock()
		defer mu.Unlock()
		select {
		case <-done:
			return nil
		default:
			abandoned = true
			return ErrClosed
		}
	}
}

// Subscribe returns a channel of the service's outputs, buffered to size,
// and a cancel function. A subscriber that lets size outputs pile up is
// cut off rather than buffered without bound or skipped: the output that
// finds the channel full closes it (and the log says so), so the reader
// learns it no longer follows the service, as when the service stops.
func (s *Service) Subscribe(size int) (<-chan proc.Output, func()) {
	ch := make(chan proc.Output, size)
	id := s.addSink(sink{ch: ch})
	return ch, func() {
		if s.removeSink(id) {
			close(ch)
		}
	}
}

// OnOutput calls f with every output of the service from now on, in the
// goroutine handling the event that produced it (the service's own, or
// one that posted an event to the idle service — see Input), before the
// next event is handled: nothing is dropped, so f must be quick (append to
// a queue, signal a waiter), and must not block on anything an Input
// caller may hold. The returned function stops the calls; f must not call
// it.
func (s *Service) OnOutput(f func(proc.Output)) (cancel func()) {
	id := s.addSink(sink{hook: f})
	return func() { s.removeSink(id) }
}

func (s *Service) addSink(k sink) int {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	k.id = s.nsink
	s.nsink++
	s.sinks = append(s.sinks, k)
	return k.id
}

// removeSink removes a sink and reports whether it was there.
func (s *Service) removeSink(id int) bool {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	for i, k := range s.sinks {
		if k.id == id {
			s.sinks = slices.Delete(s.sinks, i, i+1)
			return true
		}
	}
	return false
}

// Done is closed once the service has stopped.
func (s *Service) Done() <-chan struct{} { return s.done }

// Stats returns a copy of the service's counters.
func (s *Service) Stats() ServiceStats {
	st := ServiceStats{
		Sent: s.sent.Load(), Received: s.received.Load(), Dropped: s.dropped.Load(),
		Outputs: s.outputs.Load(), Handled: s.handled.Load(), HandlerTime: time.Duration(s.handlerNanos.Load()),
		Queued: s.queued.Load(), ByKind: map[string]int64{},
	}
	for k, n := range s.byKind {
		if v := n.Load(); v > 0 {
			st.ByKind[k] = v
		}
	}
	s.otherMu.Lock()
	for k, v := range s.otherKinds {
		st.ByKind[k] += v
	}
	s.otherMu.Unlock()
	return st
}

func (s *Service) stop() {
	s.once.Do(func() { close(s.done) })
}

// run is the actor: it starts the algorithm, then handles the events of
// the inbox one at a time, exactly as the simulator calls a process. The
// service is created with turn held, so that nothing is handled before
// Start.
func (s *Service) run() {
	defer s.node.wg.Done()
	s.beginStep()
	s.call(func() {
		if j, ok := s.proc.(proc.Joiner); ok && s.join {
			j.Join(s.env, s.contact)
		} else {
			s.proc.Start(s.env)
		}
	})
	s.endStep()
	s.handleSelf()
	s.flush()
	s.handleSoon()
	s.turn.Unlock()
	for {
		e, ok := s.next()
		if !ok {
			s.shutdown()
			return
		}
		s.turn.Lock()
		if e.kind == evClock {
			s.tick()
		} else {
			s.handle(e)
		}
		s.queued.Add(-1)
		s.noticeClock()
		s.handleSoon()
		s.turn.Unlock()
	}
}

// next waits for the next event, an urgent message first, then the
// inbox's; false once the service has stopped (an event taken meanwhile
// is not handled).
func (s *Service) next() (event, bool) {
	var e event
	select {
	case e = <-s.urgent:
	default:
		select {
		case e = <-s.inbox: // the usual case under load: no need to watch done (a cheaper receive)
		default:
			select {
			case e = <-s.urgent:
			case e = <-s.inbox:
			case <-s.clock.C:
				e.kind = evClock
				s.queued.Add(1)
			case <-s.done:
			}
		}
	}
	select {
	case <-s.done:
		return event{}, false
	default:
		return e, true
	}
}

// shutdown releases what the stopped service holds: its timers, its log,
// its subscribers' channels.
func (s *Service) shutdown() {
	s.turn.Lock() // waits for a poster handling an event
	defer s.turn.Unlock()
	s.clock.Stop()
	s.wheel, s.armed = nil, time.Time{}
	if s.wal != nil {
		s.wal.Close()
	}
	s.dropHeld() // what it held is dropped with it
	s.subMu.Lock()
	for _, k := range s.sinks {
		if k.ch != nil {
			close(k.ch)
		}
	}
	s.sinks = nil
	s.subMu.Unlock()
}

// handle handles an event and then the messages the algorithm sent itself
// meanwhile, and sends the messages for others. The caller holds turn.
func (s *Service) handle(e event) {
	s.handle1(e)
	s.handleSelf()
	s.flush()
}

// handleSoon fires the timers set to fire at once, if no event waits in
// the inbox: an algorithm that sets one to gather what arrives meanwhile
// (a Raft leader flushing its new entries as one batch) gets everything
// that was queued first, without a hop through a timer goroutine when
// nothing was. Timers set by those handled here wait for the next turn;
// a wake-up event makes sure there is one. The caller holds turn.
func (s *Service) handleSoon() {
	n := len(s.soon)
	for i := 0; i < n && s.queued.Load() == 0; i++ {
		e := s.soon[0]
		s.soon = s.soon[1:]
		s.handle(e)
	}
	if len(s.soon) > 0 && s.queued.Load() == 0 {
		s.wake()
	}
}

// wake queues a wake-up event: straight into the inbox when it has room,
// for the actor goroutine to handle (a goroutine started for it would
// handle it on a new stack, and grow that stack every time — a tenth of
// a busy group's CPU), or else from a goroutine of its own, since the
// caller holds turn and must not wait for the actor. The caller holds
// turn.
func (s *Service) wake() {
	s.queued.Add(1)
	select {
	case s.inbox <- event{kind: evWake}:
	default:
		s.queued.Add(-1)
		go func() { _ = s.post(event{kind: evWake}) }()
	}
}

// handleSelf handles the messages the algorithm sent itself, in order.
func (s *Service) handleSelf() {
	for len(s.self) > 0 {
		e := s.self[0]
		s.self = s.self[1:]
		s.handle1(e)
	}
}

func (s *Service) handle1(e event) {
	env := s.env
	start := time.Now()
	defer func() {
		s.handled.Add(1)
		s.handlerNanos.Add(int64(time.Since(start)))
	}()
	if e.kind == evMessage || e.kind == evInput || e.kind == evTimer {
		s.last.Store(int64(start.Sub(s.node.start)))
	}
	switch e.kind {
	case evMessage:
		s.received.Add(1)
		s.beginStep()
		if tr := s.tr; tr != nil {
			tr.recv(s.name, s.step, e.from, e.id, e.vc, e.msg)
		}
		s.call(func() { s.proc.Receive(env, e.from, e.msg) })
		s.endStep()
	case evTimer:
		if _, live := s.timers[e.timer]; !live {
			return // cancelled after it fired
		}
		delete(s.timers, e.timer)
		s.beginStep()
		if tr := s.tr; tr != nil {
			tr.record(s.step, trace.Timer, func(ev *trace.Event) { ev.Type, ev.Service = fmt.Sprint(e.tag), s.name })
		}
		s.call(func() {
			if e.failed != nil {
				panic(storageFailure{e.failed})
			}
			s.proc.Timeout(env, e.tag)
		})
		s.endStep()
	case evInput:
		s.beginStep()
		if tr := s.tr; tr != nil {
			tr.record(s.step, trace.Input, func(ev *trace.Event) {
				ev.Type, ev.Label, ev.Data, ev.Service = e.input.Kind(), label(e.input), data(e.input), s.name
			})
		}
		s.call(func() { s.proc.Input(env, e.input) })
		s.endStep()
	case evRetry:
		s.retrying = false
		s.retryHeld()
	case evRead:
		e.read()
	}
}

// beginStep opens a step of the process in the trace, if the trace
// records states (Config.TraceStates); endStep closes it with the
// process's description of its state. The caller holds turn.
func (s *Service) beginStep() {
	if s.tr != nil {
		s.step = s.tr.beginStep()
	}
}

func (s *Service) endStep() {
	if s.step == 0 {
		return
	}
	var state json.RawMessage
	select {
	case <-s.done: // stopped: its state is no longer the algorithm's
	default:
		if d, ok := s.proc.(proc.Describer); ok {
			func() {
				defer func() {
					if r := recover(); r != nil {
						s.node.log.Error("Describe panicked; the step's state is not recorded", "service", s.name, "algo", s.algo.Name, "panic", fmt.Sprint(r))
					}
				}()
				state = data(d.Describe())
			}()
		}
	}
	s.tr.endStep(s.step, state)
	s.step = 0
}

// call runs a handler; a panic is a bug in the algorithm: it is logged with
// the service and node, and the service stops rather than the node.
func (s *Service) call(f func()) {
	defer func() {
		if r := recover(); r != nil {
			if f, ok := r.(storageFailure); ok {
				s.node.log.Error("stopping the service: its stable storage failed", "service", s.name, "algo", s.algo.Name, "err", f.err)
			} else {
				s.node.log.Error("algorithm panicked; stopping the service", "service", s.name, "algo", s.algo.Name, "panic", fmt.Sprint(r))
			}
			s.stop()
			// What the failed handler sent must not leave: it may depend on
			// a write that did not happen.
			s.self = nil
			s.out.msgs, s.out.buf = s.out.msgs[:0], s.out.buf[:0]
		}
	}()
	f()
}

func (s *Service) send(to proc.ID, m proc.Message) {
	n := s.node
	if to < 0 || int(to) >= s.n {
		panic(fmt.Sprintf("send to p%d: no such process (n=%d)", to, s.n))
	}
	s.sent.Add(1)
	if c := s.byKind[m.Kind()]; c != nil {
		c.Add(1)
	} else {
		s.otherMu.Lock()
		if s.otherKinds == nil {
			s.otherKinds = map[string]int64{}
		}
		s.otherKinds[m.Kind()]++
		s.otherMu.Unlock()
	}
	var id uint64
	var vc trace.VC
	if s.tr != nil {
		id, vc = s.tr.send(s.name, s.step, to, m)
	}
	if to == n.cfg.Self {
		s.self = append(s.self, event{kind: evMessage, from: to, msg: m, id: id, vc: vc})
		return
	}
	start := len(s.out.buf)
	var b []byte
	if s.tr != nil {
		// A clock that counts only founders goes as an array, which
		// nodes of every version read; one that counts a member that
		// joined, keyed by process ID.
		b = appendService(s.out.buf, s.name)
		b = appendTrailer(b, id, vc, vc.Len() > n.cfg.N)
	} else {
		b = appendUntraced(s.out.buf, s.name)
	}
	b, err := s.codec.Append(b, m)
	if err != nil {
		panic(fmt.Sprintf("encoding %T: %v", m, err))
	}
	s.out.buf = b
	_, lossy := m.(proc.Lossy)
	s.out.msgs = append(s.out.msgs, outMsg{to: to, start: start, end: len(b), kind: m.Kind(), lossy: lossy})
}

// sendTo hands payloads for member to to the transport, all at once if it
// can, and returns how many it took, and why not the rest.
func (s *Service) sendTo(to proc.ID, payloads [][]byte) (int, error) {
	tr := s.node.cfg.Transport
	if bs, ok := tr.(batchSender); ok && len(payloads) > 1 {
		if err := bs.SendBatch(to, payloads); err != nil {
			return 0, err
		}
		return len(payloads), nil
	}
	for i, p := range payloads {
		if err := tr.Send(to, p); err != nil {
			return i, err
		}
	}
	return len(payloads), nil
}

// outbox holds the messages an event sends to others, encoded back to back
// in buf, until the event has been handled. Then flush hands them to the
// transport: the messages to one member together (in one write, when the
// connection is idle and the transport can), the members in the order of
// their first message. An event that sends one message to each of several
// members loses nothing by the wait (the handler is done in microseconds);
// a Release that replies to a member and the Acquire after it, which asks
// the same member, cost one write instead of two (see Inputs).
type outbox struct {
	buf      []byte
	msgs     []outMsg
	batch    [][]byte // scratch for flush
	sentTo   []bool   // scratch for flush, by member
	batching int      // Inputs is handling a sequence: flush at its end
}

type outMsg struct {
	to         proc.ID
	start, end int
	kind       string
	lossy      bool // proc.Lossy: a datagram will do
}

// batchSender is a transport that takes several payloads for one member at
// once (transport.TCP).
type batchSender interface {
	SendBatch(to proc.ID, payloads [][]byte) error
}

// datagramSender is a transport that sends payloads which may be lost as
// datagrams (transport.TCP with Config.Datagrams).
type datagramSender interface {
	SendDatagram(to proc.ID, payload []byte) error
}

// flush sends what the outbox holds, unless Inputs is handling a
// sequence. The caller holds turn.
func (s *Service) flush() {
	if s.out.batching > 0 {
		return
	}
	s.flushNow()
}

// flushNow sends what the outbox holds. The caller holds turn.
func (s *Service) flushNow() {
	o := &s.out
	if len(o.msgs) == 0 {
		return
	}
	if ds, ok := s.node.cfg.Transport.(datagramSender); ok {
		// Messages the algorithm may lose (proc.Lossy) go as datagrams
		// where they can, ahead of anything held: they need no order. The
		// rest, and those that cannot (too large, no datagrams), take the
		// stream.
		kept := o.msgs[:0]
		for _, m := range o.msgs {
			if !m.lossy || ds.SendDatagram(m.to, o.buf[m.start:m.end]) != nil {
				kept = append(kept, m)
			}
		}
		if o.msgs = kept; len(o.msgs) == 0 {
			o.buf = o.buf[:0]
			return
		}
	}
	for _, m := range o.msgs { // sized by the highest ID sent to, not the cluster's ID space
		if int(m.to) >= len(o.sentTo) {
			o.sentTo = append(o.sentTo, make([]bool, int(m.to)+1-len(o.sentTo))...)
		}
	}
	for i, first := range o.msgs {
		if o.sentTo[first.to] {
			continue
		}
		o.sentTo[first.to] = true
		o.batch = o.batch[:0]
		for _, m := range o.msgs[i:] {
			if m.to == first.to {
				o.batch = append(o.batch, o.buf[m.start:m.end])
			}
		}
		if len(s.held[first.to]) > 0 { // behind what waits already, in order
			s.hold(first.to, o.batch, transport.ErrBackpressure)
			continue
		}
		k, err := s.sendTo(first.to, o.batch)
		if err != nil {
			s.hold(first.to, o.batch[k:], err)
		}
	}
	for _, m := range o.msgs { // only what was set: the slice may be long
		o.sentTo[m.to] = false
	}
	clear(o.batch)
	o.msgs, o.buf = o.msgs[:0], o.buf[:0] // reused: the transport queues copies
	if cap(o.buf) > maxOutbox {
		o.buf = nil
	}
}

// maxOutbox bounds the outbox buffer a service keeps between events: a
// Raft leader's flush of a full batch to four followers fits, so that it
// is not grown again at every flush under load.
const maxOutbox = 1 << 18

func (s *Service) output(o proc.Output) {
	s.outputs.Add(1)
	if tr := s.tr; tr != nil {
		tr.record(s.step, trace.Output, func(e *trace.Event) { e.Type, e.Label, e.Data, e.Service = o.Kind(), label(o), data(o), s.name })
	}
	s.subMu.Lock()
	defer s.subMu.Unlock()
	cut := false
	for i, k := range s.sinks {
		if k.hook != nil {
			k.hook(o)
			continue
		}
		select {
		case k.ch <- o:
		default:
			// Skipping the output would leave the subscriber acting on a
			// view it does not know is wrong; holding it would grow
			// without bound. It is cut off: its channel closes.
			s.node.log.Error("subscriber cut off: it did not keep up", "service", s.name, "behind", cap(k.ch), "kind", o.Kind())
			close(k.ch)
			s.sinks[i].ch, cut = nil, true
		}
	}
	if cut {
		s.sinks = slices.DeleteFunc(s.sinks, func(k sink) bool { return k.hook == nil && k.ch == nil })
	}
}

// errReaped: the service was reaped (Node.Reap) while an event was being
// posted; it is ErrClosed for callers outside the node.
var errReaped = fmt.Errorf("%w: reaped while idle", ErrClosed)

// idleFor reports whether the service has handled no message, input or
// timer for quiet.
func (s *Service) idleFor(quiet time.Duration) bool {
	return s.node.now()-time.Duration(s.last.Load()) >= quiet
}

// quiescent reports whether the service is idle for quiet and nothing
// would wake it but a message or an input: no event queued, no timer
// set, nothing held for a member. The caller holds turn.
func (s *Service) quiescent(quiet time.Duration) bool {
	return s.queued.Load() == 0 && len(s.timers) == 0 && len(s.soon) == 0 && len(s.self) == 0 &&
		len(s.held) == 0 && !s.retrying && s.idleFor(quiet)
}

// serviceNumbers are the services whose payloads begin with a number
// instead of their name: a zero length (no name has one), then the
// number, one byte; or, for a message that carries no trace (its flag
// byte would be 0), one byte alone, untracedNumber plus the number — a
// byte no name's length begins with, since names are at most
// MaxServiceName (200) bytes, whose uvarint's first byte is at most
// 0xC8. The membership service sends a few small messages a member and
// period on every link, and its name was a third of an idle one; of what
// is left, the service and the flag byte took three bytes of the seven
// in front of an ack. Append-only: a number, once given, names that
// service on the wire. At most 31.
var serviceNumbers = [...]string{1: "members"}

// untracedNumber, plus a service's number, is the one byte in front of
// an untraced message of a numbered service.
const untracedNumber = 0xE0

// serviceNumber is the number of service name, 0 if it has none.
func serviceNumber(name string) int {
	for i, x := range serviceNumbers {
		if i > 0 && x == name {
			return i
		}
	}
	return 0
}

// serviceNumberNames are serviceNumbers as bytes, for splitService.
var serviceNumberNames = func() (b [len(serviceNumbers)][]byte) {
	for i, name := range serviceNumbers {
		b[i] = []byte(name)
	}
	return b
}()

// appendService appends the service name in front of a payload: its
// number, if it has one, else its length and the name. The trace's flag
// byte follows (appendTrailer).
func appendService(b []byte, name string) []byte {
	if i := serviceNumber(name); i > 0 {
		return append(b, 0, byte(i))
	}
	b = binary.AppendUvarint(b, uint64(len(name)))
	return append(b, name...)
}

// appendUntraced appends what goes in front of a message that carries no
// trace: for a numbered service one byte, untracedNumber plus its
// number; for another, its name and a zero flag byte.
func appendUntraced(b []byte, name string) []byte {
	if i := serviceNumber(name); i > 0 {
		return append(b, untracedNumber+byte(i))
	}
	return append(appendService(b, name), 0)
}

// splitService reads the service name in front of a payload; flagged
// reports whether the trace's flag byte follows (readTrailer), which it
// does unless the payload began with untracedNumber plus a number.
func splitService(payload []byte) (name, rest []byte, flagged bool, err error) {
	if len(payload) > 0 && payload[0] >= untracedNumber { // a numbered service, untraced
		i := int(payload[0] - untracedNumber)
		if i == 0 || i >= len(serviceNumbers) {
			return nil, nil, false, errors.New("bad service number")
		}
		return serviceNumberNames[i], payload[1:], false, nil
	}
	if len(payload) > 0 && payload[0] == 0 { // a service number
		if len(payload) < 2 || payload[1] == 0 || int(payload[1]) >= len(serviceNumbers) {
			return nil, nil, false, errors.New("bad service number")
		}
		return serviceNumberNames[payload[1]], payload[2:], true, nil
	}
	n, k := binary.Uvarint(payload)
	if k <= 0 || n == 0 || n > MaxServiceName || uint64(len(payload)-k) < n {
		return nil, nil, false, errors.New("bad service name")
	}
	return payload[k : k+int(n)], payload[k+int(n):], true, nil
}

// now is the process's clock: Env.Now.
func (s *Service) now() time.Duration {
	switch {
	case s.wall && s.node.cfg.ClockRate == 1:
		return time.Duration(time.Now().UnixNano())
	case s.wall:
		return time.Duration(s.node.start.UnixNano()) + s.node.now()
	}
	return s.node.now()
}

// env is the Env of a live service.
type env struct{ s *Service }

func (e *env) Self() proc.ID { return e.s.node.cfg.Self }
func (e *env) N() int        { return e.s.n }
func (e *env) Neighbors() []proc.ID {
	var ids []proc.ID
	for i := 0; i < e.s.node.cfg.N; i++ {
		if proc.ID(i) != e.s.node.cfg.Self {
			ids = append(ids, proc.ID(i))
		}
	}
	return ids
}
func (e *env) Now() time.Duration              { return e.s.now() }
func (e *env) Send(to proc.ID, m proc.Message) { e.s.send(to, m) }
func (e *env) Rand() *rand.Rand                { return e.s.rng }
func (e *env) Output(o proc.Output)            { e.s.output(o) }
func (e *env) Storage() proc.Storage           { return e.s.storage() }

func (e *env) SetTimer(d time.Duration, tag any) proc.TimerID {
	s := e.s
	s.nextTimer++
	id := s.nextTimer
	if d <= 0 {
		s.timers[id] = nil
		s.soon = append(s.soon, event{kind: evTimer, timer: id, tag: tag})
		return id
	}
	t := &timerEntry{at: time.Now().Add(s.node.real(d)), id: id, tag: tag}
	s.timers[id] = t
	heap.Push(&s.wheel, t)
	s.arm()
	return id
}

func (e *env) CancelTimer(id proc.TimerID) {
	s := e.s
	if t, ok := s.timers[id]; ok {
		if t != nil {
			heap.Remove(&s.wheel, t.i)
			s.arm()
		}
		delete(s.timers, id)
	}
}

// The timers of a service share one runtime timer, its clock, set to the
// soonest of them, which wakes the actor goroutine: a timer that goes off
// costs no goroutine of its own (time.AfterFunc starts one for every
// timer, and its handler, run on that fresh stack, grows the stack anew
// each time), and the timers due together — a thousand members' probes
// at once, in a process that could not keep up — go off in one wake-up.
// A timer never goes off early; late, when the actor waits for the turn,
// as a timer's event waited in the inbox before.

// timerEntry is a timer on the clock: when it goes off, and its index in
// the wheel.
type timerEntry struct {
	at  time.Time
	id  proc.TimerID
	tag any
	i   int
}

// timerHeap is a service's timers on the clock, a binary heap
// (container/heap) by time, then by the order they were set.
type timerHeap []*timerEntry

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	return h[i].at.Before(h[j].at) || h[i].at.Equal(h[j].at) && h[i].id < h[j].id
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].i, h[j].i = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*timerEntry)
	t.i = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return t
}

// noticeClock queues the clock's firing behind the events that wait in
// the inbox, if it fired while the actor handled one of them: timers go
// off after the messages that arrived before they were due (an ack
// that came before its probe's timeout is handled first, as when each
// timer posted its event), and are never starved by a busy inbox. The
// caller is the actor, holding turn.
func (s *Service) noticeClock() {
	if s.ticking || len(s.inbox)+len(s.urgent) == 0 {
		return // the actor waits on the clock when the inbox is empty
	}
	select {
	case <-s.clock.C:
	default:
		return
	}
	s.queued.Add(1)
	select {
	case s.inbox <- event{kind: evClock}:
		s.ticking = true
	default: // a full inbox: the timers go off now
		s.tick()
		s.queued.Add(-1)
	}
}

// stoppedTimer is a clock that is not set.
func stoppedTimer() *time.Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}

// arm sets the clock to the soonest timer, or stops it if there is none.
// The caller holds turn.
func (s *Service) arm() {
	if len(s.wheel) == 0 {
		if !s.armed.IsZero() {
			s.clock.Stop()
			s.armed = time.Time{}
		}
		return
	}
	if at := s.wheel[0].at; !at.Equal(s.armed) {
		s.clock.Reset(time.Until(at))
		s.armed = at
	}
}

// tick handles the timers that are due, soonest first, and sets the clock
// to the next; the actor calls it when the clock fires. The caller holds
// turn.
func (s *Service) tick() {
	s.armed, s.ticking = time.Time{}, false // it fired (or a reset made it fire no more)
	now := time.Now()
	for len(s.wheel) > 0 && !s.wheel[0].at.After(now) {
		t := heap.Pop(&s.wheel).(*timerEntry)
		s.timers[t.id] = nil // handled as a timer that is not on the clock
		s.handle(event{kind: evTimer, timer: t.id, tag: t.tag})
	}
	s.arm()
}
