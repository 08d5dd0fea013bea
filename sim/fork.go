package sim

import (
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"unsafe"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/trace"
)

// Fork is what a forked run gets in place of its parent's: the queue, the
// trace sink and the workload (each the caller's own copy), and how to copy
// a process's state and a pending event's payload.
type Fork struct {
	Queue    Queue
	Trace    trace.Sink
	Workload Workload
	// Process returns an independent copy of a process's state.
	Process func(proc.Process) proc.Process
	// Value returns a copy of a message, input or timer tag in flight that
	// a process may not change through its copy (nil: shared as they are).
	Value func(any) any
}

// ErrNoFork is returned by Sim.Fork for a run that uses a feature a fork
// does not copy.
var ErrNoFork = errors.New("this run cannot be forked")

// Fork returns an independent copy of a run that a Config.Queue drives, at
// its current state: the same processes, the same pending events under the
// same keys and slots, the same counters and random sources. A model
// checker forks a run where the search branches instead of replaying the
// path to it. A fork has the parent's configuration; runs with their own
// calendar (no Config.Queue), hardware clocks, pause or slow faults,
// changing membership or vector clocks are not forked (ErrNoFork);
// stable storage is copied (the records, which the host never changes in
// place, are shared).
func (s *Sim) Fork(f Fork) (*Sim, error) {
	if err := s.forkable(); err != nil {
		return nil, err
	}
	c := &Sim{}
	*c = *s
	c.cfg.Queue, c.cfg.Trace, c.cfg.Workload = f.Queue, f.Trace, f.Workload
	c.queue, c.sink = f.Queue, f.Trace
	c.env = env{s: c, self: s.env.self}
	c.items = make([][]item, len(s.items))
	for i, chunk := range s.items {
		c.items[i] = slices.Clone(chunk)
		if f.Value != nil {
			for j := range c.items[i] {
				if it := &c.items[i][j]; it.val != nil && it.kind != evFault && it.kind != evFaultEnd && it.kind != evCall {
					it.val = f.Value(it.val)
				}
			}
		}
	}
	c.free = slices.Clone(s.free)
	c.nodes = slices.Clone(s.nodes)
	for i := range c.nodes {
		if p := c.nodes[i].p; p != nil {
			c.nodes[i].p = f.Process(p)
		}
		if r := c.nodes[i].rng; r != nil {
			c.nodes[i].rng = forkRand(r)
		}
	}
	c.lamports = slices.Clone(s.lamports)
	c.netRand, c.wlRand = forkRand(s.netRand), forkRand(s.wlRand)
	c.timers.words = slices.Clone(s.timers.words)
	c.timers.old = maps.Clone(s.timers.old)
	c.fifo = maps.Clone(s.fifo)
	c.armed = maps.Clone(s.armed)
	c.diskOwn, c.disksShared = nil, false // every disk copied
	c.plainTypes = nil
	if s.disks != nil {
		c.disks = make(map[proc.ID]*disk, len(s.disks))
		for id, d := range s.disks {
			c.disks[id] = d.clone()
		}
		if s.diskRand != nil {
			c.diskRand = forkRand(s.diskRand)
		}
	}
	s.kindShared, c.kindShared = true, true // copied when a kind is added
	c.kinds = slices.Clone(s.kinds)
	c.sent = slices.Clone(s.sent)
	c.st.ByKind = nil
	return c, nil
}

// forkable says why the run cannot be forked (or saved), if it cannot.
func (s *Sim) forkable() error {
	switch {
	case s.cal != nil:
		return errors.Join(ErrNoFork, errors.New("no Config.Queue"))
	case s.clocks != nil || s.busy != nil || s.present != nil || s.vcs != nil:
		return errors.Join(ErrNoFork, errors.New("hardware clocks, pauses, membership or vector clocks"))
	case len(s.series) > 0:
		return errors.Join(ErrNoFork, errors.New("a workload's series of inputs"))
	}
	return nil
}

// forkRand copies a random source made by newProcRand: the generator's
// state and a Rand over the copy.
func forkRand(r *rand.Rand) *rand.Rand {
	pr := (*procRand)(unsafe.Pointer(r)) // r is the first field of its procRand
	return newProcRandFrom(pr.pcg)
}

func newProcRandFrom(pcg rand.PCG) *rand.Rand {
	pr := &procRand{pcg: pcg}
	pr.r = *rand.New(&pr.pcg)
	return &pr.r
}
