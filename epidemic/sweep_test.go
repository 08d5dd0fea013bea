package epidemic_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
)

func algorithm(t testing.TB, name string, p epidemic.Params) proc.Algorithm {
	t.Helper()
	i := slices.IndexFunc(epidemic.Algorithms, func(a proc.Algorithm) bool { return a.Name == name })
	if i < 0 {
		t.Fatalf("%s is not registered", name)
	}
	a, err := epidemic.Configure(epidemic.Algorithms[i], p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// writes is a script of writes to the replicated map: two keys written,
// one overwritten at another node, one deleted — racing writes and a
// tombstone, inside the first 200 ms.
func writes(n int) sim.Script {
	return sim.Script{
		{At: 5 * time.Millisecond, Node: 0, Input: epidemic.Put{Key: "x", Value: "1"}},
		{At: 7 * time.Millisecond, Node: proc.ID(n - 1), Input: epidemic.Put{Key: "y", Value: "a"}},
		{At: 60 * time.Millisecond, Node: proc.ID(n / 2), Input: epidemic.Put{Key: "x", Value: "2"}},
		{At: 61 * time.Millisecond, Node: 1, Input: epidemic.Put{Key: "x", Value: "3"}},
		{At: 150 * time.Millisecond, Node: 2, Input: epidemic.Delete{Key: "y"}},
	}
}

// TestGossipSweep runs each anti-entropy algorithm, and rumor mongering
// with backup anti-entropy, over many seeds under the faults their
// assumptions allow — loss, duplication, reordering, crashes and
// recoveries with fresh state, pauses (simtest.Within) — and processes
// that join the running system, and judges every run: the map converges
// at every live node, no deleted key comes back, every message is real.
func TestGossipSweep(t *testing.T) {
	seeds := simtest.Seeds(40, 5)
	for _, c := range []struct {
		algo     string
		p        epidemic.Params
		deadline time.Duration
	}{
		{"push", epidemic.Params{}, 2 * time.Second},
		{"pull", epidemic.Params{}, 2 * time.Second},
		{"push-pull", epidemic.Params{}, 2 * time.Second},
		{"push-pull", epidemic.Params{Fanout: 3}, 2 * time.Second},
		{"rumor", epidemic.Params{Backup: true, BackupEvery: 3}, 3 * time.Second},
		{"rumor", epidemic.Params{Backup: true, Pull: true, Counter: true, K: 2}, 3 * time.Second},
		{"rumor", epidemic.Params{Backup: true, Cycles: true, Counter: true, K: 3}, 3 * time.Second},
		{"members", epidemic.Params{}, 3 * time.Second},
	} {
		a := algorithm(t, c.algo, c.p)
		t.Run(fmt.Sprintf("%s%+v", c.algo, c.p), func(t *testing.T) {
			for seed := uint64(1); seed <= uint64(seeds); seed++ {
				n := 6 + int(seed%11)
				net, faults := simtest.Within(a.Assumes, n, seed, 300*time.Millisecond)
				// Two processes join late, through any member.
				rng := rand.New(rand.NewPCG(seed, 7))
				for _, p := range []int{n - 2, n - 3} {
					if !slices.ContainsFunc(faults, func(f sim.Fault) bool { return int(f.Node) == p }) {
						faults = append(faults, sim.Fault{Kind: sim.Join, Node: proc.ID(p), At: time.Duration(rng.Int64N(int64(400 * time.Millisecond)))})
					}
				}
				r := simtest.Run(t, "gossip", sim.Config{Nodes: n, Seed: seed, New: a.New, Network: net, Faults: faults,
					Workload: writes(n), Deadline: c.deadline})
				for _, v := range r.Verdicts(t, "integrity", "gossip-convergence", "gossip-no-resurrection") {
					if !v.OK() {
						t.Errorf("seed %d, %d nodes (%s): %s %s: %s\n%s", seed, n, simtest.Describe(net, faults), v.Name, v.Status, v.Detail, v.Counterexample(r.Trace))
					}
				}
			}
		})
	}
}

// TestPushSumSweep runs push-sum, for each aggregate, over many seeds on
// jittery reliable channels with pauses: mass is conserved exactly, and
// every estimate ends within the error bound.
func TestPushSumSweep(t *testing.T) {
	seeds := simtest.Seeds(30, 4)
	for _, agg := range []string{"average", "sum", "count"} {
		a := algorithm(t, "push-sum", epidemic.Params{Aggregate: agg})
		for seed := uint64(1); seed <= uint64(seeds); seed++ {
			n := 4 + int(seed%29)
			net, faults := simtest.Within(a.Assumes, n, seed, 100*time.Millisecond)
			var values sim.Script
			for i := range n {
				values = append(values, sim.TimedInput{At: time.Microsecond, Node: proc.ID(i), Input: epidemic.Value{X: float64(i*i) - 3.5}})
			}
			r := simtest.Run(t, "gossip", sim.Config{Nodes: n, Seed: seed, New: a.New, Network: net, Faults: faults,
				Workload: values, Deadline: 1500 * time.Millisecond})
			r.Hold(t, "integrity", "push-sum-mass", "push-sum-error")
		}
	}
}

// The same seed gives the same trace; another seed another one.
func TestGossipIsDeterministic(t *testing.T) {
	for _, name := range []string{"push", "pull", "push-pull", "rumor", "push-sum"} {
		a := algorithm(t, name, epidemic.Params{})
		run := func(seed uint64) string {
			net, faults := simtest.Within(a.Assumes, 12, seed, 100*time.Millisecond)
			r := simtest.Run(t, "gossip", sim.Config{Nodes: 12, Seed: seed, New: a.New, Network: net, Faults: faults,
				Workload: writes(12), Deadline: 500 * time.Millisecond})
			return fmt.Sprint(r.Trace.Events)
		}
		if a, b := run(3), run(3); a != b {
			t.Errorf("%s: two runs of seed 3 differ", name)
		}
		if a, b := run(3), run(4); a == b {
			t.Errorf("%s: seeds 3 and 4 give the same trace", name)
		}
	}
}
