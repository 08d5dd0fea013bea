package queue

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}

// allocate extends f with zeros to size bytes (fallocate, which leaves a
// longer file alone). On a file system without fallocate it does
// nothing: writes then extend the file, as appends do.
func allocate(f *os.File, size int64) error {
	for {
		err := unix.Fallocate(int(f.Fd()), 0, 0, size)
		switch err {
		case unix.EINTR:
			continue
		case unix.EOPNOTSUPP:
			return nil
		}
		return err
	}
}
