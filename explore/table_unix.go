//go:build unix

package explore

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// newTable returns a zeroed table of n entries for the visited set. One of
// bigTable bytes or more is mapped from the operating system, off the Go
// heap: the garbage collector neither counts it nor waits to reclaim it,
// so the heap's goal (GOGC) is set by the little the search allocates
// besides, and a table outgrown is returned at once (freeTable) instead
// of lingering as garbage until the heap reaches a goal five times the
// live table (GOGC 400: the peak RSS of a search was then about five
// times its visited set).
func newTable[T uint16 | uint32 | uint64](n int) []T {
	size := n * int(unsafe.Sizeof(T(0)))
	if size < bigTable {
		return make([]T, n)
	}
	p, err := unix.MmapPtr(-1, 0, nil, uintptr(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		panic(fmt.Sprintf("explore: mapping %d bytes for the visited set: %v", size, err))
	}
	return unsafe.Slice((*T)(p), n)
}

// freeTable returns a table newTable or growTable made, not to be used
// again.
func freeTable[T uint16 | uint32 | uint64](t []T) {
	size := len(t) * int(unsafe.Sizeof(T(0)))
	if size < bigTable {
		return // the garbage collector's
	}
	if err := unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(t)), uintptr(size)); err != nil {
		panic(fmt.Sprintf("explore: unmapping the visited set's table: %v", err))
	}
}

// growTable returns t (from newTable or growTable) grown to n entries, its
// own kept and the others zero; t is not to be used again. A mapped
// table is extended where the system can (remap: its pages stay, only
// the new ones are filled in), else copied into a new table.
func growTable[T uint16 | uint32 | uint64](t []T, n int) []T {
	size, old := n*int(unsafe.Sizeof(T(0))), len(t)*int(unsafe.Sizeof(T(0)))
	if old >= bigTable {
		if p, ok := remap(unsafe.Pointer(unsafe.SliceData(t)), old, size); ok {
			return unsafe.Slice((*T)(p), n)
		}
	}
	g := newTable[T](n)
	copy(g, t)
	freeTable(t)
	return g
}
