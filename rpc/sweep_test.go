package rpc_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/cohort-go/cohort/lab"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/rpc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
	"github.com/cohort-go/cohort/trace"
)

var sems = []rpc.Semantics{rpc.Maybe, rpc.AtLeastOnce, rpc.AtMostOnce}

func algo(t testing.TB, name string) proc.Algorithm {
	t.Helper()
	i := slices.IndexFunc(rpc.Algorithms, func(a proc.Algorithm) bool { return a.Name == name })
	if i < 0 {
		t.Fatalf("%s is not registered", name)
	}
	return rpc.Algorithms[i]
}

// run runs workload w on the stubs newProc builds, under net, with the
// workload's crash-restarts and extra faults.
func run(t testing.TB, newProc func(proc.ID, int) proc.Process, n int, seed uint64, net sim.Network, w *lab.RPCLoad, extra ...sim.Fault) *simtest.Recorded {
	t.Helper()
	faults := append(w.Faults(n, seed), extra...)
	cfg := sim.Config{Nodes: n, Seed: seed, New: newProc, Network: net, Faults: faults, Workload: w}
	cfg.Until = func(s *sim.Sim) bool { return w.Done(s.Up) }
	return simtest.Run(t, "rpc", cfg)
}

// returns collects the client's return outputs.
func returns(t testing.TB, r *simtest.Recorded) []rpc.Returned {
	t.Helper()
	var out []rpc.Returned
	for i := range r.Trace.Events {
		e := &r.Trace.Events[i]
		if e.Kind == trace.Output && e.Type == "return" {
			var o rpc.Returned
			if err := json.Unmarshal(e.Data, &o); err != nil {
				t.Fatal(err)
			}
			out = append(out, o)
		}
	}
	return out
}

// TestSweep runs every remedy and every semantics over many seeds with
// lost, duplicated and reordered messages, server crash-restarts (one of
// them in the middle of a sync of its log), client crash-restarts and
// pauses: every call runs as often as its semantics allows, and no call
// is attempted more than five times.
func TestSweep(t *testing.T) {
	seeds := 6
	if testing.Short() || raceEnabled {
		seeds = 2
	}
	for _, a := range rpc.Algorithms {
		for _, sem := range sems {
			t.Run(a.Name+"/"+sem.String(), func(t *testing.T) {
				for seed := uint64(1); seed <= uint64(seeds); seed++ {
					n := 2 + int(seed%4)
					net, faults := simtest.Within(a.Assumes, n, seed, 300*time.Millisecond)
					net.Loss, net.Duplicate = 0.1*float64(seed%4), 0.05*float64(seed%3)
					w := &lab.RPCLoad{Calls: 60, Sem: sem, ServerCrashEvery: 40 * time.Millisecond, ClientCrashEvery: 120 * time.Millisecond}
					faults = append(faults, sim.Fault{Kind: sim.CrashInSync, Node: 0, At: 7 * time.Millisecond}, sim.Fault{Kind: sim.Recover, Node: 0, At: 30 * time.Millisecond})
					r := run(t, a.New, n, seed, net, w, faults...)
					for name, v := range r.Verdicts(t, rpc.Checks...) {
						if !v.OK() {
							t.Fatalf("seed %d (%d nodes; %s): %s: %s\n%s", seed, n, simtest.Describe(net, faults), name, v, v.Counterexample(r.Trace))
						}
					}
					for i := range r.Trace.Events {
						if e := &r.Trace.Events[i]; e.Kind == trace.Send && e.Type == "request" {
							var m struct{ Attempt int }
							if json.Unmarshal(e.Data, &m) == nil && m.Attempt > 5 {
								t.Fatalf("seed %d: %s: a sixth attempt", seed, e)
							}
						}
					}
				}
			})
		}
	}
}

// TestCleanRunsExactlyOnce: without failures every call of every
// semantics runs once and returns its result.
func TestCleanRunsExactlyOnce(t *testing.T) {
	for _, sem := range sems {
		w := &lab.RPCLoad{Calls: 50, Sem: sem}
		r := run(t, algo(t, "plain").New, 4, 1, sim.Network{Latency: sim.Uniform{Min: 500 * time.Microsecond, Max: 2 * time.Millisecond}}, w)
		rets := returns(t, r)
		if len(rets) != 50 || r.Count("exec") != 50 {
			t.Fatalf("%s: %d returns, %d executions; want 50 of each", sem, len(rets), r.Count("exec"))
		}
		for _, o := range rets {
			if !o.OK || o.Attempts != 1 {
				t.Fatalf("%s: %+v, want a result at the first attempt", sem, o)
			}
		}
	}
}
