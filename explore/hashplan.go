package explore

import (
	"math"
	"reflect"
	"time"
	"unsafe"

	"github.com/cohort-go/cohort/proc"
)

// hashPlan is the compiled hash of one type (see hasher): fn hashes the
// value of that type at p, and typ is the type's own hash (what an
// interface holding such a value adds).
type hashPlan struct {
	fn    func(x *hasher, p unsafe.Pointer) uint64
	typ   uint64
	shape shape     // how an interface holds the type's values
	elem  *hashPlan // a pointer's: the plan of what it points to
}

// shape is how an interface holds a value of a type: by a pointer to it
// (indirect), or in its data word itself, for pointer-shaped types (a
// pointer; a map, a channel, a func, or a struct or array of one such
// word, walked reflectively).
type shape uint8

const (
	indirect shape = iota
	pointer
	reflective
)

// planOf returns t's plan, compiling it the first time. A recursive type
// meets its own plan while it is compiled, before fn is set; only a
// pointer, slice or map can recur, and they call fn later, at hash time.
func (x *hasher) planOf(t reflect.Type) *hashPlan {
	if p, ok := x.plans[t]; ok {
		return p
	}
	p := &hashPlan{typ: x.typ(t)}
	x.plans[t] = p
	switch t.Kind() {
	case reflect.Pointer:
		p.shape, p.elem = pointer, x.planOf(t.Elem())
	case reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		p.shape = reflective
	case reflect.Struct, reflect.Array:
		if t.Size() == unsafe.Sizeof(uintptr(0)) {
			p.shape = reflective
		}
	}
	p.fn = x.compile(t)
	return p
}

// dynPlan returns the plan of v's dynamic type (v not nil), looked up by
// the interface's first word: the dynamic type itself, for an empty
// interface, or the itab, which stands for the pair of the interface's
// type and the dynamic type, for one with methods. A word is remembered
// in a small table indexed by its address, so the plan of a type met
// again costs no map lookup.
func (x *hasher) dynPlan(v any) *hashPlan {
	return x.dynPlanAt((*[2]unsafe.Pointer)(unsafe.Pointer(&v))[0], func() reflect.Type { return reflect.TypeOf(v) })
}

func (x *hasher) dynPlanAt(word unsafe.Pointer, typ func() reflect.Type) *hashPlan {
	e := &x.dyn[(uintptr(word)>>4)%uintptr(len(x.dyn))]
	if e.word != word {
		e.word, e.plan = word, x.planOf(typ())
	}
	return e.plan
}

// dynamic hashes the dynamic value of v (not its type), of plan p. An
// interface's data word points to its value, but for a pointer-shaped
// type, whose value is the word itself: a pointer is followed from it,
// and the rare others (a map, a struct of one pointer) are walked
// reflectively.
func (x *hasher) dynamic(v any, p *hashPlan) uint64 {
	word := (*[2]unsafe.Pointer)(unsafe.Pointer(&v))[1]
	switch p.shape {
	case pointer:
		return x.follow(p.elem, word)
	case reflective:
		return x.value(reflect.ValueOf(v))
	}
	return p.fn(x, word)
}

// follow hashes a pointer to a value of plan elem.
func (x *hasher) follow(elem *hashPlan, p unsafe.Pointer) uint64 {
	if p == nil {
		return 7
	}
	if h, ok := x.lookup(p); ok {
		return h
	}
	x.remember(p, 11) // a cycle back to p
	h := add(13, elem.fn(x, p))
	x.remember(p, h)
	return h
}

