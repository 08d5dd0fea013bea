package mutex

import (
	"fmt"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
	"github.com/cohort-go/cohort/trace"
)

// This file runs mutex algorithms in the simulator for the tests: a
// closed-loop workload (think, acquire, hold, release, for a number of
// rounds, with application messages if asked), and a run helper that
// records the trace and counts requests and entries.

// closedLoop is the closed-loop workload: every process thinks for a time
// drawn from Think, acquires, holds the critical section for a time drawn
// from Hold after it entered, releases, and starts over, Rounds times.
type closedLoop struct {
	Rounds      int
	Think, Hold sim.Dist
	// Tell is the probability that a process, right after it asks, tells a
	// random other process so (a Tell input: an application message).
	// That orders requests by happened-before outside the algorithm, as in
	// Coulouris et al.'s counterexamples to ME3.
	Tell float64
	// Drain runs on to quiescence after the last round, instead of
	// stopping at once, so that every message sent gets delivered (for
	// algorithms that do quiesce).
	Drain bool
	// Clients limits the requesters to processes 0 .. Clients−1; 0 means
	// every process.
	Clients int

	done []int // rounds finished, per process
}

// client reports whether p requests at all.
func (w *closedLoop) client(p int) bool { return w.Clients == 0 || p < w.Clients }

func (w *closedLoop) Init(c sim.Control) {
	w.done = make([]int, c.N())
	for p := 0; p < c.N(); p++ {
		if w.Rounds > 0 && w.client(p) {
			w.acquire(c, proc.ID(p))
		}
	}
}

// acquire schedules p's next request after a think time, and the Tell
// that may follow it.
func (w *closedLoop) acquire(c sim.Control, p proc.ID) {
	d := w.Think.Sample(c.Rand())
	c.Schedule(d, p, Acquire{})
	if n := c.N(); w.Tell > 0 && n > 1 && c.Rand().Float64() < w.Tell {
		to := proc.ID(c.Rand().IntN(n - 1))
		if to >= p {
			to++
		}
		c.Schedule(d, p, Tell{To: to})
	}
}

func (w *closedLoop) Observe(c sim.Control, p proc.ID, o proc.Output) {
	switch o.(type) {
	case Enter:
		c.Schedule(w.Hold.Sample(c.Rand()), p, Release{})
	case Exit:
		w.done[p]++
		if w.done[p] < w.Rounds {
			w.acquire(c, p)
		}
	}
}

// finished reports whether every process that is up has done its rounds.
func (w *closedLoop) finished(s *sim.Sim) bool {
	for p, d := range w.done {
		if w.client(p) && d < w.Rounds && s.Up(proc.ID(p)) {
			return false
		}
	}
	return true
}

// defaultLoop is the workload runMutex uses when the config has none.
func defaultLoop() *closedLoop {
	return &closedLoop{
		Rounds: 5,
		Think:  sim.Uniform{Max: 6 * time.Millisecond},
		Hold:   sim.Uniform{Min: 200 * time.Microsecond, Max: 2 * time.Millisecond},
	}
}

// clJitter is the sweeps' network latency: spread wide enough that messages
// of one sender overtake each other when FIFO is off.
var clJitter = sim.Uniform{Min: 200 * time.Microsecond, Max: 4 * time.Millisecond}

// mutexRun is one finished run.
type mutexRun struct {
	Trace    *trace.Trace
	Result   sim.Result
	Sim      *sim.Sim
	Seed     uint64
	Acquires []int // acquire inputs each process received
	Enters   []int // enter outputs of each process
}

// runMutex runs cfg with a trace recorder and counts requests and entries.
// With no workload it runs defaultLoop; a closedLoop stops the run as soon
// as every live process has done its rounds (an idle token ring would
// circulate for ever) unless it drains; a run with no deadline gets one of
// 10s of virtual time, so that nothing spins without end.
func runMutex(t testing.TB, cfg sim.Config) *mutexRun {
	t.Helper()
	if cfg.Workload == nil {
		cfg.Workload = defaultLoop()
	}
	if w, ok := cfg.Workload.(*closedLoop); ok && !w.Drain && cfg.Until == nil {
		cfg.Until = w.finished
	}
	if cfg.Deadline == 0 {
		cfg.Deadline = 10 * time.Second
	}
	run := simtest.Run(t, "mutex", cfg)
	r := &mutexRun{Trace: run.Trace, Result: run.Result, Sim: run.Sim, Seed: cfg.Seed,
		Acquires: make([]int, cfg.Nodes), Enters: make([]int, cfg.Nodes)}
	for i := range r.Trace.Events {
		e := &r.Trace.Events[i]
		switch {
		case e.Kind == trace.Input && e.Type == "acquire":
			r.Acquires[e.Node]++
		case e.Kind == trace.Output && e.Type == "enter":
			r.Enters[e.Node]++
		}
	}
	return r
}

