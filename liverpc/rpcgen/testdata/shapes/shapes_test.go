package shapes

import (
	"bytes"
	"math"
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

// Random arguments and results of Nest survive the generated encoder and
// decoder (nil and empty slices and maps alike; floats bit for bit), and
// what decodes re-encodes to the same bytes.
func TestNestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pp := rapid.Make[**int8]().Draw(t, "pp")
		ps := rapid.Make[*[]uint16]().Draw(t, "ps")
		mm := rapid.Make[map[int32]map[string][]byte]().Draw(t, "mm")
		ms := rapid.Make[map[uint8][]*Pair]().Draw(t, "ms")
		sm := rapid.Make[[]map[Key]*Pair]().Draw(t, "sm")
		pm := rapid.Make[*map[string]*[]int64]().Draw(t, "pm")
		a := rapid.Make[Anon]().Draw(t, "a")
		b := appendShapesNestArgs(nil, pp, ps, mm, ms, sm, pm, a)
		pp2, ps2, mm2, ms2, sm2, pm2, a2, err := decodeShapesNestArgs(b)
		if err != nil {
			t.Fatalf("%x: %v", b, err)
		}
		for i, pair := range [][2]any{{pp, pp2}, {ps, ps2}, {mm, mm2}, {ms, ms2}, {sm, sm2}, {pm, pm2}, {a, a2}} {
			if !same(pair[0], pair[1]) {
				t.Fatalf("argument %d: %#v decoded as %#v", i+1, pair[0], pair[1])
			}
		}
		if again := appendShapesNestArgs(nil, pp2, ps2, mm2, ms2, sm2, pm2, a2); !bytes.Equal(again, b) {
			t.Fatalf("%x re-encodes to %x", b, again)
		}

		r0 := rapid.Make[map[Key]**Pair]().Draw(t, "r0")
		r1 := rapid.Make[*struct {
			M map[int]bool
			P *float32
		}]().Draw(t, "r1")
		b = appendShapesNestResults(nil, r0, r1)
		q0, q1, err := decodeShapesNestResults(b)
		if err != nil || !same(r0, q0) || !same(r1, q1) {
			t.Fatalf("results %#v, %#v decoded as %#v, %#v, %v", r0, r1, q0, q1, err)
		}
		if again := appendShapesNestResults(nil, q0, q1); !bytes.Equal(again, b) {
			t.Fatalf("%x re-encodes to %x", b, again)
		}
	})
}

// same reports whether a and b are deeply equal, taking a nil slice or
// map for an empty one and comparing floats by their bits.
func same(a, b any) bool { return sameValue(reflect.ValueOf(a), reflect.ValueOf(b)) }

func sameValue(a, b reflect.Value) bool {
	if a.Kind() != b.Kind() {
		return false
	}
	switch a.Kind() {
	case reflect.Slice:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !sameValue(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.Len() != b.Len() {
			return false
		}
		for _, k := range a.MapKeys() {
			v := b.MapIndex(k)
			if !v.IsValid() || !sameValue(a.MapIndex(k), v) {
				return false
			}
		}
		return true
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return sameValue(a.Elem(), b.Elem())
	case reflect.Struct:
		for i := range a.NumField() {
			if !sameValue(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Float32, reflect.Float64:
		return math.Float64bits(a.Float()) == math.Float64bits(b.Float())
	}
	return a.Interface() == b.Interface()
}
