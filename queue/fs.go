package queue

import (
	"os"
	"path/filepath"
	"sort"

	"github.com/cohort-go/cohort/internal/diskio"
)

// FS is the file system a persistent Manager writes through: the
// operating system's (OS), or a test's, which can drop every write not
// yet synced, as a power cut does.
type FS interface {
	// ReadFile returns the whole file.
	ReadFile(name string) ([]byte, error)
	// Open opens name for writing, creating it if absent.
	Open(name string) (File, error)
	// Remove deletes a file; it is durable once SyncDir returns.
	Remove(name string) error
	// List returns the names (not paths) of the files in dir, sorted.
	List(dir string) ([]string, error)
	// MkdirAll creates dir and its parents.
	MkdirAll(dir string) error
	// SyncDir makes the creations and removals of files in dir durable.
	SyncDir(dir string) error
}

// File is a file open for writing.
type File interface {
	// WriteAt writes b at byte off.
	WriteAt(b []byte, off int64) (int, error)
	// Allocate extends the file with zeros to size bytes, if it is
	// shorter (preallocation: a later write into that space leaves the
	// size alone). Durable once synced.
	Allocate(size int64) error
	// Sync makes what was written durable (fdatasync).
	Sync() error
	// Truncate cuts the file to size bytes.
	Truncate(size int64) error
	Close() error
}

// OS is the operating system's file system.
var OS FS = osFS{}

type osFS struct{}

func (osFS) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }
func (osFS) Remove(name string) error             { return os.Remove(name) }
func (osFS) MkdirAll(dir string) error            { return os.MkdirAll(dir, 0o700) }

func (osFS) Open(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) List(dir string) ([]string, error) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range es {
		if !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(filepath.Clean(dir))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

type osFile struct{ *os.File }

func (f osFile) Sync() error { return diskio.Fdatasync(f.File) }

func (f osFile) Allocate(size int64) error { return diskio.Allocate(f.File, 0, size) }
