package sim

import (
	"slices"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Stable storage (proc.Storage) in the simulator. Each process that uses
// it has a disk: the log as it is durable, and the operations since the
// last Sync, which live only in the page cache. A crash keeps a random
// prefix of those operations — possibly none, possibly all — and loses
// the rest, as a real disk may at a power cut (the simulators of
// FoundationDB and TigerBeetle inject the same fault). A torn last record
// is the same, seen through the checksum that detects it: the record is
// gone. The draws come from their own seeded source, so a run's schedule
// does not change when an algorithm starts to write.
//
// Processes that never touch their storage cost nothing: disks are made
// on first use.

// disk is the stable storage of one process, across its incarnations.
type disk struct {
	durable   [][]byte
	unsynced  []diskOp
	view      proc.MemStorage // the log as the current incarnation sees it
	recovered [][]byte        // what the current incarnation started from
}

// diskOp is an unsynced Append (recs holds one record) or Replace.
type diskOp struct {
	replace bool
	recs    [][]byte
}

// storage is the proc.Storage a process's Env hands out.
type storage struct {
	s  *Sim
	id proc.ID
	d  *disk
}

func (st storage) Recovered() [][]byte { return st.d.recovered }
func (st storage) Size() int           { return st.d.view.Size() }

func (st storage) Append(rec []byte) {
	st.d.view.Append(rec)
	log := st.d.view.Log()
	st.d.unsynced = append(st.d.unsynced, diskOp{recs: log[len(log)-1:]})
}

func (st storage) Replace(recs [][]byte) {
	st.d.view.Replace(recs)
	st.d.unsynced = append(st.d.unsynced, diskOp{replace: true, recs: st.d.view.Log()})
}

func (st storage) Sync() {
	if st.s.armed[st.id] {
		st.s.crashInSync(st.id)
	}
	d := st.d
	d.durable = apply(d.durable, d.unsynced)
	d.unsynced = d.unsynced[:0]
}

// crashedInSync unwinds the handler of a process that crashed in a Sync
// (CrashInSync): nothing after the Sync happens.
type crashedInSync struct{}

// crashInSync crashes process id, which is calling Sync: its disk keeps a
// random prefix of the writes being synced.
func (s *Sim) crashInSync(id proc.ID) {
	s.fault(&Fault{Kind: Crash, Node: id, At: time.Duration(s.now)})
	panic(crashedInSync{})
}

// clone copies the disk for a fork of the run. The records are the host's
// own copies, never changed in place, so the two disks share them; the
// slices that hold them are the fork's own (clipped, where only appended
// to, so that an append on either side cannot write where the other
// looks).
func (d *disk) clone() *disk {
	c := &disk{
		durable:   slices.Clip(d.durable),
		unsynced:  slices.Clone(d.unsynced),
		recovered: slices.Clip(d.recovered),
	}
	c.view.Replace(d.view.Log())
	return c
}

// apply returns log after ops.
func apply(log [][]byte, ops []diskOp) [][]byte {
	for _, op := range ops {
		if op.replace {
			log = append([][]byte(nil), op.recs...)
		} else {
			log = append(log, op.recs...)
		}
	}
	return log
}

// storageOf returns process id's storage, making its disk on first use.
func (s *Sim) storageOf(id proc.ID) proc.Storage {
	s.ownDisk(id)
	d := s.disks[id]
	if d == nil {
		d = &disk{}
		s.setDisk(id, d)
	}
	return storage{s, id, d}
}

// crashDisk applies a crash to process id's disk: a random prefix of the
// unsynced operations survives.
func (s *Sim) crashDisk(id proc.ID) {
	s.ownDisk(id)
	d := s.disks[id]
	if d == nil || len(d.unsynced) == 0 {
		return
	}
	if s.diskRand == nil {
		s.diskRand = newProcRand(s.cfg.Seed, 0x6469736b) // "disk"
	}
	keep := s.diskRand.IntN(len(d.unsynced) + 1)
	s.st.WritesLost += int64(len(d.unsynced) - keep)
	d.durable = apply(d.durable, d.unsynced[:keep])
	d.unsynced = nil
}

// restartDisk gives the new incarnation of process id the durable log.
func (s *Sim) restartDisk(id proc.ID) {
	s.ownDisk(id)
	d := s.disks[id]
	if d == nil {
		return
	}
	d.recovered = d.durable
	d.view = *proc.NewMemStorage(d.durable)
}

// Durable returns process id's durable log: what a crash now would leave
// it (for tests and checkers). It must not be modified.
func (s *Sim) Durable(id proc.ID) [][]byte {
	if d := s.disks[id]; d != nil {
		return d.durable
	}
	return nil
}
