package lab

import (
	"syscall"
	"time"

	"github.com/cohort-go/cohort/sim"
)

// Phase is one stage of a run timed on its own (Report.Phases): the
// overlay's build by joins, then its lookups. Events, like the report's,
// are the simulator's steps; the wall-clock and CPU times are this
// machine's, the one part of a report that differs between two runs of
// the same seed.
type Phase struct {
	Name string `json:"name"`
	// FromNS is the virtual time at which the phase begins: its first
	// event is the first at or after it.
	FromNS int64 `json:"from_ns"`
	Events int64 `json:"events"`
	// WallS is the phase's wall-clock time in seconds; CPUS the
	// process's CPU time meanwhile (user and system, every thread: the
	// garbage collector's included).
	WallS float64 `json:"wall_s"`
	CPUS  float64 `json:"cpu_s"`
}

// PhaseStart names a phase and the virtual time at which it begins.
type PhaseStart struct {
	Name string
	At   time.Duration
}

// phased is a workload whose run has stages: Phases lists them in order
// of their start, the first at 0. It is asked once the workload has
// been initialised (its schedule is known then); nil: no phases.
type phased interface {
	Phases() []PhaseStart
}

// phaseClock times a run's phases. Sim starts it as the run starts,
// calls step after every event and stop when the run is over; the
// phases' events and times then add up to the run's.
type phaseClock struct {
	w      phased
	starts []PhaseStart // nil until the first step
	phases []Phase      // the phases begun; the last is the current one
	wall   time.Time    // when the current phase began
	cpu    time.Duration
	events int64 // the run's events when the current phase began
	before int64 // the run's events before the last step
}

func (c *phaseClock) start() {
	c.wall, c.cpu = time.Now(), processCPU()
}

// step looks, after an event, at whether the run has entered the next
// phase: the event that did belongs to it (the events before it, counted
// before the step, to the phase before), and so does its wall time, a
// few microseconds.
func (c *phaseClock) step(s *sim.Sim) {
	if c.starts == nil {
		c.starts = c.w.Phases()
		if len(c.starts) == 0 {
			c.starts = []PhaseStart{} // none: never asked again
		} else {
			c.phases = []Phase{{Name: c.starts[0].Name}}
		}
	}
	for len(c.phases) > 0 && len(c.phases) < len(c.starts) && s.Now() >= c.starts[len(c.phases)].At {
		next := c.starts[len(c.phases)]
		c.end(c.before)
		c.phases = append(c.phases, Phase{Name: next.Name, FromNS: int64(next.At)})
	}
	c.before = s.Events()
}

// end closes the current phase with the run's count of events then.
func (c *phaseClock) end(events int64) {
	now, cpu := time.Now(), processCPU()
	p := &c.phases[len(c.phases)-1]
	p.Events = events - c.events
	p.WallS, p.CPUS = now.Sub(c.wall).Seconds(), (cpu - c.cpu).Seconds()
	c.wall, c.cpu, c.events = now, cpu, events
}

// stop closes the last phase begun; it returns the phases (nil if the
// workload has none).
func (c *phaseClock) stop(events int64) []Phase {
	if len(c.phases) == 0 {
		return nil
	}
	c.end(events)
	return c.phases
}

// processCPU is the process's CPU time so far, user and system (0 where
// the platform does not say).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
