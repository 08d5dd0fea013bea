package consensus

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cohort-go/cohort/proc"
)

// A Raft server's stable storage is a log of records (proc.Storage):
//
//	'h' term vote+1           the term and the vote in it (0: none)
//	'e' index count entry*    entries from index on, each
//	                          term 0 (a no-op) | term 1 len data | term 2 count id*
//	't' index                 entries from index on are removed
//	's' index term count id* len data   a snapshot of everything up to index,
//	                          with the configuration then
//
// integers as unsigned varints. Replaying the records in order rebuilds
// term, vote, snapshot and log; compaction rewrites the storage as one
// snapshot record, one state record and one entries record.

const (
	recState    = 'h'
	recEntries  = 'e'
	recTruncate = 't'
	recSnapshot = 's'
)

func (r *Raft) storage(env proc.Env) proc.Storage {
	st := env.Storage()
	if st == nil {
		panic(fmt.Sprintf("p%d: Raft needs stable storage, and the host offers none", r.self))
	}
	return st
}

func (r *Raft) stateRecord() []byte {
	b := binary.AppendUvarint([]byte{recState}, r.term)
	return binary.AppendUvarint(b, uint64(r.vote+1))
}

// appendEntriesRecord appends the record of entries es from index on to b.
func appendEntriesRecord(b []byte, index uint64, es []Entry) []byte {
	b = binary.AppendUvarint(append(b, recEntries), index)
	b = binary.AppendUvarint(b, uint64(len(es)))
	for _, e := range es {
		b = binary.AppendUvarint(b, e.Term)
		switch {
		case e.Members != nil:
			b = appendMembers(append(b, 2), e.Members)
		case e.Data != nil:
			b = binary.AppendUvarint(append(b, 1), uint64(len(e.Data)))
			b = append(b, e.Data...)
		default:
			b = append(b, 0)
		}
	}
	return b
}

func appendMembers(b []byte, ms []proc.ID) []byte {
	b = binary.AppendUvarint(b, uint64(len(ms)))
	for _, p := range ms {
		b = binary.AppendUvarint(b, uint64(p))
	}
	return b
}

// members reads a configuration of servers of a group of n.
func (d *decoder) members(n int) []proc.ID {
	k := d.uint()
	if d.err == nil && k > uint64(n) {
		d.err = fmt.Errorf("a configuration of %d servers in a group of %d", k, n)
	}
	ms := make([]proc.ID, 0, k)
	for range k {
		p := d.uint()
		if d.err == nil && p >= uint64(n) {
			d.err = fmt.Errorf("server %d in a group of %d", p, n)
		}
		ms = append(ms, proc.ID(p))
	}
	return ms
}

func (r *Raft) snapshotRecord() []byte {
	b := binary.AppendUvarint([]byte{recSnapshot}, r.first-1)
	b = binary.AppendUvarint(b, r.snapTerm)
	b = appendMembers(b, r.snapConf)
	b = binary.AppendUvarint(b, uint64(len(r.snapshot)))
	return append(b, r.snapshot...)
}

// persistState writes term and vote, durably: call it before sending
// anything that depends on them (a vote, a RequestVote).
func (r *Raft) persistState(env proc.Env) {
	st := r.storage(env)
	st.Append(r.stateRecord())
	st.Sync()
}

// persistEntries writes entries from index on; they are durable after the
// next sync.
func (r *Raft) persistEntries(env proc.Env, index uint64, es []Entry) {
	r.rec = appendEntriesRecord(r.rec[:0], index, es)
	r.storage(env).Append(r.rec) // the host keeps its own copy
	if cap(r.rec) > maxRecScratch {
		r.rec = nil
	}
}

// maxRecScratch bounds the record buffer a server keeps between appends:
// a leader's entry, or a follower's batch of them, fits.
const maxRecScratch = 1 << 20

// truncate drops the entries from index on.
func (r *Raft) truncate(env proc.Env, index uint64) {
	r.log = r.log[:index-r.first]
	r.synced = min(r.synced, index-1)
	r.acks = r.acks[:0] // they may count entries dropped here
	r.storage(env).Append(binary.AppendUvarint([]byte{recTruncate}, index))
}

// sync makes every entry of the log durable.
func (r *Raft) sync(env proc.Env) {
	r.storage(env).Sync()
	r.synced = r.lastIndex()
	r.probe(StageSynced, r.self, r.synced)
}

// rewrite replaces the storage by the snapshot, the state and the log.
func (r *Raft) rewrite(env proc.Env) {
	st := r.storage(env)
	recs := [][]byte{r.snapshotRecord(), r.stateRecord()}
	if len(r.log) > 0 {
		recs = append(recs, appendEntriesRecord(nil, r.first, r.log))
	}
	st.Replace(recs)
	st.Sync()
	r.synced = r.lastIndex()
}

// recover rebuilds the persistent state from storage and restores the
// state machine from the snapshot. A record that does not decode is a
// broken invariant (the host checksums what it stored): the server stops
// rather than run on a log it cannot read.
func (r *Raft) recover(env proc.Env) {
	for i, rec := range r.storage(env).Recovered() {
		if err := r.replay(rec); err != nil {
			panic(fmt.Sprintf("p%d: stable storage record %d: %v", r.self, i, err))
		}
	}
	r.commit, r.applied, r.synced = r.first-1, r.first-1, r.lastIndex()
	r.configure()
	if err := r.sm.Restore(env, r.snapshot); err != nil {
		r.halt(env, r.first-1, err)
	}
}

var errShort = errors.New("record cut short")

func (r *Raft) replay(rec []byte) error {
	if len(rec) == 0 {
		return errShort
	}
	d := decoder{b: rec[1:]}
	switch rec[0] {
	case recState:
		r.term = d.uint()
		r.vote = proc.ID(int64(d.uint()) - 1)
	case recEntries:
		index, n := d.uint(), d.uint()
		if d.err == nil && (index < r.first || index > r.lastIndex()+1) {
			return fmt.Errorf("entries from %d do not follow the log [%d, %d]", index, r.first, r.lastIndex())
		}
		r.log = r.log[:index-r.first]
		for range n {
			e := Entry{Term: d.uint()}
			switch tag := d.byte(); tag {
			case 0:
			case 1:
				e.Data = d.bytes(d.uint())
				if e.Data == nil && d.err == nil {
					e.Data = []byte{}
				}
			case 2:
				e.Members = d.members(r.n)
			default:
				if d.err == nil {
					d.err = fmt.Errorf("entry of unknown kind %d", tag)
				}
			}
			if d.err != nil {
				break
			}
			r.log = append(r.log, e)
		}
	case recTruncate:
		index := d.uint()
		if d.err == nil && (index < r.first || index > r.lastIndex()+1) {
			return fmt.Errorf("truncation at %d outside the log [%d, %d]", index, r.first, r.lastIndex())
		}
		r.log = r.log[:index-r.first]
	case recSnapshot:
		index, term := d.uint(), d.uint()
		conf := d.members(r.n)
		data := d.bytes(d.uint())
		if d.err == nil {
			r.first, r.snapTerm, r.snapConf, r.snapshot, r.log = index+1, term, conf, data, nil
		}
	default:
		return fmt.Errorf("unknown record type %q", rec[0])
	}
	if d.err == nil && len(d.b) > 0 {
		return fmt.Errorf("%d bytes after a %q record", len(d.b), rec[0])
	}
	return d.err
}

// decoder reads varints and byte strings, remembering the first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errShort
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.err = errShort
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) bytes(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if uint64(len(d.b)) < n {
		d.err = errShort
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}
