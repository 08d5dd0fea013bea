package live

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/trace"
)

// A traced payload carries, after the service name, a flag byte and, when
// the flag says so, the message's id and the sender's vector clock — so the
// receiver can record the receipt with the id that links it to its send,
// and both can keep vector timestamps:
//
//	name-length name flags [msg-id vc-length vc...] codec-bytes
//
// In a cluster that members join (Config.IDs), the vector clock grows as
// they do; once it counts a member that joined (an ID at or above
// Config.N), it is sent as its nonzero entries keyed by process ID, each
// ID as its distance from the one before (flagSparse):
//
//	name-length name flags msg-id entries (id-delta value)... codec-bytes
const (
	flagTraced = 1
	flagSparse = 2
)

// unlinked marks the id of a receipt whose message came without one (its
// sender does not trace): the receiver gives it an id of its own, with
// this bit and the receiver in the high bits, so that the trace stays
// readable and the integrity checker names the receipt whose send it
// does not hold.
const unlinked = 1 << 63

// tracer records a node's events in Cohort's JSONL trace format. Its clocks
// are the node's: one Lamport counter and one vector clock for all the
// node's services.
//
// Recording states (Config.TraceStates), each step of a service — the
// handling of one message, timer or input, or its start — is opened
// (beginStep) and closed (endStep) with the process's description of
// its state, which goes into the step's last event, as the simulator
// records it. Meanwhile the step's events wait in held, and so does every
// event recorded after them by the node's other services, so that the
// file keeps the order in which the events were numbered and stamped.
type tracer struct {
	mu   sync.Mutex
	w    *trace.Writer
	self proc.ID
	// vc is the node's vector clock, one entry per slot. In a closed
	// trace slot p is process p (n slots); in an open one a process gets
	// a slot when the node first hears of it (ids[k] is slot k's process,
	// slot its inverse), so a member that joined with a high ID costs one
	// entry, not an array up to its ID. An absent entry is 0.
	vc      []uint64
	ids     []int
	slot    map[int]int
	open    bool
	index   int
	nextMsg uint64

	states   bool
	held     []heldEvent
	steps    map[uint64]bool // the steps begun and not ended
	lastStep uint64
}

// heldEvent is an event waiting for the end of a step: its own (step > 0),
// or one begun before it.
type heldEvent struct {
	e    trace.Event
	step uint64
}

// newTracer starts a trace of node self in a cluster of n founders and,
// if ids > n, an ID space of ids that members join (an open trace, whose
// vector clocks grow as they do: trace.Header.IDs), or continues one.
func newTracer(w io.Writer, self proc.ID, n, ids int, family, algo string, resume *TraceResume, states bool) (*tracer, error) {
	h := trace.Header{Nodes: n, Family: family, Algo: algo}
	if ids > n {
		h.IDs = ids
	}
	t := &tracer{self: self, open: h.Open(), states: states, steps: map[uint64]bool{}, slot: map[int]int{}}
	if !t.open {
		t.vc = make([]uint64, n)
	}
	if resume == nil {
		t.w = trace.NewWriter(w, h)
		return t, nil
	}
	if resume.IDs != h.IDs {
		return nil, fmt.Errorf("the trace to continue was begun with an ID space of %d (0: no joins), this node's is %d: move it away", resume.IDs, h.IDs)
	}
	// Continue a trace a previous incarnation of this node wrote: its
	// events keep their numbers and clocks, and the trace says that the
	// incarnation stopped (when, it cannot tell: just after its last event)
	// and that this one starts afresh.
	t.w = trace.NewEventWriter(w, h)
	t.index = resume.Next
	t.merge(resume.VC)
	t.nextMsg = resume.NextMsg
	t.record(0, trace.Crash, func(e *trace.Event) { e.Time = resume.LastTime + 1 })
	t.record(0, trace.Recover, nil)
	return t, nil
}

