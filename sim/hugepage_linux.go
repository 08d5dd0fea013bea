package sim

import (
	"syscall"
	"unsafe"
)

// hugePage is the size of a transparent huge page on the platforms Linux
// runs Cohort on (x86-64, arm64 with 4 KiB base pages).
const hugePage = 2 << 20

// adviseHuge asks the kernel to back the whole huge pages inside s with
// huge pages (madvise MADV_HUGEPAGE; honoured when transparent huge pages
// are "always" or "madvise"). At ten million processes the node records
// alone span hundreds of megabytes that deliveries read at random: with
// 4 KiB pages nearly every read also misses the TLB, and each page is a
// fault when first touched. A hint: it changes no result. Small slices are
// left alone.
func adviseHuge[T any](s []T) {
	var zero T
	n := uintptr(cap(s)) * unsafe.Sizeof(zero)
	if n < 2*hugePage {
		return
	}
	p := unsafe.Pointer(unsafe.SliceData(s))
	beg := (uintptr(p) + hugePage - 1) &^ (hugePage - 1)
	end := (uintptr(p) + n) &^ (hugePage - 1)
	if beg < end {
		_ = syscall.Madvise(unsafe.Slice((*byte)(unsafe.Add(p, beg-uintptr(p))), end-beg), syscall.MADV_HUGEPAGE)
	}
}
