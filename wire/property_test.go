package wire

import (
	"bytes"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
	"pgregory.net/rapid"
)

// Generators of the test messages, reaching for the edges: negative and
// extreme integers, floats from arbitrary bits (NaNs with payloads
// included), strings of arbitrary bytes, nil and non-nil pointers, nested
// slices. Empty slices are drawn as nil, the form they decode to.

func genStamp() *rapid.Generator[stamp] {
	return rapid.Custom(func(t *rapid.T) stamp {
		return stamp{C: rapid.Uint64().Draw(t, "C"), P: proc.ID(rapid.Int32().Draw(t, "P"))}
	})
}

var oddString = rapid.Custom(func(t *rapid.T) string {
	return string(rapid.SliceOfN(rapid.Byte(), 0, 12).Draw(t, "bytes"))
})

func sliceOf[T any](g *rapid.Generator[T], max int) *rapid.Generator[[]T] {
	return rapid.Custom(func(t *rapid.T) []T {
		s := rapid.SliceOfN(g, 0, max).Draw(t, "slice")
		if len(s) == 0 {
			return nil
		}
		return s
	})
}

func ptrTo[T any](g *rapid.Generator[T]) *rapid.Generator[*T] {
	return rapid.Custom(func(t *rapid.T) *T {
		if !rapid.Bool().Draw(t, "present") {
			return nil
		}
		v := g.Draw(t, "value")
		return &v
	})
}

func genInner() *rapid.Generator[inner] {
	return rapid.Custom(func(t *rapid.T) inner {
		return inner{Name: oddString.Draw(t, "Name"), At: genStamp().Draw(t, "At"), Tags: sliceOf(oddString, 4).Draw(t, "Tags")}
	})
}

func genKitchen() *rapid.Generator[kitchen] {
	return rapid.Custom(func(t *rapid.T) kitchen {
		return kitchen{
			B:      rapid.Bool().Draw(t, "B"),
			I8:     rapid.Int8().Draw(t, "I8"),
			I16:    rapid.Int16().Draw(t, "I16"),
			I32:    rapid.Int32().Draw(t, "I32"),
			I64:    rapid.Int64().Draw(t, "I64"),
			I:      rapid.Int().Draw(t, "I"),
			U8:     rapid.Uint8().Draw(t, "U8"),
			U16:    rapid.Uint16().Draw(t, "U16"),
			U32:    rapid.Uint32().Draw(t, "U32"),
			U64:    rapid.Uint64().Draw(t, "U64"),
			U:      rapid.Uint().Draw(t, "U"),
			F32:    math.Float32frombits(rapid.Uint32().Draw(t, "F32")),
			F64:    math.Float64frombits(rapid.Uint64().Draw(t, "F64")),
			S:      oddString.Draw(t, "S"),
			Bytes:  sliceOf(rapid.Byte(), 8).Draw(t, "Bytes"),
			Arr:    [3]int16{rapid.Int16().Draw(t, "A0"), rapid.Int16().Draw(t, "A1"), rapid.Int16().Draw(t, "A2")},
			Sum:    [4]byte(rapid.SliceOfN(rapid.Byte(), 4, 4).Draw(t, "Sum")),
			Nested: genInner().Draw(t, "Nested"),
			Ptr:    ptrTo(genInner()).Draw(t, "Ptr"),
			Nums:   sliceOf(rapid.Int64(), 6).Draw(t, "Nums"),
			Names:  sliceOf(oddString, 4).Draw(t, "Names"),
			Inners: sliceOf(genInner(), 3).Draw(t, "Inners"),
			Grid:   sliceOf(sliceOf(rapid.Byte(), 3), 3).Draw(t, "Grid"),
			Ptrs:   sliceOf(ptrTo(genStamp()), 3).Draw(t, "Ptrs"),
			D:      time.Duration(rapid.Int64().Draw(t, "D")),
		}
	})
}

func genNode(depth int) *rapid.Generator[node] {
	return rapid.Custom(func(t *rapid.T) node {
		n := node{V: rapid.Int().Draw(t, "V")}
		if depth > 0 {
			n.Next = ptrTo(genNode(depth-1)).Draw(t, "Next")
			n.Kids = sliceOf(genNode(depth-1), 2).Draw(t, "Kids")
		}
		return n
	})
}

func genOuter(depth int) *rapid.Generator[outer] {
	return rapid.Custom(func(t *rapid.T) outer {
		o := outer{X: rapid.Int().Draw(t, "X")}
		if depth > 0 && rapid.Bool().Draw(t, "P") {
			o.P = &around{O: genOuter(depth-1).Draw(t, "O"), Y: rapid.Int().Draw(t, "Y")}
		}
		return o
	})
}

