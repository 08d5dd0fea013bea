package explore

import (
	"os"
	"syscall"
	"testing"
)

// A large visited set grows in place: its mapping is extended and the
// fingerprints moved on within it, so that growing fills in only the new
// pages — not a whole new table at each growth of an eighth, which filled
// in every page about eight times over.
func TestFPSetGrowsInPlace(t *testing.T) {
	s := newFPSet(true)
	defer s.free()
	add := func(from, to uint64) {
		for i := from; i < to; i++ {
			_, slot := s.Add(i * 0x9E3779B97F4A7C15)
			s.SetTag(slot, uint32(i)|1<<16) // wide tags from the first
		}
	}
	add(1, 200_000) // past a mapped table's first MiB
	before, faults := s.Bytes(), minorFaults(t)
	add(200_000, 1_000_000)
	faults = minorFaults(t) - faults
	pages := (s.Bytes() - before) / os.Getpagesize()
	if faults > 2*pages {
		t.Errorf("growing by %d pages filled in %d", pages, faults)
	}
	t.Logf("growing by %d pages filled in %d", pages, faults)
}

// minorFaults is the number of pages the process has had filled in.
func minorFaults(t *testing.T) int {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		t.Fatal(err)
	}
	return int(u.Minflt)
}
