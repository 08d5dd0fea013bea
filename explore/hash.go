package explore

import (
	"math"
	"reflect"
	"unsafe"

	"github.com/cohort-go/cohort/proc"
)

// hasher fingerprints values: it walks structs (exported and unexported
// fields alike), arrays, slices, strings, pointers, interfaces and maps,
// and skips funcs, channels and unsafe pointers, which are configuration,
// not state. A map is hashed as the sum of its entries' hashes, so its
// iteration order does not matter; a pointer is followed once per
// fingerprint (a cycle, or a value shared by two pointers, is hashed
// where it is first met).
//
// The walk is compiled once per type (as encoding/gob compiles its
// engines, and as the copier of clone.go plans its copies): a hash plan
// is a function that hashes a value of its type in place, given its
// address — a struct as its fields at their offsets, a slice as its
// elements in its backing array — so a state is hashed without
// reflection, but to iterate a map. The plans compute exactly what the
// reflective walk (value), kept for the values an interface holds in
// its data word but for pointers, computes (TestCompiledHashIsReflective).
//
// Fingerprints tell states apart within one exploration; they are not
// stable across builds (types are hashed by name).
type hasher struct {
	// seen holds the pointers followed in this fingerprint and their
	// hashes: a short list searched in turn, then the map.
	seen    []seenPtr
	seenMap map[unsafe.Pointer]uint64
	types   map[reflect.Type]uint64
	plans   map[reflect.Type]*hashPlan
	// perm, if set, renames every proc.ID hashed: process i is hashed as
	// perm[i] (symmetry reduction).
	perm []proc.ID
	// anon, if set, hashes alike every process i with anon[i] (the
	// signatures of symmetry reduction).
	anon []bool
	// dyn caches the plans of interfaces' dynamic types by the
	// interface's first word (see dynPlan).
	dyn [64]dynEntry
}

type dynEntry struct {
	word unsafe.Pointer
	plan *hashPlan
}

type seenPtr struct {
	p unsafe.Pointer
	h uint64
}

func newHasher() *hasher {
	return &hasher{types: map[reflect.Type]uint64{}, plans: map[reflect.Type]*hashPlan{}}
}

// maxSeenList: past this many pointers in one fingerprint, seen moves to
// the map.
const maxSeenList = 32

func (x *hasher) lookup(p unsafe.Pointer) (uint64, bool) {
	if x.seenMap != nil {
		h, ok := x.seenMap[p]
		return h, ok
	}
	for i := range x.seen {
		if x.seen[i].p == p {
			return x.seen[i].h, true
		}
	}
	return 0, false
}

func (x *hasher) remember(p unsafe.Pointer, h uint64) {
	if x.seenMap != nil {
		x.seenMap[p] = h
		return
	}
	for i := range x.seen {
		if x.seen[i].p == p {
			x.seen[i].h = h
			return
		}
	}
	if len(x.seen) < maxSeenList {
		x.seen = append(x.seen, seenPtr{p, h})
		return
	}
	x.seenMap = make(map[unsafe.Pointer]uint64, 2*maxSeenList)
	for _, s := range x.seen {
		x.seenMap[s.p] = s.h
	}
	x.seenMap[p] = h
}

// forget starts a fresh walk.
func (x *hasher) forget() {
	x.seen = x.seen[:0]
	x.seenMap = nil
}

const (
	prime = 0x100000001b3
	seed  = 0xcbf29ce484222325
)

// mix64 is a strong 64-bit finaliser (splitmix64's).
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func add(h, x uint64) uint64 { return mix64(h ^ x + prime) }

func hashString(s string) uint64 {
	h := uint64(seed)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= prime
	}
	return mix64(h)
}

// of fingerprints v, starting a fresh walk.
func (x *hasher) of(v any) uint64 {
	x.forget()
	if v == nil {
		return 1
	}
	return x.dynamic(v, x.dynPlan(v))
}

// ofReflect is of by the reflective walk alone (for tests to compare).
func (x *hasher) ofReflect(v any) uint64 {
	x.forget()
	if v == nil {
		return 1
	}
	return x.value(reflect.ValueOf(v))
}

func (x *hasher) typ(t reflect.Type) uint64 {
	h, ok := x.types[t]
	if !ok {
		h = hashString(t.PkgPath() + "." + t.String())
		x.types[t] = h
	}
	return h
}

// timerID is skipped: a timer's handle depends on the path that set it
// (IDs are handed out in order), the timer itself is state (pending).
var timerID = reflect.TypeFor[proc.TimerID]()

var procID = reflect.TypeFor[proc.ID]()

func (x *hasher) value(v reflect.Value) uint64 {
	if v.Type() == timerID {
		return 23
	}
	if x.anon != nil && v.Type() == procID {
		if id := v.Int(); id >= 0 && id < int64(len(x.anon)) && x.anon[id] {
			return 29
		}
	}
	if x.perm != nil && v.Type() == procID {
		if id := v.Int(); id >= 0 && id < int64(len(x.perm)) {
			return mix64(uint64(x.perm[id]))
		}
	}
	switch v.Kind() {
	case reflect.Bool:
		if v.Bool() {
			return 3
		}
		return 2
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return mix64(uint64(v.Int()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return mix64(v.Uint())
	case reflect.Float32, reflect.Float64:
		return mix64(math.Float64bits(v.Float()))
	case reflect.Complex64, reflect.Complex128:
		c := v.Complex()
		return add(mix64(math.Float64bits(real(c))), math.Float64bits(imag(c)))
	case reflect.String:
		return hashString(v.String())
	case reflect.Struct:
		h := x.typ(v.Type())
		for i := 0; i < v.NumField(); i++ {
			h = add(h, x.value(v.Field(i)))
		}
		return h
	case reflect.Array:
		h := uint64(seed)
		for i := 0; i < v.Len(); i++ {
			h = add(h, x.value(v.Index(i)))
		}
		return h
	case reflect.Slice:
		if v.IsNil() {
			return 5 // a nil slice and an empty one are the same state
		}
		h := add(seed, uint64(v.Len()))
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return add(h, hashString(string(v.Bytes())))
		}
		for i := 0; i < v.Len(); i++ {
			h = add(h, x.value(v.Index(i)))
		}
		return h
	case reflect.Map:
		if v.IsNil() {
			return 5
		}
		h := uint64(0)
		it := v.MapRange()
		for it.Next() {
			h += add(x.value(it.Key()), x.value(it.Value()))
		}
		return add(uint64(v.Len()), h)
	case reflect.Pointer:
		if v.IsNil() {
			return 7
		}
		p := v.UnsafePointer()
		if h, ok := x.lookup(p); ok {
			return h
		}
		x.remember(p, 11) // a cycle back to p
		h := add(13, x.value(v.Elem()))
		x.remember(p, h)
		return h
	case reflect.Interface:
		if v.IsNil() {
			return 17
		}
		e := v.Elem()
		return add(x.typ(e.Type()), x.value(e))
	default: // func, chan, unsafe pointer: not state
		return 19
	}
}
