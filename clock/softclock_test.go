package clock_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/cohort-go/cohort/clock"
)

const ms = time.Millisecond

func softClock(t testing.TB, d clock.Discipline) *clock.SoftClock {
	t.Helper()
	c, err := clock.NewSoftClock(d)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The textbook's rule (Tanenbaum & van Steen §6.1): a clock that is behind
// steps forward at once; one that is ahead is slowed down until the
// correction is absorbed, never set back.
func TestSoftClockStepsForwardAndSlewsBack(t *testing.T) {
	c := softClock(t, clock.Discipline{SlewRate: 0.01, StepForward: true})
	if got := c.Read(10 * ms); got != 10*ms {
		t.Fatalf("an uncorrected clock reads %v at hardware 10ms, want 10ms", got)
	}
	// Behind by 3 ms: a step.
	if !c.Adjust(10*ms, 3*ms) {
		t.Error("a clock behind was not stepped")
	}
	if got := c.Read(10 * ms); got != 13*ms {
		t.Errorf("after the step it reads %v, want 13ms", got)
	}
	if c.Slewing(10 * ms) {
		t.Error("a step left a slew under way")
	}
	// Ahead by 2 ms: slewed at 1 %, which takes 200 ms of hardware time.
	if c.Adjust(20*ms, -2*ms) {
		t.Error("a clock ahead was stepped back")
	}
	if got := c.Read(20 * ms); got != 23*ms {
		t.Errorf("the slew moved the clock at once: %v, want 23ms", got)
	}
	if got := c.Read(120 * ms); got != 123*ms-1*ms {
		t.Errorf("half-way through the slew the clock reads %v, want 122ms", got)
	}
	if !c.Slewing(219*ms) || c.Slewing(220*ms) {
		t.Errorf("the slew should end at hardware 220ms, ends at %v", c.SlewEnd())
	}
	if got := c.Read(500 * ms); got != 501*ms {
		t.Errorf("after the slew the clock reads %v, want 501ms (3ms − 2ms ahead of hardware)", got)
	}
}

func TestSoftClockSlewsForwardWithoutSteps(t *testing.T) {
	c := softClock(t, clock.Discipline{SlewRate: 0.005})
	if c.Adjust(0, 1*ms) {
		t.Fatal("stepped although the discipline forbids it")
	}
	if got := c.Read(100 * ms); got != 100*ms+500*time.Microsecond {
		t.Errorf("reads %v after 100ms of a 0.5%% slew, want 100.5ms", got)
	}
	if got := c.Read(1 * time.Second); got != time.Second+ms {
		t.Errorf("reads %v after the slew, want 1.001s", got)
	}
}

// A new correction replaces the one under way: it was measured against
// the clock as it reads now.
func TestSoftClockNewCorrectionReplacesSlew(t *testing.T) {
	c := softClock(t, clock.Discipline{SlewRate: 0.01})
	c.Adjust(0, -4*ms) // 400 ms of slewing
	c.Adjust(100*ms, -1*ms)
	// At 100 ms, 1 ms of the first slew was absorbed; the second takes
	// 100 ms more and nothing else.
	if got := c.Read(100 * ms); got != 99*ms {
		t.Fatalf("reads %v at 100ms, want 99ms", got)
	}
	if got := c.Read(time.Second); got != time.Second-2*ms {
		t.Errorf("reads %v in the end, want 998ms: the abandoned slew must not go on", got)
	}
}

func TestSoftClockStepBackBreaksMonotonicity(t *testing.T) {
	c := softClock(t, clock.Discipline{SlewRate: 0.01, StepBack: true})
	before := c.Read(10 * ms)
	if !c.Adjust(10*ms, -3*ms) || c.Read(10*ms) != before-3*ms {
		t.Errorf("StepBack did not set the clock back: %v", c.Read(10*ms))
	}
}

func TestSoftClockFrequency(t *testing.T) {
	c := softClock(t, clock.Discipline{SlewRate: 0.01})
	c.SetFreq(0, 1e-4)
	if got := c.Read(time.Second); got != time.Second+100*time.Microsecond {
		t.Errorf("100 ppm fast: reads %v after 1s, want 1.0001s", got)
	}
	c.SetFreq(time.Second, 1) // clamped to MaxFreq
	if got := c.Read(2 * time.Second); got != 2*time.Second+100*time.Microsecond+time.Duration(clock.MaxFreq*1e9) {
		t.Errorf("the frequency was not clamped: reads %v", got)
	}
	// A slew keeps its end when the frequency changes.
	c.Adjust(2*time.Second, -ms)
	end := c.SlewEnd()
	c.SetFreq(2*time.Second+10*ms, 0)
	if c.SlewEnd() != end {
		t.Errorf("SetFreq moved the slew's end from %v to %v", end, c.SlewEnd())
	}
}

// Whatever the corrections, a clock without StepBack never reads less
// than before, and once its last slew is over it is off its hardware clock
// by exactly what was asked (up to a nanosecond per correction).
func TestSoftClockNeverGoesBack(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := clock.Discipline{SlewRate: rapid.Float64Range(1e-4, 0.1).Draw(t, "slew"), StepForward: rapid.Bool().Draw(t, "step")}
		c, err := clock.NewSoftClock(d)
		if err != nil {
			t.Fatal(err)
		}
		hw, last := time.Duration(rapid.Int64Range(-1e9, 1e9).Draw(t, "start")), time.Duration(-1<<62)
		for i := range rapid.IntRange(1, 30).Draw(t, "steps") {
			hw += time.Duration(rapid.Int64Range(0, 50e6).Draw(t, "wait"))
			if got := c.Read(hw); got < last {
				t.Fatalf("step %d: the clock went back from %v to %v", i, last, got)
			}
			last = c.Read(hw)
			delta := time.Duration(rapid.Int64Range(-10e6, 10e6).Draw(t, "delta"))
			c.Adjust(hw, delta)
			if got := c.Read(hw); got < last {
				t.Fatalf("step %d: Adjust(%v) set the clock back from %v to %v", i, delta, last, got)
			}
			want := last + delta // where the clock should end up, relative to hardware
			end := hw + time.Hour
			if got := c.Read(end) - end; got-(want-hw) > 2 || (want-hw)-got > 2 {
				t.Fatalf("step %d: after Adjust(%v) the clock settles %v off its hardware, want %v", i, delta, got, want-hw)
			}
			last = c.Read(hw)
		}
	})
}