// merge merges vc into the node's vector clock: a closed trace's keeps
// its n entries (a longer vector from a peer is cut to them), an open
// one's takes a slot for each process it hears of. The caller holds mu,
// or owns t.
func (t *tracer) merge(vc trace.VC) {
	for p, x := range vc.Entries() {
		if k, ok := t.slotOf(p); ok && x > t.vc[k] {
			t.vc[k] = x
		}
	}
}

// slotOf is process p's slot in the clock, given one if the trace is
// open and p has none; false: a closed trace has no place for p.
func (t *tracer) slotOf(p int) (int, bool) {
	if !t.open {
		return p, p < len(t.vc)
	}
	k, ok := t.slot[p]
	if !ok {
		k = len(t.vc)
		t.slot[p] = k
		t.ids, t.vc = append(t.ids, p), append(t.vc, 0)
	}
	return k, true
}

// clock is the node's vector clock as a trace.VC: the n entries of a
// closed trace, in an array of its own; an open one's in the form
// trace.CompactVC chooses (by process ID once a high ID counts).
func (t *tracer) clock() trace.VC {
	if !t.open {
		return trace.DenseVC(slices.Clone(t.vc))
	}
	return trace.SparseVC(t.ids, t.vc)
}

// TraceResume continues a node's trace file after a restart: the next event
// index, the node's last vector clock and the time of its last event, the
// next message number (so message ids stay unique), and the ID space the
// file's header names (trace.Header.IDs: 0 for a cluster without joins).
type TraceResume struct {
	Next     int
	VC       trace.VC
	LastTime int64
	NextMsg  uint64
	IDs      int
}

// ResumeFrom reads what a trace file of this node already holds and
// returns how to continue it, and the file's length up to its last whole
// line (a node killed mid-write leaves a torn line, to be cut off). A
// missing or empty file gives nil: start a new trace.
func ResumeFrom(data []byte, self proc.ID) (*TraceResume, int, error) {
	end := bytes.LastIndexByte(data, '\n') + 1
	if end == 0 {
		return nil, 0, nil
	}
	t, err := trace.Read(bytes.NewReader(data[:end]))
	if err != nil {
		return nil, 0, err
	}
	r := &TraceResume{IDs: t.Header.IDs}
	for _, e := range t.Events {
		if e.Node != int32(self) {
			return nil, 0, fmt.Errorf("event %d is node %d's, not node %d's", e.Index, e.Node, self)
		}
		r.Next, r.LastTime = e.Index+1, e.Time
		if !e.VC.IsZero() {
			r.VC = e.VC
		}
		own := e.Kind == trace.Send || e.Kind == trace.Recv && e.Msg&unlinked != 0
		if own && e.Msg&(1<<40-1) >= r.NextMsg {
			r.NextMsg = e.Msg & (1<<40 - 1)
		}
	}
	return r, end, nil
}

// OpenTrace opens a node's trace file for writing, and says how to
// continue it if an earlier incarnation of the node wrote it (see
// ResumeFrom; a line torn by a kill is cut off). The file is created if
// it does not exist; nil resume: start a new trace.
func OpenTrace(path string, self proc.ID) (f *os.File, resume *TraceResume, err error) {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, err
	}
	resume, end, err := ResumeFrom(data, self)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: cannot continue it (%v); move it away", path, err)
	}
	if f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644); err != nil {
		return nil, nil, err
	}
	if err := f.Truncate(int64(end)); err != nil {
		f.Close()
		return nil, nil, err
	}
	if _, err := f.Seek(int64(end), 0); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, resume, nil
}

// record writes one event of this node, of step (0: of none), after fill
// sets its particulars; the clocks tick first (a receipt merges the
// sender's clocks first). It returns the event's vector timestamp.
func (t *tracer) record(step uint64, kind trace.Kind, fill func(e *trace.Event)) trace.VC {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.recordLocked(step, kind, fill)
}