// verdicts runs the named checkers on the run's trace.
func (r *mutexRun) verdicts(t testing.TB, names ...string) map[string]check.Result {
	t.Helper()
	return simtest.Verdicts(t, r.Trace, names...)
}

// holds fails the test for every named property the run violates, with the
// seed and the counterexample.
func (r *mutexRun) holds(t testing.TB, names ...string) {
	t.Helper()
	for _, name := range names {
		if res := r.verdicts(t, name)[name]; !res.OK() {
			t.Errorf("seed %d: %s", r.Seed, res.Counterexample(r.Trace))
		}
	}
}

// violates reports whether the named property is violated.
func (r *mutexRun) violates(t testing.TB, name string) bool {
	t.Helper()
	return r.verdicts(t, name)[name].Status == check.Violated
}

// entries is the number of critical sections entered.
func (r *mutexRun) entries() int {
	n := 0
	for _, e := range r.Enters {
		n += e
	}
	return n
}

// allGranted fails the test unless every process that is up at the end
// entered as often as it asked.
func (r *mutexRun) allGranted(t testing.TB) {
	t.Helper()
	for p := range r.Acquires {
		if r.Sim.Up(proc.ID(p)) && r.Enters[p] != r.Acquires[p] {
			t.Errorf("seed %d: p%d asked %d times and entered %d times (stop: %s at %v)",
				r.Seed, p, r.Acquires[p], r.Enters[p], r.Result.Stop, r.Result.VirtualTime)
		}
	}
}

// sent is the number of messages of the given kinds sent in the run.
func (r *mutexRun) sent(kinds ...string) int {
	n := 0
	for _, k := range kinds {
		n += int(r.Result.Messages(k))
	}
	return n
}

// clAt is a scripted input at ms milliseconds.
func clAt(ms float64, p proc.ID, in proc.Input) sim.TimedInput {
	return sim.TimedInput{At: time.Duration(ms * float64(time.Millisecond)), Node: p, Input: in}
}

// clAlgo finds a registered algorithm by name, with the application's
// messages beside it, as the simulator's workloads run it.
func clAlgo(t testing.TB, name string) proc.Algorithm {
	t.Helper()
	for _, a := range Algorithms {
		if a.Name == name {
			return WithApp(a)
		}
	}
	t.Fatalf("no mutex algorithm %q registered", name)
	return proc.Algorithm{}
}

// withTell makes a constructor's processes carry application messages
// (Tell), as WithApp does.
func withTell(mk func(proc.ID, int) proc.Process) func(proc.ID, int) proc.Process {
	return func(id proc.ID, n int) proc.Process { return withApp{mk(id, n)} }
}

// clSizes are the process counts of the seed sweeps.
var clSizes = []int{2, 3, 5, 8}

// clSeeds is how many seeds each sweep runs per process count.
const clSeeds = 100

// eachSize runs f for every process count of the sweeps, as parallel
// subtests.
func eachSize(t *testing.T, f func(t *testing.T, n int)) {
	for _, n := range clSizes {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			t.Parallel()
			f(t, n)
		})
	}
}

// clName names a sweep run in failures.
func clName(n int, seed uint64) string { return fmt.Sprintf("n=%d seed=%d", n, seed) }

// The registered entries are the algorithms alone: no application
// messages on their wire or in their processes. WithApp adds them, tagged
// after the algorithm's own.
func TestRegisteredAlgorithmsCarryNoApplicationMessages(t *testing.T) {
	for _, a := range Algorithms {
		for _, m := range a.Messages {
			if _, ok := m.(App); ok {
				t.Errorf("%s: App among its messages", a.Name)
			}
		}
		if _, ok := a.New(0, 4).(withApp); ok {
			t.Errorf("%s: its processes carry the application's messages", a.Name)
		}
		w := WithApp(a)
		if len(w.Messages) != len(a.Messages)+1 || w.Messages[len(a.Messages)] != (App{}) {
			t.Errorf("%s: WithApp's messages %v, want the algorithm's then App", a.Name, w.Messages)
		}
	}
}
