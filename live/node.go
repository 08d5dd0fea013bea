package live

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/trace"
	"github.com/cohort-go/cohort/wire"
)

// Transport moves opaque payloads between cluster members: TCP with an
// authenticating handshake, or in-process channels.
type Transport = transport.Transport

// Codec serializes an algorithm's messages; see package wire.
type Codec interface {
	Append(dst []byte, m proc.Message) ([]byte, error)
	Decode(b []byte) (proc.Message, error)
}

// NewCodec builds the codec for an algorithm's message types.
type NewCodec func(msgs []proc.Message) (Codec, error)

// Config configures a Node.
type Config struct {
	Self proc.ID
	N    int // cluster size
	// IDs is the ID space of the cluster's open services: with
	// members that join the running cluster (transport.Config.Joins), their
	// IDs are N .. IDs−1, and they run only the services of algorithms
	// whose membership may change (proc.Assumptions.Joins or
	// Reconfigures), which get IDs as their N. 0 means N: no joins.
	IDs       int
	Transport Transport
	NewCodec  NewCodec // nil: Cohort's wire codec (package wire)
	Logger    *slog.Logger
	// Seed seeds the services' random sources (with the node id and the
	// service name); 0 is fine.
	Seed uint64
	// InboxLen bounds each service's inbox; 0 means 4096.
	InboxLen int
	// MaxServices bounds the services the node runs at once (each costs
	// a goroutine and its inbox: about 0.4 MB with the default InboxLen);
	// 0 means DefaultMaxServices. Beyond it, Service fails with
	// ErrTooManyServices, and a peer's message for a new service is
	// dropped.
	MaxServices int
	// Resolve names the algorithm of a service this node has not started
	// yet, when a message for it arrives (every lock "lock/..." runs the
	// cluster's mutex algorithm, say); nil, or false, drops such messages.
	Resolve func(service string) (proc.Algorithm, bool)
	// Trace, if set, receives this node's events in Cohort's JSONL trace
	// format, with vector timestamps carried on the messages; merge the
	// nodes' traces with Merge (cohort trace merge) to check or draw them.
	Trace io.Writer
	// TraceFamily and TraceAlgo name the run in the trace's header.
	TraceFamily, TraceAlgo string
	// TraceService, if set, says which services the trace records (every
	// one, if nil).
	TraceService func(service string) bool
	// Untraced, if set, names services that no trace records, neither
	// Trace nor TraceDir: the node's own housekeeping, no run of an
	// algorithm anyone studies.
	Untraced func(service string) bool
	// TraceStates, with Trace, records each traced service's own
	// description of its state (proc.Describer) after each step it takes
	// (its start, and each message, timer and input it handles) in the
	// step's last event, as the simulator's Config.States does, for the
	// viewer's state panel. A step's events then reach the trace when the
	// step ends (and those of other services recorded meanwhile wait for
	// them): a node killed mid-step loses that step's events. Off,
	// Describe is never called.
	TraceStates bool
	// TraceResume, if set, continues a trace this node wrote before a
	// restart (see ResumeFrom) instead of starting one.
	TraceResume *TraceResume
	// TraceDir, if set, gives every service that Trace does not record a
	// trace of its kind: DIR/KIND.jsonl, KIND being the service's name up
	// to its first "/" (ServiceKind: lock/a and lock/b → lock.jsonl,
	// group/x → group.jsonl, dht → dht.jsonl). The services of one kind
	// run one algorithm, and their trace is a run of it as the
	// simulator's is: its header names the family and algorithm of the
	// first of them to start, and it has its own clocks and message ids,
	// so that the kind's traces of every node merge (Merge) into one
	// trace that the family's checkers judge and the viewer draws. A
	// restarted node continues its files (OpenTrace). TraceStates applies
	// to them too. In a cluster that members join (IDs > N), every trace
	// is open (trace.Header.IDs): its vector clocks grow as members join
	// and are written keyed by process ID, so that a joined member's
	// traces, and the founders' traces of its messages, merge into one
	// run with theirs.
	TraceDir string
	// DataDir, if set, is where services keep their stable storage
	// (proc.Storage), one log file each (StoragePath); a node restarted on
	// it recovers what its services synced. Without it their storage is
	// in memory and lost when the node stops.
	DataDir string
	// ClockRate makes the node's clock, as its services read it (Env.Now,
	// and the timers they set), run at this rate against real time: 1.01
	// gains 1%, 0.99 loses 1%; 0 means 1. It injects clock drift, to show
	// what a service guarantees under it: leases are safe while the
	// clocks' rates differ by less than the drift bound they assume
	// (consensus.MaxDrift).
	ClockRate float64
}

