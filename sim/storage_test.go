package sim

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// journal writes to its stable storage every millisecond: an Append of
// its tick count, a Sync every third tick, a Replace (compaction) every
// seventh. Its history, kept outside the process so that it outlives
// crashes, records the log after each operation and how many operations
// were synced.
type journal struct {
	h    *journalHistory
	tick int
}

type journalHistory struct {
	states    [][][]byte // states[k]: the log after operation k (states[0]: empty)
	synced    int        // operations known durable
	recovered [][][]byte // what each incarnation started from
	atCrash   []journalHistory
}

func (p *journal) Start(env proc.Env) {
	st := env.Storage()
	p.h.recovered = append(p.h.recovered, slices.Clone(st.Recovered()))
	if len(p.h.states) == 0 {
		p.h.states = [][][]byte{nil}
	} else {
		p.h.atCrash = append(p.h.atCrash, journalHistory{states: p.h.states, synced: p.h.synced})
		// The log this incarnation continues is what it recovered.
		p.h.states = [][][]byte{slices.Clone(st.Recovered())}
		p.h.synced = 0
	}
	env.SetTimer(time.Millisecond, nil)
}

func (p *journal) Timeout(env proc.Env, _ any) {
	st := env.Storage()
	p.tick++
	last := p.h.states[len(p.h.states)-1]
	rec := []byte(strconv.Itoa(p.tick))
	if p.tick%7 == 0 {
		st.Replace([][]byte{rec})
		p.h.states = append(p.h.states, [][]byte{rec})
	} else {
		st.Append(rec)
		p.h.states = append(p.h.states, append(slices.Clone(last), rec))
	}
	if p.tick%3 == 0 {
		st.Sync()
		p.h.synced = len(p.h.states) - 1
	}
	env.SetTimer(time.Millisecond, nil)
}

func (p *journal) Receive(proc.Env, proc.ID, proc.Message) {}
func (p *journal) Input(proc.Env, proc.Input)              {}

func equalLogs(a, b [][]byte) bool { return slices.EqualFunc(a, b, bytes.Equal) }

// TestStorageKeepsSyncedAndAPrefixOfTheRest: over many seeded crash
// times, a recovered process finds every synced operation and a prefix of
// the unsynced ones — never a later operation without an earlier one —
// and the simulator exercises both ends: crashes that lose every unsynced
// write and crashes that keep them all.
func TestStorageKeepsSyncedAndAPrefixOfTheRest(t *testing.T) {
	var lostAll, keptAll, lost int
	for seed := uint64(1); seed <= 300; seed++ {
		h := &journalHistory{}
		crashAt := time.Duration(5+seed%40)*time.Millisecond + 500*time.Microsecond
		_, res := run(t, Config{Nodes: 1, Seed: seed, Deadline: 60 * time.Millisecond,
			New: func(proc.ID, int) proc.Process { return &journal{h: h} },
			Faults: []Fault{{Kind: Crash, Node: 0, At: crashAt},
				{Kind: Recover, Node: 0, At: crashAt + 2*time.Millisecond}}})
		if len(h.recovered) != 2 {
			t.Fatalf("seed %d: %d incarnations started", seed, len(h.recovered))
		}
		before, got := h.atCrash[0], h.recovered[1]
		k := slices.IndexFunc(before.states, func(st [][]byte) bool { return equalLogs(st, got) })
		// Several states can be equal (a Replace by the same record): take
		// the last match.
		for j := len(before.states) - 1; j > k; j-- {
			if equalLogs(before.states[j], got) {
				k = j
				break
			}
		}
		if k < before.synced {
			t.Fatalf("seed %d: recovered %q, which is state %d of %d, but %d operations were synced",
				seed, got, k, len(before.states)-1, before.synced)
		}
		switch ops := len(before.states) - 1; {
		case k == before.synced && k < ops:
			lostAll++
		case k == ops && k > before.synced:
			keptAll++
		}
		if res.WritesLost > 0 {
			lost++
		}
	}
	if lostAll == 0 || keptAll == 0 || lost == 0 {
		t.Errorf("over 300 crashes: %d lost every unsynced write, %d kept them all, %d counted losses", lostAll, keptAll, lost)
	}
}

