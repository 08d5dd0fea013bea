package sim

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Chaos draws a random fault schedule from a seed, for seed sweeps that
// check an algorithm under many schedules inside its failure model. Every
// count is an upper bound on faults of that kind within Horizon.
type Chaos struct {
	Horizon time.Duration
	Crashes int  // processes that crash (never process 0 if KeepOne)
	Recover bool // crashed processes recover later (crash-recover); else crash-stop
	// Downtime, if set, is how long a recovering process stays down (a
	// quick reset); otherwise it recovers at a random later time.
	Downtime   time.Duration
	KeepOne    bool // process 0 never crashes, so someone is always up
	Partitions int  // spans during which the processes are split in two
	Pauses     int  // spans during which one process is frozen
}

// Faults returns the schedule for a run of n processes: the faults and the
// partitions. The same seed gives the same schedule.
func (c Chaos) Faults(n int, seed uint64) ([]Fault, []Partition) {
	r := rand.New(rand.NewPCG(seed, 0x6368616f73)) // "chaos"
	h := int64(c.Horizon)
	if h <= 0 || n < 1 {
		return nil, nil
	}
	span := func() (time.Duration, time.Duration) {
		a, b := r.Int64N(h), r.Int64N(h)
		if a > b {
			a, b = b, a
		}
		return time.Duration(a), time.Duration(b + 1)
	}
	var faults []Fault
	first := 0
	if c.KeepOne {
		first = 1
	}
	if n > first {
		victims := r.Perm(n - first)
		for i := 0; i < c.Crashes && i < len(victims); i++ {
			id := proc.ID(victims[i] + first)
			at, back := span()
			if c.Downtime > 0 {
				back = at + c.Downtime
			}
			faults = append(faults, Fault{Kind: Crash, Node: id, At: at})
			if c.Recover {
				faults = append(faults, Fault{Kind: Recover, Node: id, At: back})
			}
		}
	}
	for i := 0; i < c.Pauses; i++ {
		at, until := span()
		faults = append(faults, Fault{Kind: Pause, Node: proc.ID(r.IntN(n)), At: at, Until: until})
	}
	var parts []Partition
	for i := 0; i < c.Partitions && n > 1; i++ {
		perm := r.Perm(n)
		cut := 1 + r.IntN(n-1)
		var a, b []proc.ID
		for j, id := range perm {
			if j < cut {
				a = append(a, proc.ID(id))
			} else {
				b = append(b, proc.ID(id))
			}
		}
		slices.Sort(a)
		slices.Sort(b)
		from, to := span()
		parts = append(parts, Partition{Groups: [][]proc.ID{a, b}, From: from, To: to})
	}
	return faults, parts
}
