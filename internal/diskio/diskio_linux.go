// Package diskio holds the file system calls that the stores on disk
// (the queue manager's log, the write-ahead log of package wal) share:
// a data sync and a preallocation, each retried when a signal
// interrupts it.
package diskio

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Fdatasync makes f's data durable, and its size, but not its other
// metadata (times): one write less than fsync where the size is unchanged.
func Fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}

// Allocate allocates f's bytes from off to off+n (fallocate), zeros
// where f was shorter, extending its size; it leaves f's bytes alone
// where it holds some. On a file system without fallocate it does
// nothing: writes then extend the file, as appends do.
func Allocate(f *os.File, off, n int64) error {
	for {
		err := unix.Fallocate(int(f.Fd()), 0, off, n)
		switch err {
		case unix.EINTR:
			continue
		case unix.EOPNOTSUPP:
			return nil
		}
		return err
	}
}
