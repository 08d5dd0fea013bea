package overlay_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/overlay"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
)

// burst is a run in which many nodes join at the same instant: the first
// base nodes join one after another, 10 ms apart; then the other n − base
// all join at one simulated moment, each through a member drawn at random
// among those present — an established node, or one that arrived at that
// same moment and has no tables yet. Once the joins have settled, every
// node shows its tables and lookups of random keys are asked at random
// nodes.
func burst(t testing.TB, n, base, lookups int, seed uint64, newProc func(proc.ID, int) proc.Process) *simtest.Recorded {
	rng := rand.New(rand.NewPCG(seed, 0x62757273))
	at := time.Duration(base) * 10 * time.Millisecond
	var fs []sim.Fault
	for i := range n {
		when := at
		if i < base {
			when = time.Duration(i) * 10 * time.Millisecond
		}
		fs = append(fs, sim.Fault{Kind: sim.Join, Node: proc.ID(i), At: when})
	}
	settled := at + time.Second
	var sc sim.Script
	for i := range n {
		sc = append(sc, sim.TimedInput{At: settled, Node: proc.ID(i), Input: overlay.ShowTables{}})
	}
	for i := range lookups {
		sc = append(sc, sim.TimedInput{At: settled + time.Millisecond + time.Duration(i)*time.Millisecond/4,
			Node: proc.ID(rng.IntN(n)), Input: overlay.Lookup{Key: overlay.GUID{Hi: rng.Uint64(), Lo: rng.Uint64()}}})
	}
	return simtest.Run(t, "overlay", sim.Config{Nodes: n, Seed: seed, New: newProc, Faults: fs, Workload: sc,
		Deadline: settled + time.Duration(lookups)*time.Millisecond + time.Second})
}

// TestConcurrentJoins: many nodes join at the same simulated instant, over
// many seeds and sizes — half the overlay at once on an established half,
// three quarters of it, and every node but the first (each joiner's
// contact then one that is itself joining). Every node joins; every leaf
// set holds exactly the l live nodes nearest on each side and every
// routing-table entry fits its row and column (overlay-tables); every
// lookup reaches the node numerically closest to its key
// (overlay-lookup). The nodes run without keep-alives (FailureFree):
// what the leaf sets hold at the end, the join protocol alone put there;
// and with them (Repairing), whose exchanges must not undo it. Two nodes that join at once both route to the same Z,
// which knows neither: each learns of the other through the announcement
// of its leaf set to their common neighbours, which offer what is missing.
func TestConcurrentJoins(t *testing.T) {
	seeds := seeds(24)
	if testing.Short() {
		seeds = 8
	}
	for _, c := range []struct {
		name string
		cfg  overlay.Config
	}{{"pastry", overlay.FailureFree}, {"circular", overlay.FailureFree}, {"pastry", overlay.Repairing}} {
		t.Run(fmt.Sprintf("%s/keepalive=%v", c.name, c.cfg.KeepAlive), func(t *testing.T) {
			a := overlay.Build(c.name, c.cfg)
			for seed := uint64(1); seed <= seeds; seed++ {
				n := []int{40, 100, 200}[seed%3]
				base := []int{n / 2, n / 4, 1, n / 2}[seed%4]
				r := burst(t, n, base, 100, seed, a)
				what := fmt.Sprintf("seed %d, %d nodes, %d at once", seed, n, n-base)
				for c, v := range r.Verdicts(t, "overlay-lookup", "overlay-tables") {
					if !v.OK() {
						t.Fatalf("%s: %s: %s", what, c, v.Counterexample(r.Trace))
					}
				}
				if got := outputs(r.Trace, "joined"); got != n {
					t.Fatalf("%s: %d nodes joined of %d", what, got, n)
				}
				if got := outputs(r.Trace, "tables"); got != n {
					t.Fatalf("%s: %d nodes showed their tables of %d", what, got, n)
				}
				if got := outputs(r.Trace, "delivered"); got != 100 {
					t.Fatalf("%s: %d deliveries of 100 lookups", what, got)
				}
			}
		})
	}
}

// TestConcurrentJoinsCaughtWithoutTheExchange: a join protocol without
// the leaf-set exchange (announcements carry no leaf set, and a node that
// is itself joining routes a JOIN at once, with its empty tables) leaves
// concurrent joiners unaware of each other, and the checkers say so.
func TestConcurrentJoinsCaughtWithoutTheExchange(t *testing.T) {
	caught := 0
	for seed := uint64(1); seed <= 4; seed++ {
		r := burst(t, 100, 50, 100, seed, overlay.JoinsBlind(overlay.FailureFree))
		v := r.Verdicts(t, "overlay-tables")["overlay-tables"]
		if v.Status == check.Violated {
			caught++
			if caught == 1 {
				t.Log(v.Counterexample(r.Trace))
			}
		}
	}
	if caught != 4 {
		t.Fatalf("overlay-tables caught the blind joins in %d of 4 runs", caught)
	}
}
