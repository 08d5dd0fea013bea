package overlay_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/overlay"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
	"github.com/cohort-go/cohort/trace"
)

// joins builds an overlay of n nodes one after another, gap apart, each
// through a random present member (the simulator draws the contact), then
// asks lookups of random keys at random nodes once it has settled.
func joins(n, lookups int, gap time.Duration, seed uint64) ([]sim.Fault, sim.Script) {
	var fs []sim.Fault
	for i := range n {
		fs = append(fs, sim.Fault{Kind: sim.Join, Node: proc.ID(i), At: time.Duration(i) * gap})
	}
	rng := rand.New(rand.NewPCG(seed, 0x6c6f6f6b))
	var s sim.Script
	settled := time.Duration(n)*gap + 50*time.Millisecond
	for i := range lookups {
		s = append(s, sim.TimedInput{At: settled + time.Duration(i)*time.Millisecond/4, Node: proc.ID(rng.IntN(n)),
			Input: overlay.Lookup{Key: overlay.GUID{Hi: rng.Uint64(), Lo: rng.Uint64()}}})
	}
	return fs, s
}

// algo is the registered algorithm name, built with configuration cfg.
func algo(t testing.TB, name string, cfg overlay.Config) proc.Algorithm {
	i := slices.IndexFunc(overlay.Algorithms, func(a proc.Algorithm) bool { return a.Name == name })
	if i < 0 {
		t.Fatalf("%s is not registered", name)
	}
	a := overlay.Algorithms[i]
	a.New = overlay.Build(name, cfg)
	return a
}

func run(t testing.TB, a proc.Algorithm, n, lookups int, gap time.Duration, seed uint64) *simtest.Recorded {
	fs, s := joins(n, lookups, gap, seed)
	return simtest.Run(t, "overlay", sim.Config{Nodes: n, Seed: seed, New: a.New, Faults: fs, Workload: s})
}

func hops(tr *trace.Trace) []float64 {
	var h []float64
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.Kind == trace.Output && e.Type == "delivered" {
			var d overlay.Delivered
			if err := json.Unmarshal(e.Data, &d); err != nil {
				panic(err)
			}
			h = append(h, float64(d.Hops))
		}
	}
	return h
}

// TestLookupSweep builds overlays of various sizes by joins through random
// members, over many seeds, and routes lookups: every one reaches the node
// numerically closest to its key (overlay-lookup).
func TestLookupSweep(t *testing.T) {
	seeds := 12
	if testing.Short() {
		seeds = 4
	}
	for _, name := range []string{"pastry", "circular"} {
		a := algo(t, name, overlay.FailureFree)
		t.Run(name, func(t *testing.T) {
			for seed := uint64(1); seed <= uint64(seeds); seed++ {
				n := []int{1, 2, 5, 17, 40, 150}[seed%6]
				r := run(t, a, n, 60, 40*time.Millisecond, seed)
				for _, v := range r.Verdicts(t, "overlay-lookup") {
					if !v.OK() {
						t.Fatalf("seed %d, %d nodes: %s", seed, n, v.Counterexample(r.Trace))
					}
				}
				if got := len(hops(r.Trace)); got != 60 {
					t.Fatalf("seed %d: %d deliveries of 60 lookups", seed, got)
				}
			}
		})
	}
}

// TestDeterminism: the same seed gives the same trace, byte for byte.
func TestDeterminism(t *testing.T) {
	a := algo(t, "pastry", overlay.FailureFree)
	h := func() string {
		r := run(t, a, 60, 30, 20*time.Millisecond, 7)
		x := trace.NewHasher(r.Trace.Header)
		for i := range r.Trace.Events {
			x.Record(&r.Trace.Events[i])
		}
		return x.Sum()
	}
	if x, y := h(), h(); x != y {
		t.Fatalf("two runs of seed 7: %s, %s", x, y)
	}
}

// TestHopsBelowTheory: Pastry's mean route is shorter than ⌈log₁₆ N⌉ hops
// at N = 1000 and 10⁴ (Rowstron & Druschel's figure 4: about log₁₆ N).
func TestHopsBelowTheory(t *testing.T) {
	sizes := []int{1000, 10000}
	if testing.Short() {
		sizes = sizes[:1]
	}
	a := algo(t, "pastry", overlay.FailureFree)
	for _, n := range sizes {
		r := run(t, a, n, 300, 10*time.Millisecond, 3)
		h := hops(r.Trace)
		if len(h) != 300 {
			t.Fatalf("%d nodes: %d deliveries of 300 lookups", n, len(h))
		}
		var sum float64
		for _, x := range h {
			sum += x
		}
		mean, bound := sum/float64(len(h)), math.Ceil(overlay.Log16(n))
		t.Logf("%d nodes: mean %.2f hops, log16 N = %.2f", n, mean, overlay.Log16(n))
		if mean >= bound {
			t.Errorf("%d nodes: mean %.2f hops, want below ⌈log₁₆ N⌉ = %g", n, mean, bound)
		}
	}
}

// TestCheckerCatchesRoutingWithoutLeaves: Pastry whose routing ignores
// the leaf set delivers keys at nodes that share the longest prefix but
// are not numerically closest, and overlay-lookup says so.
func TestCheckerCatchesRoutingWithoutLeaves(t *testing.T) {
	broken := proc.Algorithm{Name: "pastry-noleaves", New: overlay.NewNoLeaves}
	caught := 0
	for seed := uint64(1); seed <= 3; seed++ {
		r := run(t, broken, 300, 100, 10*time.Millisecond, seed)
		v := r.Verdicts(t, "overlay-lookup")["overlay-lookup"]
		if v.Status == check.Violated {
			caught++
			if seed == 1 {
				t.Log(v.Counterexample(r.Trace))
			}
		}
	}
	if caught != 3 {
		t.Fatalf("overlay-lookup caught the broken routing in %d of 3 runs", caught)
	}
}
