package explore

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// remap extends the mapping of old bytes at p to size bytes, moving it if
// it must (mremap: the pages move, not their contents), the new ones
// zero.
func remap(p unsafe.Pointer, old, size int) (unsafe.Pointer, bool) {
	q, err := unix.MremapPtr(p, uintptr(old), nil, uintptr(size), unix.MREMAP_MAYMOVE)
	if err != nil {
		panic(fmt.Sprintf("explore: growing the visited set's table to %d bytes: %v", size, err))
	}
	return q, true
}
