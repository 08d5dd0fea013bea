package queue

import (
	"errors"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
	"time"
)

// memFS is a file system in memory that models a power cut: Crash drops
// every write not synced (file data not fsynced, creations and removals
// not made durable by SyncDir) and fails every file opened before it.
type memFS struct {
	mu    sync.Mutex
	gen   int
	files map[string]*memNode // what the process sees
	// durable directory: names whose creation was synced, and their node
	dirSynced map[string]*memNode
	syncs     int           // file syncs
	syncDelay time.Duration // each file sync takes this long (a slow disk)
}

type memNode struct {
	data   []byte // as written
	synced []byte // as on the platter
}

func newMemFS() *memFS {
	return &memFS{files: map[string]*memNode{}, dirSynced: map[string]*memNode{}}
}

// slow makes each file sync take d from now on, and returns the syncs
// made since.
func (m *memFS) slow(d time.Duration) (syncsSince func() int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	before := m.syncs
	m.syncDelay = d
	return func() int {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.syncs - before
	}
}

var errCrashed = errors.New("memfs: the power was cut")

// mount is the file system as one run of a process sees it: after a
// Crash, it fails everything (the process died with the power).
type mount struct {
	*memFS
	gen int
}

// Mount returns the file system for a run starting now.
func (m *memFS) Mount() FS {
	m.mu.Lock()
	defer m.mu.Unlock()
	return &mount{m, m.gen}
}

func (mt *mount) do(f func() error) error {
	mt.mu.Lock()
	defer mt.mu.Unlock()
	if mt.gen != mt.memFS.gen {
		return errCrashed
	}
	return f()
}

func (mt *mount) ReadFile(name string) (b []byte, err error) {
	err = mt.do(func() error { b, err = mt.readFile(name); return err })
	return b, err
}

func (mt *mount) Open(name string) (f File, err error) {
	err = mt.do(func() error { f = mt.append(name); return nil })
	return f, err
}

func (mt *mount) Remove(name string) error { return mt.do(func() error { return mt.remove(name) }) }

func (mt *mount) List(dir string) (names []string, err error) {
	err = mt.do(func() error { names = mt.list(dir); return nil })
	return names, err
}

func (mt *mount) SyncDir(dir string) error {
	return mt.do(func() error { mt.syncDir(dir); return nil })
}

// Crash cuts the power: only synced data survives.
func (m *memFS) Crash() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen++
	files := map[string]*memNode{}
	for name, n := range m.dirSynced {
		n.data = append([]byte(nil), n.synced...)
		files[name] = n
	}
	m.files = files
}

func (m *memFS) ReadFile(name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.readFile(name)
}

func (m *memFS) readFile(name string) ([]byte, error) {
	n, ok := m.files[name]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return append([]byte(nil), n.data...), nil
}

func (m *memFS) Open(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.append(name), nil
}

func (m *memFS) append(name string) File {
	n, ok := m.files[name]
	if !ok {
		n = &memNode{}
		m.files[name] = n
	}
	return &memFile{fs: m, n: n, gen: m.gen}
}

func (m *memFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.remove(name)
}

func (m *memFS) remove(name string) error {
	if _, ok := m.files[name]; !ok {
		return fs.ErrNotExist
	}
	delete(m.files, name)
	return nil
}

func (m *memFS) List(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.list(dir), nil
}

func (m *memFS) list(dir string) []string {
	var names []string
	for name := range m.files {
		if path.Dir(name) == path.Clean(dir) {
			names = append(names, path.Base(name))
		}
	}
	sort.Strings(names)
	return names
}

func (m *memFS) MkdirAll(string) error { return nil }

func (m *memFS) SyncDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.syncDir(dir)
	return nil
}

func (m *memFS) syncDir(dir string) {
	for name := range m.dirSynced {
		if path.Dir(name) == path.Clean(dir) {
			if _, ok := m.files[name]; !ok {
				delete(m.dirSynced, name)
			}
		}
	}
	for name, n := range m.files {
		if path.Dir(name) == path.Clean(dir) {
			m.dirSynced[name] = n
		}
	}
}

// damage applies f to a file's data, as seen and as synced.
func (m *memFS) damage(name string, f func([]byte) []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.files[name]
	n.data = f(n.data)
	n.synced = append([]byte(nil), n.data...)
}

func (m *memFS) segments() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for name := range m.files {
		if strings.HasSuffix(name, ".seg") {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

type memFile struct {
	fs  *memFS
	n   *memNode
	gen int
}

func (f *memFile) live() error {
	if f.gen != f.fs.gen {
		return errCrashed
	}
	return nil
}

func (f *memFile) WriteAt(b []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.live(); err != nil {
		return 0, err
	}
	f.grow(off + int64(len(b)))
	copy(f.n.data[off:], b)
	return len(b), nil
}

func (f *memFile) Allocate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.live(); err != nil {
		return err
	}
	f.grow(size)
	return nil
}

// grow extends the file with zeros to size bytes, if it is shorter.
func (f *memFile) grow(size int64) {
	if n := size - int64(len(f.n.data)); n > 0 {
		f.n.data = append(f.n.data, make([]byte, n)...)
	}
}

func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	delay := f.fs.syncDelay
	f.fs.mu.Unlock()
	time.Sleep(delay)
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.live(); err != nil {
		return err
	}
	f.n.synced = append(f.n.synced[:0], f.n.data...)
	f.fs.syncs++
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.live(); err != nil {
		return err
	}
	f.n.data = f.n.data[:size]
	return nil
}

func (f *memFile) Close() error { return nil }
