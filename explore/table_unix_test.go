//go:build unix

package explore

import (
	"runtime"
	"testing"
)

// A large visited set lives off the Go heap: a million fingerprints (a
// table of 11 MiB with tags) leave the heap as it was, so the garbage
// collector's goal is not raised five times the table (GOGC 400) and a
// table outgrown is given back at once.
func TestFPSetOffTheHeap(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := newFPSet(true)
	for i := uint64(1); i <= 1_000_000; i++ {
		_, slot := s.Add(i)
		s.SetTag(slot, uint32(i))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	if table := s.Bytes(); grown > int64(table)/10 {
		t.Errorf("the heap grew %d bytes with a table of %d", grown, table)
	}
	s.free()
	t.Logf("heap grew %d bytes", grown)
}