// Node is one member of a live cluster.
type Node struct {
	cfg   Config
	log   *slog.Logger
	start time.Time

	tr *tracer // nil unless tracing

	// The traces of TraceDir, by kind (under mu), and their files.
	kindTraces map[string]*tracer
	traceFiles []*os.File

	mu       sync.Mutex
	services map[string]*Service
	closed   bool
	closing  chan struct{} // closed by Close
	wg       sync.WaitGroup
	// kept holds the stable storage of services reaped on a node without
	// a data directory, for their next start (see Reap).
	kept   map[string][][]byte
	reaped atomic.Int64
	// held: what the services hold for members whose queues are full
	// (see held.go).
	held heldLedger

	// A copy of services, replaced at every change, for finding the
	// service of every arriving message without a lock.
	byName atomic.Pointer[map[string]*Service]

	// Dropped messages, and when one was last logged (warnDrop).
	drops       atomic.Int64
	lastDropLog atomic.Int64
}

// NewNode checks cfg and returns a node; Start connects it.
func NewNode(cfg Config) (*Node, error) {
	switch {
	case cfg.N < 1:
		return nil, fmt.Errorf("cluster size %d: need at least 1", cfg.N)
	case cfg.IDs != 0 && cfg.IDs < cfg.N:
		return nil, fmt.Errorf("ID space %d: smaller than the cluster's size %d", cfg.IDs, cfg.N)
	case cfg.Self < 0 || int(cfg.Self) >= max(cfg.N, cfg.IDs):
		return nil, fmt.Errorf("node id %d out of range 0..%d", cfg.Self, max(cfg.N, cfg.IDs)-1)
	case cfg.Transport == nil:
		return nil, errors.New("no transport")
	}
	if cfg.NewCodec == nil {
		cfg.NewCodec = func(m []proc.Message) (Codec, error) { return wire.NewCodec(m) }
	}
	if cfg.InboxLen == 0 {
		cfg.InboxLen = 4096
	}
	if !(cfg.ClockRate >= 0 && cfg.ClockRate <= 100) { // NaN too
		return nil, fmt.Errorf("clock rate %v: want 0 (none set) or more, at most 100", cfg.ClockRate)
	}
	if cfg.ClockRate == 0 {
		cfg.ClockRate = 1
	}
	if cfg.MaxServices <= 0 {
		cfg.MaxServices = DefaultMaxServices
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	n := &Node{cfg: cfg, log: log.With("node", int(cfg.Self)), start: time.Now(), services: map[string]*Service{},
		closing: make(chan struct{}), kept: map[string][][]byte{}}
	if cfg.Trace != nil {
		tr, err := newTracer(cfg.Trace, cfg.Self, cfg.N, cfg.IDs, cfg.TraceFamily, cfg.TraceAlgo, cfg.TraceResume, cfg.TraceStates)
		if err != nil {
			return nil, fmt.Errorf("trace: %w", err)
		}
		n.tr = tr
	}
	return n, nil
}

// Start begins receiving from the transport.
func (n *Node) Start() error { return n.cfg.Transport.Start(n.deliver) }

// Members returns every member's transport address, this node's included,
// as the transport knows them now — members that joined the running
// cluster among them (transport.Config.Joins) — or nil if the transport
// does not say. Services of fixed-size algorithms keep the N they started
// with; services for changing membership (gossip, failure detectors,
// overlays) read this.
func (n *Node) Members() map[proc.ID]string {
	if m, ok := n.cfg.Transport.(interface{ Members() map[proc.ID]string }); ok {
		return m.Members()
	}
	return nil
}

// MemberAddr returns member id's transport address, and whether the
// transport knows it: one entry of Members, without copying the table (a
// membership service asks once per address it learns, so a copy each time
// would cost n² per member to learn n).
func (n *Node) MemberAddr(id proc.ID) (string, bool) {
	if t, ok := n.cfg.Transport.(interface {
		MemberAddr(proc.ID) (string, bool)
	}); ok {
		return t.MemberAddr(id)
	}
	return "", false
}

// AddPeer tells the transport where member id listens, if the
// transport takes new members (transport.TCP.AddPeer); services whose
// members learn of one another (a membership service) call it.
func (n *Node) AddPeer(id proc.ID, addr string) error {
	if t, ok := n.cfg.Transport.(interface{ AddPeer(proc.ID, string) error }); ok {
		return t.AddPeer(id, addr)
	}
	return errors.New("the transport takes no new members")
}

// Self is this node's id; N the cluster's size.
func (n *Node) Self() proc.ID { return n.cfg.Self }

// Congested reports whether the transport's queue to some connected member
// is a quarter full or more (in frames): that member, or the way to it,
// does not keep up. A full queue refuses messages, and an algorithm that assumes
// reliable channels stalls on a lost one; services that admit clients'
// requests (a group's Multicast) wait while the node is congested, so that
// what they admit does not overflow the queues. A member that is not
// connected does not count: its queue fills while it is down.
func (n *Node) Congested() bool {
	st := n.cfg.Transport.Stats()
	bound := st.QueueLen
	if bound <= 0 {
		bound = transport.DefaultQueueLen
	}
	for _, p := range st.Peers {
		if p.Connected && 4*p.Queued >= bound {
			return true
		}
	}
	return false
}

// Running reports whether the node runs service name (started here, or
// by a peer's message for it).
func (n *Node) Running(name string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.services[name]
	return ok
}

func (n *Node) N() int { return n.cfg.N }

// MaxServiceName bounds a service's name, which travels with every message
// (but the few services with a number, serviceNumbers).
const MaxServiceName = 200

// Service returns the named instance of algorithm a, starting it on first
// use. Every node of the cluster must run the same algorithm under the same
// name; a node starts a service when a message for it arrives, if
// Config.Resolve names its algorithm.
func (n *Node) Service(name string, a proc.Algorithm) (*Service, error) {
	return n.service(name, a, false, proc.None)
}

// Join is Service for an algorithm whose processes join a running system
// (proc.Joiner): a service started here is started by Join with contact —
// a member present now, or proc.None if there is none — instead of Start.
func (n *Node) Join(name string, a proc.Algorithm, contact proc.ID) (*Service, error) {
	return n.service(name, a, true, contact)
}

func (n *Node) service(name string, a proc.Algorithm, join bool, contact proc.ID) (*Service, error) {
	if name == "" || len(name) > MaxServiceName {
		return nil, fmt.Errorf("service name %q: want 1 to %d bytes", name, MaxServiceName)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, ErrClosed
	}
	if s, ok := n.services[name]; ok {
		if s.algo.Name != a.Name {
			return nil, fmt.Errorf("service %q runs %s, not %s", name, s.algo.Name, a.Name)
		}
		return s, nil
	}
	if len(n.services) >= n.cfg.MaxServices {
		return nil, fmt.Errorf("service %q: %w (%d run, the most there may be)", name, ErrTooManyServices, len(n.services))
	}
	size, open := n.cfg.N, a.Assumes.Joins
	if open || a.Assumes.Reconfigures {
		// Members that joined the running cluster may run it: an open
		// algorithm takes them in itself, a reconfigurable one once its
		// configuration adds them.
		size = max(n.cfg.N, n.cfg.IDs)
	} else if int(n.cfg.Self) >= n.cfg.N {
		return nil, fmt.Errorf("service %q: %w: %s runs on the cluster's %d founding members (ids 0..%d); this node (%d) joined it later", name, ErrNotFounder, a.Name, n.cfg.N, n.cfg.N-1, n.cfg.Self)
	}
	if a.Validate != nil {
		if err := a.Validate(size); err != nil {
			return nil, fmt.Errorf("service %q: %s with %d nodes: %w", name, a.Name, n.cfg.N, err)
		}
	}
	codec, err := n.cfg.NewCodec(a.Messages)
	if err != nil {
		return nil, fmt.Errorf("service %q: %w", name, err)
	}
	s := &Service{
		node: n, name: name, algo: a, codec: codec, n: size, wall: open, join: join, contact: contact,
		inbox:  make(chan event, n.cfg.InboxLen),
		urgent: urgentLane(a),
		timers: map[proc.TimerID]*timerEntry{},
		clock:  stoppedTimer(),
		rng:    rand.New(rand.NewPCG(n.cfg.Seed^nameSeed(name), uint64(n.cfg.Self)+1)),
		done:   make(chan struct{}),
		byKind: map[string]*atomic.Int64{},
	}
	for _, m := range a.Messages {
		s.byKind[m.Kind()] = new(atomic.Int64)
	}
	if tr, err := n.tracerOf(name, a, open); err != nil {
		n.log.Error("not tracing the service: its trace cannot be opened", "service", name, "err", err)
	} else {
		s.tr = tr
	}
	s.last.Store(int64(n.now()))
	if recs, ok := n.kept[name]; ok { // reaped before: it restarts from its storage
		s.store = proc.NewMemStorage(recs)
		delete(n.kept, name)
	}
	s.env = &env{s: s}
	s.proc = a.New(n.cfg.Self, size)
	s.turn.Lock() // run unlocks it once the algorithm has started
	n.services[name] = s
	byName := maps.Clone(n.services)
	n.byName.Store(&byName)
	n.wg.Add(1)
	go s.run()
	return s, nil
}

// ErrClosed is returned by a closed node or service.
var ErrClosed = errors.New("node closed")

// ErrNotFounder: a fixed-size algorithm's service asked of a node that
// joined the cluster after it started (an ID at or above Config.N).
var ErrNotFounder = errors.New("not one of the cluster's founding members")

// ErrTooManyServices: the node runs Config.MaxServices services already.
var ErrTooManyServices = errors.New("too many services on this node")

// DefaultMaxServices is Config.MaxServices's default.
const DefaultMaxServices = 512

// urgentLen bounds a service's lane of urgent messages (proc.Urgent),
// which only algorithms that send them have (nil otherwise: a select
// never takes from it, nor puts in it).
const urgentLen = 256

func urgentLane(a proc.Algorithm) chan event {
	for _, m := range a.Messages {
		if _, ok := m.(proc.Urgent); ok {
			return make(chan event, urgentLen)
		}
	}
	return nil
}

// deliver is the transport's handler: it routes a payload to its service's
// inbox. Garbage from an authenticated peer is dropped and logged, never a
// crash.
func (n *Node) deliver(from proc.ID, payload []byte) {
	rawName, body, flagged, err := splitService(payload)
	var id uint64
	var vc trace.VC
	if err == nil && flagged {
		id, vc, body, err = readTrailer(body, max(n.cfg.N, n.cfg.IDs))
	}
	if err != nil {
		n.warnDrop("dropping a malformed payload", "from", int(from), "err", err)
		return
	}
	var s *Service
	if byName := n.byName.Load(); byName != nil {
		s = (*byName)[string(rawName)] // no copy of the name
	}
	if s == nil {
		name := string(rawName)
		a, ok := proc.Algorithm{}, false
		if n.cfg.Resolve != nil {
			a, ok = n.cfg.Resolve(name)
		}
		if !ok {
			n.warnDrop("dropping a message for an unknown service", "from", int(from), "service", name)
			return
		}
		if s, err = n.Service(name, a); err != nil {
			n.warnDrop("dropping a message: cannot start its service", "from", int(from), "service", name, "err", err)
			return
		}
	}
	if int(from) >= s.n {
		n.warnDrop("dropping a message from a member the service does not count", "from", int(from), "service", s.name, "n", s.n)
		return
	}
	m, err := s.codec.Decode(body)
	if err != nil {
		n.warnDrop("dropping an undecodable message", "from", int(from), "service", s.name, "err", err)
		return
	}
	if err := s.post(event{kind: evMessage, from: from, msg: m, id: id, vc: vc}); errors.Is(err, errReaped) {
		// Being reaped (see Reap, which holds mu): once it is done, the
		// message goes to the service, or to its next start if it was
		// reaped, as it would have if it had come a moment later.
		n.mu.Lock()
		n.mu.Unlock()
		n.deliver(from, payload)
	}
}

// warnDrop logs a dropped message, at most one line a second with the
// count of drops since the last line: a peer that keeps sending what this
// node cannot take (a joined node speaking to a fixed-size service, an
// old version, a bug) must not flood the log.
func (n *Node) warnDrop(msg string, args ...any) {
	dropped := n.drops.Add(1)
	now, last := time.Now().UnixNano(), n.lastDropLog.Load()
	if now-last < int64(time.Second) || !n.lastDropLog.CompareAndSwap(last, now) {
		return
	}
	n.drops.Add(-dropped)
	n.log.Warn(msg, append(args, "drops", dropped)...)
}

// Close stops every service and the transport.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	close(n.closing)
	services := make([]*Service, 0, len(n.services))
	for _, s := range n.services {
		services = append(services, s)
	}
	n.mu.Unlock()
	for _, s := range services {
		s.stop()
	}
	n.wg.Wait()
	err := n.cfg.Transport.Close()
	if n.tr != nil {
		err = errors.Join(err, n.tr.flush())
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, kind := range slices.Sorted(maps.Keys(n.kindTraces)) {
		err = errors.Join(err, n.kindTraces[kind].flush())
	}
	for _, f := range n.traceFiles {
		err = errors.Join(err, f.Close())
	}
	n.traceFiles = nil
	return err
}

// tracerOf is the trace a new service records its events in, or nil:
// the node's trace if it takes the service, else its kind's in
// TraceDir, opened with the first service of the kind. The caller holds
// mu.
func (n *Node) tracerOf(name string, a proc.Algorithm, open bool) (*tracer, error) {
	if n.cfg.Untraced != nil && n.cfg.Untraced(name) {
		return nil, nil
	}
	if n.tr != nil && !open && (n.cfg.TraceService == nil || n.cfg.TraceService(name)) {
		return n.tr, nil
	}
	if n.cfg.TraceDir == "" {
		return nil, nil
	}
	kind := ServiceKind(name)
	if tr := n.kindTraces[kind]; tr != nil {
		return tr, nil
	}
	if kind == "" || kind == "." || kind == ".." {
		return nil, fmt.Errorf("service %q: no trace file for its kind %q", name, kind)
	}
	if err := os.MkdirAll(n.cfg.TraceDir, 0o755); err != nil {
		return nil, err
	}
	f, resume, err := OpenTrace(filepath.Join(n.cfg.TraceDir, kind+".jsonl"), n.cfg.Self)
	if err != nil {
		return nil, err
	}
	tr, err := newTracer(f, n.cfg.Self, n.cfg.N, n.cfg.IDs, a.Family, a.Name, resume, n.cfg.TraceStates)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("%s: %w", f.Name(), err), f.Close())
	}
	n.traceFiles = append(n.traceFiles, f)
	if n.kindTraces == nil {
		n.kindTraces = map[string]*tracer{}
	}
	n.kindTraces[kind] = tr
	return tr, nil
}

