package consensus

import (
	"testing"

	"github.com/cohort-go/cohort/proc"
)

// storageEnv is an Env that offers only stable storage.
type storageEnv struct {
	proc.Env
	st proc.Storage
}

func (e storageEnv) Storage() proc.Storage { return e.st }

// TestPersistingEntriesCopiesOnce: a server encodes the records of the
// entries it appends into a buffer it keeps, since the host copies what
// it is given: under load every message's entry is persisted on every
// server, and a record allocated each time was a tenth of the bytes the
// replicated group allocates per message (more work for the collector,
// whose mark phases the slowest messages overlap).
func TestPersistingEntriesCopiesOnce(t *testing.T) {
	st := proc.NewMemStorage(nil)
	env := &storageEnv{st: st}
	r := &Raft{}
	es := []Entry{{Term: 1, Data: make([]byte, 200)}, {Term: 1}}
	r.persistEntries(env, 1, es) // the buffer grows once
	allocs := testing.AllocsPerRun(100, func() { r.persistEntries(env, 3, es) })
	// The host's copy, and now and then its list of records growing.
	if allocs > 1.5 {
		t.Errorf("persisting two entries allocates %.1f times, want the host's copy only (1)", allocs)
	}
	got := st.Log()[len(st.Log())-1]
	if want := appendEntriesRecord(nil, 3, es); string(got) != string(want) {
		t.Errorf("the last record is %x, want %x", got, want)
	}
}
