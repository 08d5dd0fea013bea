package explore

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"unsafe"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
)

// Cloner is the fast path an algorithm's process may implement: an
// independent deep copy of its state. Without it, or if Clone returns nil
// (a wrapper whose wrapped process has none), a process is copied
// reflectively (see copier).
type Cloner interface {
	Clone() proc.Process
}

// Recycler is a Cloner that can also copy itself into the storage of an
// earlier copy (dst, one of its own algorithm's that nobody holds any
// more), rather than allocate: backtracking then makes one process
// copy a step without garbage. It returns the copy (dst's storage reused
// as it can be), or nil if dst will not do.
type Recycler interface {
	CloneInto(dst proc.Process) proc.Process
}

// errNoClone: a state holds something the copier will not copy (a
// channel); the model is explored by replay instead.
var errNoClone = errors.New("a process holds a channel: not cloned")

// copier deep-copies values by reflection, with a copy plan compiled once
// per type and cached (as encoding/gob compiles its engines): a type with
// nothing mutable behind a reference — numbers, strings, arrays and
// structs of them — is copied by one assignment; a struct is assigned
// whole and then only its mutable fields are copied deeply; pointers,
// slices and maps get fresh storage. Unexported fields are copied too.
// Funcs are shared (a closure's captured state is not copied: processes
// are state machines, their funcs are configuration); a channel is an
// error. A pointer met twice in one copy is copied once (memo), so shared
// structure and cycles survive; a pointer into the middle of a slice or
// a struct that is copied elsewhere is copied apart.
type copier struct {
	memo  map[unsafe.Pointer]unsafe.Pointer
	plans map[reflect.Type]*plan // compiled once per type
	err   error
	// immutable remembers types with nothing mutable (value's common
	// case, a message of plain fields, handed over on every step) by
	// their type word, in a small table indexed by its address, as
	// hasher.dynPlan does: value then costs them no map lookup.
	immutable [16]unsafe.Pointer
}

type plan struct {
	mutable bool       // holds a pointer, slice, map or interface
	fields  []fieldRef // struct: its mutable fields
}

type fieldRef struct {
	off uintptr
	typ reflect.Type
}

func (c *copier) planOf(t reflect.Type) *plan {
	if p, ok := c.plans[t]; ok {
		return p
	}
	p := &plan{}
	c.plans[t] = p // a recursive type sees itself as not yet known…
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface, reflect.Chan, reflect.UnsafePointer:
		p.mutable = true
	case reflect.Array:
		p.mutable = c.planOf(t.Elem()).mutable
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if c.planOf(f.Type).mutable {
				p.fields = append(p.fields, fieldRef{f.Offset, f.Type})
			}
		}
		p.mutable = len(p.fields) > 0
	}
	return p // …which is right: only a pointer, slice or map can recur
}

func newCopier() *copier {
	return &copier{memo: map[unsafe.Pointer]unsafe.Pointer{}, plans: map[reflect.Type]*plan{}}
}

// process copies a process's state.
func (c *copier) process(p proc.Process) proc.Process {
	if cl, ok := p.(Cloner); ok {
		if c := cl.Clone(); c != nil {
			return c
		}
	}
	return c.iface(p).(proc.Process)
}

// processInto copies a process's state, into dst's storage if the
// process is a Recycler and dst is not nil.
func (c *copier) processInto(p, dst proc.Process) proc.Process {
	if rc, ok := p.(Recycler); ok && dst != nil {
		if c := rc.CloneInto(dst); c != nil {
			return c
		}
	}
	return c.process(p)
}

// value copies a payload in flight, unless nothing in it is mutable.
func (c *copier) value(v any) any {
	word := (*[2]unsafe.Pointer)(unsafe.Pointer(&v))[0] // v's dynamic type
	known := &c.immutable[(uintptr(word)>>4)%uintptr(len(c.immutable))]
	if *known == word {
		return v
	}
	if !c.planOf(reflect.TypeOf(v)).mutable {
		*known = word
		return v
	}
	return c.iface(v)
}

// iface copies the dynamic value of an interface.
func (c *copier) iface(v any) any {
	if len(c.memo) > 0 {
		clear(c.memo)
	}
	t := reflect.TypeOf(v)
	tmp := reflect.New(t)
	tmp.Elem().Set(reflect.ValueOf(v))
	ptr := tmp.UnsafePointer()
	c.copy(t, ptr, ptr)
	return tmp.Elem().Interface()
}