func TestConfigErrorsNameTheValue(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{func() error { _, err := clock.NewSoftClock(clock.Discipline{}); return err }(), "slew rate 0"},
		{func() error { _, err := clock.NewSoftClock(clock.Discipline{SlewRate: 0.5}); return err }(), "slew rate 0.5"},
		{withTS(func(c *clock.TimeSyncConfig) { c.Poll = 0 }), "poll 0s"},
		{withTS(func(c *clock.TimeSyncConfig) { c.Samples = 0 }), "samples 0"},
		{withTS(func(c *clock.TimeSyncConfig) { c.Filter = 9 }), "filter(9)"},
		{withTS(func(c *clock.TimeSyncConfig) { c.ReplyHold = -ms }), "reply hold -1ms"},
		{withTS(func(c *clock.TimeSyncConfig) { c.Server = -2 }), "server -2"},
		{withTS(func(c *clock.TimeSyncConfig) { c.Discipline.SlewRate = -1 }), "slew rate -1"},
		{withBerkeley(func(c *clock.BerkeleyConfig) { c.RoundTimeout = c.Period }), "round timeout 250ms"},
		{withBerkeley(func(c *clock.BerkeleyConfig) { c.Bound = -ms }), "bound -1ms"},
		{withBerkeley(func(c *clock.BerkeleyConfig) { c.ReadEvery = 0 }), "read every 0s"},
		{withRBS(func(c *clock.RBSConfig) { c.M = 0 }), "M = 0"},
		{withRBS(func(c *clock.RBSConfig) { c.SendJitter = -ms }), "send jitter -1ms"},
		{withRBS(func(c *clock.RBSConfig) { c.Period = 0 }), "period 0s"},
		{withHLC(func(c *clock.HLCConfig) { c.Chatty = 2 }), "chatty 2"},
		{withHLC(func(c *clock.HLCConfig) { c.Ticks = 0 }), "ticks 0"},
	}
	for _, c := range cases {
		if !errors.Is(c.err, clock.ErrConfig) || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("error %v, want ErrConfig naming %q", c.err, c.want)
		}
	}
}

func withTS(f func(*clock.TimeSyncConfig)) error {
	c := clock.DefaultNTP
	f(&c)
	_, err := clock.NewTimeSync(c)
	return err
}

func withBerkeley(f func(*clock.BerkeleyConfig)) error {
	c := clock.DefaultBerkeley
	f(&c)
	_, err := clock.NewBerkeley(c)
	return err
}

func withRBS(f func(*clock.RBSConfig)) error {
	c := clock.DefaultRBS
	f(&c)
	_, err := clock.NewRBS(c)
	return err
}

func withHLC(f func(*clock.HLCConfig)) error {
	c := clock.DefaultHLC
	f(&c)
	_, err := clock.NewHLCDemo(c)
	return err
}
