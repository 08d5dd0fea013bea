package mutex

import (
	"encoding/binary"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// durableCounter keeps a bound on a counter that only rises — a Lamport
// clock, the central server's count of grants — in the process's stable
// storage, so that a restarted process's counter starts above every value
// it sent before, and the fencing tokens derived from it keep rising
// across restarts. For a Lamport clock: a request is granted only once
// every other process has sent something stamped above it (a reply, or a
// later message), so a process that restarts with a clock above all it
// ever sent stamps its next request above every request granted before it
// crashed.
//
// Bounds are reserved in blocks: one synced write per clockBlock ticks,
// made before a message with a clock beyond the last bound leaves. A host
// without stable storage (a test's stub) keeps nothing; a live node keeps
// it in its data directory.
type durableCounter struct {
	block     uint64 // the size of a reserved block; 0: clockBlock
	reserved  uint64
	hold      time.Duration // a hold on record (see mark); 0: none
	lentTo    uint32        // a central server's holder on record, plus one (see setHolder); 0: none
	lentFor   uint64        // the number of the request it was granted for
	longest   time.Duration // the longest hold seen asked for (see seen); 0: none
	restarted bool          // the storage had records at start
}

const clockBlock = 1 << 16

// start is the clock a process begins at: above anything it sent in an
// earlier incarnation. It also reads whether this is a restart (restarted:
// a first start puts a record down, so that the next one knows), and the
// hold an earlier incarnation left on record (held).
func (d *durableCounter) start(env proc.Env) uint64 {
	st := env.Storage()
	if st == nil {
		return 0
	}
	for _, rec := range st.Recovered() {
		switch {
		case len(rec) == 13 && rec[0] == 'P':
			d.lentTo, d.lentFor = binary.BigEndian.Uint32(rec[1:]), binary.BigEndian.Uint64(rec[5:])
		case len(rec) == 8:
			d.reserved = max(d.reserved, binary.BigEndian.Uint64(rec))
		case len(rec) == 9 && rec[0] == 'H':
			d.hold = time.Duration(binary.BigEndian.Uint64(rec[1:]))
		case len(rec) == 9 && rec[0] == 'L':
			d.longest = time.Duration(binary.BigEndian.Uint64(rec[1:]))
		}
	}
	d.restarted = len(st.Recovered()) > 0
	if !d.restarted { // a record, so that a restart knows it is one
		d.write(env, true)
	}
	return d.reserved
}

// send is called with the clock a message is about to carry.
func (d *durableCounter) send(env proc.Env, c uint64) {
	if c < d.reserved {
		return
	}
	block := d.block
	if block == 0 {
		block = clockBlock
	}
	d.reserved = c + block
	d.write(env, true)
}

// mark puts hold on record (0 takes it off), synced if sync: a process
// marks a hold before it reports entering the section, and takes it off,
// unsynced, when it leaves (a lost unmarking only makes a restart wait).
func (d *durableCounter) mark(env proc.Env, hold time.Duration, sync bool) {
	if hold == d.hold && !sync {
		return
	}
	d.hold = hold
	d.write(env, sync)
}

// seen puts on record a hold some request asked for, if it is the longest
// yet, synced: a central-failover process that restarts and wins an
// election it could not hear the others' answers to in time waits that
// long for them before it grants (see centralFailover.silentWait).
func (d *durableCounter) seen(env proc.Env, hold time.Duration) {
	if hold <= d.longest {
		return
	}
	d.longest = hold
	d.write(env, true)
}

// held is the hold the previous incarnation left on record: it crashed
// inside the section.
func (d *durableCounter) held() time.Duration { return d.hold }

// setHolder puts a central server's holder on record, synced if sync: a
// grant is on record before it leaves; a release may be lost (the server
// then asks the holder, after a restart, whether it still holds).
func (d *durableCounter) setHolder(env proc.Env, p proc.ID, n uint64, sync bool) {
	d.lentTo, d.lentFor = uint32(p+1), n // None is -1: 0
	d.write(env, sync)
}

// holder is the holder on record at start (None if none), and the number
// of the request it was granted for.
func (d *durableCounter) holder() (proc.ID, uint64) { return proc.ID(d.lentTo) - 1, d.lentFor }

func (d *durableCounter) write(env proc.Env, sync bool) {
	st := env.Storage()
	if st == nil {
		return
	}
	recs := [][]byte{binary.BigEndian.AppendUint64(nil, d.reserved)}
	if d.hold > 0 {
		recs = append(recs, binary.BigEndian.AppendUint64([]byte{'H'}, uint64(d.hold)))
	}
	if d.lentTo != 0 {
		recs = append(recs, binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32([]byte{'P'}, d.lentTo), d.lentFor))
	}
	if d.longest > 0 {
		recs = append(recs, binary.BigEndian.AppendUint64([]byte{'L'}, uint64(d.longest)))
	}
	st.Replace(recs)
	if sync {
		st.Sync()
	}
}
