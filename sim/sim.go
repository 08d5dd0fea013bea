package sim

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime/debug"
	"slices"
	"time"
	"unsafe"

	"github.com/cohort-go/cohort/logical"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/trace"
)

// Sim is one deterministic simulated run. It is not safe for concurrent use:
// a run is one goroutine, by design.
type Sim struct {
	cfg     Config
	n       int
	topo    Topology
	cal     *calendar // the pending events, by default
	spread  spread    // how many lines of the next event's process to prefetch (prefetch.go)
	queue   Queue     // or, when Config.Queue is set, their keys…
	items   [][]item  // …and their contents, by slot, in fixed-size chunks
	slots   uint32    // slots ever used
	free    []uint32  // free slots
	popped  event     // the event popped last from queue
	now     int64
	seq     uint64
	nodes   []node
	rngs    [][]procRand // the processes' random sources, by chunk (see nodeRand)
	clocks  []HWClock    // nil: perfect clocks
	busy    []busyState  // nil: no pause or slow faults
	netRand *rand.Rand
	wlRand  *rand.Rand
	env     env
	series  []series // the workload's series of inputs (Control.Series)

	// The host's own Lamport clock of each process, for the trace: kept
	// only in a run that records one or that a Queue drives (whose forks
	// may record one).
	lamports []uint64

	// Changing membership (members.go); nil unless the run has joins,
	// leaves or churn.
	present *idSet
	memRand *rand.Rand

	// Stable storage (storage.go): nil until a process first uses it.
	disks    map[proc.ID]*disk
	diskRand *rand.Rand
	// disksShared: a saved state shares the map of disks (Save): it is
	// copied before it is changed (setDisk).
	disksShared bool
	armed       map[proc.ID]bool // a CrashInSync waits for the process's next Sync
	// diskOwn, after a Save or Restore: the disks the run has copied
	// since, its own; the others are shared with the saved state.
	diskOwn map[proc.ID]bool

	tracedKinds uint64   // the kinds of events the sink is handed (traced)
	timers      timerSet // live timers; a cancelled one fires no more
	nextTimer   proc.TimerID
	nextMsg     uint64

	latency  Dist
	constLat bool // latency is Constant and no link overrides it: FIFO for free
	plainNet bool // one latency for all, and no loss, duplication, reordering, FIFO or partition
	// plainSend: plainNet, on the calendar, and no trace, Lamport or
	// vector clocks: a send counts the message and schedules it.
	plainSend bool
	links     map[uint64]*Link
	fifo      map[uint64]int64 // last delivery time per directed link, when FIFO needs it
	parts     []partition

	vcs   [][]uint64          // per node, when VectorClocks
	msgVC map[uint64][]uint64 // per message in flight, when VectorClocks

	sink    trace.Sink
	ev      trace.Event
	evIndex int
	// deferred: the value of the event being recorded, for a
	// DeferringSink (data), and whether it is plain (plainTypes: which
	// types are).
	deferred      any
	deferredPlain bool
	plainTypes    map[reflect.Type]bool

	// States (Config.States): while a step runs, its events wait in held,
	// and the processes it called in called, until the step ends and each
	// one's description is added to its last event (describe).
	holding bool
	held    []trace.Event
	called  []int32

	kindIdx map[string]int
	// kindShared: kindIdx is shared with a fork, to be copied before a
	// kind is added.
	kindShared bool
	kinds      []string
	lastKind   int     // index in kinds of the kind last counted
	sent       []int64 // per kind index
	st         Result
	stop       StopReason
	begun      bool
}

// node is the host's record of a process: 32 bytes, half a cache line, so
// that a delivery to a random process reads one line of the host's for
// the process and its random source.
type node struct {
	p     proc.Process
	rng   *rand.Rand // made at the first Env.Rand
	inc   uint32     // incarnation: bumped by crash and recovery; stale timers are ignored
	up    bool
	state uint8 // membership: stMember, stAbsent or stLeft (members.go)
}

type busyState struct {
	until  int64 // the node handles nothing before this time
	slowBy int64 // extra virtual time each handled event takes
}

type partition struct {
	from, to int64
	group    []int32 // per node; -1 for "named in no group"
}

// Pending event kinds.
const (
	evDeliver uint8 = iota + 1
	evTimer
	evInput
	evFault
	evFaultEnd
	evCall // a workload's timer
)

// item is a pending event's contents. It is kept small (48 bytes) because
// a million-node run has tens of millions of them in flight.
type item struct {
	val     any    // message, input, timer tag or *Fault
	id      uint64 // message id or timer id
	lamport uint64 // sender's Lamport timestamp, for deliveries
	node    int32  // where it happens
	from    int32  // sender, for deliveries
	kind    uint8
	inc     uint32 // the node's incarnation when a timer was set
}

// StopReason says why a run ended.
type StopReason string

const (
	StopQuiescent StopReason = "quiescent" // nothing left to do
	StopDeadline  StopReason = "deadline"  // virtual deadline reached
	StopPredicate StopReason = "predicate" // Config.Until held
	StopMaxEvents StopReason = "max-events"
)

// Result sums up a run.
type Result struct {
	Nodes       int
	Events      int64 // events handled: deliveries, timers, inputs, faults
	Sent        int64 // messages sent by processes
	Delivered   int64 // messages handed to a process (a duplicate counts twice)
	Dropped     int64 // lost, cut by a partition, or sent to a crashed process
	Duplicated  int64
	Inputs      int64
	InputsLost  int64 // inputs addressed to a crashed, absent or departed process
	Joins       int64 // processes that joined the running system
	Leaves      int64 // processes that left gracefully
	Outputs     int64
	WritesLost  int64       // unsynced storage writes lost at crashes
	ByKind      []KindCount // messages sent, per kind, sorted by kind
	VirtualTime time.Duration
	Stop        StopReason
}

