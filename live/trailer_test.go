package live

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/cohort-go/cohort/trace"
)

// A traced payload's clock travels as its entries in order in a cluster
// of fixed size (the bytes are those of traces written before clocks
// could grow), and as its nonzero entries keyed by process ID in a
// cluster that members join; both read back as the array indexed by
// process ID, the sparse one up to its last nonzero entry.
func TestTrailerRoundTrip(t *testing.T) {
	dense := appendTrailer(nil, 42, trace.DenseVC([]uint64{1, 0, 3}), false)
	if want := []byte{flagTraced, 42, 3, 1, 0, 3}; !bytes.Equal(dense, want) {
		t.Errorf("dense trailer % x, want % x", dense, want)
	}
	sparse := appendTrailer(nil, 42, trace.DenseVC([]uint64{0, 2, 0, 0, 0, 0, 0, 9, 0}), true)
	if want := []byte{flagTraced | flagSparse, 42, 2, 2, 2, 6, 9}; !bytes.Equal(sparse, want) {
		t.Errorf("sparse trailer % x, want % x", sparse, want)
	}
	for _, c := range []struct {
		b    []byte
		n    int
		want []uint64
	}{
		{dense, 3, []uint64{1, 0, 3}},
		{sparse, 8, []uint64{0, 2, 0, 0, 0, 0, 0, 9}},
		{sparse, 1 << 16, []uint64{0, 2, 0, 0, 0, 0, 0, 9}},
		{appendTrailer(nil, 7, trace.VC{}, true), 4, nil},
	} {
		id, vc, rest, err := readTrailer(append(c.b, 0xEE), c.n)
		if err != nil || id == 0 || !slices.Equal(vc.Dense(), c.want) || !bytes.Equal(rest, []byte{0xEE}) {
			t.Errorf("readTrailer(% x, %d) = %d %v % x %v; want %v", c.b, c.n, id, vc, rest, err, c.want)
		}
	}
	for _, bad := range []struct {
		b []byte
		n int
	}{
		{sparse, 7},                       // process 7 in an ID space of 7
		{dense, 2},                        // 3 entries in a cluster of 2
		{[]byte{flagSparse}, 4},           // sparse but untraced
		{[]byte{flagTraced | 4, 1, 0}, 4}, // an unknown flag
		{[]byte{flagTraced | flagSparse, 1, 1, 0, 5}, 4},    // a delta of 0
		{[]byte{flagTraced | flagSparse, 1, 2, 1, 5, 3}, 4}, // truncated
	} {
		if _, _, _, err := readTrailer(bad.b, bad.n); err == nil {
			t.Errorf("readTrailer(% x, %d) accepted", bad.b, bad.n)
		}
	}
}

// FuzzReadTrailer checks that readTrailer never panics, never returns a
// clock of more entries than the ID space, and that what it reads
// encodes back (sparse) to what reads the same.
//
//	go test -run='^$' -fuzz=FuzzReadTrailer ./live
func FuzzReadTrailer(f *testing.F) {
	f.Add(appendTrailer(nil, 42, trace.DenseVC([]uint64{1, 0, 3}), false), 3)
	f.Add(appendTrailer(nil, 42, trace.DenseVC([]uint64{0, 2, 0, 0, 0, 0, 0, 9}), true), 1<<16)
	f.Add(binary.AppendUvarint([]byte{flagTraced | flagSparse, 1, 1}, 1<<16), 1<<16)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		if n < 1 || n > 1<<16 {
			return
		}
		id, vc, _, err := readTrailer(b, n)
		if err != nil {
			return
		}
		if vc.Len() > n {
			t.Fatalf("a clock of %d entries in an ID space of %d", vc.Len(), n)
		}
		if vc.Sparse() && vc.Len() <= 64 {
			t.Fatalf("a short clock (%d entries) held sparse", vc.Len())
		}
		id2, vc2, rest, err := readTrailer(appendTrailer(nil, id, vc, true), n)
		trimmed := vc.Dense()
		for len(trimmed) > 0 && trimmed[len(trimmed)-1] == 0 {
			trimmed = trimmed[:len(trimmed)-1]
		}
		if err != nil || id2 != id || len(rest) != 0 || !slices.Equal(vc2.Dense(), trimmed) {
			t.Fatalf("re-encoded %d %v: read %d %v % x %v", id, vc, id2, vc2, rest, err)
		}
	})
}