// recordLocked is record for a caller that holds mu.
func (t *tracer) recordLocked(step uint64, kind trace.Kind, fill func(e *trace.Event)) trace.VC {
	self, ok := t.slotOf(int(t.self))
	if !ok { // a closed trace's node beyond its founders (not configured so)
		t.vc = append(t.vc, make([]uint64, self+1-len(t.vc))...)
	}
	t.vc[self]++
	e := trace.Event{Index: t.index, Node: int32(t.self), Kind: kind, Peer: -1}
	if fill != nil {
		fill(&e)
	}
	// The sum of a vector clock's entries is a Lamport clock: it grows
	// strictly along every happened-before edge, and needs nothing more on
	// the wire.
	var sum uint64
	for _, v := range t.vc {
		sum += v
	}
	if e.Time == 0 {
		e.Time = time.Now().UnixNano()
	}
	vc := t.clock()
	e.Local, e.Lamport, e.VC = e.Time, sum, vc
	t.index++
	if step != 0 || len(t.held) > 0 {
		t.held = append(t.held, heldEvent{e, step})
		return vc
	}
	t.w.Record(&e)
	// Every event reaches the file at once: a node may be killed at any
	// moment, and the trace must then hold all it did.
	_ = t.w.Flush()
	return vc
}

// beginStep opens a step of a service and returns its number, or 0 if
// the tracer records no states.
func (t *tracer) beginStep() uint64 {
	if !t.states {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lastStep++
	t.steps[t.lastStep] = true
	return t.lastStep
}

// endStep closes step: state (nil: none) goes into the step's last event,
// and the events no open step holds back are written.
func (t *tracer) endStep(step uint64, state json.RawMessage) {
	if step == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for j := len(t.held) - 1; j >= 0 && state != nil; j-- {
		if h := &t.held[j]; h.step == step && h.e.Kind.IsProcess() {
			h.e.State = state
			break
		}
	}
	delete(t.steps, step)
	k := 0
	for ; k < len(t.held) && !t.steps[t.held[k].step]; k++ {
		t.w.Record(&t.held[k].e)
	}
	if k > 0 {
		t.held = append(t.held[:0], t.held[k:]...)
		_ = t.w.Flush()
	}
}

// send records a send and returns the message's id and the vector clock
// the message carries.
func (t *tracer) send(service string, step uint64, to proc.ID, m proc.Message) (uint64, trace.VC) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.nextMsg++
	// Ids are unique in the cluster: the sender in the high bits.
	id := uint64(t.self)<<40 | t.nextMsg
	vc := t.recordLocked(step, trace.Send, func(e *trace.Event) {
		e.Msg, e.Peer, e.Type, e.Label, e.Service = id, int32(to), m.Kind(), label(m), service
	})
	return id, vc
}

// recv records the receipt of message id, which carried vc; id 0: the
// message came untraced (see unlinked). The merge and the event are one
// step under mu: an event of another service recorded between them would
// carry the sender's clock ahead of the receipt that brought it, and
// break the clock condition in the file (a container test's whole-cluster
// restart, where every service greets every node at once, showed it).
func (t *tracer) recv(service string, step uint64, from proc.ID, id uint64, vc trace.VC, m proc.Message) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.merge(vc)
	if id == 0 {
		t.nextMsg++
		id = unlinked | uint64(t.self)<<40 | t.nextMsg
	}
	t.recordLocked(step, trace.Recv, func(e *trace.Event) {
		e.Msg, e.Peer, e.Type, e.Label, e.Service = id, int32(from), m.Kind(), label(m), service
	})
}

func (t *tracer) flush() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.w.Flush()
}

func label(v any) string {
	if s, ok := v.(fmt.Stringer); ok {
		return s.String()
	}
	return ""
}

func data(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil || string(b) == "{}" || string(b) == "null" {
		return nil
	}
	return b
}