func (x *hasher) compile(t reflect.Type) func(x *hasher, p unsafe.Pointer) uint64 {
	switch t {
	case timerID:
		return func(*hasher, unsafe.Pointer) uint64 { return 23 }
	case procID:
		return func(x *hasher, p unsafe.Pointer) uint64 {
			id := int64(*(*proc.ID)(p))
			if x.anon != nil && id >= 0 && id < int64(len(x.anon)) && x.anon[id] {
				return 29
			}
			if x.perm != nil && id >= 0 && id < int64(len(x.perm)) {
				return mix64(uint64(x.perm[id]))
			}
			return mix64(uint64(id))
		}
	}
	switch t.Kind() {
	case reflect.Bool:
		return func(_ *hasher, p unsafe.Pointer) uint64 {
			if *(*bool)(p) {
				return 3
			}
			return 2
		}
	case reflect.Int:
		return func(_ *hasher, p unsafe.Pointer) uint64 { return mix64(uint64(*(*int)(p))) }
	case reflect.Int8:
		return func(_ *hasher, p unsafe.Pointer) uint64 { return mix64(uint64(*(*int8)(p))) }
	case reflect.Int16:
		return func(_ *hasher, p unsafe.Pointer) uint64 { return mix64(uint64(*(*int16)(p))) }
	case reflect.Int32:
		return func(_ *hasher, p unsafe.Pointer) uint64 { return mix64(uint64(*(*int32)(p))) }
	case reflect.Int64:
		return func(_ *hasher, p unsafe.Pointer) uint64 { return mix64(uint64(*(*int64)(p))) }
	case reflect.Uint:
		return func(_ *hasher, p unsafe.Pointer) uint64 { return mix64(uint64(*(*uint)(p))) }
	case reflect.Uint8:
		return func(_ *hasher, p unsafe.Pointer) uint64 { return mix64(uint64(*(*uint8)(p))) }
	case reflect.Uint16:
		return func(_ *hasher, p unsafe.Pointer) uint64 { return mix64(uint64(*(*uint16)(p))) }
	case reflect.Uint32:
		return func(_ *hasher, p unsafe.Pointer) uint64 { return mix64(uint64(*(*uint32)(p))) }
	case reflect.Uint64:
		return func(_ *hasher, p unsafe.Pointer) uint64 { return mix64(*(*uint64)(p)) }
	case reflect.Uintptr:
		return func(_ *hasher, p unsafe.Pointer) uint64 { return mix64(uint64(*(*uintptr)(p))) }
	case reflect.Float32:
		return func(_ *hasher, p unsafe.Pointer) uint64 {
			return mix64(math.Float64bits(float64(*(*float32)(p))))
		}
	case reflect.Float64:
		return func(_ *hasher, p unsafe.Pointer) uint64 { return mix64(math.Float64bits(*(*float64)(p))) }
	case reflect.Complex64:
		return func(_ *hasher, p unsafe.Pointer) uint64 {
			c := complex128(*(*complex64)(p))
			return add(mix64(math.Float64bits(real(c))), math.Float64bits(imag(c)))
		}
	case reflect.Complex128:
		return func(_ *hasher, p unsafe.Pointer) uint64 {
			c := *(*complex128)(p)
			return add(mix64(math.Float64bits(real(c))), math.Float64bits(imag(c)))
		}
	case reflect.String:
		return func(_ *hasher, p unsafe.Pointer) uint64 { return hashString(*(*string)(p)) }
	case reflect.Struct:
		type field struct {
			off  uintptr
			plan *hashPlan
		}
		fields := make([]field, t.NumField())
		for i := range fields {
			f := t.Field(i)
			fields[i] = field{f.Offset, x.planOf(f.Type)}
		}
		th := x.typ(t)
		return func(x *hasher, p unsafe.Pointer) uint64 {
			h := th
			for _, f := range fields {
				h = add(h, f.plan.fn(x, unsafe.Add(p, f.off)))
			}
			return h
		}
	case reflect.Array:
		elem, size, n := x.planOf(t.Elem()), t.Elem().Size(), t.Len()
		return func(x *hasher, p unsafe.Pointer) uint64 {
			h := uint64(seed)
			for i := 0; i < n; i++ {
				h = add(h, elem.fn(x, unsafe.Add(p, uintptr(i)*size)))
			}
			return h
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return func(_ *hasher, p unsafe.Pointer) uint64 {
				b := *(*[]byte)(p)
				if b == nil {
					return 5 // a nil slice and an empty one are the same state
				}
				return add(add(seed, uint64(len(b))), hashString(unsafe.String(unsafe.SliceData(b), len(b))))
			}
		}
		elem, size := x.planOf(t.Elem()), t.Elem().Size()
		return func(x *hasher, p unsafe.Pointer) uint64 {
			// Any slice's header read as a []byte's: its array and its
			// length in elements.
			s := *(*[]byte)(p)
			if s == nil {
				return 5
			}
			base := unsafe.Pointer(unsafe.SliceData(s))
			h := add(seed, uint64(len(s)))
			for i := 0; i < len(s); i++ {
				h = add(h, elem.fn(x, unsafe.Add(base, uintptr(i)*size)))
			}
			return h
		}
	case reflect.Pointer:
		elem := x.planOf(t.Elem())
		return func(x *hasher, p unsafe.Pointer) uint64 { return x.follow(elem, *(*unsafe.Pointer)(p)) }
	case reflect.Interface:
		if t.NumMethod() == 0 {
			return func(x *hasher, p unsafe.Pointer) uint64 { return x.boxed(*(*any)(p)) }
		}
		// An interface with methods is two words, as an empty one: its
		// itab (nil if the interface is) and its data word, which holds
		// what an empty interface's would.
		return func(x *hasher, p unsafe.Pointer) uint64 {
			w := (*[2]unsafe.Pointer)(p)
			if w[0] == nil {
				return 17
			}
			dp := x.dynPlanAt(w[0], func() reflect.Type { return reflect.NewAt(t, p).Elem().Elem().Type() })
			switch dp.shape {
			case pointer:
				return add(dp.typ, x.follow(dp.elem, w[1]))
			case reflective:
				return add(dp.typ, x.value(reflect.NewAt(t, p).Elem().Elem()))
			}
			return add(dp.typ, dp.fn(x, w[1]))
		}
	case reflect.Map:
		kt, vt := t.Key(), t.Elem()
		kp, vp := x.planOf(kt), x.planOf(vt)
		if fn := byProcess(t, kp, vp); fn != nil {
			return fn
		}
		// Entries are copied out, in turn, to a key and a value of the
		// plan's own (one pair per call in progress: a map may hold
		// maps of its type).
		var spare [][2]reflect.Value
		return func(x *hasher, p unsafe.Pointer) uint64 {
			m := reflect.NewAt(t, p).Elem()
			if m.IsNil() {
				return 5
			}
			var kv [2]reflect.Value
			if n := len(spare); n > 0 {
				kv, spare = spare[n-1], spare[:n-1]
			} else {
				kv = [2]reflect.Value{reflect.New(kt).Elem(), reflect.New(vt).Elem()}
			}
			k, v := kv[0], kv[1]
			h := uint64(0)
			var it reflect.MapIter
			it.Reset(m)
			for it.Next() {
				k.SetIterKey(&it)
				v.SetIterValue(&it)
				h += add(kp.fn(x, k.Addr().UnsafePointer()), vp.fn(x, v.Addr().UnsafePointer()))
			}
			spare = append(spare, kv)
			return add(uint64(m.Len()), h)
		}
	default: // func, chan, unsafe pointer: not state
		return func(*hasher, unsafe.Pointer) uint64 { return 19 }
	}
}

