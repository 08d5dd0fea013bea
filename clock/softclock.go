package clock

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Physical clocks (Tanenbaum & van Steen §6.1). A machine's hardware clock
// H runs at 1 ± ρ of true time t; what programs read is a software clock C
// kept over it. Synchronization moves C, never H, and Tanenbaum & van Steen
// ask what to do when a clock is found fast or slow:
//
//   - a clock that is behind may be stepped forward: time jumps, but never
//     back;
//   - a clock that is ahead must not be set back (files made after a
//     moment would be stamped before it): it is slewed instead — run
//     slower than its hardware clock until the correction is absorbed.
//
// SoftClock is that software clock, in numbers. Readings output by the
// processes are what the metrics judge: precision π = max |Cp(t) − Cq(t)|
// (internal synchronization) and accuracy α = max |Cp(t) − t| (external).

// Reading is an output by which a process reports its software clock C at
// the moment of the output. Synced is false until the process's first
// correction has been applied in full (stepped, or slewed to the end); a
// reference clock (a time server) is synced from the start.
type Reading struct {
	Clock  time.Duration `json:"clock"`
	Synced bool          `json:"synced"`
}

// Kind implements proc.Output.
func (Reading) Kind() string { return "reading" }

func (r Reading) String() string { return "C=" + r.Clock.String() }

// Discipline is how a software clock may be corrected.
type Discipline struct {
	// SlewRate is how much slower (or faster) than its hardware clock a
	// software clock runs while it slews: 0.005 absorbs a correction of
	// 5 ms in one second. It must lie in (0, 0.1]. Real kernels allow
	// 500 ppm (5e-4); the default is ten times that, so that runs of a few
	// simulated seconds settle.
	SlewRate float64
	// StepForward lets a clock that is behind jump forward at once; without
	// it every correction is slewed.
	StepForward bool
	// StepBack breaks the textbook's rule: a clock that is ahead is set
	// back at once, and time runs backwards. It is there to show what
	// slewing avoids (the monotonic-clock checker catches it); no
	// registered algorithm uses it.
	StepBack bool
}

// DefaultSlewRate is the slew rate of the registered algorithms.
const DefaultSlewRate = 0.005

// MaxFreq bounds a frequency correction (SetFreq): ±1000 ppm, ten times the
// worst drift the scenarios use.
const MaxFreq = 1e-3

// ErrConfig is wrapped by the errors of the physical clock algorithms'
// configurations.
var ErrConfig = errors.New("bad clock configuration")

func (d Discipline) validate() error {
	if !(d.SlewRate > 0 && d.SlewRate <= 0.1) {
		return fmt.Errorf("%w: slew rate %v: want a number in (0, 0.1]", ErrConfig, d.SlewRate)
	}
	return nil
}

// SoftClock is a software clock over a hardware clock. Its methods take the
// hardware reading hw (env.Now()) at the moment of the call, which must not
// decrease from call to call. Between corrections it runs at 1 + freq times
// its hardware clock, and at 1 + freq ± SlewRate while a slew lasts; so
// unless the discipline has StepBack its readings never decrease.
//
// The zero value is not usable; make one with NewSoftClock.
type SoftClock struct {
	d        Discipline
	h0, c0   time.Duration // the clock read c0 at hardware reading h0: the last change of rate
	freq     float64       // frequency correction
	slew     float64       // +SlewRate, −SlewRate or 0
	slewEnd  time.Duration // hardware reading at which the current slew ends
	adjusted bool          // some correction has been made
}

// NewSoftClock returns a software clock that reads the same as its hardware
// clock until it is corrected. The discipline's errors name the bad field.
func NewSoftClock(d Discipline) (*SoftClock, error) {
	if err := d.validate(); err != nil {
		return nil, err
	}
	return &SoftClock{d: d}, nil
}

// scale returns d·(1 + excess), to the nearest nanosecond.
func scale(d time.Duration, excess float64) time.Duration {
	return d + time.Duration(math.Round(float64(d)*excess))
}

// Read returns the software clock's reading at hardware reading hw.
func (c *SoftClock) Read(hw time.Duration) time.Duration {
	if c.slew != 0 && hw >= c.slewEnd {
		return c.c0 + scale(c.slewEnd-c.h0, c.freq+c.slew) + scale(hw-c.slewEnd, c.freq)
	}
	return c.c0 + scale(hw-c.h0, c.freq+c.slew)
}

// Slewing reports whether a slew is under way at hardware reading hw.
func (c *SoftClock) Slewing(hw time.Duration) bool { return c.slew != 0 && hw < c.slewEnd }

// SlewEnd returns the hardware reading at which the current slew ends; it
// is meaningful only while Slewing.
func (c *SoftClock) SlewEnd() time.Duration { return c.slewEnd }

