package explore

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

// latency is the one-way delay of every message: the unit of the time
// abstraction of Sync (a message is due within one latency of its send).
const latency = time.Millisecond

// run is one execution: a simulator driven by the explorer's queue, from
// the start through a schedule of choices.
type run struct {
	cfg  *Config
	s    *sim.Sim
	q    *queue
	rec  *recorder
	wl   *Workload
	h    *hasher
	used [3]int // faults used: crashes, losses, duplicates
	now  int64
	// With Config.Cycles: the processes waiting to enter (a bit each),
	// from the trace's first tracked events.
	waiting uint64
	tracked int
	// ph caches each process's state hash; 0: to be computed. A step
	// changes only the process it happens at, so a fingerprint rehashes
	// that one process, not all of them. phSum is the sum of their terms
	// in a fingerprint (procTerm), of those computed.
	ph    []uint64
	phSum uint64
	// rest caches the term of the workload's progress, the faults used
	// and the processes waiting (restTerm), with what it was computed of.
	rest restCache
	// perm, with symmetry, is the renaming that maps the state last
	// fingerprinted to its representative (symmetricFingerprint).
	perm []proc.ID
	// w marks the safety checkers a step may have broken (watch.go).
	w watch
	// With backtracking (save and restore): cp copies a process before
	// it steps, unless owned says it is the run's own already; into
	// the storage of a spare, a copy restore dropped, if it can
	// (Recycler). copies lists the copies made, in order, for restore
	// to tell which a restored state no longer holds.
	cp     *copier
	owned  []bool
	spare  [][]proc.Process
	copies []copied
	// path, for a run breadth first holds: the steps that reached it.
	path []choice
	// watchData: a watcher reads the events' Data (the deadlock
	// watchers); the others read their kinds and types.
	watchData bool
}

func (c *Config) newRun(h *hasher) (*run, error) {
	r := &run{cfg: c, h: h, ph: make([]uint64, c.Nodes)}
	r.q = &queue{next: -1, set: c.SetNetwork, h: h}
	r.watchData = slices.ContainsFunc(c.watchers, func(w watcher) bool { return w.dl != 0 })
	// A watcher that reads every event's Data reads it at once: then
	// deferring it only costs more.
	r.rec = &recorder{header: c.header(), cp: c.values, eager: r.watchData}
	r.wl = c.workload()
	scfg := sim.Config{
		Nodes:        c.Nodes,
		Seed:         c.seed(),
		New:          c.Algo.New,
		Network:      sim.Network{Latency: sim.Constant(latency), FIFO: c.FIFO},
		Queue:        r.q,
		Trace:        r.rec,
		Workload:     r.wl,
		MemoryBudget: -1,
		NoLabels:     c.noLabels,
		TraceOnly:    c.traceOnly,
	}
	if c.Crashes > 0 {
		// One crash per process, held pending: the explorer fires at most
		// Crashes of them, whenever it likes.
		for id := 0; id < c.Nodes; id++ {
			scfg.Faults = append(scfg.Faults, sim.Fault{Kind: sim.Crash, Node: proc.ID(id), At: time.Nanosecond})
		}
	}
	s, err := sim.New(scfg)
	if err != nil {
		return nil, err
	}
	r.s = s
	r.q.s = s
	if err := r.protect(s.Begin); err != nil {
		return nil, err
	}
	if slices.ContainsFunc(c.watchers, func(w watcher) bool { return w.mutex != 0 }) {
		r.w.mx.start(c.Nodes)
	}
	for _, w := range c.watchers {
		if m := w.dlModel; w.dl != 0 && !r.w.dlOn[m] {
			r.w.dl[m], r.w.dlOn[m] = *check.NewDeadlockWatch(c.Nodes, m == 1), true
		}
	}
	if len(c.watchers) > 0 {
		r.w.observe(c.watchers, r.rec.Since(0))
	}
	r.dropStale()
	return r, nil
}

// protect runs f and turns a process's panic into an error.
func (r *run) protect(f func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("a process panicked at t=%s: %v", trace.FormatNS(r.now), p)
		}
	}()
	f()
	return nil
}

