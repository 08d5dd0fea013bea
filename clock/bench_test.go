package clock_test

import (
	"fmt"
	"testing"

	"github.com/cohort-go/cohort/logical"
)

// benchVectors returns a < b differing only in the last entry, so Compare
// must read every entry.
func benchVectors(n int) (a, b logical.Vector) {
	a, b = logical.New(n), logical.New(n)
	for k := range n {
		a[k], b[k] = uint64(k), uint64(k)
	}
	b[n-1]++
	return a, b
}

func BenchmarkVectorCompare(b *testing.B) {
	for _, n := range []int{8, 64} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			x, y := benchVectors(n)
			b.ReportAllocs()
			for b.Loop() {
				logical.Compare(x, y)
			}
		})
	}
}

func BenchmarkVectorMerge(b *testing.B) {
	for _, n := range []int{8, 64} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			x, y := benchVectors(n)
			b.ReportAllocs()
			for b.Loop() {
				x.Merge(y)
			}
		})
	}
}