// TestStorageIsDeterministic: the same seed loses the same writes.
func TestStorageIsDeterministic(t *testing.T) {
	runOnce := func(seed uint64) string {
		h := &journalHistory{}
		_, res := run(t, Config{Nodes: 1, Seed: seed, Deadline: 40 * time.Millisecond,
			New: func(proc.ID, int) proc.Process { return &journal{h: h} },
			Faults: []Fault{{Kind: Crash, Node: 0, At: 11*time.Millisecond + 1},
				{Kind: Recover, Node: 0, At: 12 * time.Millisecond},
				{Kind: Crash, Node: 0, At: 23*time.Millisecond + 1},
				{Kind: Recover, Node: 0, At: 24 * time.Millisecond}}})
		return fmt.Sprintf("%q lost=%d", h.recovered, res.WritesLost)
	}
	for seed := uint64(1); seed <= 20; seed++ {
		if a, b := runOnce(seed), runOnce(seed); a != b {
			t.Fatalf("seed %d: %s, then %s", seed, a, b)
		}
	}
}

// TestStorageOfAJoiner: a process that joins later starts from an empty
// log, and one that never writes costs no disk.
func TestStorageOfAJoiner(t *testing.T) {
	h := &journalHistory{}
	s, _ := run(t, Config{Nodes: 2, Seed: 1, Deadline: 10 * time.Millisecond,
		New: func(id proc.ID, _ int) proc.Process {
			if id == 0 {
				return &chatter{}
			}
			return &journal{h: h}
		},
		Faults: []Fault{{Kind: Join, Node: 1, At: 3 * time.Millisecond}}})
	if len(h.recovered) != 1 || len(h.recovered[0]) != 0 {
		t.Errorf("the joiner recovered %q", h.recovered)
	}
	if s.Durable(0) != nil || len(s.disks) != 1 {
		t.Errorf("p0 never wrote, yet has a disk (%d disks)", len(s.disks))
	}
	if n := len(s.Durable(1)); n == 0 {
		t.Error("p1 synced nothing")
	}
}

// TestCrashInSync: the process crashes inside its next Sync after At: at
// a tick that syncs (every third), with a random prefix of the writes
// being synced kept, and nothing after the Sync done (the history never
// saw the Sync return).
func TestCrashInSync(t *testing.T) {
	var lostSome, keptAll int
	for seed := uint64(1); seed <= 100; seed++ {
		h := &journalHistory{}
		at := time.Duration(seed) * 370 * time.Microsecond
		_, res := run(t, Config{Nodes: 1, Seed: seed, Deadline: 80 * time.Millisecond,
			New: func(proc.ID, int) proc.Process { return &journal{h: h} },
			Faults: []Fault{{Kind: CrashInSync, Node: 0, At: at},
				{Kind: Recover, Node: 0, At: 70 * time.Millisecond}}})
		if len(h.atCrash) != 1 {
			t.Fatalf("seed %d: %d recoveries", seed, len(h.atCrash))
		}
		before, got := h.atCrash[0], h.recovered[1]
		ops := len(before.states) - 1
		if ops%3 != 0 || ops == before.synced {
			t.Fatalf("seed %d: crashed after %d operations, %d synced: not inside a Sync", seed, ops, before.synced)
		}
		k := -1
		for j := len(before.states) - 1; j >= 0; j-- {
			if equalLogs(before.states[j], got) {
				k = j
				break
			}
		}
		if k < before.synced {
			t.Fatalf("seed %d: recovered state %d of %d, but %d were synced", seed, k, ops, before.synced)
		}
		if k < ops {
			lostSome++
		} else {
			keptAll++
		}
		if res.WritesLost > int64(ops-before.synced) {
			t.Errorf("seed %d: %d writes counted lost of %d unsynced", seed, res.WritesLost, ops-before.synced)
		}
	}
	if lostSome == 0 || keptAll == 0 {
		t.Errorf("over 100 crashes in a sync: %d lost some writes, %d kept all", lostSome, keptAll)
	}
}
