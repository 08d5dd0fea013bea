package consensus

import (
	"cmp"
	"maps"
	"slices"
)

// The duplicate table of the replicated services (Groups, Queues): a
// client numbers its operations per origin (a random id per client
// incarnation) and resends one that goes unanswered under the same
// number, so two copies may reach the log; the state machine applies a
// number once. Per origin it keeps the highest number below which all
// are applied (Done) and the applied ones above it — at-most-once RPC's
// table of Birrell and Nelson (1984), kept in the replicated state so
// that every server filters alike.
//
// Every bound below trades a possible duplicate for memory: a copy that
// arrives after its origin or its gap was given up is applied again.
// The table is part of every snapshot, so it must stay small whatever
// the origins send.
type origins struct {
	byID  map[uint64]*origin
	above int // seqs held above Done, across the origins
}

type origin struct {
	Done  uint64          `json:"done"`  // every seq ≤ Done is applied
	Above map[uint64]bool `json:"above"` // applied seqs > Done
	Used  uint64          `json:"used"`  // the entry that last used it
}

// Window bounds a sender's unacknowledged operations: an origin with more
// applied above a gap gives up on the gap.
const Window = 4096

// MaxOrigins bounds the origins remembered; the one unused longest is
// forgotten first (a sender that resends after that may apply twice).
const MaxOrigins = 4096

// MaxAbove bounds the sequence numbers the table holds above the
// origins' Done, across the origins: past it, the origin with the most
// gives up on its gaps (as one past its Window does).
const MaxAbove = 16 * Window

func newOrigins() origins { return origins{byID: map[uint64]*origin{}} }

// applied reports whether origin o's operation seq was applied.
func (t *origins) applied(o, seq uint64) bool {
	org := t.byID[o]
	return org != nil && (seq <= org.Done || org.Above[seq])
}

// mark records origin o's operation seq as applied by entry index.
func (t *origins) mark(index, o, seq uint64) {
	org := t.byID[o]
	if org == nil {
		if len(t.byID) >= MaxOrigins {
			t.forgetOldest()
		}
		org = &origin{Above: map[uint64]bool{}}
		t.byID[o] = org
	}
	org.Used = index
	before := len(org.Above)
	if seq == org.Done+1 { // in order, the usual case: no set to keep
		org.Done++
	} else if seq > org.Done {
		org.Above[seq] = true
	}
	for len(org.Above) > 0 && org.Above[org.Done+1] {
		delete(org.Above, org.Done+1)
		org.Done++
	}
	if len(org.Above) > Window { // an origin past its window: give up on the gap
		org.Done = slices.Min(slices.Collect(maps.Keys(org.Above)))
		delete(org.Above, org.Done)
		for org.Above[org.Done+1] {
			delete(org.Above, org.Done+1)
			org.Done++
		}
	}
	t.above += len(org.Above) - before
	if t.above > MaxAbove {
		t.giveUpGaps()
	}
}

// forgetOldest forgets the origin unused longest (the lowest id among
// equals, for determinism).
func (t *origins) forgetOldest() {
	ids := slices.Sorted(maps.Keys(t.byID))
	old := slices.MinFunc(ids, func(a, b uint64) int { return cmp.Compare(t.byID[a].Used, t.byID[b].Used) })
	t.above -= len(t.byID[old].Above)
	delete(t.byID, old)
}

// giveUpGaps bounds the table: the origin with the most seqs above its
// Done (the lowest id of those) gives up on every gap below its highest —
// a copy of an operation numbered in one would be taken for a duplicate.
// An origin keeps no more than its operations under way above Done, so it
// is one far out of step.
func (t *origins) giveUpGaps() {
	var worst uint64
	most := -1
	for id, o := range t.byID { // the order does not matter: ties go to the lowest id
		if n := len(o.Above); n > most || n == most && id < worst {
			worst, most = id, n
		}
	}
	org := t.byID[worst]
	org.Done = slices.Max(slices.Collect(maps.Keys(org.Above)))
	clear(org.Above)
	t.above -= most
}

// restore replaces the table by a snapshot's.
func (t *origins) restore(m map[uint64]*origin) {
	*t = newOrigins()
	for id, o := range m {
		if o.Above == nil {
			o.Above = map[uint64]bool{}
		}
		t.byID[id] = o
		t.above += len(o.Above)
	}
}

// Snapshot bounds of the table: an origin's fields in JSON, and each
// sequence number it holds above its Done.
const (
	originOverhead = 128
	aboveOverhead  = 32
)

// originsSnapshotBound is the most the table takes in a snapshot.
const originsSnapshotBound = MaxOrigins*originOverhead + MaxAbove*aboveOverhead
