//go:build unix && !linux

package explore

import "unsafe"

// remap is Linux's alone (table_linux.go): elsewhere a table grows by a
// copy.
func remap(p unsafe.Pointer, old, size int) (unsafe.Pointer, bool) { return nil, false }
