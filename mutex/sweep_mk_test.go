package mutex

import (
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
	"github.com/cohort-go/cohort/trace"
)

// mkLoad is a closed loop with think times uniform in [0, think] and holds
// of 0.2–1 ms: with a few milliseconds of think, heavily contended.
func mkLoad(rounds int, think time.Duration) *closedLoop {
	return &closedLoop{
		Rounds: rounds,
		Think:  sim.Uniform{Min: 0, Max: think},
		Hold:   sim.Uniform{Min: 200 * time.Microsecond, Max: time.Millisecond},
	}
}

// mkJitter is a network whose latencies range over 0.1–3 ms.
func mkJitter(fifo bool) sim.Network {
	return sim.Network{Latency: sim.Uniform{Min: 100 * time.Microsecond, Max: 3 * time.Millisecond}, FIFO: fifo}
}

// mkDeadline ends a run that does not come to rest: decentralized clients
// that can never collect m grants retry for ever.
const mkDeadline = 5 * time.Second

// mkRun runs one simulation until quiescence or mkDeadline of virtual time,
// recording its trace.
func mkRun(t testing.TB, n int, seed uint64, newP func(proc.ID, int) proc.Process, net sim.Network, faults []sim.Fault, load sim.Workload) (*trace.Trace, sim.Result) {
	t.Helper()
	r := simtest.Run(t, "mutex", sim.Config{Nodes: n, Seed: seed, New: newP, Network: net, Faults: faults, Workload: load, Deadline: mkDeadline})
	return r.Trace, r.Result
}

// mkCheck runs the named checkers and returns their results by name.
func mkCheck(t testing.TB, tr *trace.Trace, names ...string) map[string]check.Result {
	t.Helper()
	return simtest.Verdicts(t, tr, names...)
}

// mkCount counts a run's outputs of one kind.
func mkCount(tr *trace.Trace, kind string) int {
	c := 0
	for _, e := range tr.Events {
		if e.Kind == trace.Output && e.Type == kind {
			c++
		}
	}
	return c
}

// mkSweep is the outcome of a seed sweep: how many runs broke each
// checker, and the first seed that did.
type mkSweep struct {
	runs, entries int
	sent          int64
	broke         map[string]int
	first         map[string]uint64
	example       map[string]string
}

func (s *mkSweep) add(seed uint64, tr *trace.Trace, res sim.Result, rs map[string]check.Result) {
	if s.broke == nil {
		s.broke, s.first, s.example = map[string]int{}, map[string]uint64{}, map[string]string{}
	}
	s.runs++
	s.entries += mkCount(tr, "enter")
	s.sent += res.Sent
	for name, r := range rs {
		if r.Status == check.Violated {
			if s.broke[name] == 0 {
				s.first[name], s.example[name] = seed, r.Counterexample(tr)
			}
			s.broke[name]++
		}
	}
}

func (s *mkSweep) perEntry() float64 { return float64(s.sent) / float64(max(s.entries, 1)) }