// byProcess returns the plan of a map from process IDs to a boolean, a
// number, a string or a process ID (the commonest maps in a process's
// state), which ranges over the map itself instead of by reflection; nil
// for other maps. Its hash is the reflective plan's.
func byProcess(t reflect.Type, kp, vp *hashPlan) func(*hasher, unsafe.Pointer) uint64 {
	if t.Key() != procID {
		return nil
	}
	switch t.Elem() {
	case reflect.TypeFor[bool]():
		return mapByProcess[bool](kp, vp)
	case reflect.TypeFor[int]():
		return mapByProcess[int](kp, vp)
	case reflect.TypeFor[uint64]():
		return mapByProcess[uint64](kp, vp)
	case reflect.TypeFor[string]():
		return mapByProcess[string](kp, vp)
	case reflect.TypeFor[time.Duration]():
		return mapByProcess[time.Duration](kp, vp)
	case procID:
		return mapByProcess[proc.ID](kp, vp)
	}
	return nil
}

// mapByProcess hashes a map[proc.ID]V (or a named map of that type: the
// same representation). An entry is copied to kv to be hashed in place;
// a V holds no map, so no call in progress needs kv.
func mapByProcess[V any](kp, vp *hashPlan) func(*hasher, unsafe.Pointer) uint64 {
	kv := new(struct {
		k proc.ID
		v V
	})
	return func(x *hasher, p unsafe.Pointer) uint64 {
		m := *(*map[proc.ID]V)(p)
		if m == nil {
			return 5
		}
		h := uint64(0)
		for k, v := range m {
			kv.k, kv.v = k, v
			h += add(kp.fn(x, unsafe.Pointer(&kv.k)), vp.fn(x, unsafe.Pointer(&kv.v)))
		}
		return add(uint64(len(m)), h)
	}
}

// boxed hashes an interface's content: its dynamic type and value.
func (x *hasher) boxed(v any) uint64 {
	if v == nil {
		return 17
	}
	p := x.dynPlan(v)
	return add(p.typ, x.dynamic(v, p))
}
