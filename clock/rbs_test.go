package clock_test

import (
	"math"
	"testing"
	"time"

	"github.com/cohort-go/cohort/clock"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

func TestLeastSquares(t *testing.T) {
	cases := []struct {
		xs, ys      []float64
		alpha, beta float64
	}{
		{[]float64{1, 2, 3, 4}, []float64{3, 5, 7, 9}, 2, 1},                      // on a line: exact
		{[]float64{0, 1, 2}, []float64{0, 2, 1}, 0.5, 0.5},                        // the best fit of scattered points
		{[]float64{5}, []float64{7}, 0, 7},                                        // one point: no slope
		{[]float64{2, 2, 2}, []float64{1, 2, 6}, 0, 3},                            // no spread in x: the mean
		{[]float64{1e10, 1e10 + 1e8}, []float64{5e5, 5e5 + 1e4}, 1e-4, 5e5 - 1e6}, // nanoseconds, drift 100 ppm
	}
	for _, c := range cases {
		a, b := clock.LeastSquares(c.xs, c.ys)
		if math.Abs(a-c.alpha) > 1e-12 || math.Abs(b-c.beta) > 1e-6 {
			t.Errorf("LeastSquares(%v, %v) = %v, %v; want %v, %v", c.xs, c.ys, a, b, c.alpha, c.beta)
		}
	}
}

// With beacons that reach every receiver at once and clocks that do not
// drift, the receivers agree to the nanosecond after their first
// comparison, whatever the sender's jitter. The sender outputs no
// readings and receives nothing; each beacon costs N−1 beacons and
// (N−1)(N−2) observations.
func TestRBSReceiversAgree(t *testing.T) {
	for _, regression := range []bool{false, true} {
		cfg := clock.DefaultRBS
		cfg.Regression = regression
		cfg.SendJitter = 5 * ms
		tr := simulate(t, sim.Config{
			Nodes: 5, Seed: 2, New: must(t)(clock.NewRBS(cfg)),
			Clocks:   sim.Skew(5*ms, 0, 2),
			Network:  sim.Network{Latency: sim.Constant(ms)},
			Deadline: 2*time.Second + 50*ms,
		})
		sends := map[string]int{}
		for _, e := range tr.Events {
			switch {
			case e.Kind == trace.Send:
				sends[e.Type]++
				if e.Type == "obs" && (e.Peer == 0 || e.Node == 0) || e.Type == "beacon" && e.Node != 0 {
					t.Fatalf("%s", e.String())
				}
			case e.Kind == trace.Output && e.Node == 0:
				t.Fatalf("the sender output %s", e.String())
			}
		}
		if sends["beacon"] != 20*4 || sends["obs"] != 20*4*3 {
			t.Errorf("regression %v: sent %v, want 80 beacons and 240 observations for 20 beacons", regression, sends)
		}
		off := offsetsAt(t, tr, 2*time.Second+50*ms)
		lo, hi := time.Duration(math.MaxInt64), time.Duration(math.MinInt64)
		for id := proc.ID(1); id < 5; id++ {
			lo, hi = min(lo, off[id]), max(hi, off[id])
		}
		if hi-lo > 100 { // ns: the readings are of different moments, but nobody drifts
			t.Errorf("regression %v: receivers end %v apart: %v", regression, hi-lo, off)
		}
	}
}

// Over many seeds with drift up to 1e-4, receive jitter, loss and
// duplication, RBS with regression keeps the receivers within a few
// jitters of each other, and their clocks never run back. (Not under the
// simulator's reordering: it holds a message back by a whole extra
// latency, which for a beacon is a millisecond of receive-side delay —
// outside RBS's assumption, and an outlier its estimates take in.)
func TestRBSSweep(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		n := 3 + int(seed%5)
		tr := simulate(t, sim.Config{
			Nodes: n, Seed: seed, New: must(t)(clock.NewRBS(clock.DefaultRBS)),
			Clocks:   sim.Skew(5*ms, 1e-4, seed),
			Network:  sim.Network{Latency: sim.Normal{MeanD: ms, Stddev: 10 * us}, Loss: 0.05, Duplicate: 0.1},
			Deadline: 3 * time.Second,
		})
		checkRun(t, tr, seed, "integrity", "no-duplicates", "monotonic-clock")
		// Compare the receivers at their last readings: each is
		// extrapolated to the end with the clock's own rate (1 ± 1e-4),
		// which over the ≤ 100 ms since adds at most 10µs each.
		events, values := outputsOf[clock.Reading](t, tr, "reading")
		last := map[int32]time.Duration{}
		for i, e := range events {
			last[e.Node] = values[i].Clock - time.Duration(e.Time)
		}
		lo, hi := time.Duration(math.MaxInt64), time.Duration(math.MinInt64)
		for _, o := range last {
			lo, hi = min(lo, o), max(hi, o)
		}
		if len(last) != n-1 || hi-lo > 100*us {
			t.Errorf("seed %d, %d nodes: receivers end %v apart: %v", seed, n, hi-lo, last)
		}
	}
}