// dropStale discards the timers that would do nothing (cancelled, or of a
// crashed incarnation): they are no choice.
func (r *run) dropStale() {
	q := r.q
	left := q.timers + q.fresh // the events that may be timers, to look at
	for i := 0; i < len(q.keys) && left > 0; {
		if in := &q.info[i]; in.ok && in.class != timerEvent {
			i++ // only a timer goes stale
			continue
		}
		left--
		if k := q.keys[i]; r.s.Stale(k.Slot) {
			q.remove(i)
			r.s.Lose(k, "stale")
			continue
		}
		i++
	}
}

// choices are the steps enabled in the current state, in a fixed order:
// the pending events' in Seq order (q.keys's), each event's acts in the
// order fire, drop, duplicate.
func (r *run) choices(out []choice) []choice {
	out, _ = r.enabled(out, nil, false)
	return out
}

// enabled appends the steps enabled now to chs (as choices orders them)
// and, if labelled, their labels to labels (in the same order).
//
// It runs once for every state depth first meets, so it is written as
// one loop that appends in place (a closure over chs and labels kept
// them in memory, not in registers).
func (r *run) enabled(chs []choice, labels []label, labelled bool) ([]choice, []label) {
	chs = chs[:0]
	c := r.cfg
	q := r.q
	inSync := c.Timing == Sync
	minOther, minTimer := int64(1<<62), int64(1<<62)
	if inSync {
		for i, k := range q.keys {
			switch q.ev(i).class {
			case timerEvent:
				minTimer = min(minTimer, k.At)
			case crashEvent:
			default:
				minOther = min(minOther, k.At)
			}
		}
	}
	crash := r.used[0] < c.Crashes
	drop, dup := r.used[1] < c.Losses, r.used[2] < c.Dups
	if !labelled {
		labels = nil
	} else if !drop && !dup && !c.FIFO {
		return r.fired(chs, labels, crash, inSync, minOther, minTimer)
	}
	// Room for every step, so that the loop stores without growing.
	room := len(q.keys)
	if drop {
		room += len(q.keys)
	}
	if dup {
		room += len(q.keys)
	}
	chs = slices.Grow(chs[:0], room)
	if labelled {
		labels = slices.Grow(labels[:0], room)
	}
	q.describeAll()
	keys, info := q.keys, q.info[:len(q.keys)]
	for i := range keys {
		e := &info[i]
		switch e.class {
		case crashEvent:
			if !crash || !r.s.Up(e.node) {
				continue
			}
		case timerEvent:
			if inSync && (keys[i].At > minOther || keys[i].At > minTimer) {
				continue // a timeout never fires before a message due earlier
			}
		case deliverEvent:
			if c.FIFO && slices.ContainsFunc(info[:i], func(o pending) bool {
				return o.class == deliverEvent && o.node == e.node && o.from == e.from
			}) {
				continue // an earlier message on the same channel goes first
			}
			if drop || dup {
				chs = append(chs, choice{keys[i].Seq, Fire})
				if labelled {
					labels = append(labels, labelOf(e, Fire, inSync))
				}
				if drop {
					chs = append(chs, choice{keys[i].Seq, Drop})
					if labelled {
						labels = append(labels, labelOf(e, Drop, inSync))
					}
				}
				if dup {
					chs = append(chs, choice{keys[i].Seq, Dup})
					if labelled {
						labels = append(labels, labelOf(e, Dup, inSync))
					}
				}
				continue
			}
		}
		chs = append(chs, choice{keys[i].Seq, Fire})
		if labelled {
			labels = append(labels, labelOf(e, Fire, inSync))
		}
	}
	return chs, labels
}