// KindCount is the number of messages of one kind.
type KindCount struct {
	Kind  string
	Count int64
}

// New checks cfg and prepares a run.
func New(cfg Config) (*Sim, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := CheckMemory(cfg.Nodes, cfg.New); err != nil {
		return nil, err
	}
	n := cfg.Nodes
	s := &Sim{
		cfg:     cfg,
		n:       n,
		topo:    cfg.Topology,
		queue:   cfg.Queue,
		nodes:   make([]node, n),
		netRand: newProcRand(cfg.Seed, 0x6e6574776f726b), // "network"
		wlRand:  newProcRand(cfg.Seed, 0x776f726b6c6f6164),
		nextMsg: 1,
		sink:    cfg.Trace,
		kindIdx: map[string]int{},
		latency: cfg.Network.Latency,
	}
	s.env.s = s
	if s.sink != nil {
		s.tracedKinds = ^uint64(0)
		if cfg.TraceOnly != 0 {
			s.tracedKinds = cfg.TraceOnly
		}
	}
	adviseHuge(s.nodes)
	if s.sink != nil || s.queue != nil {
		s.lamports = make([]uint64, n)
	}
	if s.topo == nil {
		s.topo = NewFull(n)
	}
	if s.latency == nil {
		s.latency = Constant(time.Millisecond)
	}
	if s.queue == nil {
		s.cal = newCalendar(int64(max(s.latency.Mean(), time.Microsecond)))
		s.cal.prefetch = n >= prefetchFrom
	}
	_, s.constLat = s.latency.(Constant)
	if len(cfg.Network.Links) > 0 {
		s.links = map[uint64]*Link{}
		for i := range cfg.Network.Links {
			l := &cfg.Network.Links[i]
			s.links[linkKey(l.From, l.To)] = l
			if l.Latency != nil {
				if _, ok := l.Latency.(Constant); !ok {
					s.constLat = false
				}
			}
		}
	}
	if cfg.Network.FIFO && (!s.constLat || cfg.Network.Reorder > 0) {
		s.fifo = map[uint64]int64{}
	}
	nw := &cfg.Network
	s.plainNet = nw.Pairwise == nil && s.links == nil && s.fifo == nil && len(nw.Partitions) == 0 &&
		nw.Loss == 0 && nw.Duplicate == 0 && nw.Reorder == 0
	s.plainSend = s.plainNet && s.cal != nil && s.sink == nil && s.lamports == nil && !cfg.VectorClocks
	for _, p := range cfg.Network.Partitions {
		ps := partition{from: int64(p.From), to: int64(p.To), group: make([]int32, n)}
		for i := range ps.group {
			ps.group[i] = -1
		}
		for g, ids := range p.Groups {
			for _, id := range ids {
				ps.group[id] = int32(g)
			}
		}
		s.parts = append(s.parts, ps)
	}
	if cfg.Clocks != nil {
		s.clocks = make([]HWClock, n)
		for i := range s.clocks {
			s.clocks[i] = cfg.Clocks(proc.ID(i))
		}
	}
	if cfg.VectorClocks {
		s.vcs = make([][]uint64, n)
		for i := range s.vcs {
			s.vcs[i] = make([]uint64, n)
		}
		s.msgVC = map[uint64][]uint64{}
	}
	faults := cfg.Faults
	if churn := s.membership(&cfg); len(churn) > 0 {
		faults = append(slices.Clip(faults), churn...)
		s.cfg.Faults = faults
	}
	for i := range faults {
		f := &faults[i]
		if f.Kind == Pause || f.Kind == Slow {
			if s.busy == nil {
				s.busy = make([]busyState, n)
			}
			s.push(int64(f.Until), item{kind: evFaultEnd, val: f, node: int32(f.Node)})
		}
		s.push(int64(f.At), item{kind: evFault, val: f, node: int32(f.Node)})
	}
	s.st.Nodes = n
	return s, nil
}

// Run runs the simulation to its end. A panic in a process ends the run
// with an error that names the process, the time and the seed.
func (s *Sim) Run() (res Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.called = s.called[:0] // the trace up to the panic, without states
			s.describe()
			err = fmt.Errorf("process p%d panicked at t=%s (seed %d): %v",
				s.env.self, trace.FormatNS(s.now), s.cfg.Seed, r)
		}
	}()
	s.Begin()
	budget := s.cfg.MemoryBudget
	if budget == 0 {
		if avail, ok := availableMemory(); ok {
			budget = int64(runOfAvail * float64(avail))
		}
	}
	if budget > 0 && debug.SetMemoryLimit(-1) == math.MaxInt64 {
		// Collect harder as the heap nears the budget, so that garbage
		// does not end a run that would fit.
		debug.SetMemoryLimit(budget)
		defer debug.SetMemoryLimit(math.MaxInt64)
		if (s.cfg.NoGarbage || s.cfg.GCPercent > 0) && os.Getenv("GOGC") == "" {
			target := s.cfg.GCPercent
			if s.cfg.NoGarbage {
				target = -1 // off: only the memory limit collects
			}
			if prev := debug.SetGCPercent(target); prev != 100 {
				debug.SetGCPercent(prev) // the program's own setting
			} else {
				defer debug.SetGCPercent(prev)
			}
		}
	}
	// The heap is looked at every 65,536 events, and after every million
	// messages (one event may send many: a broadcast to a million peers).
	var sentAtCheck int64
	for steps := 1; s.Step(); steps++ {
		if budget > 0 && (steps&(1<<16-1) == 0 || s.st.Sent-sentAtCheck > 1<<20) {
			sentAtCheck = s.st.Sent
			if live := liveHeap(); live > uint64(budget) {
				return s.Result(), fmt.Errorf("after %d events, at t=%s: %w: it holds %s (its trace and its messages in flight included), over its budget of %s — run fewer processes or messages, or without a trace",
					s.st.Events, trace.FormatNS(s.now), ErrTooBig, bytesString(float64(live)), bytesString(float64(budget)))
			}
		}
	}
	return s.Result(), nil
}

