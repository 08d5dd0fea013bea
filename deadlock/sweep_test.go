package deadlock_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/deadlock"
	"github.com/cohort-go/cohort/lab"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
	"github.com/cohort-go/cohort/trace"
)

var properties = []string{"deadlock-detected", "deadlock-no-phantom"}

func seeds() uint64 {
	if testing.Short() || raceEnabled {
		return 12
	}
	return 40
}

// run is a run of the family's workload: n processes, each committing
// txns transactions of want resources at contention c, on jittery FIFO
// channels, stopped at 400 ms of virtual time at the latest (a detector that
// never declares leaves its deadlocks, and its probe timers, for ever).
func run(t testing.TB, newProc func(proc.ID, int) proc.Process, n int, seed uint64, c float64, want int) *simtest.Recorded {
	t.Helper()
	w := &lab.DeadlockLoad{Txns: 8, Want: want, Contention: c}
	net := sim.Network{Latency: sim.Uniform{Min: 200 * time.Microsecond, Max: 3 * time.Millisecond}, FIFO: true}
	return simtest.Run(t, "deadlock", sim.Config{Nodes: n, Seed: seed, New: newProc, Network: net, Workload: w, Deadline: 400 * time.Millisecond})
}

// setting draws a sweep run's size and load from its seed: 3 to 9
// processes, contention 0.3 to 1, 2 or 3 resources per transaction.
func setting(seed uint64) (n int, c float64, want int) {
	return 3 + int(seed%7), 0.3 + 0.1*float64(seed%8), 2 + int(seed%2)
}

func cmh(proc.ID, int) proc.Process     { return deadlock.NewCMH(deadlock.DefaultProbeWait) }
func timeout(proc.ID, int) proc.Process { return deadlock.NewTimeout(deadlock.DefaultTimeout) }

func count(tr *trace.Trace, kind string) int {
	c := 0
	for i := range tr.Events {
		if e := &tr.Events[i]; e.Kind == trace.Output && e.Type == kind {
			c++
		}
	}
	return c
}

// TestSweepCMH: over many seeds, sizes and contentions, Chandy–Misra–Haas
// declares every deadlock within its bound, and almost none that is not
// (a phantom needs an abort to cross a probe of an overlapping cycle); every
// transaction commits in the end; deadlocks do form (the sweep is not
// vacuous), and there is one victim per declaration, the highest process
// of the cycle it names.
func TestSweepCMH(t *testing.T) {
	var formed, detected, aborts, phantoms int
	for seed := uint64(1); seed <= seeds(); seed++ {
		n, c, want := setting(seed)
		r := run(t, cmh, n, seed, c, want)
		r.Hold(t, "deadlock-detected")
		if got := count(r.Trace, "released"); got != 8*n {
			t.Fatalf("seed %d: %d transactions committed, want %d", seed, got, 8*n)
		}
		a, err := check.AnalyzeDeadlocks(r.Trace)
		if err != nil {
			t.Fatal(err)
		}
		formed, detected, phantoms = formed+a.Formed, detected+a.Detected, phantoms+len(a.Phantoms)
		aborts += count(r.Trace, "aborted")
		if d := count(r.Trace, "deadlock"); d != count(r.Trace, "aborted") {
			t.Errorf("seed %d: %d declarations, %d aborts: want one victim per declaration", seed, d, count(r.Trace, "aborted"))
		}
		for i := range r.Trace.Events {
			e := &r.Trace.Events[i]
			if e.Kind != trace.Output || e.Type != "deadlock" {
				continue
			}
			var d deadlock.Deadlock
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			if len(d.Cycle) < 2 || d.Cycle[0] != proc.ID(e.Node) || slices.Max(d.Cycle) != d.Cycle[0] {
				t.Errorf("seed %d: p%d declared %s: want a cycle from the declaring process, the highest on it", seed, e.Node, d)
			}
		}
	}
	if formed == 0 || detected < formed*9/10 {
		t.Errorf("%d deadlocks formed, %d detected: want many, nearly all", formed, detected)
	}
	if phantoms*20 > aborts {
		t.Errorf("%d phantom declarations in %d: want at most 1 in 20", phantoms, aborts)
	}
	t.Logf("%d seeds: %d deadlocks formed, %d detected, %d aborts, %d phantoms", seeds(), formed, detected, aborts, phantoms)
}

// TestSweepTimeout: the timeout detector ends every deadlock in time too,
// but declares deadlocks that are not — caught by deadlock-no-phantom,
// in the same runs in which CMH declares none.
func TestSweepTimeout(t *testing.T) {
	phantomRuns := 0
	for seed := uint64(1); seed <= seeds(); seed++ {
		n, c, want := setting(seed)
		r := run(t, timeout, n, seed, c, want)
		r.Hold(t, "deadlock-detected")
		if v := r.Verdicts(t, "deadlock-no-phantom")["deadlock-no-phantom"]; v.Status == check.Violated {
			phantomRuns++
		}
	}
	if phantomRuns < int(seeds())/2 {
		t.Errorf("the timeout declared phantom deadlocks in %d runs of %d: want most", phantomRuns, seeds())
	}
}

// TestDeafCMHIsCaught: a CMH whose returning probes go unheard never
// declares: deadlock-detected catches it.
func TestDeafCMHIsCaught(t *testing.T) {
	deaf := func(proc.ID, int) proc.Process { return deadlock.NewDeafCMH(deadlock.DefaultProbeWait) }
	caught := 0
	for seed := uint64(1); seed <= 6; seed++ {
		r := run(t, deaf, 5, seed, 0.9, 2)
		v := r.Verdicts(t, properties...)
		if v["deadlock-detected"].Status == check.Violated {
			caught++
		}
		if !v["deadlock-no-phantom"].OK() {
			t.Errorf("seed %d: a detector that declares nothing declares no phantom: %s", seed, v["deadlock-no-phantom"])
		}
	}
	if caught == 0 {
		t.Error("deadlock-detected never caught the deaf CMH in 6 seeds")
	}
}

// TestHastyCMHIsCaught: a CMH that declares when its first probe timer
// fires, without waiting for a probe to come back, declares deadlocks
// that are not: deadlock-no-phantom catches it.
func TestHastyCMHIsCaught(t *testing.T) {
	hasty := func(proc.ID, int) proc.Process { return deadlock.NewHastyCMH(deadlock.DefaultProbeWait) }
	caught := 0
	for seed := uint64(1); seed <= 6; seed++ {
		r := run(t, hasty, 5, seed, 0.7, 2)
		if v := r.Verdicts(t, "deadlock-no-phantom")["deadlock-no-phantom"]; v.Status == check.Violated {
			caught++
		}
	}
	if caught == 0 {
		t.Error("deadlock-no-phantom never caught the hasty CMH in 6 seeds")
	}
}

// TestSameSeedSameTrace: a run replays byte for byte from its seed.
func TestSameSeedSameTrace(t *testing.T) {
	for _, newProc := range []func(proc.ID, int) proc.Process{cmh, timeout} {
		hash := func() string {
			h := trace.NewHasher(trace.Header{Nodes: 6, Seed: 9})
			w := &lab.DeadlockLoad{Contention: 0.9}
			net := sim.Network{Latency: sim.Exponential{MeanD: time.Millisecond}, FIFO: true}
			simtest.Run(t, "deadlock", sim.Config{Nodes: 6, Seed: 9, New: newProc, Network: net, Workload: w, Trace: h})
			return h.Sum()
		}
		if h1, h2 := hash(), hash(); h1 != h2 {
			t.Errorf("seed 9 gave traces %s and %s", h1, h2)
		}
	}
}