// fired is enabled, labelled, where every step fires an event (no loss
// or duplication to choose) and channels are not FIFO: the common case,
// in a loop small enough for its variables to stay in registers.
func (r *run) fired(chs []choice, labels []label, crash, inSync bool, minOther, minTimer int64) ([]choice, []label) {
	q := r.q
	q.describeAll()
	keys, info := q.keys, q.info[:len(q.keys)]
	chs, labels = slices.Grow(chs[:0], len(keys))[:len(keys)], slices.Grow(labels[:0], len(keys))[:len(keys)]
	n := 0
	for i := range keys {
		e := &info[i]
		node := int32(e.node)
		switch e.class {
		case crashEvent:
			if !crash || !r.s.Up(e.node) {
				continue
			}
		case timerEvent:
			if inSync {
				if keys[i].At > minOther || keys[i].At > minTimer {
					continue // a timeout never fires before a message due earlier
				}
				node = -1
			}
		}
		chs[n] = choice{keys[i].Seq, Fire}
		labels[n] = label{id: e.fire, node: node}
		n++
	}
	return chs[:n], labels[:n]
}

// apply takes one step. It returns an error if the choice names no
// pending event (a schedule of another run) or a process panicked.
func (r *run) apply(ch choice) error {
	i := r.q.find(ch.seq)
	if i < 0 {
		return fmt.Errorf("no pending event #%d", ch.seq)
	}
	k := r.q.keys[i]
	in := r.q.ev(i)
	class, node := in.class, in.node
	if ws := r.cfg.watchers; len(ws) > 0 {
		from := r.rec.Len()
		defer func() {
			if r.watchData {
				r.w.observe(ws, r.rec.Since(from))
			} else {
				r.w.observe(ws, r.rec.since(from))
			}
		}()
	}
	if node >= 0 && int(node) < len(r.ph) && r.ph[node] != 0 {
		// The one process the step may change.
		r.phSum -= procTerm(int(node), r.ph[node])
		r.ph[node] = 0
	}
	switch ch.act {
	case Drop:
		r.q.remove(i)
		r.s.Lose(k, "loss")
		r.used[1]++
		return nil
	case Dup:
		r.q.copyOf(i, r.s.Duplicate(k))
		r.used[2]++
	default:
		if r.cfg.SetNetwork && class == deliverEvent {
			r.q.copyOf(i, r.s.Copy(k)) // a message of a set is never used up
		}
	}
	if class == crashEvent {
		r.used[0]++
	}
	at := k.At
	switch {
	case class == crashEvent:
		at = r.now
	case r.cfg.Timing == Sync && class != timerEvent:
		// Due within its bound: it may come early, but not after a
		// timer due before it.
		for j, o := range r.q.keys {
			if r.q.ev(j).class == timerEvent {
				at = min(at, o.At)
			}
		}
	}
	at = max(at, r.now)
	r.now = at
	r.q.next, r.q.at = r.q.find(ch.seq), at
	if r.owned != nil && class != crashEvent {
		if err := r.own(r.cp, node, r.q.keys[r.q.next].Slot); err != nil {
			return err
		}
	}
	var err error
	if perr := r.protect(func() { r.s.Step() }); perr != nil {
		err = perr
	}
	r.dropStale()
	if r.cfg.Cycles {
		r.track()
	}
	return err
}

// fingerprint hashes the state: every process's state and whether it is
// up, the workload's state, the faults used, and the multiset of pending
// events by content (in Sync, with how far in the future each is due).
// Message ids, Seq numbers and absolute times are not state.
//
// With symmetry, it is the fingerprint of the state's representative
// (symmetricFingerprint).
func (r *run) fingerprint() uint64 {
	if r.cfg.Symmetry && len(r.cfg.Symmetric) > 1 {
		return r.symmetricFingerprint()
	}
	return r.fingerprintWith(nil)
}

