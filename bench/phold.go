package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
)

// PHOLD is the standard benchmark of discrete-event simulators (Fujimoto,
// "Performance of Time Warp under synthetic workloads", 1990): N logical
// processes and a fixed population of events, E per process at the start.
// Each event, when it arrives, schedules exactly one more, to a process
// drawn uniformly at random (with probability Remote; otherwise to
// itself), Lookahead plus an exponentially distributed delay of mean Mean
// later. The population never changes, so the queue stays N×E deep and the
// run measures the simulator's cost per event at that depth. Published
// figures for other simulators use the same workload (ROSS reports about
// 0.26 M events per second per core).
//
// In Cohort an LP is a proc.Process and an event is a message: the
// simulator's whole path — the process call, the send, the network model
// and the event queue — is what is measured.
type PHOLD struct {
	Processes  int           // N, the logical processes
	Events     int           // E, the events per process at the start
	Remote     float64       // probability that an event goes to another process; 1 if 0
	Lookahead  time.Duration // the minimum delay of an event
	Mean       time.Duration // the mean of the exponential part of the delay
	Deliveries int64         // stop after this many; 0: 4 × Processes × Events (each event four times, on average)
	Seed       uint64
}

// DefaultPHOLD is the configuration of the README's figures: 10⁵
// processes, 10 events each, all remote, 0.1 ms lookahead plus 1 ms mean.
func DefaultPHOLD() PHOLD {
	return PHOLD{Processes: 100_000, Events: 10, Remote: 1, Lookahead: 100 * time.Microsecond, Mean: time.Millisecond, Seed: 1}
}

func (p PHOLD) validate() error {
	switch {
	case p.Processes < 1 || p.Processes > math.MaxInt32:
		return fmt.Errorf("phold: processes %d: want 1..%d", p.Processes, math.MaxInt32)
	case p.Events < 1 || int64(p.Events)*int64(p.Processes) > 1<<31:
		return fmt.Errorf("phold: events %d per process: want at least 1, and processes × events at most 2^31", p.Events)
	case !(p.Remote >= 0 && p.Remote <= 1):
		return fmt.Errorf("phold: remote %v: want a probability in [0,1]", p.Remote)
	case p.Lookahead < 0 || p.Mean < 0 || p.Lookahead+p.Mean <= 0:
		return fmt.Errorf("phold: lookahead %v, mean %v: want both >= 0 and a positive sum", p.Lookahead, p.Mean)
	case p.Deliveries < 0:
		return fmt.Errorf("phold: deliveries %d: must not be negative", p.Deliveries)
	}
	return nil
}

// pholdDelay is an event's delay: the lookahead plus an exponential.
type pholdDelay struct{ lookahead, mean time.Duration }

func (d pholdDelay) Sample(r *rand.Rand) time.Duration {
	return d.lookahead + time.Duration(r.ExpFloat64()*float64(d.mean))
}
func (d pholdDelay) Mean() time.Duration { return d.lookahead + d.mean }
func (d pholdDelay) String() string      { return fmt.Sprintf("%v+exp:%v", d.lookahead, d.mean) }

// lp is one logical process of PHOLD. Its only state is a pointer to the
// run's parameters: 8 bytes per process.
type lp struct{ p *PHOLD }

func (l *lp) Start(env proc.Env) {
	for range l.p.Events {
		env.Send(l.dest(env), token{})
	}
}

// Receive handles an event by scheduling the next one.
func (l *lp) Receive(env proc.Env, _ proc.ID, m proc.Message) { env.Send(l.dest(env), m) }
func (*lp) Timeout(proc.Env, any)                             {}
func (*lp) Input(proc.Env, proc.Input)                        {}

func (l *lp) dest(env proc.Env) proc.ID {
	r := env.Rand()
	if l.p.Remote < 1 && r.Float64() >= l.p.Remote {
		return env.Self()
	}
	return proc.ID(r.IntN(env.N()))
}

// Config is the simulator configuration of the run.
func (p PHOLD) Config() (sim.Config, error) {
	if p.Remote == 0 {
		p.Remote = 1
	}
	if err := p.validate(); err != nil {
		return sim.Config{}, err
	}
	if p.Deliveries == 0 {
		p.Deliveries = 4 * int64(p.Processes) * int64(p.Events)
	}
	params := p
	if err := sim.CheckMemory(p.Processes, func(proc.ID, int) proc.Process { return &lp{p: &params} }); err != nil {
		return sim.Config{}, err
	}
	lps := sim.MakeHuge[lp](p.Processes) // one allocation for all processes
	return sim.Config{
		Nodes: p.Processes, Seed: p.Seed,
		New: func(id proc.ID, _ int) proc.Process {
			lps[id].p = &params
			return &lps[id]
		},
		Network:   sim.Network{Latency: pholdDelay{p.Lookahead, p.Mean}},
		MaxEvents: p.Deliveries,
	}, nil
}

// Run runs the PHOLD workload and measures it.
func (p PHOLD) Run() (SimResult, error) {
	cfg, err := p.Config()
	if err != nil {
		return SimResult{}, err
	}
	return measure("phold", cfg)
}