// copy makes *dst (of type t) a deep copy of *src; dst may be src (the
// value is then made independent in place).
func (c *copier) copy(t reflect.Type, dst, src unsafe.Pointer) {
	p := c.planOf(t)
	if dst != src {
		reflect.NewAt(t, dst).Elem().Set(reflect.NewAt(t, src).Elem())
	}
	if !p.mutable {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		for _, f := range p.fields {
			c.copy(f.typ, unsafe.Add(dst, f.off), unsafe.Add(src, f.off))
		}
	case reflect.Array:
		et, size := t.Elem(), t.Elem().Size()
		for i := 0; i < t.Len(); i++ {
			c.copy(et, unsafe.Add(dst, uintptr(i)*size), unsafe.Add(src, uintptr(i)*size))
		}
	case reflect.Pointer:
		old := *(*unsafe.Pointer)(src)
		if old == nil {
			return
		}
		if n, ok := c.memo[old]; ok {
			*(*unsafe.Pointer)(dst) = n
			return
		}
		et := t.Elem()
		if et.Size() == 0 {
			return // all zero-size values are one
		}
		n := reflect.New(et).UnsafePointer()
		c.memo[old] = n
		c.copy(et, n, old)
		*(*unsafe.Pointer)(dst) = n
	case reflect.Slice:
		v := reflect.NewAt(t, src).Elem()
		if v.IsNil() {
			return
		}
		n := reflect.MakeSlice(t, v.Len(), v.Cap())
		reflect.Copy(n, v)
		if et := t.Elem(); c.planOf(et).mutable {
			base, size := n.UnsafePointer(), et.Size()
			for i := 0; i < v.Len(); i++ {
				e := unsafe.Add(base, uintptr(i)*size)
				c.copy(et, e, e)
			}
		}
		reflect.NewAt(t, dst).Elem().Set(n)
	case reflect.Map:
		v := reflect.NewAt(t, src).Elem()
		if v.IsNil() {
			return
		}
		n := reflect.MakeMapWithSize(t, v.Len())
		kt, et := t.Key(), t.Elem()
		deepK, deepE := c.planOf(kt).mutable, c.planOf(et).mutable
		it := v.MapRange()
		for it.Next() {
			k, e := it.Key(), it.Value()
			if deepK {
				k = c.fresh(kt, k)
			}
			if deepE {
				e = c.fresh(et, e)
			}
			n.SetMapIndex(k, e)
		}
		reflect.NewAt(t, dst).Elem().Set(n)
	case reflect.Interface:
		v := reflect.NewAt(t, src).Elem()
		if v.IsNil() {
			return
		}
		e := v.Elem()
		if !c.planOf(e.Type()).mutable {
			return // the boxed value cannot change: shared
		}
		reflect.NewAt(t, dst).Elem().Set(c.fresh(e.Type(), e))
	case reflect.Chan:
		if c.err == nil {
			c.err = fmt.Errorf("%w (%s)", errNoClone, t)
		}
	}
}

// fresh returns a deep copy of v (of type t) as a new value.
func (c *copier) fresh(t reflect.Type, v reflect.Value) reflect.Value {
	tmp := reflect.New(t)
	tmp.Elem().Set(v)
	ptr := tmp.UnsafePointer()
	c.copy(t, ptr, ptr)
	return tmp.Elem()
}

// fork returns an independent copy of the run: the explorer branches by
// forking where it used to replay the path from the start.
func (r *run) fork(c *copier) (*run, error) {
	c.err = nil
	f := &run{cfg: r.cfg, h: r.h, used: r.used, now: r.now, waiting: r.waiting, tracked: r.tracked, ph: slices.Clone(r.ph), phSum: r.phSum, w: r.w.clone(), cp: r.cp, watchData: r.watchData}
	f.q = &queue{keys: slices.Clone(r.q.keys), info: slices.Clone(r.q.info), next: -1, set: r.q.set, h: r.h, added: slices.Clone(r.q.added), known: maps.Clone(r.q.known), sum: r.q.sum, fresh: r.q.fresh, timers: r.q.timers}
	f.rec = r.rec.freeze()
	f.wl = &Workload{Inputs: r.wl.Inputs, Gate: r.wl.Gate, Answer: r.wl.Answer, next: slices.Clone(r.wl.next)}
	s, err := r.s.Fork(sim.Fork{Queue: f.q, Trace: f.rec, Workload: f.wl, Process: c.process, Value: c.value})
	if err != nil {
		return nil, err
	}
	if c.err != nil {
		return nil, c.err
	}
	f.s, f.q.s = s, s
	return f, nil
}

// saved is a run's state, kept by save for restore: depth-first search
// saves a state once, takes a step from it and explores on, then restores
// it for the next step, where it used to fork a copy of the whole run for
// each step. The simulator's state is copied into reused storage
// (sim.Saved), the trace is cut back to its length, a set network's known
// messages forget those added since; processes are copied on write (see
// run.own). Its storage is reused from one save to the next.
type saved struct {
	sim     sim.Saved
	keys    []sim.Key
	info    []pending
	qsum    uint64 // queue.sum
	fresh   int    // queue.fresh
	timers  int    // queue.timers
	added   int    // len(queue.added)
	events  int    // the trace's length
	next    []int
	used    [3]int
	now     int64
	waiting uint64
	tracked int
	ph      []uint64
	phSum   uint64
	w       watch
	copies  int // len(run.copies)
}