// fingerprintWith fingerprints the state with every process i renamed
// perm[i] (nil: as it is). Without a renaming it is a sum of terms, one
// per process, one for the workload's progress and the faults used, one
// per pending event (a multiset hash: Clarke et al. 2003, "Incremental
// multiset hash functions"), mixed: a step changes the term of the one
// process it happens at and the events it adds and removes, so the sums
// are kept as the run goes (ph and phSum, the queue's sum) and only what
// changed is hashed: the processes that moved and, once each, the events
// pushed since. fingerprintFull computes the same value from scratch.
//
// With a renaming (symmetry, where fingerprints are compared to find the
// least) it hashes the processes in their new order, chained, as
// fingerprintFull does.
func (r *run) fingerprintWith(perm []proc.ID) uint64 {
	if perm != nil {
		return r.fingerprintFull(perm)
	}
	for id, h := range r.ph {
		if h == 0 {
			h = r.procHash(proc.ID(id), nil) | 1
			r.ph[id] = h
			r.phSum += procTerm(id, h)
		}
	}
	var events uint64
	if r.cfg.Timing == Sync { // an event's term depends on the time
		for i, k := range r.q.keys {
			if in := r.q.ev(i); in.class != crashEvent {
				events += mix64(r.timed(in.h, k.At))
			}
		}
	} else {
		r.q.describeAll()
		events = r.q.sum
	}
	return add(seed, r.phSum+r.restTerm()+events)
}

// stateSum is the sum of the terms of the fingerprint of a state in
// Async (fingerprintWith, whose value is add(seed, stateSum)), once it
// has been fingerprinted.
func (r *run) stateSum() uint64 { return r.phSum + r.restTerm() + r.q.sum }

// procTerm is process id's term in a fingerprint, its state hashing to h.
func procTerm(id int, h uint64) uint64 { return add(h, uint64(id)) }

// restCache is a term of the fingerprint and what it was computed of.
type restCache struct {
	next    []int
	used    [3]int
	waiting uint64
	term    uint64
	ok      bool
}

// restTerm is the fingerprint's term of the workload's progress, the
// faults used and, with Config.Cycles, the processes waiting: computed
// again only when they change, which most steps do not.
func (r *run) restTerm() uint64 {
	c := &r.rest
	if !c.ok || c.used != r.used || c.waiting != r.waiting || !slices.Equal(c.next, r.wl.next) {
		c.next = append(c.next[:0], r.wl.next...)
		c.used, c.waiting = r.used, r.waiting
		c.term, c.ok = r.hashRest(seed, r.wl.next, r.waiting), true
	}
	return c.term
}

// procHash hashes process id's state and whether it is up.
func (r *run) procHash(id proc.ID, perm []proc.ID) uint64 {
	var p any = r.s.Process(id)
	if pm, ok := p.(Permuter); ok && perm != nil {
		p = pm.PermuteIDs(perm)
	}
	up := uint64(0)
	if r.s.Up(id) {
		up = 1
	}
	return add(up, r.h.of(p))
}

// hashRest adds to h the workload's progress, the faults used and, with
// Config.Cycles, the processes waiting.
func (r *run) hashRest(h uint64, next []int, waiting uint64) uint64 {
	h = add(h, uint64(len(next)))
	for _, x := range next {
		h = add(h, uint64(x))
	}
	h = add(h, uint64(r.used[0])|uint64(r.used[1])<<16|uint64(r.used[2])<<32)
	if r.cfg.Cycles {
		h = add(h, waiting)
	}
	return h
}

// timed adds to an event's hash, in Sync, how far in the future it is
// due, or -1 if it is overdue (the time abstraction: absolute times are
// not state, and neither is by how much a message is late).
//
// Why an overdue event's lateness is not state: in Sync a timer is never
// overdue (time advances to a message's due time only up to the earliest
// timer, and to a timer's only when it is the earliest event), so an
// overdue message or input is due before every timer and holds them all
// back until it is handled, whatever its lateness; handling it leaves
// the time as it is (its time is raised to now), and later it is only
// more overdue. Two states that differ only in how late their overdue
// events are thus enable the same steps, which lead to states that again
// differ only so: the abstraction is a bisimulation, and every property
// of the states (safety, or the terminal ones) is judged as without it.
// Late is not the same as due now: a timer due now may fire before a
// message due now, not before one already late.
func (r *run) timed(h uint64, at int64) uint64 {
	if r.cfg.Timing == Sync {
		late := int64(-1)
		if exactLateness {
			late = math.MinInt64
		}
		h = add(h, uint64(max(at-r.now, late)))
	}
	return h
}

