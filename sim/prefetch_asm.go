//go:build amd64 || arm64

package sim

import "unsafe"

// prefetch asks the processor to bring the cache line at p closer
// (PREFETCHT0 on amd64, PRFM PLDL1KEEP on arm64); it never faults.
//
//go:noescape
func prefetch(p unsafe.Pointer)

// prefetchLines prefetches n cache lines from p on, one call for a whole
// block of events.
//
//go:noescape
func prefetchLines(p unsafe.Pointer, n int)

// prefetch3 prefetches the lines at a, b and c in one call (any may be
// nil: a prefetch never faults).
//
//go:noescape
func prefetch3(a, b, c unsafe.Pointer)