// ServiceKind is the kind of a service, which names its trace in
// Config.TraceDir: its name up to the first "/" ("lock" for "lock/a"),
// or the whole name.
func ServiceKind(name string) string {
	kind, _, _ := strings.Cut(name, "/")
	return kind
}

// Done is closed once Close is called.
func (n *Node) Done() <-chan struct{} { return n.closing }

// Names lists the services the node runs whose names start with prefix,
// sorted.
func (n *Node) Names(prefix string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var names []string
	for name := range n.services {
		if strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// Reap stops service name if it has been idle for at least quiet — it
// handled no message, input or timer for that long, none waits, it has no
// timer set and holds nothing for a member — and its process rejoins
// after a restart from its stable storage (proc.Rejoiner). It reports
// whether it stopped the service.
//
// A reaped service costs nothing but its stable storage: its log stays in
// the data directory (renamed, so that a restarted node does not resume
// it; see Stored), or, without one, its records stay in memory, a few
// bytes. The next message for it (Config.Resolve) or the next Service
// call starts it again from that storage, as a restart after a crash
// would: for its peers it is one, which its algorithm handles (a
// Ricart–Agrawala process says HELLO). So reaping loses nothing, but only
// the caller knows whether the service is in use: a lock held here is idle
// for the node, so the caller reaps only what nobody here holds, waits
// for or watches. A message that arrives while the service is being
// reaped goes to its next start.
func (n *Node) Reap(name string, quiet time.Duration) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	s := n.services[name]
	if s == nil || n.closed || !s.idleFor(quiet) {
		return false
	}
	if _, ok := s.proc.(proc.Rejoiner); !ok {
		return false
	}
	s.turn.Lock()
	defer s.turn.Unlock()
	// With no timer set and nothing queued, only a message can come now
	// (or a caller's input: see above). From here on, posts fail with
	// errReaped; then those under way are waited for.
	if !s.quiescent(quiet) {
		return false
	}
	s.reaping.Store(true)
	for s.posting.Load() > 0 {
		time.Sleep(50 * time.Microsecond)
	}
	if !s.quiescent(quiet) { // one came meanwhile: the actor handles it
		s.reaping.Store(false)
		return false
	}
	select {
	case <-s.done: // stopped already (a failed handler)
		return false
	default:
	}
	if s.wal != nil {
		err := s.wal.Sync()
		if cerr := s.wal.Close(); err == nil {
			err = cerr
		}
		s.wal = nil
		if err == nil {
			path := StoragePath(n.cfg.DataDir, name)
			err = os.Rename(path, path+idleSuffix)
		}
		if err != nil {
			n.log.Warn("reaping a service: its stable storage", "service", name, "err", err)
		}
	} else if m, ok := s.store.(*proc.MemStorage); ok {
		n.kept[name] = m.Log()
	}
	delete(n.services, name)
	byName := maps.Clone(n.services)
	n.byName.Store(&byName)
	s.stop()
	n.reaped.Add(1)
	n.log.Debug("reaped an idle service", "service", name, "idle", quiet)
	return true
}

// Reaped counts the services Reap stopped.
func (n *Node) Reaped() int64 { return n.reaped.Load() }

// nameSeed mixes a service name into the seed of its random source.
func nameSeed(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// now is the node's monotonic clock, running at Config.ClockRate.
func (n *Node) now() time.Duration {
	d := time.Since(n.start)
	if n.cfg.ClockRate != 1 {
		d = time.Duration(float64(d) * n.cfg.ClockRate)
	}
	return d
}

// real is how long d of the node's clock lasts in real time.
func (n *Node) real(d time.Duration) time.Duration {
	if n.cfg.ClockRate != 1 {
		d = time.Duration(float64(d) / n.cfg.ClockRate)
	}
	return d
}