// fingerprintFull fingerprints the state from scratch, with every
// process i renamed perm[i] (nil: as it is, the sum fingerprintWith
// keeps: plainFull). Renamed, the processes are hashed in their new
// order, chained.
func (r *run) fingerprintFull(perm []proc.ID) uint64 {
	if perm == nil {
		return r.plainFull()
	}
	n := r.cfg.Nodes
	r.h.perm = perm
	defer func() { r.h.perm = nil }()
	rename := func(id proc.ID) proc.ID {
		if id >= 0 && int(id) < n {
			return perm[id]
		}
		return id
	}
	// Processes by their new names: old name of each.
	order := make([]proc.ID, n)
	for id := range order {
		order[rename(proc.ID(id))] = proc.ID(id)
	}
	h := uint64(seed)
	for _, id := range order {
		h = add(h, r.procHash(id, perm)|1)
	}
	next := r.wl.next
	if next != nil {
		next = make([]int, len(r.wl.next))
		for id, x := range r.wl.next {
			next[perm[id]] = x
		}
	}
	w := uint64(0)
	for id := 0; id < n; id++ {
		if r.waiting&(1<<uint(id)) != 0 {
			w |= 1 << uint(perm[id])
		}
	}
	h = r.hashRest(h, next, w)
	var sum uint64
	for _, k := range r.q.keys {
		p := r.s.Describe(k.Slot)
		if isCrash(p) {
			continue
		}
		sum += mix64(r.timed(eventHash(p, r.h.of(r.s.Payload(k.Slot)), rename), k.At))
	}
	return add(h, sum)
}

// plainFull is the fingerprint fingerprintWith(nil) keeps, from scratch.
func (r *run) plainFull() uint64 {
	var sum uint64
	for id := 0; id < r.cfg.Nodes; id++ {
		sum += procTerm(id, r.procHash(proc.ID(id), nil)|1)
	}
	sum += r.hashRest(seed, r.wl.next, r.waiting)
	for _, k := range r.q.keys {
		if p := r.s.Describe(k.Slot); !isCrash(p) {
			sum += mix64(r.timed(eventHash(p, r.h.of(r.s.Payload(k.Slot)), nil), k.At))
		}
	}
	return add(seed, sum)
}

// exactLateness keeps how late each overdue event is in the fingerprint
// (as the explorer once did), for tests that compare.
var exactLateness = false

// recorder is the run's trace as a chain: the events up to the state it
// was forked from are frozen segments shared with the other forks (never
// changed, but for the Data they are given when first read: see
// segment.encode), its own since are its tail. Forking freezes the tail, so a
// fork costs no copy of the trace; the whole trace is put together only
// when it is read (to judge a property, or to show a counterexample).
//
// It is a sim.DeferringSink: an input's or output's Data is encoded only
// when the event is read (Since, view, Trace), not as it is recorded; a
// value that may change after it is recorded is copied (by cp; encoded
// at once if there is none, or it cannot be copied).
type recorder struct {
	header trace.Header
	base   *segment
	tail   []trace.Event
	vals   []deferred // the tail's events whose Data is not encoded yet
	cp     *copier
	eager  bool // encode every Data as it is recorded
}

// deferred is the value of the i-th event's Data, to be encoded.
type deferred struct {
	i int
	v any
}

// segment is a frozen run of events, after its parent's.
type segment struct {
	parent *segment
	events []trace.Event
	vals   []deferred // their Data not encoded in events
	n      int        // events up to and including these
}

func (r *recorder) Record(e *trace.Event) { r.tail = append(r.tail, *e) }

func (r *recorder) RecordDeferred(e *trace.Event, v any, plain bool) {
	if r.eager {
		e.Data = sim.EncodeData(v)
		r.Record(e)
		return
	}
	if !plain {
		if r.cp == nil {
			e.Data = sim.EncodeData(v)
			r.Record(e)
			return
		}
		r.cp.err = nil
		if c := r.cp.value(v); r.cp.err == nil {
			v = c
		} else {
			e.Data = sim.EncodeData(v)
			r.Record(e)
			return
		}
	}
	r.vals = append(r.vals, deferred{r.Len(), v})
	r.tail = append(r.tail, *e)
}

