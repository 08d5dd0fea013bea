package mutex

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
)

// raTreeDiameter is the diameter of the balanced binary tree over n ids.
func raTreeDiameter(n int) int {
	depth := func(i int) int {
		d := 0
		for ; i > 0; i = (i - 1) / 2 {
			d++
		}
		return d
	}
	dist := func(a, b int) int {
		d := 0
		for a != b {
			if depth(a) >= depth(b) {
				a = (a - 1) / 2
			} else {
				b = (b - 1) / 2
			}
			d++
		}
		return d
	}
	best := 0
	for a := range n {
		for b := range n {
			best = max(best, dist(a, b))
		}
	}
	return best
}

func TestRaymondTree(t *testing.T) {
	for i, want := range []proc.ID{proc.None, 0, 0, 1, 1, 2, 2, 3} {
		if got := rayParent(proc.ID(i)); got != want {
			t.Errorf("parent of %d = %v, want %v", i, got, want)
		}
	}
	for n, want := range map[int]int{1: 0, 2: 1, 3: 2, 4: 3, 7: 4, 8: 5, 15: 6} {
		if got := raTreeDiameter(n); got != want {
			t.Errorf("diameter(%d) = %d, want %d", n, got, want)
		}
	}
}

// A lone request travels from the leaf to the root and the token travels
// back: 2·depth messages; the holder then re-enters for free.
func TestRaymondUncontendedCost(t *testing.T) {
	run := raScript(t, raAlgorithm(t, "raymond"), 8, sim.Network{}, sim.Script{
		raAt(0, 7, Acquire{}), raAt(10, 7, Release{}), // p7 → p3 → p1 → p0: depth 3
		raAt(20, 7, Acquire{}), raAt(25, 7, Release{}),
		raAt(30, 4, Acquire{}), raAt(40, 4, Release{}), // REQ p4 → p1 → p3 → p7, token back
	})
	if got := raSendsPerEntry(run.tr); !slices.Equal(got, []int{6, 0, 6}) {
		t.Errorf("messages per entry %v, want [6 0 6]", got)
	}
}

// The cost per entry, against the bound 2·diameter and the O(log N)
// claim. Light load: one request at a time, from random processes; the
// request climbs to the token and the token comes down, about twice the
// mean distance in the tree, which grows like 2·log₂N. Saturation: every
// process wants the critical section again as soon as it left; requests
// wait in queues rather than travel, and the cost drops to a small
// constant (about 3) whatever N.
func TestRaymondCostIsLogarithmic(t *testing.T) {
	a := raAlgorithm(t, "raymond")
	for _, n := range []int{3, 8, 16, 32, 64} {
		var script sim.Script
		r := rand.New(rand.NewPCG(uint64(n), 1))
		for k := range 200 {
			p := proc.ID(r.IntN(n))
			script = append(script, raAt(float64(100*k), p, Acquire{}), raAt(float64(100*k+50), p, Release{}))
		}
		light := raScript(t, a, n, sim.Network{}, script)
		saturated := raSimulate(t, sim.Config{Nodes: n, Seed: 1, New: a.New,
			Network:  sim.Network{Latency: sim.Uniform{Min: time.Millisecond, Max: 10 * time.Millisecond}},
			Workload: &closedLoop{Rounds: 10, Think: sim.Constant(0), Hold: sim.Uniform{Max: 3 * time.Millisecond}}})
		lightPer := float64(light.res.Sent) / float64(light.entries)
		satPer := float64(saturated.res.Sent) / float64(saturated.entries)
		log := math.Log2(float64(n))
		t.Logf("n=%2d: %.2f messages per entry alone, %.2f at saturation (2·log₂N = %.2f, 2·diameter = %d)",
			n, lightPer, satPer, 2*log, 2*raTreeDiameter(n))
		if light.entries != 200 || lightPer > float64(2*raTreeDiameter(n)) || lightPer > 2*log+2 {
			t.Errorf("n=%d alone: %d entries, %.2f messages each; want 200, at most 2·log₂N + 2 = %.2f", n, light.entries, lightPer, 2*log+2)
		}
		if satPer > 4 {
			t.Errorf("n=%d at saturation: %.2f messages per entry, want at most 4", n, satPer)
		}
	}
}

// The local queues are FIFO, and a request that happened later can get
// ahead of one that happened earlier. Tree: p0 with children p1 and p2,
// and p3 under p1. p0 is in the critical section and has queued p1 (for
// p3) and then p2. When p0 leaves, the token goes to p1 and on to p3, and
// p0 asks p1 for it back on behalf of p2; that request is slow (5 ms on the
// link p0 → p1). Meanwhile p1, which got the token after p0 had heard of
// p2's request, asks for itself; p3 hands the token back to p1, whose
// queue has p1 before p0: p1 enters before p2, though p2's Acquire
// happened before p1's.
func TestRaymondBreaksME3(t *testing.T) {
	// The link p0 → p1 carries the token (1 ms) and then the request (5 ms).
	net := sim.Network{FIFO: true, Links: []sim.Link{{From: 0, To: 1, Latency: &raSeqLatency{ds: []time.Duration{time.Millisecond, 5 * time.Millisecond}}}}}
	run := raScript(t, raAlgorithm(t, "raymond"), 4, net, sim.Script{
		raAt(0, 0, Acquire{}),    // p0 has the token
		raAt(1, 3, Acquire{}),    // REQ p3 → p1 → p0: p0's queue [p1]
		raAt(4, 2, Acquire{}),    // REQ p2 → p0 at 5ms: p0's queue [p1 p2]
		raAt(6, 0, Release{}),    // token → p1 (7ms) → p3 (8ms); REQ p0 → p1 (11ms)
		raAt(9, 1, Acquire{}),    // after p2's Acquire: REQ p1 → p3
		raAt(10.5, 3, Release{}), // token → p1 (11.5ms), queue [p1 p0]: p1 enters
		raAt(14, 1, Release{}),   // token → p0 → p2
		raAt(25, 2, Release{}),
	})
	if got := raEnterOrder(run.tr); !slices.Equal(got, []int32{0, 3, 1, 2}) {
		t.Fatalf("entry order %v, want [0 3 1 2]", got)
	}
	raMust(t, run, "ME1", true)
	raMust(t, run, "ME2", true)
	raMust(t, run, "ME3", false)
}

// raSeqLatency gives the latencies in ds to successive messages, then the
// last one for ever.
type raSeqLatency struct {
	ds []time.Duration
	k  int
}

func (s *raSeqLatency) Sample(*rand.Rand) time.Duration {
	d := s.ds[min(s.k, len(s.ds)-1)]
	s.k++
	return d
}
func (s *raSeqLatency) Mean() time.Duration { return s.ds[0] }
func (s *raSeqLatency) String() string      { return "sequence" }
