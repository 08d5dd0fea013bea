package clock

import (
	"fmt"
	"slices"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// The Berkeley algorithm (Gusella & Zatti 1989; Tanenbaum & van Steen §6.1:
// synchronization without a UTC source). A time daemon keeps a group of
// machines together, with no reference clock: it polls them all, averages
// their clocks and tells each one how to adjust.
//
//	daemon, every Period:  T1 := now; send POLL(T1) to every machine
//	machine, on POLL(T1):  send CLOCK(T1, C) with its clock C
//	daemon, on CLOCK(T1, C) from i: T4 := now
//	                       D_i := C − (T1 + T4)/2      i's offset, the round trip halved
//	daemon, RoundTimeout after the poll:
//	                       D_daemon := 0
//	                       m := median of the D; good := {i : |D_i − m| ≤ Bound}
//	                       avg := mean of D_i over good
//	                       send ADJUST(avg − D_i) to every machine i that answered;
//	                       adjust its own clock by avg
//	machine, on ADJUST(Δ): slew by Δ
//
// The average is of the machines' clocks, not of anybody's idea of UTC:
// Berkeley synchronizes internally (precision), and the group's clock
// drifts with the average of its members. Each machine gets its own
// adjustment, not a time, so the delay of the ADJUST message does not
// matter. Clocks are slewed both ways: Tanenbaum & van Steen let a clock
// jump to the new time or slow down until aligned; here it is always the
// gentler one. A clock far from the others — a broken one — would drag the
// average: a clock 1 s ahead in a group of five pulls everyone 200 ms
// ahead. With Bound > 0 it is left out of the average (it is still told to
// adjust, and slews back towards the group); Bound = 0 averages every
// clock.
//
// Estimating D_i has the error of Cristian's θ: half the difference of the
// poll's and the answer's delays.
//
// Assumptions: none on the clocks; messages may be lost, duplicated or
// reordered (a machine applies each round's ADJUST once, and only a newer
// round's); crash-stop. Cost: 3 messages per machine and round, 3(N−1) per
// Period.

// Poll asks a machine for its clock: POLL(round, T1).
type Poll struct {
	Round uint64        `json:"round"`
	T1    time.Duration `json:"t1"`
}

// ClockValue is a machine's answer: CLOCK(round, T1, C).
type ClockValue struct {
	Round uint64        `json:"round"`
	T1    time.Duration `json:"t1"`
	C     time.Duration `json:"c"`
}

// Adjust tells a machine how much to move its clock: ADJUST(round, Δ).
type Adjust struct {
	Round uint64        `json:"round"`
	Delta time.Duration `json:"delta"`
}

func (Poll) Kind() string       { return "poll" }
func (ClockValue) Kind() string { return "clock" }
func (Adjust) Kind() string     { return "adjust" }

func (m Poll) String() string       { return fmt.Sprintf("POLL(%d,T1=%v)", m.Round, m.T1) }
func (m ClockValue) String() string { return fmt.Sprintf("CLOCK(%d,C=%v)", m.Round, m.C) }
func (m Adjust) String() string     { return fmt.Sprintf("ADJUST(%d,%v)", m.Round, m.Delta) }

// BerkeleyConfig configures the Berkeley algorithm.
type BerkeleyConfig struct {
	// Daemon is the time daemon's id.
	Daemon proc.ID
	// Period is the time between polls on the daemon's clock (> 0).
	Period time.Duration
	// RoundTimeout is how long the daemon waits for answers (> 0, less
	// than Period); later answers are ignored.
	RoundTimeout time.Duration
	// Bound excludes from the average the clocks farther than Bound from
	// the median; 0 averages them all.
	Bound time.Duration
	// ReadEvery is how often every process outputs a Reading (> 0).
	ReadEvery time.Duration
	// Discipline is how machines correct their clocks.
	Discipline Discipline
}

// DefaultBerkeley is the registered entry's setting: a round every 250 ms,
// answers within 50 ms, clocks 20 ms from the median left out, every
// correction slewed.
var DefaultBerkeley = BerkeleyConfig{Period: 250 * time.Millisecond, RoundTimeout: 50 * time.Millisecond,
	Bound: 20 * time.Millisecond, ReadEvery: 100 * time.Millisecond, Discipline: Discipline{SlewRate: DefaultSlewRate}}

// Validate reports the first bad field of c.
func (c BerkeleyConfig) Validate() error {
	switch {
	case c.Daemon < 0:
		return fmt.Errorf("%w: daemon %d: want a process id", ErrConfig, c.Daemon)
	case c.Period <= 0:
		return fmt.Errorf("%w: period %v: must be positive", ErrConfig, c.Period)
	case c.RoundTimeout <= 0 || c.RoundTimeout >= c.Period:
		return fmt.Errorf("%w: round timeout %v: want more than 0 and less than the period %v", ErrConfig, c.RoundTimeout, c.Period)
	case c.Bound < 0:
		return fmt.Errorf("%w: bound %v: must not be negative", ErrConfig, c.Bound)
	case c.ReadEvery <= 0:
		return fmt.Errorf("%w: read every %v: must be positive", ErrConfig, c.ReadEvery)
	}
	return c.Discipline.validate()
}

// NewBerkeley returns the constructor of the Berkeley algorithm's processes
// with configuration c, or the error of c.Validate.
func NewBerkeley(c BerkeleyConfig) (func(proc.ID, int) proc.Process, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return func(id proc.ID, _ int) proc.Process {
		return &berkeley{cfg: c, k: newKeeper(c.Discipline, c.ReadEvery)}
	}, nil
}

// berkeley is a machine; the one whose id is Daemon also runs the daemon.
type berkeley struct {
	cfg BerkeleyConfig
	k   keeper

	// The daemon's round.
	round   uint64
	t1      time.Duration
	answers []answer

	applied uint64 // a machine's last round applied
}

// answer is machine i's offset D from the daemon's clock, in one round.
type answer struct {
	from proc.ID
	d    time.Duration
}

type (
	roundTick struct{} // the daemon polls
	roundEnd  struct{} // the daemon averages
)

func (roundTick) Kind() string { return "round" }
func (roundEnd) Kind() string  { return "round-end" }

func (b *berkeley) daemon(env proc.Env) bool { return env.Self() == b.cfg.Daemon }

func (b *berkeley) Start(env proc.Env) {
	b.k.start(env, false)
	if b.daemon(env) {
		b.poll(env)
	}
}

func (b *berkeley) poll(env proc.Env) {
	b.round++
	b.t1 = b.k.now(env)
	b.answers = b.answers[:0]
	for i := range env.N() {
		if id := proc.ID(i); id != env.Self() {
			env.Send(id, Poll{Round: b.round, T1: b.t1})
		}
	}
	env.SetTimer(b.cfg.RoundTimeout, roundEnd{})
	env.SetTimer(b.cfg.Period, roundTick{})
}

func (b *berkeley) Timeout(env proc.Env, tag any) {
	switch tag.(type) {
	case roundTick:
		b.poll(env)
	case roundEnd:
		b.average(env)
	default:
		b.k.timeout(env, tag)
	}
}

func (b *berkeley) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m := m.(type) {
	case Poll:
		env.Send(from, ClockValue{Round: m.Round, T1: m.T1, C: b.k.now(env)})
	case ClockValue:
		if !b.daemon(env) || m.Round != b.round || slices.ContainsFunc(b.answers, func(a answer) bool { return a.from == from }) {
			return // late, or a duplicate
		}
		t4 := b.k.now(env)
		b.answers = append(b.answers, answer{from, m.C - (m.T1+t4)/2})
	case Adjust:
		if from != b.cfg.Daemon || m.Round <= b.applied {
			return
		}
		b.applied = m.Round
		b.k.adjust(env, m.Delta)
	}
}

// average ends a round: the fault-tolerant average of the clocks that
// answered and the daemon's own, and everyone's adjustment.
func (b *berkeley) average(env proc.Env) {
	ds := []time.Duration{0} // the daemon's own offset
	for _, a := range b.answers {
		ds = append(ds, a.d)
	}
	avg := FaultTolerantAverage(ds, b.cfg.Bound)
	for _, a := range b.answers {
		env.Send(a.from, Adjust{Round: b.round, Delta: avg - a.d})
	}
	b.k.adjust(env, avg)
}

// FaultTolerantAverage is the mean of the offsets within bound of their
// median (the lower median for an even count); bound 0 takes the mean of
// all. ds must not be empty.
func FaultTolerantAverage(ds []time.Duration, bound time.Duration) time.Duration {
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	med := sorted[(len(sorted)-1)/2]
	var sum, n time.Duration
	for _, d := range sorted {
		if bound == 0 || (d-med <= bound && med-d <= bound) {
			sum += d
			n++
		}
	}
	return sum / n
}

func (b *berkeley) Input(proc.Env, proc.Input) {}
