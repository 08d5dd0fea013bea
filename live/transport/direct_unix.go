//go:build unix

package transport

import (
	"net"
	"syscall"
)

// rawConnOf returns what a Send needs to write to c directly, or nil if c
// does not allow it (TLS).
func rawConnOf(c net.Conn) syscall.RawConn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	return raw
}

// writeNow makes one non-blocking write of b to raw and returns how many
// bytes the socket took: 0 if its buffer is full or the connection has
// failed (the writer then finds out which).
func writeNow(raw syscall.RawConn, b []byte) int {
	n := 0
	raw.Write(func(fd uintptr) bool {
		if m, err := syscall.Write(int(fd), b); err == nil {
			n = m
		}
		return true // never wait for the socket to become writable
	})
	return n
}
