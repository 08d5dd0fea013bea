package live

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cohort-go/cohort/live/wal"
	"github.com/cohort-go/cohort/proc"
)

// Stable storage of a live service (proc.Storage). With Config.DataDir
// set, each service that uses it has a log file there, named after the
// service; without, it keeps its log in memory, which survives nothing.
//
// A write or sync that fails stops the service, as a crash would: after a
// failed fsync what reached the disk is unknown, and an algorithm that
// went on would act on writes it may have lost. Messages the failing
// handler sent after its last successful Sync are dropped with it.
//
// Sync first sends the messages the handler sent before it, then writes
// and syncs: by proc.Storage's contract they do not depend on what is
// being synced, so the network and the disk work at once. A Raft leader
// that sends its new entries and then syncs them has them on the
// followers' disks while they reach its own (Ongaro's thesis, §10.2.1).

// storageFailure is the panic value of a failed storage operation.
type storageFailure struct{ err error }

func (f storageFailure) String() string { return "stable storage failed: " + f.err.Error() }

// fileStorage is proc.Storage on a wal.Log.
type fileStorage struct {
	l *wal.Log
	s *Service
}

func (f fileStorage) Recovered() [][]byte { return f.l.Recovered() }
func (f fileStorage) Size() int           { return int(f.l.Size()) }
func (f fileStorage) Append(rec []byte)   { check(f.l.Append(rec)) }
func (f fileStorage) Replace(recs [][]byte) {
	check(f.l.Replace(recs))
}
func (f fileStorage) Sync() {
	f.s.flushNow()
	check(f.l.Sync())
}

// SyncThen (proc.BackgroundSyncer) sends the messages the handler sent
// before it, as Sync does, and writes and syncs in a goroutine of its own;
// the timer tag fires once that is done, or the service stops if it
// failed. The algorithm handles events meanwhile: group commit.
func (f fileStorage) SyncThen(tag any) {
	s := f.s
	s.flushNow()
	write := f.l.SyncLater()
	s.nextTimer++
	id := s.nextTimer
	s.timers[id] = nil
	go func() {
		err := write()
		_ = s.post(event{kind: evTimer, timer: id, tag: tag, failed: err})
	}()
}

func check(err error) {
	if err != nil {
		panic(storageFailure{err})
	}
}

// StoragePath is the file in which a node with data directory dir keeps
// the log of service name.
func StoragePath(dir, name string) string {
	return filepath.Join(dir, url.PathEscape(name)+".wal")
}

// idleSuffix ends the name of a reaped service's log (Node.Reap), which
// Stored does not list.
const idleSuffix = ".idle"

// Stored lists the services that have a log in the node's data directory
// (none without one), sorted: what an earlier run of the node kept. A node
// that restarts resumes those whose algorithms must tell their peers they
// restarted (a Ricart–Agrawala lock), instead of waiting for a peer's
// message to start them.
func (n *Node) Stored() ([]string, error) {
	if n.cfg.DataDir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(n.cfg.DataDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // a first start
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		base, ok := strings.CutSuffix(e.Name(), ".wal")
		if !ok || e.IsDir() {
			continue
		}
		if name, err := url.PathUnescape(base); err == nil && StoragePath(n.cfg.DataDir, name) == filepath.Join(n.cfg.DataDir, e.Name()) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names, nil
}

// storage opens the service's storage on first use. The caller holds turn.
func (s *Service) storage() proc.Storage {
	if s.store != nil {
		return s.store
	}
	dir := s.node.cfg.DataDir
	if dir == "" {
		s.store = proc.NewMemStorage(nil)
		return s.store
	}
	path := StoragePath(dir, s.name)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		// Reaped before (Node.Reap): its log is back in use.
		if err := os.Rename(path+idleSuffix, path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			panic(storageFailure{fmt.Errorf("reopening the log: %w", err)})
		}
	}
	l, err := wal.Open(path)
	if err != nil {
		panic(storageFailure{fmt.Errorf("opening the log: %w", err)})
	}
	if t := l.Torn(); t > 0 {
		s.node.log.Warn("stable storage: cut off a torn tail (writes never synced)", "service", s.name, "bytes", t)
	}
	s.wal = l
	s.store = fileStorage{l, s}
	return s.store
}
