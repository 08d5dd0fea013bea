package wire

import (
	"bytes"
	"testing"

	"github.com/cohort-go/cohort/proc"
)

// fuzzCodec is shared by the fuzz targets' runs.
var fuzzCodec, _ = NewCodec(testMessages)

// Random bytes never make Decode panic, and whatever decodes re-encodes
// to exactly the bytes it came from: the encoding is canonical. The seed
// corpus (testdata/fuzz/FuzzDecode) holds an encoding of each test type.
func FuzzDecode(f *testing.F) {
	for _, m := range []proc.Message{
		request{T: stamp{C: 42, P: 3}},
		flat{C: 1 << 63, P: -1},
		empty{},
		token{LN: []uint64{1, 2, 3}, Q: []proc.ID{0, 2}},
		node{V: 1, Next: &node{V: -2}, Kids: []node{{V: 3}}},
		boxed{P: &inner{Name: "x", Tags: []string{"a\xff"}}},
		&pointed{X: -7, S: "s"},
		msg[outer]{V: outer{P: &around{O: outer{X: 2}, Y: 3}, X: 1}},
		mapped{Votes: map[proc.ID]uint64{-1: 1, 2: 7}, ByName: map[string][]string{"a": {"x"}, "b": nil},
			Nested: map[int8]map[string]bool{0: {"t": true}}, Ptrs: map[uint16]*stamp{1: nil, 2: {C: 3}}},
	} {
		b, err := fuzzCodec.Append(nil, m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := fuzzCodec.Decode(in)
		if err != nil {
			return
		}
		out, err := fuzzCodec.Append(nil, m)
		if err != nil {
			t.Fatalf("%x decoded to %#v, which does not encode: %v", in, m, err)
		}
		if !bytes.Equal(out, in) {
			t.Fatalf("%x decoded to %#v, which encodes to %x", in, m, out)
		}
	})
}