// Begin applies the faults due at time zero (a process crashed at 0 never
// starts), starts every live process in ID order, then initialises the
// workload. Run calls it; a caller that drives the run with Step itself (a
// model checker) calls it once first. Calls after the first do nothing.
func (s *Sim) Begin() {
	if s.begun {
		return
	}
	s.begun = true
	for i := range s.nodes {
		s.nodes[i].up = s.nodes[i].state == stMember
		if s.present != nil && s.nodes[i].up {
			s.present.add(int32(i))
		}
	}
	// Faults at time 0 come first in the queue (At 0, lowest Seq) except
	// for deliveries, which cannot exist yet.
	s.hold()
	for s.pending() > 0 {
		e := s.pop()
		if e.at != 0 || e.kind != evFault {
			s.unpop(e)
			break
		}
		s.handle(e)
	}
	for i := range s.nodes {
		if s.nodes[i].up && s.nodes[i].p == nil {
			s.startNode(proc.ID(i), trace.Start)
		}
	}
	s.describe()
	if s.cfg.Workload != nil {
		s.cfg.Workload.Init(control{s})
	}
}

// Step handles the next event and reports whether the run goes on.
func (s *Sim) Step() bool {
	if s.stop != "" {
		return false
	}
	if s.pending() == 0 {
		s.stop = StopQuiescent
		return false
	}
	if s.cfg.MaxEvents > 0 && s.st.Events >= s.cfg.MaxEvents {
		s.stop = StopMaxEvents
		return false
	}
	e := s.pop()
	if s.cal != nil && s.cal.prefetch {
		s.prefetchAhead()
	}
	if s.cfg.Deadline > 0 && e.at > int64(s.cfg.Deadline) {
		s.unpop(e)
		s.now = int64(s.cfg.Deadline)
		s.stop = StopDeadline
		return false
	}
	if s.cfg.States {
		s.hold()
		s.handle(e)
		s.describe()
	} else {
		s.handle(e)
	}
	if s.cfg.Until != nil && s.cfg.Until(s) {
		s.stop = StopPredicate
		return false
	}
	return true
}

func (s *Sim) handle(e *event) {
	x := &e.item
	if x.kind == evDeliver && s.busy == nil {
		// The common case, the switch below taken straight.
		s.now = max(s.now, e.at)
		s.st.Events++
		s.deliver(x)
		return
	}
	if x.kind == evTimer {
		if !s.timers.has(proc.TimerID(x.id)) {
			return // cancelled
		}
	}
	s.now = max(s.now, e.at)
	if x.kind == evCall {
		x.val.(func())()
		return
	}
	var b *busyState
	if s.busy != nil && x.kind != evFault && x.kind != evFaultEnd {
		b = &s.busy[x.node]
		if b.until > s.now {
			// The process is paused or busy: the event waits, keeping its
			// order among the others that wait. (A series goes on as if
			// this input were handled: the next one is due regardless.)
			y := *x
			if y.kind == evInput && y.id != 0 {
				s.advance(y.id)
				y.id = 0
			}
			s.push(b.until, y)
			return
		}
	}
	if x.kind == evTimer {
		s.timers.remove(proc.TimerID(x.id))
	}
	s.st.Events++
	switch x.kind {
	case evDeliver:
		s.deliver(x)
	case evTimer:
		s.fire(x)
	case evInput:
		id := x.id
		s.input(x)
		if id != 0 {
			s.advance(id)
		}
	case evFault:
		s.fault(x.val.(*Fault))
	case evFaultEnd:
		if f := x.val.(*Fault); f.Kind == Slow {
			s.busy[f.Node].slowBy = 0
		}
	}
	if b != nil && b.slowBy > 0 {
		b.until = s.now + b.slowBy
	}
}

func (s *Sim) deliver(x *item) {
	to := &s.nodes[x.node]
	if !to.up {
		s.st.Dropped++
		if s.traced(trace.Drop) {
			s.record(trace.Drop, x.node, func(e *trace.Event) {
				e.Msg, e.Peer, e.Reason = x.id, x.from, s.goneReason(x.node)
				e.Type, e.Label = x.val.(proc.Message).Kind(), s.label(x.val)
			})
		}
		delete(s.msgVC, x.id)
		return
	}
	if s.lamports != nil {
		s.lamports[x.node] = max(s.lamports[x.node], x.lamport) + 1
	}
	if s.vcs != nil {
		vc := s.vcs[x.node]
		logical.MergeInto(vc, s.msgVC[x.id])
		vc[x.node]++
	}
	s.st.Delivered++
	if s.traced(trace.Recv) {
		s.record(trace.Recv, x.node, func(e *trace.Event) {
			e.Msg, e.Peer = x.id, x.from
			e.Type, e.Label = x.val.(proc.Message).Kind(), s.label(x.val)
		})
	}
	if s.armed == nil && !s.holding {
		// call, written out: the closure costs a delivery a call.
		prev := s.env.self
		s.env.self = proc.ID(x.node)
		to.p.Receive(&s.env, proc.ID(x.from), x.val.(proc.Message))
		s.env.self = prev
		return
	}
	s.callSlow(x.node, func(p proc.Process, env proc.Env) { p.Receive(env, proc.ID(x.from), x.val.(proc.Message)) })
}