// Len is the number of events so far.
func (r *recorder) Len() int { return r.base.len() + len(r.tail) }

func (s *segment) len() int {
	if s == nil {
		return 0
	}
	return s.n
}

// freeze makes the tail a segment that forks share, and returns a
// recorder for a fork.
func (r *recorder) freeze() *recorder {
	if len(r.tail) > 0 {
		r.base = &segment{parent: r.base, events: slices.Clip(r.tail), vals: slices.Clip(r.vals), n: r.Len()}
		r.tail, r.vals = nil, nil
	}
	return &recorder{header: r.header, base: r.base, cp: r.cp, eager: r.eager}
}

// truncate cuts the trace back to its first n events. If some of those
// to cut were frozen since (the run was forked), it goes back to the
// segment that holds the n-th event and copies what it keeps of it.
func (r *recorder) truncate(n int) {
	if b := r.base.len(); n >= b {
		r.tail = r.tail[:n-b]
		r.vals = cut(r.vals, n)
		return
	}
	s := r.base
	for s != nil && s.n-len(s.events) >= n {
		s = s.parent // wholly after the cut
	}
	switch {
	case s == nil:
		r.base, r.tail, r.vals = nil, r.tail[:0], r.vals[:0]
	case s.n == n:
		r.base, r.tail, r.vals = s, r.tail[:0], r.vals[:0]
	default:
		r.base = s.parent
		r.tail = append(r.tail[:0], s.events[:n-(s.n-len(s.events))]...)
		r.vals = append(r.vals[:0], cut(s.vals, n)...)
	}
}

// cut returns the values of vals (in the order of their events) of the
// events before the n-th.
func cut(vals []deferred, n int) []deferred {
	for len(vals) > 0 && vals[len(vals)-1].i >= n {
		vals = vals[:len(vals)-1]
	}
	return vals
}

// encode encodes the Data of the tail's events from the i-th on.
func (r *recorder) encode(i int) {
	b := r.base.len()
	for len(r.vals) > 0 {
		d := r.vals[len(r.vals)-1]
		if d.i < i {
			return
		}
		r.tail[d.i-b].Data = sim.EncodeData(d.v)
		r.vals = r.vals[:len(r.vals)-1]
	}
}

// Since returns the events from index i on (shared: not to be changed).
func (r *recorder) Since(i int) []trace.Event {
	if b := r.base.len(); i >= b {
		r.encode(i)
		return r.tail[i-b:]
	}
	return r.Trace().Events[i:]
}

// since is Since without the events' Data (nil where it was deferred),
// for readers of their kinds and types only.
func (r *recorder) since(i int) []trace.Event {
	if b := r.base.len(); i >= b {
		return r.tail[i-b:]
	}
	return r.Trace().Events[i:]
}

// view returns the whole trace so far, to be read at once and not kept:
// the tail itself if it is the whole trace, else a copy.
func (r *recorder) view() *trace.Trace {
	if r.base == nil {
		r.encode(0)
		return &trace.Trace{Header: r.header, Events: r.tail}
	}
	return r.Trace()
}

// Trace returns the whole trace so far, a copy of its own.
func (r *recorder) Trace() *trace.Trace {
	t := &trace.Trace{Header: r.header, Events: make([]trace.Event, r.Len())}
	r.encode(r.base.len())
	copy(t.Events[r.base.len():], r.tail)
	for s := r.base; s != nil; s = s.parent {
		s.encode()
		copy(t.Events[s.n-len(s.events):], s.events)
	}
	return t
}

// encode encodes the Data of the segment's events whose Data was
// deferred, once for all the forks that share it: a frozen segment's
// events never change but to be given their Data when first read.
func (s *segment) encode() {
	first := s.n - len(s.events)
	for _, d := range s.vals {
		s.events[d.i-first].Data = sim.EncodeData(d.v)
	}
	s.vals = nil
}