func genMessage() *rapid.Generator[proc.Message] {
	return rapid.OneOf(
		rapid.Map(genStamp(), func(s stamp) proc.Message { return request{T: s} }),
		rapid.Custom(func(t *rapid.T) proc.Message {
			return flat{C: rapid.Uint64().Draw(t, "C"), P: rapid.Int32().Draw(t, "P")}
		}),
		rapid.Just[proc.Message](empty{}),
		rapid.Custom(func(t *rapid.T) proc.Message {
			var q []proc.ID
			for _, p := range sliceOf(rapid.Int32(), 5).Draw(t, "Q") {
				q = append(q, proc.ID(p))
			}
			return token{LN: sliceOf(rapid.Uint64(), 8).Draw(t, "LN"), Q: q}
		}),
		rapid.Custom(func(t *rapid.T) proc.Message {
			return vstamped{Name: oddString.Draw(t, "Name"), TS: sliceOf(rapid.Uint64(), 5).Draw(t, "TS")}
		}),
		rapid.Custom(func(t *rapid.T) proc.Message {
			return state{
				Epoch: rapid.Uint64().Draw(t, "Epoch"), Requesting: rapid.Bool().Draw(t, "Requesting"),
				Since: time.Duration(rapid.Int64().Draw(t, "Since")), Holding: rapid.Bool().Draw(t, "Holding"),
			}
		}),
		rapid.Map(genKitchen(), func(k kitchen) proc.Message { return k }),
		rapid.Map(genNode(3), func(n node) proc.Message { return n }),
		rapid.Map(ptrTo(genInner()), func(p *inner) proc.Message { return boxed{P: p} }),
		rapid.Custom(func(t *rapid.T) proc.Message {
			return &pointed{X: rapid.Int64().Draw(t, "X"), S: oddString.Draw(t, "S")}
		}),
		rapid.Map(genOuter(3), func(o outer) proc.Message { return msg[outer]{V: o} }),
		rapid.Map(genMapped(), func(m mapped) proc.Message { return m }),
	)
}

// genMapped draws maps of up to a few entries, nil when empty (as an
// empty map decodes).
func genMapped() *rapid.Generator[mapped] {
	return rapid.Custom(func(t *rapid.T) mapped {
		var m mapped
		for _, k := range sliceOf(rapid.Int32(), 6).Draw(t, "Votes") {
			if m.Votes == nil {
				m.Votes = map[proc.ID]uint64{}
			}
			m.Votes[proc.ID(k)] = rapid.Uint64().Draw(t, "vote")
		}
		for _, k := range sliceOf(oddString, 4).Draw(t, "ByName") {
			if m.ByName == nil {
				m.ByName = map[string][]string{}
			}
			m.ByName[k] = sliceOf(oddString, 3).Draw(t, "names")
		}
		for _, k := range sliceOf(rapid.Int8(), 3).Draw(t, "Nested") {
			if m.Nested == nil {
				m.Nested = map[int8]map[string]bool{}
			}
			var in map[string]bool
			for _, s := range sliceOf(oddString, 3).Draw(t, "inner") {
				if in == nil {
					in = map[string]bool{}
				}
				in[s] = rapid.Bool().Draw(t, "b")
			}
			m.Nested[k] = in
		}
		for _, k := range sliceOf(rapid.Uint16(), 3).Draw(t, "Ptrs") {
			if m.Ptrs == nil {
				m.Ptrs = map[uint16]*stamp{}
			}
			m.Ptrs[k] = ptrTo(genStamp()).Draw(t, "stamp")
		}
		return m
	})
}

// withoutNaN zeroes a kitchen's NaNs, which are not equal to themselves;
// their bits are checked by comparing the encodings.
func withoutNaN(m proc.Message) proc.Message {
	k, ok := m.(kitchen)
	if !ok {
		return m
	}
	if k.F32 != k.F32 {
		k.F32 = 0
	}
	if math.IsNaN(k.F64) {
		k.F64 = 0
	}
	return k
}

// Every value round-trips exactly, and its encoding is canonical.
func TestRoundTripProperty(t *testing.T) {
	c := testCodec(t)
	rapid.Check(t, func(t *rapid.T) {
		m := genMessage().Draw(t, "m")
		b, err := c.Append(nil, m)
		if err != nil {
			t.Fatalf("encoding %#v: %v", m, err)
		}
		back, err := c.Decode(b)
		if err != nil {
			t.Fatalf("decoding %x (%#v): %v", b, m, err)
		}
		if !reflect.DeepEqual(withoutNaN(back), withoutNaN(m)) {
			t.Fatalf("round trip:\n got %#v\nwant %#v", back, m)
		}
		again, err := c.Append(nil, back)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("re-encoding gives %x, %v; want %x", again, err, b)
		}
	})
}
