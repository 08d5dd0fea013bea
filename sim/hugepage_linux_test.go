package sim

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"
)

// TestMakeHugeAdvisesEveryPageItTouches: the huge-page advice covers the
// first and the last byte of a slice, wherever the runtime placed it, not
// only the whole 2 MiB pages inside (a 4 MiB chunk of events not aligned
// to 2 MiB holds one whole huge page and two parts).
func TestMakeHugeAdvisesEveryPageItTouches(t *testing.T) {
	s := MakeHuge[byte](4<<20 + 12345)
	first := uintptr(unsafe.Pointer(&s[0]))
	last := uintptr(unsafe.Pointer(&s[len(s)-1]))
	if first%hugePage == 0 {
		t.Skip("the slice happens to start on a huge page") // nothing to round
	}
	for _, a := range []uintptr{first, last} {
		flags, err := vmFlags(a)
		if err != nil {
			t.Skip(err) // no /proc here
		}
		if !strings.Contains(" "+flags+" ", " hg ") {
			t.Errorf("the mapping of %#x (slice %#x..%#x) is not advised for huge pages: VmFlags %q", a, first, last, flags)
		}
	}
}

// vmFlags returns the VmFlags of the mapping that holds address a, from
// /proc/self/smaps ("hg": advised MADV_HUGEPAGE).
func vmFlags(a uintptr) (string, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 && strings.Contains(line[:strings.IndexByte(line, ' ')], "-") {
			in = lo <= a && a < hi
			continue
		}
		if v, ok := strings.CutPrefix(line, "VmFlags:"); ok && in {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("no mapping holds %#x", a)
}