// save records r's state in sv. A run that cannot be forked cannot be
// saved either (sim.ErrNoFork).
func (r *run) save(sv *saved) error {
	if err := r.s.Save(&sv.sim); err != nil {
		return err
	}
	sv.keys = append(sv.keys[:0], r.q.keys...)
	sv.info = append(sv.info[:0], r.q.info...)
	sv.qsum, sv.fresh, sv.timers = r.q.sum, r.q.fresh, r.q.timers
	sv.added = len(r.q.added)
	sv.events = r.rec.Len()
	sv.next = append(sv.next[:0], r.wl.next...)
	sv.used, sv.now, sv.waiting, sv.tracked = r.used, r.now, r.waiting, r.tracked
	sv.ph, sv.phSum = append(sv.ph[:0], r.ph...), r.phSum
	r.w.copyTo(&sv.w)
	sv.copies = len(r.copies)
	r.shareAll()
	return nil
}

// restore brings r back to the state sv holds, saved from r itself. The
// processes copied since sv was saved are dropped here: the run held
// them, and the states saved since, which are done with (a search
// restores a state only after all it saved below it: saves and restores
// nest as the search's depths do); neither sv nor a state saved before
// it holds them. Each is kept among its process's spares, the storage of
// its next copies (copier.processInto). They are no more than the copies
// that were ever held at once: one per process and saved depth.
func (r *run) restore(sv *saved) {
	for _, c := range r.copies[sv.copies:] {
		r.spare[c.node] = append(r.spare[c.node], c.p)
	}
	clear(r.copies[sv.copies:])
	r.copies = r.copies[:sv.copies]
	r.s.Restore(&sv.sim)
	r.q.keys = append(r.q.keys[:0], sv.keys...)
	r.q.info = append(r.q.info[:0], sv.info...)
	r.q.sum, r.q.fresh, r.q.timers = sv.qsum, sv.fresh, sv.timers
	if r.q.known != nil {
		for _, h := range r.q.added[sv.added:] {
			delete(r.q.known, h)
		}
	}
	r.q.added = r.q.added[:sv.added]
	r.rec.truncate(sv.events)
	r.wl.next = append(r.wl.next[:0], sv.next...)
	r.used, r.now, r.waiting, r.tracked = sv.used, sv.now, sv.waiting, sv.tracked
	r.ph, r.phSum = append(r.ph[:0], sv.ph...), sv.phSum
	sv.w.copyTo(&r.w)
	r.shareAll()
}

// copyable reports why r cannot be backtracked, if it cannot: the
// simulator cannot save it (sim.ErrNoFork), or a process or a payload
// holds what the copier will not copy (errNoClone). sv is scratch.
func (r *run) copyable(c *copier, sv *saved) error {
	if err := r.s.Save(&sv.sim); err != nil {
		return err
	}
	c.err = nil
	for id := 0; id < r.cfg.Nodes; id++ {
		if p := r.s.Process(proc.ID(id)); p != nil {
			c.process(p)
		}
	}
	for _, k := range r.q.keys {
		if v := r.s.Payload(k.Slot); v != nil {
			c.value(v)
		}
	}
	return c.err
}

// shareAll marks every process as shared with a saved state.
func (r *run) shareAll() {
	if r.owned == nil {
		r.owned = make([]bool, r.cfg.Nodes)
		r.spare = make([][]proc.Process, r.cfg.Nodes)
	}
	clear(r.owned)
}

// own gives the process the step in slot happens at, and the payload it
// will be handed, copies of the run's own before the step changes them,
// if a saved state may share them (copy on write: a step copies one
// process, not all of them).
func (r *run) own(c *copier, node proc.ID, slot uint32) error {
	c.err = nil
	if v := r.s.Payload(slot); v != nil {
		r.s.SetPayload(slot, c.value(v))
	}
	if node >= 0 && int(node) < len(r.owned) && !r.owned[node] {
		if p := r.s.Process(node); p != nil {
			var dst proc.Process
			if n := len(r.spare[node]); n > 0 {
				dst = r.spare[node][n-1]
				r.spare[node][n-1] = nil
				r.spare[node] = r.spare[node][:n-1]
			}
			cp := c.processInto(p, dst)
			r.s.SetProcess(node, cp)
			r.copies = append(r.copies, copied{node, cp})
		}
		r.owned[node] = true
	}
	return c.err
}

// copied is a process's copy that own made, and the process it is of.
type copied struct {
	node proc.ID
	p    proc.Process
}
