package sim

import (
	"syscall"
	"unsafe"
)

// hugePage is the size of a transparent huge page on the platforms Linux
// runs Cohort on (x86-64, arm64 with 4 KiB base pages).
const hugePage = 2 << 20

// adviseHuge asks the kernel to back the memory of s with huge pages
// (madvise MADV_HUGEPAGE; honoured when transparent huge pages are
// "always" or "madvise"). At ten million processes the node records alone
// span hundreds of megabytes that deliveries read at random: with 4 KiB
// pages nearly every read also misses the TLB. A hint: it changes no
// result. Small slices are left alone.
//
// The advice covers every huge page that s touches, not only those inside
// it: the runtime aligns a large slice to its own 8 KiB pages, not to
// 2 MiB, so a 4 MiB chunk of event blocks holds one whole huge page and
// two parts. Advice on the whole pages inside alone left half of a flood's
// events in 4 KiB pages (at 10⁶ × 10: 352 of 717 MB resident in huge
// pages; 688 of 718 MB with the advice rounded outward). The parts outside
// s are the runtime's heap around it, which loses nothing by huge pages.
func adviseHuge[T any](s []T) {
	var zero T
	n := uintptr(cap(s)) * unsafe.Sizeof(zero)
	if n < 2*hugePage {
		return
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	beg := p &^ (hugePage - 1)
	end := (p + n + hugePage - 1) &^ (hugePage - 1)
	_ = madvise(beg, end-beg, syscall.MADV_HUGEPAGE)
}

// madvise is the system call on an address range that need not belong to
// one Go object.
func madvise(addr, n uintptr, advice int) error {
	if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, addr, n, uintptr(advice)); e != 0 {
		return e
	}
	return nil
}
