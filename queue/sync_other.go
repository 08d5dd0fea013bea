//go:build !linux

package queue

import "os"

func fdatasync(f *os.File) error { return f.Sync() }
