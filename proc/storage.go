package proc

// Storage is a process's stable storage: a log of records that outlives a
// crash of the process as far as it was synced. It is what a process that
// must not forget (a Raft server's term, vote and log; the last fencing
// token it handed out) writes before it acts, and what its next
// incarnation starts from.
//
// The contract is the one a disk gives a write-ahead log:
//
//   - Append and Replace are buffered: at a crash, any suffix of the
//     operations since the last Sync may be lost, and the last surviving
//     Append may be torn — then it is lost too (hosts detect a torn record
//     by its checksum and drop it). Operations never survive out of order:
//     if an operation survives, every earlier one does.
//   - Sync returns once everything before it is durable. A process that
//     sends a message or reports an output that depends on a write must
//     Sync first. Messages sent before a Sync do not wait for it: a host
//     may send them while it syncs (the live host does; the simulator's
//     CrashInSync delivers them though the Sync never returns).
//   - Replace swaps the whole log for recs atomically (compaction): after
//     a crash the log is either the old one, plus what survived of the
//     appends before Replace, or recs.
//
// Records are opaque bytes; the algorithm encodes them (and must accept,
// at recovery, any record it ever wrote). A host that has no stable storage
// (a test's stub Env) returns nil from Env.Storage; a live node without a
// data directory keeps the log in memory, so it survives nothing.
type Storage interface {
	// Recovered is the log as this incarnation found it when it started:
	// every record that survived, in order; empty on a first start. It is
	// not changed by later writes, and must not be modified.
	Recovered() [][]byte
	// Append adds rec at the end of the log. The host keeps its own copy.
	Append(rec []byte)
	// Replace makes recs the whole log. The host keeps its own copy.
	Replace(recs [][]byte)
	// Sync makes every earlier Append and Replace durable.
	Sync()
	// Size is the log's length in bytes, as a process deciding when to
	// compact sees it (unsynced operations included).
	Size() int
}

// BackgroundSyncer is Storage that can make its appends durable without
// holding up the process: SyncThen begins to write and sync everything
// appended so far, and the host fires the timer tag (Process.Timeout)
// once it is durable — or stops the process if that failed, as a failed
// Sync would. Appends made meanwhile are not covered (a later SyncThen
// or Sync covers them). A process that lets the events arriving during
// one sync share the next one has group commit. The live host's files
// are BackgroundSyncers.
type BackgroundSyncer interface {
	SyncThen(tag any)
}

// SyncThen makes everything appended to st durable, then fires the timer
// tag: in the background if st is a BackgroundSyncer, else by Sync and
// a timer of no delay.
func SyncThen(env Env, st Storage, tag any) {
	if b, ok := st.(BackgroundSyncer); ok {
		b.SyncThen(tag)
		return
	}
	st.Sync()
	env.SetTimer(0, tag)
}

// MemStorage is Storage in memory: every operation is durable at once,
// and nothing outlives the process. Tests use it, and a live node without
// a data directory.
type MemStorage struct {
	recovered, log [][]byte
	size           int
}

// NewMemStorage returns a MemStorage whose Recovered log is recs.
func NewMemStorage(recs [][]byte) *MemStorage {
	m := &MemStorage{recovered: recs}
	m.Replace(recs)
	return m
}

func (m *MemStorage) Recovered() [][]byte { return m.recovered }
func (m *MemStorage) Sync()               {}
func (m *MemStorage) Size() int           { return m.size }

func (m *MemStorage) Append(rec []byte) {
	m.log = append(m.log, append([]byte(nil), rec...))
	m.size += len(rec)
}

func (m *MemStorage) Replace(recs [][]byte) {
	m.log, m.size = nil, 0
	for _, r := range recs {
		m.Append(r)
	}
}

// Log is the current log (for tests and hosts). It must not be modified.
func (m *MemStorage) Log() [][]byte { return m.log }

// Rejoiner is a process that, restarted from its stable storage after a
// crash, rejoins the running algorithm: it tells its peers it lost its
// state, and they give it back what it needs (a Ricart–Agrawala process
// says HELLO, and the others send their requests again). Rejoins marks
// it; it does nothing. A host may stop such a process while it is idle
// and start it again from its storage when it is next needed (a live
// node reaping an unused lock): for its peers that is one more restart.
type Rejoiner interface{ Rejoins() }