// appendTrailer appends a traced payload's flag, id and clock: the clock's
// entries in order, or if sparse its nonzero entries keyed by process ID.
func appendTrailer(b []byte, id uint64, vc trace.VC, sparse bool) []byte {
	if !sparse {
		b = append(b, flagTraced)
		b = binary.AppendUvarint(b, id)
		b = binary.AppendUvarint(b, uint64(vc.Len()))
		for p := range vc.Len() {
			b = binary.AppendUvarint(b, vc.At(p))
		}
		return b
	}
	b = append(b, flagTraced|flagSparse)
	b = binary.AppendUvarint(b, id)
	entries := 0
	for range vc.Entries() {
		entries++
	}
	b = binary.AppendUvarint(b, uint64(entries))
	last := -1
	for p, v := range vc.Entries() { // ascending by process, nonzero
		b = binary.AppendUvarint(b, uint64(p-last))
		b = binary.AppendUvarint(b, v)
		last = p
	}
	return b
}

// readTrailer reads the flag byte and, if present, the id and clock; n is
// the ID space (the cluster's size, or the IDs members may join with),
// which bounds the clock's length. A sparse clock is returned in the form
// trace.CompactVC chooses: an array up to its last nonzero entry while
// that is short or dense enough, else by process ID.
func readTrailer(b []byte, n int) (id uint64, vc trace.VC, rest []byte, err error) {
	if len(b) == 0 {
		return 0, vc, nil, errors.New("no flag byte")
	}
	flags, b := b[0], b[1:]
	if flags&^(flagTraced|flagSparse) != 0 || flags == flagSparse {
		return 0, vc, nil, fmt.Errorf("unknown flags %#x", flags)
	}
	if flags&flagTraced == 0 {
		return 0, vc, b, nil
	}
	id, k := binary.Uvarint(b)
	if k <= 0 {
		return 0, vc, nil, errors.New("bad message id")
	}
	b = b[k:]
	l, k := binary.Uvarint(b)
	if k <= 0 || l > uint64(n) {
		return 0, vc, nil, fmt.Errorf("vector clock of %d entries in a cluster of %d", l, n)
	}
	b = b[k:]
	next := func() (uint64, error) {
		v, k := binary.Uvarint(b)
		if k <= 0 {
			return 0, errors.New("truncated vector clock")
		}
		b = b[k:]
		return v, nil
	}
	if flags&flagSparse == 0 {
		c := make([]uint64, l)
		for i := range c {
			if c[i], err = next(); err != nil {
				return 0, vc, nil, err
			}
		}
		return id, trace.DenseVC(c), b, nil
	}
	// Entry k's ID is the previous one's plus its delta (the first's, −1
	// plus it): deltas of at least 1 keep the IDs rising.
	ps, vs := make([]int, l), make([]uint64, l)
	last := -1
	for k := range ps {
		d, err := next()
		if err != nil {
			return 0, vc, nil, err
		}
		if d == 0 || d >= uint64(n-last) {
			return 0, vc, nil, fmt.Errorf("vector clock entry %d: ID %d+%d, beyond the ID space of %d", k, last, d, n)
		}
		last += int(d)
		if vs[k], err = next(); err != nil {
			return 0, vc, nil, err
		}
		ps[k] = last
	}
	return id, trace.SparseVC(ps, vs), b, nil
}

