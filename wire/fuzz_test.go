package wire

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"
	"testing/iotest"

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

// Random streams never make a Reader panic or grow its buffer beyond the
// limit plus a length prefix, and every frame read re-encodes to the bytes
// it was read from (so does every Data body that parses). The first byte
// of the input sets the limit, the second how the stream is cut into
// reads; the rest is the stream.
func FuzzReadFrame(f *testing.F) {
	var stream []byte
	for _, fr := range sampleFrames()[:5] {
		stream = AppendFrame(stream, fr)
	}
	f.Add(append([]byte{255, 0}, stream...))
	f.Add(append([]byte{20, 1}, stream...))
	f.Add([]byte{4, 2, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 2 {
			return
		}
		limit := 2 + int(in[0])
		stream := in[2:]
		var src io.Reader = bytes.NewReader(stream)
		switch in[1] % 3 {
		case 1:
			src = iotest.OneByteReader(src)
		case 2:
			src = iotest.HalfReader(src)
		}
		r := NewReader(src, limit)
		off := 0
		for {
			fr, err := r.Next()
			if len(r.buf) > limit+binary.MaxVarintLen64 {
				t.Fatalf("buffer of %d bytes for a limit of %d", len(r.buf), limit)
			}
			if err == io.EOF {
				if off != len(stream) {
					t.Fatalf("io.EOF after %d of %d bytes", off, len(stream))
				}
				return
			}
			if err != nil {
				return
			}
			out := AppendFrame(nil, fr)
			if !bytes.HasPrefix(stream[off:], out) {
				t.Fatalf("frame at %d re-encodes to %x; the stream has %x", off, out, stream[off:min(len(stream), off+len(out))])
			}
			off += len(out)
			if fr.Type == FrameData {
				if d, err := ParseData(fr.Body); err == nil {
					if body := AppendData(nil, d); !bytes.Equal(body, fr.Body) {
						t.Fatalf("data body %x parses to %+v, which encodes to %x", fr.Body, d, body)
					}
				}
			}
		}
	})
}
