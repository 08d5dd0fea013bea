//go:build !amd64 && !arm64

package sim

import "unsafe"

// prefetch is a no-op where Cohort has no prefetch instruction.
func prefetch(p unsafe.Pointer) {}

// prefetchLines is a no-op where Cohort has no prefetch instruction.
func prefetchLines(p unsafe.Pointer, n int) {}

// prefetch3 is a no-op where Cohort has no prefetch instruction.
func prefetch3(a, b, c unsafe.Pointer) {}