// Adjusted reports whether the clock has ever been corrected.
func (c *SoftClock) Adjusted() bool { return c.adjusted }

// settle makes hw the new origin: c0 is the reading there, and a slew that
// ended before hw is over.
func (c *SoftClock) settle(hw time.Duration) {
	c.c0, c.h0 = c.Read(hw), hw
	if c.slew != 0 && hw >= c.slewEnd {
		c.slew = 0
	}
}

// Adjust corrects the clock by delta (positive: the clock is behind),
// measured against its reading at hw. A slew still under way is abandoned:
// delta is the whole correction still wanted. By the discipline, a clock
// that is behind is stepped forward (StepForward) or slewed; one that is
// ahead is slewed (or, with StepBack, set back). It reports whether the
// clock jumped.
func (c *SoftClock) Adjust(hw, delta time.Duration) (stepped bool) {
	c.settle(hw)
	c.slew = 0
	c.adjusted = true
	switch {
	case delta == 0:
		return false
	case delta > 0 && c.d.StepForward, delta < 0 && c.d.StepBack:
		c.c0 += delta
		return true
	}
	c.slew = math.Copysign(c.d.SlewRate, float64(delta))
	// The slew absorbs SlewRate of the clock per unit of hardware time.
	c.slewEnd = hw + time.Duration(math.Ceil(math.Abs(float64(delta))/c.d.SlewRate))
	return false
}

// SetFreq sets the frequency correction from hardware reading hw on: the
// clock then runs at 1 + f times its hardware clock (RBS uses it to follow
// the drift its regression estimates). f is clamped to ±MaxFreq.
func (c *SoftClock) SetFreq(hw time.Duration, f float64) {
	if math.IsNaN(f) {
		f = 0
	}
	// A slew under way keeps its end: it absorbs SlewRate per unit of
	// hardware time, whatever the frequency.
	c.settle(hw)
	c.freq = max(-MaxFreq, min(MaxFreq, f))
}

// keeper is what every synchronized process shares: its software clock,
// and the Reading outputs by which the metrics see it. A process outputs a
// reading when it starts, every ReadEvery of its hardware clock, and at
// every corner of its clock's course — just before and after a step, when
// a slew starts and when it ends — so that the readings, joined by straight
// lines, are exactly the clock's course.
type keeper struct {
	clock     *SoftClock
	every     time.Duration
	synced    bool
	slewTimer proc.TimerID
}

// Timer tags of the keeper.
type (
	readTick struct{}
	slewDone struct{}
)

func (readTick) Kind() string { return "read" }
func (slewDone) Kind() string { return "slew-done" }

func newKeeper(d Discipline, every time.Duration) keeper {
	c, err := NewSoftClock(d)
	if err != nil {
		panic(err) // configurations are validated before processes are made
	}
	return keeper{clock: c, every: every}
}

// start outputs the first reading and starts the periodic ones. A reference
// clock is synced from the start.
func (k *keeper) start(env proc.Env, reference bool) {
	k.synced = reference
	k.read(env)
	env.SetTimer(k.every, readTick{})
}

// timeout handles the keeper's timers and reports whether tag was one.
func (k *keeper) timeout(env proc.Env, tag any) bool {
	switch tag.(type) {
	case readTick:
		k.read(env)
		env.SetTimer(k.every, readTick{})
	case slewDone:
		k.slewTimer = 0
		k.read(env)
	default:
		return false
	}
	return true
}

// now is the software clock's reading.
func (k *keeper) now(env proc.Env) time.Duration { return k.clock.Read(env.Now()) }

func (k *keeper) read(env proc.Env) {
	hw := env.Now()
	if k.clock.Adjusted() && !k.clock.Slewing(hw) {
		k.synced = true
	}
	env.Output(Reading{Clock: k.clock.Read(hw), Synced: k.synced})
}

// adjust corrects the clock by delta and outputs the readings at the
// corners it makes.
func (k *keeper) adjust(env proc.Env, delta time.Duration) {
	k.correct(env, func(hw time.Duration) bool { return k.clock.Adjust(hw, delta) })
}

// correct applies a correction f and outputs the readings around it.
func (k *keeper) correct(env proc.Env, f func(hw time.Duration) (stepped bool)) {
	hw := env.Now()
	before := k.clock.Read(hw)
	if f(hw) {
		env.Output(Reading{Clock: before, Synced: k.synced})
	}
	k.read(env)
	if k.slewTimer != 0 {
		env.CancelTimer(k.slewTimer)
		k.slewTimer = 0
	}
	if k.clock.Slewing(hw) {
		k.slewTimer = env.SetTimer(k.clock.SlewEnd()-hw, slewDone{})
	}
}
