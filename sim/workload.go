package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Workload feeds application inputs to the processes. Init schedules the
// first inputs; Observe sees every output and may schedule more (a closed
// loop: after EnteredCS, a Release some time later).
type Workload interface {
	Init(c Control)
	Observe(c Control, node proc.ID, o proc.Output)
}

// Restarter is implemented by a workload that wants to know when a
// crashed process recovers (with fresh state, it has forgotten any request
// it had made).
type Restarter interface {
	Restarted(c Control, node proc.ID)
}

// Control is what a workload may do.
type Control interface {
	// Now is the current virtual (true) time.
	Now() time.Duration
	// N is the number of processes.
	N() int
	// Schedule delivers input in to node after delay d of true time.
	Schedule(d time.Duration, node proc.ID, in proc.Input)
	// After calls f after delay d of true time: the workload's own timer,
	// for decisions best taken later (is that process still idle?). It is
	// not an event of any process.
	After(d time.Duration, f func())
	// Series schedules n inputs made one at a time: next(i) tells when
	// (since the run began, no earlier than the input before it), where
	// and what the i-th is. It is called for input i+1 once input i is
	// handled, so a million inputs hold one pending event, not a million;
	// they keep the order among simultaneous events they would have had
	// if all n were scheduled now. A run with a series cannot be forked.
	Series(n int, next func(i int) (at time.Duration, node proc.ID, in proc.Input))
	// Rand is the workload's own random source, seeded from the run.
	Rand() *rand.Rand
}

// TimedInput is one scripted input.
type TimedInput struct {
	At    time.Duration
	Node  proc.ID
	Input proc.Input
}

func (t TimedInput) String() string {
	return fmt.Sprintf("at %v node %d %s", t.At, t.Node, t.Input.Kind())
}

// Script is a workload of fixed, timed inputs.
type Script []TimedInput

// Init schedules every input.
func (s Script) Init(c Control) {
	for _, in := range s {
		c.Schedule(in.At-c.Now(), in.Node, in.Input)
	}
}

// Observe does nothing: a script does not react.
func (Script) Observe(Control, proc.ID, proc.Output) {}

// Poisson is an open-loop workload: every process issues Count inputs made
// by Make, separated by think times drawn from Think (Exponential gives a
// Poisson process per node).
type Poisson struct {
	Make  func(node proc.ID, i int) proc.Input
	Think Dist
	Count int
}

// Init schedules all inputs of every process.
func (p Poisson) Init(c Control) {
	for id := 0; id < c.N(); id++ {
		var at time.Duration
		for i := 0; i < p.Count; i++ {
			at += p.Think.Sample(c.Rand())
			c.Schedule(at, proc.ID(id), p.Make(proc.ID(id), i))
		}
	}
}

// Observe does nothing: the arrivals do not depend on the outputs.
func (Poisson) Observe(Control, proc.ID, proc.Output) {}

// Combine runs several workloads side by side.
type Combine []Workload

func (ws Combine) Init(c Control) {
	for _, w := range ws {
		w.Init(c)
	}
}

func (ws Combine) Observe(c Control, node proc.ID, o proc.Output) {
	for _, w := range ws {
		w.Observe(c, node, o)
	}
}

// Restarted passes a recovery on to the workloads that want it.
func (ws Combine) Restarted(c Control, node proc.ID) {
	for _, w := range ws {
		if r, ok := w.(Restarter); ok {
			r.Restarted(c, node)
		}
	}
}

// Skew returns a clock model in which every process gets an offset uniform
// in [-maxOffset, maxOffset] and a drift uniform in [-maxDrift, maxDrift],
// drawn from seed.
func Skew(maxOffset time.Duration, maxDrift float64, seed uint64) ClockModel {
	return func(id proc.ID) HWClock {
		r := rand.New(rand.NewPCG(seed, uint64(id)^0x636c6f636b)) // "clock"
		var c HWClock
		if maxOffset > 0 {
			c.Offset = time.Duration(r.Int64N(2*int64(maxOffset)+1)) - maxOffset
		}
		c.Drift = (2*r.Float64() - 1) * maxDrift
		return c
	}
}
