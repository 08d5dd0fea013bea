package clock_test

import (
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/cohort-go/cohort/clock"
	"github.com/cohort-go/cohort/logical"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
)

// The rules of Kulkarni et al., case by case.
func TestHLCRules(t *testing.T) {
	var h logical.HLC
	if got := h.Now(); got != (logical.HLCTime{}) {
		t.Fatalf("a fresh clock reads %v", got)
	}
	steps := []struct {
		what string
		do   func() logical.HLCTime
		want logical.HLCTime
	}{
		{"first event, clock behind the run's start", func() logical.HLCTime { return h.Send(-5) }, logical.HLCTime{L: -5}},
		{"send, physical time moved on", func() logical.HLCTime { return h.Send(10) }, logical.HLCTime{L: 10}},
		{"send, physical time stands still", func() logical.HLCTime { return h.Send(10) }, logical.HLCTime{L: 10, C: 1}},
		{"send, physical time behind l", func() logical.HLCTime { return h.Send(8) }, logical.HLCTime{L: 10, C: 2}},
		{"receive from ahead: l := l_m, c := c_m + 1", func() logical.HLCTime { return h.Recv(12, logical.HLCTime{L: 20, C: 4}) }, logical.HLCTime{L: 20, C: 5}},
		{"receive, l = l' = l_m: c := max(c, c_m) + 1", func() logical.HLCTime { return h.Recv(12, logical.HLCTime{L: 20, C: 9}) }, logical.HLCTime{L: 20, C: 10}},
		{"receive from behind: l = l', c + 1", func() logical.HLCTime { return h.Recv(15, logical.HLCTime{L: 3, C: 50}) }, logical.HLCTime{L: 20, C: 11}},
		{"receive, physical time ahead of both: c := 0", func() logical.HLCTime { return h.Recv(30, logical.HLCTime{L: 25, C: 7}) }, logical.HLCTime{L: 30}},
	}
	for _, s := range steps {
		if got := s.do(); got != s.want {
			t.Fatalf("%s: got %v, want %v", s.what, got, s.want)
		}
	}
	var fresh logical.HLC
	if got := fresh.Recv(-3, logical.HLCTime{L: -1, C: 2}); got != (logical.HLCTime{L: -1, C: 3}) {
		t.Errorf("a fresh clock receiving from ahead: %v, want (-1ns,3)", got)
	}
}

// Processes exchanging messages with arbitrary physical clocks and delays:
// every event's timestamp exceeds the one before it at the process and the
// sender's; l is at least the process's physical time and at most the
// largest physical time read anywhere so far.
func TestHLCProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 4).Draw(t, "n")
		clocks := make([]logical.HLC, n)
		last := make([]logical.HLCTime, n)
		started := make([]bool, n)
		pt := make([]time.Duration, n)
		for i := range pt {
			pt[i] = time.Duration(rapid.Int64Range(-1e6, 1e6).Draw(t, "pt0"))
		}
		var inFlight []logical.HLCTime
		top := time.Duration(-1 << 62) // the largest physical time read so far
		for range rapid.IntRange(1, 60).Draw(t, "events") {
			p := rapid.IntRange(0, n-1).Draw(t, "p")
			pt[p] += time.Duration(rapid.Int64Range(0, 1000).Draw(t, "tick"))
			top = max(top, pt[p])
			var ts logical.HLCTime
			if len(inFlight) > 0 && rapid.Bool().Draw(t, "receive") {
				k := rapid.IntRange(0, len(inFlight)-1).Draw(t, "which")
				m := inFlight[k]
				inFlight = append(inFlight[:k], inFlight[k+1:]...)
				ts = clocks[p].Recv(pt[p], m)
				if !m.Less(ts) {
					t.Fatalf("received %v at %v", m, ts)
				}
			} else {
				ts = clocks[p].Send(pt[p])
				inFlight = append(inFlight, ts)
			}
			if started[p] && !last[p].Less(ts) {
				t.Fatalf("p%d: %v then %v", p, last[p], ts)
			}
			if ts.L < pt[p] || ts.L > top {
				t.Fatalf("p%d: l = %v outside [pt = %v, largest pt = %v]", p, ts.L, pt[p], top)
			}
			last[p], started[p] = ts, true
		}
	})
}

// The demonstration over many seeds, with clocks up to 2 ms off and
// drifting by up to 1e-4, jittery and lossy links, duplication,
// reordering and crashes: the clock condition holds for the hybrid
// timestamps (the "hlc" checker) and the host's (clock-condition), and at
// every stamped event l − pt ≤ ε(t), the largest difference between two
// hardware clocks at that moment.
func TestHLCBoundedDivergence(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 40
	}
	worst := 0.0
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		n := 2 + int(seed%6)
		model := sim.Skew(2*ms, 1e-4, seed)
		cfg := clock.DefaultHLC
		cfg.Ticks = 60
		tr := simulate(t, sim.Config{
			Nodes: n, Seed: seed, New: must(t)(clock.NewHLCDemo(cfg)),
			Clocks:       model,
			Network:      sim.Network{Latency: sim.LogNormal{Median: ms, Sigma: 0.8}, Loss: 0.05, Duplicate: 0.05, Reorder: 0.1},
			Faults:       []sim.Fault{{Kind: sim.Crash, Node: proc.ID(seed % uint64(n)), At: time.Duration(seed%300) * ms}},
			VectorClocks: true,
		})
		checkRun(t, tr, seed, "integrity", "no-duplicates", "clock-condition", "hlc", "monotonic-clock")
		events, stamps := outputsOf[logical.HLCTime](t, tr, "hlc")
		if len(stamps) == 0 {
			t.Fatalf("seed %d: no stamps", seed)
		}
		for i, e := range events {
			at := time.Duration(e.Time)
			var eps time.Duration
			for q := range n {
				eps = max(eps, model(proc.ID(q)).Read(at)-time.Duration(e.Local))
			}
			if ahead := stamps[i].L - time.Duration(e.Local); ahead > eps {
				t.Fatalf("seed %d: %s: l − pt = %v > ε = %v", seed, e.String(), ahead, eps)
			} else if eps > 0 {
				worst = max(worst, float64(ahead)/float64(eps))
			}
		}
	}
	t.Logf("largest (l − pt)/ε over the stamps: %.3f", worst)
}
