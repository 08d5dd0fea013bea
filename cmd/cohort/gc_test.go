package main

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestTuneGCGivesTheCollectorRoom: a process hosting nodes runs the
// collector at nodeGCPercent under nodeMemoryLimit, unless the
// environment set GOGC or GOMEMLIMIT, which it keeps.
func TestTuneGCGivesTheCollectorRoom(t *testing.T) {
	percent, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	})

	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	tuneGC()
	if got := debug.SetGCPercent(100); got != nodeGCPercent {
		t.Errorf("GC percent %d, want %d", got, nodeGCPercent)
	}
	if got := debug.SetMemoryLimit(math.MaxInt64); got != nodeMemoryLimit {
		t.Errorf("memory limit %d, want %d", got, nodeMemoryLimit)
	}

	t.Setenv("GOGC", "100")
	t.Setenv("GOMEMLIMIT", "off")
	tuneGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC=100: GC percent %d, want the environment's 100", got)
	}
	if got := debug.SetMemoryLimit(math.MaxInt64); got != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT=off: memory limit %d, want none", got)
	}
}
