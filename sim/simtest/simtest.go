// Package simtest is the families' test harness for simulated runs, in the
// spirit of etcd's rafttest: run a configuration with its trace recorded,
// judge the trace with the property checkers, pick outputs out by kind, and
// draw fault schedules that stay inside what an algorithm assumes.
//
//	r := simtest.Run(t, "mutex", sim.Config{Nodes: 5, Seed: seed, New: newRA, ...})
//	r.Hold(t, "ME1", "ME2")                 // fails with the counterexample
//	enters := r.Outputs("enter")             // by process, in order
//	net, faults := simtest.Within(a.Assumes, 5, seed, 50*time.Millisecond)
package simtest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

// A Recorded is a finished run: its trace, its figures and the simulator
// (for the processes' final states).
type Recorded struct {
	Trace  *trace.Trace
	Result sim.Result
	Sim    *sim.Sim
	Seed   uint64
}

// Run runs cfg to its end, recording the trace (beside cfg.Trace, if set)
// under a header naming family. It fails t if the run cannot be made or a
// process panics.
func Run(t testing.TB, family string, cfg sim.Config) *Recorded {
	t.Helper()
	rec := &recorder{Trace: trace.Trace{Header: trace.Header{
		Format: trace.FormatName, Nodes: cfg.Nodes, Family: family, Seed: cfg.Seed}}}
	if cfg.Trace != nil {
		cfg.Trace = trace.Tee(cfg.Trace, rec)
	} else {
		cfg.Trace = rec
	}
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatalf("seed %d: %v", cfg.Seed, err)
	}
	res, err := s.Run()
	if err != nil {
		t.Fatalf("seed %d: %v", cfg.Seed, err)
	}
	return &Recorded{Trace: &rec.Trace, Result: res, Sim: s, Seed: cfg.Seed}
}

// recorder is trace.Recorder with its events' array doubled when full.
// append grows an array this large by a quarter at a time, so a run's
// events were copied about four times over and allocated five: Raft's
// runs under the nemesis (2–6·10⁴ events each) spent a quarter of their
// CPU time growing the trace. Doubling copies the events once and
// allocates them twice, for at most twice the memory, which a test's run
// can spare (the CLI's runs keep trace.Recorder).
type recorder struct{ trace.Trace }

func (r *recorder) Record(e *trace.Event) {
	if len(r.Events) == cap(r.Events) {
		grown := make([]trace.Event, len(r.Events), 2*len(r.Events)+1024)
		copy(grown, r.Events)
		r.Events = grown
	}
	r.Events = append(r.Events, *e)
}

// Verdicts runs the named checkers on tr and returns their results by name.
func Verdicts(t testing.TB, tr *trace.Trace, names ...string) map[string]check.Result {
	t.Helper()
	rs, err := check.Run(tr, names...)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]check.Result, len(rs))
	for _, r := range rs {
		out[r.Name] = r
	}
	return out
}

// Verdicts runs the named checkers on the run.
func (r *Recorded) Verdicts(t testing.TB, names ...string) map[string]check.Result {
	t.Helper()
	return Verdicts(t, r.Trace, names...)
}

// Hold fails t, with each violation's counterexample and the seed, unless
// every named property holds.
func (r *Recorded) Hold(t testing.TB, names ...string) {
	t.Helper()
	for _, name := range names {
		if v := r.Verdicts(t, name)[name]; !v.OK() {
			t.Errorf("seed %d: %s %s: %s\n%s", r.Seed, name, v.Status, v.Detail, v.Counterexample(r.Trace))
		}
	}
}

// Outputs returns the run's outputs of one kind, by process, in order.
func (r *Recorded) Outputs(kind string) map[proc.ID][]trace.Event {
	out := map[proc.ID][]trace.Event{}
	for _, e := range r.Trace.Events {
		if e.Kind == trace.Output && e.Type == kind {
			out[proc.ID(e.Node)] = append(out[proc.ID(e.Node)], e)
		}
	}
	return out
}

// Count is the number of the run's outputs of one kind.
func (r *Recorded) Count(kind string) int { return Count(r.Trace, kind) }

// Count is the number of outputs of one kind in tr.
func Count(tr *trace.Trace, kind string) int { return tr.Count(trace.Output, kind) }

// Within draws, from seed, a network and a fault schedule over the first
// horizon of a run of n processes that an algorithm assuming as may be run
// under: jittery latency always; loss and duplication only if it does not
// assume reliable channels; reordering only if it does not assume FIFO
// (FIFO channels otherwise); crashes only if its failure model has them,
// and recoveries only if it is crash-recover; pauses only if it is not
// synchronous. Every fault is inside the algorithm's assumptions, so a
// violation in such a run is a bug.
func Within(as proc.Assumptions, n int, seed uint64, horizon time.Duration) (sim.Network, []sim.Fault) {
	rng := rand.New(rand.NewPCG(seed, 0x77697468696e)) // "within"
	net := sim.Network{Latency: sim.Uniform{Min: 200 * time.Microsecond, Max: 3 * time.Millisecond}, FIFO: as.FIFO || rng.IntN(2) == 0}
	if !as.Reliable {
		net.Loss = 0.05 * rng.Float64()
		net.Duplicate = 0.02 * rng.Float64()
	}
	if !as.FIFO {
		net.Reorder = 0.1 * rng.Float64()
	}
	at := func() time.Duration { return time.Duration(rng.Int64N(int64(horizon))) }
	var faults []sim.Fault
	if n >= 3 && (as.Failures == "crash-stop" || as.Failures == "crash-recover") {
		for _, p := range rng.Perm(n)[:1+rng.IntN(n/3)] {
			c := at()
			faults = append(faults, sim.Fault{Kind: sim.Crash, Node: proc.ID(p), At: c})
			if as.Failures == "crash-recover" && rng.IntN(2) == 0 {
				faults = append(faults, sim.Fault{Kind: sim.Recover, Node: proc.ID(p), At: c + at()})
			}
		}
	}
	if !as.Synchronous && rng.IntN(2) == 0 {
		p, from := proc.ID(rng.IntN(n)), at()
		faults = append(faults, sim.Fault{Kind: sim.Pause, Node: p, At: from, Until: from + horizon/10 + 1})
	}
	return net, faults
}

// Describe renders a fault schedule for a failure message.
func Describe(net sim.Network, faults []sim.Fault) string {
	var b strings.Builder
	fmt.Fprintf(&b, "latency %v, fifo %v, loss %.3f, dup %.3f, reorder %.3f", net.Latency, net.FIFO, net.Loss, net.Duplicate, net.Reorder)
	for _, f := range faults {
		fmt.Fprintf(&b, "; %s p%d at %v", f.Kind, f.Node, f.At)
	}
	return b.String()
}
