//go:build !linux

package diskio

import "os"

// Fdatasync makes f's data durable: here, with fsync.
func Fdatasync(f *os.File) error { return f.Sync() }

// Allocate does nothing here: writes extend the file, as appends do.
func Allocate(*os.File, int64, int64) error { return nil }
