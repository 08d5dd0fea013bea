package wire

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"testing"

	"github.com/cohort-go/cohort/proc"
)

// BenchmarkRoundTrip encodes and decodes one message with the codec and,
// for comparison, with encoding/gob — a fresh encoder and decoder per
// message, as a host without a codec would need on a connection that
// carries many message types — and with encoding/json. Run it with
// -benchmem: the codec's budget for a small message (request, flat) is
// 200 ns and one allocation, the decoded value.
//
// The message is boxed before the loop, as it is when an algorithm hands
// it to Env.Send.
func BenchmarkRoundTrip(b *testing.B) {
	msgs := []struct {
		name string
		m    proc.Message
	}{
		{"request", request{T: stamp{C: 42, P: 3}}},
		{"flat", flat{C: 42, P: 3}},
		{"token", token{LN: []uint64{3, 1, 4, 1, 5, 9, 2, 6}, Q: []proc.ID{2, 7, 1}}},
	}
	for _, x := range msgs {
		b.Run("wire/"+x.name, func(b *testing.B) {
			c := testCodec(b)
			buf := make([]byte, 0, 64)
			b.ReportAllocs()
			for b.Loop() {
				out, err := c.Append(buf[:0], x.m)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := c.Decode(out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, x := range msgs {
		b.Run("gob/"+x.name, func(b *testing.B) {
			var buf bytes.Buffer
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				if err := gob.NewEncoder(&buf).Encode(x.m); err != nil {
					b.Fatal(err)
				}
				if err := gob.NewDecoder(&buf).Decode(zeroOf(x.m)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, x := range msgs {
		b.Run("json/"+x.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out, err := json.Marshal(x.m)
				if err != nil {
					b.Fatal(err)
				}
				if err := json.Unmarshal(out, zeroOf(x.m)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// zeroOf returns a pointer to a new value of m's type, for the standard
// decoders, which need the type up front.
func zeroOf(m proc.Message) any {
	switch m.(type) {
	case request:
		return new(request)
	case flat:
		return new(flat)
	case token:
		return new(token)
	}
	panic("zeroOf: add the type")
}
