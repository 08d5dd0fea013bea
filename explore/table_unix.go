//go:build unix

package explore

import (
	"fmt"
	"syscall"
	"unsafe"
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
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		panic(fmt.Sprintf("explore: mapping %d bytes for the visited set: %v", size, err))
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// freeTable returns a table newTable made, not to be used again.
func freeTable[T uint16 | uint32 | uint64](t []T) {
	size := len(t) * int(unsafe.Sizeof(T(0)))
	if size < bigTable {
		return // the garbage collector's
	}
	if err := syscall.Munmap(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(t))), size)); err != nil {
		panic(fmt.Sprintf("explore: unmapping the visited set's table: %v", err))
	}
}
