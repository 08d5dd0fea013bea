package ntp

import (
	"bytes"
	"errors"
	"testing"
)

// Random bytes never make Decode panic; what it refuses it refuses with
// ErrMalformed, and what it accepts re-encodes to the header it came
// from. The seed corpus (testdata/fuzz/FuzzDecode) holds a chronyd reply,
// a client request, one with extension bytes, and headers that are short
// or carry a bad version or mode.
func FuzzDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte) {
		p, err := Decode(in)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Decode(%x): %v does not wrap ErrMalformed", in, err)
			}
			return
		}
		out, err := p.Encode()
		if err != nil {
			t.Fatalf("%x decoded to %+v, which does not encode: %v", in, p, err)
		}
		if !bytes.Equal(out, in[:HeaderLen]) {
			t.Fatalf("%x decoded to %+v, which encodes to %x", in, p, out)
		}
	})
}