func (s *Sim) fire(x *item) {
	nd := &s.nodes[x.node]
	if !nd.up || nd.inc != x.inc {
		s.st.Events-- // a timer of a crashed incarnation is not an event
		return
	}
	s.tick(x.node)
	if s.traced(trace.Timer) {
		s.record(trace.Timer, x.node, func(e *trace.Event) { e.Type = tagName(x.val) })
	}
	s.call(x.node, func(p proc.Process, env proc.Env) { p.Timeout(env, x.val) })
}

func (s *Sim) input(x *item) {
	if !s.nodes[x.node].up {
		s.st.InputsLost++
		return
	}
	s.st.Inputs++
	s.tick(x.node)
	if s.traced(trace.Input) {
		s.record(trace.Input, x.node, func(e *trace.Event) {
			e.Type, e.Label = x.val.(proc.Input).Kind(), s.label(x.val)
			e.Data = s.data(x.val)
		})
	}
	s.call(x.node, func(p proc.Process, env proc.Env) { p.Input(env, x.val.(proc.Input)) })
}

func (s *Sim) fault(f *Fault) {
	nd := &s.nodes[f.Node]
	switch f.Kind {
	case Crash:
		if !nd.up {
			return
		}
		nd.up, nd.p = false, nil
		nd.inc++
		s.crashDisk(f.Node)
		delete(s.armed, f.Node)
		if s.present != nil {
			s.present.remove(int32(f.Node))
		}
		s.tick(int32(f.Node))
		if s.traced(trace.Crash) {
			s.record(trace.Crash, int32(f.Node), nil)
		}
	case Recover:
		if nd.up || nd.state != stMember {
			return // only a crashed member recovers
		}
		nd.up = true
		nd.inc++
		if s.present != nil {
			s.present.add(int32(f.Node))
		}
		s.restartDisk(f.Node)
		s.startNode(f.Node, trace.Recover)
		if r, ok := s.cfg.Workload.(Restarter); ok {
			r.Restarted(control{s}, f.Node)
		}
	case Pause:
		b := &s.busy[f.Node]
		b.until = max(b.until, int64(f.Until))
	case Slow:
		s.busy[f.Node].slowBy = int64(f.Delay)
	case Join:
		s.join(f.Node)
	case Leave:
		s.leave(f.Node)
	case CrashInSync:
		if nd.up {
			if s.armed == nil {
				s.armed = map[proc.ID]bool{}
			}
			s.armed[f.Node] = true
		}
	}
}

func (s *Sim) startNode(id proc.ID, kind trace.Kind) {
	nd := &s.nodes[id]
	nd.p = s.cfg.New(id, s.n)
	if nd.p == nil {
		panic(fmt.Sprintf("constructor returned a nil process for p%d", id))
	}
	s.tick(int32(id))
	if s.traced(kind) {
		s.record(kind, int32(id), nil)
	}
	s.call(int32(id), func(p proc.Process, env proc.Env) { p.Start(env) })
}

// call runs a handler of process id with the shared Env pointed at it.
// The common case is cheap enough to be inlined into its callers: a run
// that records states, or that has a CrashInSync fault (which must recover
// from the panic that ends a handler whose process crashed in Sync), takes
// callSlow. A handler that panics leaves Env.self naming its process, for
// Run's error.
func (s *Sim) call(id int32, f func(proc.Process, proc.Env)) {
	if s.armed != nil || s.holding {
		s.callSlow(id, f)
		return
	}
	prev := s.env.self
	s.env.self = proc.ID(id)
	f(s.nodes[id].p, &s.env)
	s.env.self = prev
}

func (s *Sim) callSlow(id int32, f func(proc.Process, proc.Env)) {
	prev := s.env.self
	s.env.self = proc.ID(id)
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(crashedInSync); !ok {
				panic(r)
			}
		}
		s.env.self = prev
	}()
	if s.holding {
		s.called = append(s.called, id)
	}
	f(s.nodes[id].p, &s.env)
}

// tick is a process event for the host's clocks.
func (s *Sim) tick(id int32) {
	if s.lamports != nil {
		s.lamports[id]++
	}
	if s.vcs != nil {
		s.vcs[id][id]++
	}
}

// traced reports whether events of kind k go to the sink (Config.Trace
// and Config.TraceOnly).
func (s *Sim) traced(k trace.Kind) bool { return s.tracedKinds&(1<<k) != 0 }

// record builds a trace event for node id and hands it to the sink.
func (s *Sim) record(kind trace.Kind, id int32, fill func(e *trace.Event)) {
	e := &s.ev
	*e = trace.Event{Index: s.evIndex, Time: s.now, Node: id, Kind: kind, Peer: -1}
	s.evIndex++
	e.Local = s.now
	if s.clocks != nil {
		e.Local = int64(s.clocks[id].Read(time.Duration(s.now)))
	}
	if kind.IsProcess() {
		e.Lamport = s.lamports[id]
		if s.vcs != nil {
			e.VC = trace.DenseVC(slices.Clone(s.vcs[id]))
		}
	}
	if fill != nil {
		fill(e)
	}
	if s.holding {
		s.held = append(s.held, *e)
		return
	}
	if v := s.deferred; v != nil {
		s.deferred = nil
		s.sink.(DeferringSink).RecordDeferred(e, v, s.deferredPlain)
		return
	}
	s.sink.Record(e)
}