// Merge combines the traces of a cluster's nodes into one, ordered by the
// nodes' wall clocks (on one machine, or with synchronized clocks, that is
// the real order) and renumbered. The traces of a cluster that members
// join (trace.Header.IDs) may know of different members: the merged
// trace has a process for each one any of them names. Each node's own order is kept. Times
// count from the first event of any node, as a trace's times count from
// the run's beginning (a simulated one's from 0); each event's Local keeps
// the wall-clock reading of its node.
func Merge(ts ...*trace.Trace) (*trace.Trace, error) {
	if len(ts) == 0 {
		return nil, errors.New("no traces")
	}
	out := &trace.Trace{Header: ts[0].Header}
	for _, t := range ts[1:] {
		h, o := t.Header, out.Header
		switch {
		case h.IDs != o.IDs:
			return nil, fmt.Errorf("traces of clusters with ID spaces of %d and %d (0: no joins)", o.IDs, h.IDs)
		case h.Open():
			// Each file names the members its node heard of: the
			// merged trace has a process for every one of them.
			out.Header.Nodes = max(o.Nodes, h.Nodes)
		case h.Nodes != o.Nodes:
			return nil, fmt.Errorf("traces of clusters of %d and %d nodes", o.Nodes, h.Nodes)
		}
		// Each node's trace of one run names the same algorithm (a node's
		// trace directory holds one trace per kind of service: merge the
		// nodes' files of one kind).
		if h.Family != o.Family || h.Algo != o.Algo {
			return nil, fmt.Errorf("traces of different runs: %s/%s and %s/%s", o.Family, o.Algo, h.Family, h.Algo)
		}
	}
	type ref struct{ t, i int }
	var all []ref
	for ti, t := range ts {
		for i := range t.Events {
			all = append(all, ref{ti, i})
		}
	}
	slices.SortStableFunc(all, func(a, b ref) int {
		ea, eb := &ts[a.t].Events[a.i], &ts[b.t].Events[b.i]
		switch {
		case ea.Time != eb.Time:
			return int(min(max(ea.Time-eb.Time, -1), 1))
		case a.t != b.t:
			return a.t - b.t
		}
		return a.i - b.i
	})
	for k, r := range all {
		e := ts[r.t].Events[r.i]
		e.Index = k
		out.Events = append(out.Events, e)
	}
	// A receipt stamped (by another node's clock) before its send would
	// read as time going backwards; keep the merged trace monotone.
	for i := 1; i < len(out.Events); i++ {
		out.Events[i].Time = max(out.Events[i].Time, out.Events[i-1].Time)
	}
	if len(out.Events) > 0 {
		start := out.Events[0].Time
		for i := range out.Events {
			out.Events[i].Time -= start
		}
	}
	return out, nil
}

// ConsistentCut returns the nodes' traces cut to their largest consistent
// cut (Chandy & Lamport; Mattern 1989), and how many events it left out.
// A node's file is a prefix of what it did, and each event's vector clock
// counts what it knows of every node: an event that knows more of node q
// than q's file holds follows a send q had not written yet — a file still
// being written (merged while the cluster runs), or events a node killed
// in the middle of a step took with it. Such an event, and every later one
// of its node, is left out, until every event kept knows only of events
// kept. The traces are resliced, not modified. Nodes without a file cut
// nothing.
func ConsistentCut(ts []*trace.Trace) ([]*trace.Trace, int) {
	out := make([]*trace.Trace, len(ts))
	frontier := map[int32]uint64{} // node → its last kept event's own clock entry
	for i, t := range ts {
		c := *t
		out[i] = &c
		if n := len(t.Events); n > 0 {
			e := t.Events[n-1]
			if int(e.Node) < e.VC.Len() {
				frontier[e.Node] = e.VC.At(int(e.Node))
			}
		}
	}
	cut := 0
	for changed := true; changed; {
		changed = false
		for _, t := range out {
			for k, e := range t.Events {
				if !beyond(e, frontier) {
					continue
				}
				cut += len(t.Events) - k
				t.Events = t.Events[:k]
				frontier[e.Node] = 0
				if k > 0 && int(e.Node) < t.Events[k-1].VC.Len() {
					frontier[e.Node] = t.Events[k-1].VC.At(int(e.Node))
				}
				changed = true
				break
			}
		}
	}
	return out, cut
}

// beyond reports whether e knows of an event of another node past that
// node's frontier.
func beyond(e trace.Event, frontier map[int32]uint64) bool {
	for q, v := range e.VC.Entries() {
		if f, ok := frontier[int32(q)]; ok && int32(q) != e.Node && v > f {
			return true
		}
	}
	return false
}
