package trace

import (
	"bytes"
	"testing"
)

// BenchmarkReadVC reads a trace of 16 processes with vector timestamps
// (arrays, as every simulated run writes them): the decoder's cost per
// event.
func BenchmarkReadVC(b *testing.B) {
	in := txWrite(b, txRandomTrace(1, 16, 20000, true))
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Read(bytes.NewReader(in)); err != nil {
			b.Fatal(err)
		}
	}
}