// hold starts a step whose events wait for the states of the processes
// it calls (Config.States); describe ends it.
func (s *Sim) hold() {
	s.holding = s.cfg.States && s.sink != nil
}

// describe adds to the last event of each process the step called that
// process's description of its state, and hands the step's events to the
// sink.
func (s *Sim) describe() {
	if !s.holding {
		return
	}
	s.holding = false
	for k, id := range s.called {
		if slices.Contains(s.called[:k], id) {
			continue
		}
		d, ok := s.nodes[id].p.(proc.Describer)
		if !ok || !s.nodes[id].up {
			continue
		}
		for j := len(s.held) - 1; j >= 0; j-- {
			if e := &s.held[j]; e.Node == id && e.Kind.IsProcess() {
				e.State = marshal(d.Describe())
				break
			}
		}
	}
	for j := range s.held {
		s.sink.Record(&s.held[j])
	}
	clear(s.held)
	s.held, s.called = s.held[:0], s.called[:0]
}

func (s *Sim) send(from proc.ID, to proc.ID, m proc.Message) {
	if uint(to) >= uint(s.n) || m == nil {
		s.badSend(to, m)
	}
	if s.plainSend {
		s.sendPlain(from, to, m)
		return
	}
	f := int32(from)
	s.tick(f)
	id := s.nextMsg
	s.nextMsg++
	s.st.Sent++
	s.countKind(m.Kind())
	if s.vcs != nil {
		s.msgVC[id] = slices.Clone(s.vcs[f])
	}
	if s.traced(trace.Send) {
		s.record(trace.Send, f, func(e *trace.Event) {
			e.Msg, e.Peer, e.Type, e.Label = id, int32(to), m.Kind(), s.label(m)
		})
	}
	var lamport uint64
	if s.lamports != nil {
		lamport = s.lamports[f]
	}
	if s.plainNet {
		s.push(s.now+int64(s.latency.Sample(s.netRand)), item{kind: evDeliver, val: m, id: id, lamport: lamport, node: int32(to), from: f})
		return
	}
	it := item{kind: evDeliver, val: m, id: id, lamport: lamport, node: int32(to), from: f}

	lat, loss := s.latency, s.cfg.Network.Loss
	fixed := time.Duration(-1) // the pair's latency, if Pairwise gives it
	if pw := s.cfg.Network.Pairwise; pw != nil {
		fixed = pw.Latency(proc.ID(from), to)
	}
	if s.links != nil {
		if l := s.links[linkKey(from, to)]; l != nil {
			if l.Latency != nil {
				lat, fixed = l.Latency, -1
			}
			if l.Loss != nil {
				loss = *l.Loss
			}
		}
	}
	if s.partitioned(f, int32(to)) {
		s.lose(&it, "partition")
		return
	}
	if loss > 0 && s.netRand.Float64() < loss {
		s.lose(&it, "loss")
		return
	}
	copies := 1
	if d := s.cfg.Network.Duplicate; d > 0 && s.netRand.Float64() < d {
		copies = 2
		s.st.Duplicated++
		if s.traced(trace.Dup) {
			s.record(trace.Dup, f, func(e *trace.Event) { e.Msg, e.Peer, e.Type = id, int32(to), m.Kind() })
		}
	}
	sample := func() int64 {
		if fixed >= 0 {
			return int64(fixed)
		}
		return int64(lat.Sample(s.netRand))
	}
	for c := 0; c < copies; c++ {
		at := s.now + sample()
		exempt := false
		if r := s.cfg.Network.Reorder; r > 0 && s.netRand.Float64() < r {
			at += sample()
			exempt = true
		}
		if s.fifo != nil && !exempt {
			k := linkKey(from, to)
			if last := s.fifo[k]; at < last {
				at = last
			}
			s.fifo[k] = at
		}
		s.push(at, it)
	}
}

// badSend panics for a send to no process or of no message.
func (s *Sim) badSend(to proc.ID, m proc.Message) {
	if uint(to) >= uint(s.n) {
		panic(fmt.Sprintf("send to p%d: no such process (n=%d)", to, s.n))
	}
	panic("send of a nil message")
}

// sendPlain is send when it has nothing to do but count the message and
// sample its latency (Sim.plainSend): no trace, no clocks to tick, a plain
// network and the calendar. The event is written where it will wait, if
// the calendar has a place for it.
func (s *Sim) sendPlain(from proc.ID, to proc.ID, m proc.Message) {
	id := s.nextMsg
	s.nextMsg++
	s.st.Sent++
	k := m.Kind()
	if i := s.lastKind; i < len(s.kinds) && sameString(s.kinds[i], k) {
		s.sent[i]++
	} else {
		s.countKind(k)
	}
	at := s.now + int64(s.latency.Sample(s.netRand))
	if e := s.cal.slot(at, s.seq+1); e != nil {
		s.seq++
		e.at, e.seq = at, s.seq
		e.val, e.id, e.lamport = m, id, 0
		e.node, e.from, e.kind, e.inc = int32(to), int32(from), evDeliver, 0
		return
	}
	s.push(at, item{kind: evDeliver, val: m, id: id, node: int32(to), from: int32(from)})
}

