//go:build !unix

package transport

import (
	"net"
	"syscall"
)

// Direct writes are only implemented on Unix; elsewhere every frame goes
// through the writer.

func rawConnOf(net.Conn) syscall.RawConn { return nil }

func writeNow(syscall.RawConn, []byte) int { return 0 }
