package mutex

import (
	"encoding/binary"

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
type durableCounter struct{ reserved uint64 }

const clockBlock = 1 << 16

// start is the clock a process begins at: above anything it sent in an
// earlier incarnation.
func (d *durableCounter) start(env proc.Env) uint64 {
	st := env.Storage()
	if st == nil {
		return 0
	}
	for _, rec := range st.Recovered() {
		if len(rec) == 8 {
			d.reserved = max(d.reserved, binary.BigEndian.Uint64(rec))
		}
	}
	return d.reserved
}

// send is called with the clock a message is about to carry.
func (d *durableCounter) send(env proc.Env, c uint64) {
	if c < d.reserved {
		return
	}
	st := env.Storage()
	if st == nil {
		return
	}
	d.reserved = c + clockBlock
	st.Replace([][]byte{binary.BigEndian.AppendUint64(nil, d.reserved)})
	st.Sync()
}