// sameString is a == b, quick when both are the same bytes (a kind is
// usually a constant, the same string each time).
func sameString(a, b string) bool {
	return len(a) == len(b) && (unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

func (s *Sim) lose(it *item, why string) {
	s.st.Dropped++
	if s.traced(trace.Drop) {
		s.record(trace.Drop, it.node, func(e *trace.Event) {
			e.Msg, e.Peer, e.Reason = it.id, it.from, why
			e.Type, e.Label = it.val.(proc.Message).Kind(), s.label(it.val)
		})
	}
	delete(s.msgVC, it.id)
}

func (s *Sim) partitioned(a, b int32) bool {
	for i := range s.parts {
		p := &s.parts[i]
		if s.now >= p.from && (p.to == 0 || s.now < p.to) && p.group[a] != p.group[b] {
			return true
		}
	}
	return false
}

func (s *Sim) countKind(k string) {
	// Most runs send one kind after another of a few: the last one is
	// tried before the map.
	if i := s.lastKind; i < len(s.kinds) && s.kinds[i] == k {
		s.sent[i]++
		return
	}
	i, ok := s.kindIdx[k]
	if !ok {
		if s.kindShared {
			s.kindIdx, s.kindShared = maps.Clone(s.kindIdx), false
		}
		i = len(s.kinds)
		s.kindIdx[k] = i
		s.kinds = append(s.kinds, k)
		s.sent = append(s.sent, 0)
	}
	s.sent[i]++
	s.lastKind = i
}

func linkKey(from, to proc.ID) uint64 { return uint64(uint32(from))<<32 | uint64(uint32(to)) }

// Events live in chunks of chunkSize, so that a run with tens of millions
// of events in flight never copies (or makes the garbage collector wait
// for) one huge array as it grows.
const (
	chunkBits = 14
	chunkSize = 1 << chunkBits
)

func (s *Sim) item(slot uint32) *item { return &s.items[slot>>chunkBits][slot&(chunkSize-1)] }

// push schedules an event at virtual time at.
func (s *Sim) push(at int64, it item) {
	s.seq++
	e := event{at: at, seq: s.seq, item: it}
	s.unpop(&e)
}

// unpop puts a copy of e among the pending events, keeping its seq.
func (s *Sim) unpop(e *event) {
	if s.cal != nil {
		s.cal.Push(e)
		return
	}
	s.queue.Push(Key{At: e.at, Seq: e.seq, Slot: s.alloc(e.item)})
}

// pop takes the next pending event, valid until the next pop.
func (s *Sim) pop() *event {
	if s.cal != nil {
		return s.cal.Pop()
	}
	k := s.queue.Pop()
	s.popped = event{at: k.At, seq: k.Seq, item: *s.item(k.Slot)}
	s.release(k.Slot)
	return &s.popped
}

func (s *Sim) pending() int {
	if s.cal != nil {
		return s.cal.Len()
	}
	return s.queue.Len()
}

// alloc stores it in a free slot, for a Queue given in Config.
func (s *Sim) alloc(it item) uint32 {
	var slot uint32
	if n := len(s.free); n > 0 {
		slot = s.free[n-1]
		s.free = s.free[:n-1]
		*s.item(slot) = it
	} else {
		// A fresh slot is the next one of the last chunk. The first chunk
		// starts small and grows, so that small runs stay cheap; later
		// chunks are made whole.
		slot = s.slots
		s.slots++
		c := slot >> chunkBits
		if int(c) == len(s.items) {
			size := chunkSize
			if c == 0 {
				size = 64
			}
			s.items = append(s.items, make([]item, 0, size))
		}
		s.items[c] = append(s.items[c], it)
	}
	return slot
}

func (s *Sim) release(slot uint32) {
	*s.item(slot) = item{}
	s.free = append(s.free, slot)
}

// Now is the current virtual (true) time.
func (s *Sim) Now() time.Duration { return time.Duration(s.now) }

// Events is how many events the run has handled so far (Result.Events),
// without the copies Result makes: cheap enough for a predicate to read
// after every step.
func (s *Sim) Events() int64 { return s.st.Events }

// Process returns the current state machine of process id (nil while it is
// crashed), for predicates and tests to inspect.
func (s *Sim) Process(id proc.ID) proc.Process { return s.nodes[id].p }

// Up reports whether process id is running: present, not crashed.
func (s *Sim) Up(id proc.ID) bool { return s.nodes[id].up }

// Pending describes a pending event, for a Queue that wants to choose
// among them.
type Pending struct {
	Kind string // "deliver", "timer", "input", "fault"
	Node proc.ID
	From proc.ID // sender of a delivery; None otherwise
	What string  // message, input or fault kind, or the timer tag
}

// Describe tells what the pending event in slot is.
func (s *Sim) Describe(slot uint32) Pending {
	it := s.item(slot)
	p := Pending{Node: proc.ID(it.node), From: proc.None}
	switch it.kind {
	case evDeliver:
		p.Kind, p.From, p.What = "deliver", proc.ID(it.from), it.val.(proc.Message).Kind()
	case evTimer:
		p.Kind, p.What = "timer", tagName(it.val)
	case evInput:
		p.Kind, p.What = "input", it.val.(proc.Input).Kind()
	case evFault, evFaultEnd:
		p.Kind, p.What = "fault", it.val.(*Fault).Kind.String()
	case evCall:
		p.Kind = "workload"
	}
	if it.kind == evTimer && !s.timers.has(proc.TimerID(it.id)) {
		p.Kind = "cancelled"
	}
	return p
}

// Payload is the contents of the pending event in slot, for a Queue that
// tells states apart by what is in flight: the message, input or timer tag
// (nil for a fault or a workload's call).
func (s *Sim) Payload(slot uint32) any {
	it := s.item(slot)
	if it.kind == evFault || it.kind == evFaultEnd || it.kind == evCall {
		return nil
	}
	return it.val
}

// Stale reports whether the pending event in slot would do nothing if it
// fired: a cancelled timer, or one set by an incarnation that has crashed
// since.
func (s *Sim) Stale(slot uint32) bool {
	it := s.item(slot)
	if it.kind != evTimer {
		return false
	}
	return !s.timers.has(proc.TimerID(it.id)) || s.nodes[it.node].inc != it.inc
}

// Copy schedules a copy of the pending event k (a Config.Queue's key, not
// yet popped) under a new Seq, and returns the copy's key for the Queue to
// hold: a duplicated delivery, or a message of a network that never
// forgets one. The Queue is not told through Push.
func (s *Sim) Copy(k Key) Key {
	s.seq++
	return Key{At: k.At, Seq: s.seq, Slot: s.alloc(*s.item(k.Slot))}
}

// Duplicate is Copy of a pending delivery k that the network duplicates
// (an explorer's choice): it counts and records the duplication as the
// network model's own, so that checkers see the copy as the network's.
func (s *Sim) Duplicate(k Key) Key {
	it := *s.item(k.Slot)
	c := s.Copy(k)
	if it.kind == evDeliver {
		s.st.Duplicated++
		if s.traced(trace.Dup) {
			s.record(trace.Dup, it.from, func(e *trace.Event) {
				e.Msg, e.Peer, e.Type = it.id, it.node, it.val.(proc.Message).Kind()
			})
		}
	}
	return c
}

// Lose discards the pending delivery k (a Config.Queue's key, which the
// Queue does not hold) as lost by the network, and records the loss with
// the reason given ("loss"). Any other kind of event is discarded without
// a trace.
func (s *Sim) Lose(k Key, reason string) {
	it := *s.item(k.Slot)
	s.release(k.Slot)
	if it.kind == evDeliver {
		s.lose(&it, reason)
	}
}

// Result returns the run's figures so far.
func (s *Sim) Result() Result {
	r := s.st
	r.VirtualTime = time.Duration(s.now)
	r.Stop = s.stop
	r.ByKind = make([]KindCount, len(s.kinds))
	for i, k := range s.kinds {
		r.ByKind[i] = KindCount{k, s.sent[i]}
	}
	slices.SortFunc(r.ByKind, func(a, b KindCount) int {
		if a.Kind < b.Kind {
			return -1
		}
		if a.Kind > b.Kind {
			return 1
		}
		return 0
	})
	return r
}

// Messages returns the number of messages sent of the given kind.
func (r Result) Messages(kind string) int64 {
	for _, k := range r.ByKind {
		if k.Kind == kind {
			return k.Count
		}
	}
	return 0
}

// label is what the trace shows of a message, input or output: its
// String, unless the run records no labels (Config.NoLabels).
func (s *Sim) label(v any) string {
	if s.cfg.NoLabels {
		return ""
	}
	return label(v)
}

func label(v any) string {
	if st, ok := v.(fmt.Stringer); ok {
		return st.String()
	}
	return ""
}

func tagName(tag any) string {
	if k, ok := tag.(proc.Kinded); ok {
		return k.Kind()
	}
	return fmt.Sprint(tag)
}

// EncodeData is an event's Data for the value v: its JSON, nil if that is
// empty ({} or null).
func EncodeData(v any) json.RawMessage { return marshal(v) }

func marshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil || string(b) == "{}" || string(b) == "null" {
		return nil
	}
	return b
}

// env is the Env of whichever process the simulator is calling; one value
// serves all processes because only one runs at a time.
type env struct {
	s    *Sim
	self proc.ID
	// calls counts the calls made on it but for Self, N and Neighbors
	// (see EnvCalls), reads those of them whose answer is not the
	// process's own (see EnvReads).
	calls, reads uint64
}

// EnvCalls is the number of calls processes have made so far on their
// environment but for Self, N and Neighbors, the three that only read
// the configuration. A step across which it did not change is one in
// which the process acted on nothing but its own state (a model checker
// learns from it that the step does the same in every state where the
// process's state is the same).
func (s *Sim) EnvCalls() uint64 { return s.env.calls }

// EnvReads is the number of calls processes have made so far on Now,
// Rand and Storage, the calls whose answer depends on more than the
// process's own state and the event it handles (the time, a random
// source, a disk). A step across which it did not change is one whose
// effects — its process's new state, what it sends, outputs, and which
// timers it sets and cancels — follow from its process's state and its
// event alone: a model checker learns from it what the step does in
// every state where they are the same.
func (s *Sim) EnvReads() uint64 { return s.env.reads }

func (e *env) Self() ID              { return e.self }
func (e *env) N() int                { return e.s.n }
func (e *env) Neighbors() []ID       { return e.s.topo.Neighbors(e.self) }
func (e *env) Output(o proc.Output)  { e.calls++; e.s.output(e.self, o) }
func (e *env) Storage() proc.Storage { e.calls++; e.reads++; return e.s.storageOf(e.self) }

func (e *env) Send(to ID, m proc.Message) {
	e.calls++
	if f := e.s.cfg.Sent; f != nil {
		f(e.self, to, m)
	}
	if s := e.s; s.plainSend && uint(to) < uint(s.n) && m != nil {
		s.sendPlain(e.self, to, m) // send's common case, one call shorter
		return
	}
	e.s.send(e.self, to, m)
}

func (e *env) Now() time.Duration {
	e.calls++
	e.reads++
	if e.s.clocks == nil {
		return time.Duration(e.s.now)
	}
	return e.s.clocks[e.self].Read(time.Duration(e.s.now))
}

func (e *env) Rand() *rand.Rand {
	e.calls++
	e.reads++
	nd := &e.s.nodes[e.self]
	if nd.rng == nil {
		nd.rng = e.s.nodeRand(e.self)
	}
	return nd.rng
}

// rngChunkBits: the processes' random sources are made in chunks of 2¹⁷
// (4 MiB, two huge pages).
const rngChunkBits = 17

// nodeRand makes process id's random source. In a run on the calendar it
// lives in a chunk of the sources of the processes around id, made when
// the first of them asks: at ten million processes, ten million separate
// 32-byte objects are as many for the garbage collector to scan, and,
// spread over 4 KiB pages, nearly every delivery's read of one (and the
// prefetch of it) misses the TLB; chunks ask for huge pages. A chunk costs
// nothing to a run whose processes never ask (an idle process still costs
// its 32-byte record). A run driven by a Queue may be saved and forked, so
// there each source is its own object, as forkRand expects to copy it.
func (s *Sim) nodeRand(id proc.ID) *rand.Rand {
	seed2 := uint64(id)*0x9e3779b97f4a7c15 + 1
	if s.cal == nil {
		return newProcRand(s.cfg.Seed, seed2)
	}
	c := int(id) >> rngChunkBits
	if c >= len(s.rngs) {
		s.rngs = append(s.rngs, make([][]procRand, c+1-len(s.rngs))...)
	}
	if s.rngs[c] == nil {
		s.rngs[c] = make([]procRand, min(1<<rngChunkBits, s.n-c<<rngChunkBits))
		adviseHuge(s.rngs[c])
	}
	pr := &s.rngs[c][int(id)&(1<<rngChunkBits-1)]
	pr.pcg = *rand.NewPCG(s.cfg.Seed, seed2)
	pr.r = *rand.New(&pr.pcg)
	return &pr.r
}

// procRand is a process's random source and its generator in one
// allocation, so that drawing a number touches one cache line, not two.
type procRand struct {
	r   rand.Rand
	pcg rand.PCG
}

func newProcRand(seed1, seed2 uint64) *rand.Rand {
	pr := &procRand{pcg: *rand.NewPCG(seed1, seed2)}
	pr.r = *rand.New(&pr.pcg)
	return &pr.r
}

func (e *env) SetTimer(d time.Duration, tag any) proc.TimerID {
	e.calls++
	s := e.s
	if s.clocks != nil {
		// d is measured on the local clock, which runs at 1+ρ. Rounded
		// up: a timer must not fire before d has passed locally (a
		// process that re-arms until its clock reads a deadline would
		// otherwise spin at one instant).
		d = time.Duration(math.Ceil(float64(d) / (1 + s.clocks[e.self].Drift)))
	}
	s.nextTimer++
	id := s.nextTimer
	s.timers.add(id)
	s.push(s.now+int64(max(d, 0)),
		item{kind: evTimer, val: tag, id: uint64(id), node: int32(e.self), inc: s.nodes[e.self].inc})
	return id
}

func (e *env) CancelTimer(id proc.TimerID) {
	e.calls++
	e.s.timers.remove(id)
}

func (s *Sim) output(id proc.ID, o proc.Output) {
	if o == nil {
		panic("output of a nil value")
	}
	s.st.Outputs++
	s.tick(int32(id))
	if s.traced(trace.Output) {
		s.record(trace.Output, int32(id), func(e *trace.Event) {
			e.Type, e.Label, e.Data = o.Kind(), s.label(o), s.data(o)
		})
	}
	if s.cfg.Observe != nil {
		s.cfg.Observe(time.Duration(s.now), id, o)
	}
	if s.cfg.Workload != nil {
		s.cfg.Workload.Observe(control{s}, id, o)
	}
}

// ID is proc.ID, for brevity in this file.
type ID = proc.ID

type control struct{ s *Sim }

func (c control) Now() time.Duration { return time.Duration(c.s.now) }
func (c control) N() int             { return c.s.n }
func (c control) Rand() *rand.Rand   { return c.s.wlRand }
func (c control) After(d time.Duration, f func()) {
	c.s.push(c.s.now+int64(max(d, 0)), item{kind: evCall, val: f})
}

// series is a workload's series of inputs: the next to make, how many,
// the sequence number reserved for the first.
type series struct {
	next func(i int) (time.Duration, proc.ID, proc.Input)
	i, n int
	base uint64
}

func (c control) Series(n int, next func(i int) (at time.Duration, node proc.ID, in proc.Input)) {
	if n <= 0 {
		return
	}
	s := c.s
	s.series = append(s.series, series{next: next, n: n, base: s.seq + 1})
	s.seq += uint64(n) // the numbers n inputs scheduled now would take
	s.pushSeries(uint64(len(s.series)))
}

// pushSeries makes series id's next input and schedules it with the
// sequence number reserved for it.
func (s *Sim) pushSeries(id uint64) {
	sr := &s.series[id-1]
	at, node, in := sr.next(sr.i)
	if node < 0 || int(node) >= s.n {
		panic(fmt.Sprintf("workload input for p%d: no such process", node))
	}
	e := event{at: max(int64(at), s.now), seq: sr.base + uint64(sr.i), item: item{kind: evInput, val: in, node: int32(node), id: id}}
	s.unpop(&e)
}

// advance goes on to series id's next input, once one is handled.
func (s *Sim) advance(id uint64) {
	sr := &s.series[id-1]
	if sr.i++; sr.i < sr.n {
		s.pushSeries(id)
	} else {
		sr.next = nil
	}
}

func (c control) Schedule(d time.Duration, node proc.ID, in proc.Input) {
	if node < 0 || int(node) >= c.s.n {
		panic(fmt.Sprintf("workload input for p%d: no such process", node))
	}
	c.s.push(c.s.now+int64(max(d, 0)), item{kind: evInput, val: in, node: int32(node)})
}
