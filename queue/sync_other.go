//go:build !linux

package queue

import "os"

func fdatasync(f *os.File) error { return f.Sync() }

// allocate does nothing here: writes extend the file, as appends do.
func allocate(*os.File, int64) error { return nil }
