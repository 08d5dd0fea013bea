package position

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Bounds for the default 1,000-node Internet after 1,000 rounds, measured
// over matrix and algorithm seeds 1–8: median 0.066–0.072, 90th percentile
// 0.24–0.28.
const (
	vivaldiRounds      = 1000
	vivaldiMedianBound = 0.09
	vivaldiP90Bound    = 0.35
)

// The error falls as the springs relax: after 1, 10, 100 and 1,000 rounds
// each median is lower than the one before, and the last is within the
// bound.
func TestVivaldiConvergesOnTheThousandNodeInternet(t *testing.T) {
	v, err := NewVivaldi(thousand(), DefaultVivaldi)
	if err != nil {
		t.Fatal(err)
	}
	prev := math.Inf(1)
	var acc Accuracy
	for _, r := range []int{1, 10, 100, vivaldiRounds} {
		v.Run(r - v.Rounds())
		acc = Evaluate(thousand(), v)
		t.Logf("Vivaldi after %d rounds: %+v", r, acc)
		if acc.Median >= prev {
			t.Errorf("after %d rounds the median error is %.4f, not below %.4f", r, acc.Median, prev)
		}
		prev = acc.Median
	}
	if acc.Median > vivaldiMedianBound || acc.P90 > vivaldiP90Bound {
		t.Errorf("Vivaldi on 1,000 nodes: %+v, want median ≤ %v and p90 ≤ %v", acc, vivaldiMedianBound, vivaldiP90Bound)
	}
}

// Latencies that are exactly core distances plus access heights are what
// height vectors describe: Vivaldi finds them to a fraction of a percent.
// Without heights it cannot.
func TestVivaldiHeightsRecoverTheAccessDelays(t *testing.T) {
	m, err := SyntheticLatency(LatencyConfig{Nodes: 300, Dims: 2, Clusters: 5, Width: 150, Spread: 15, Height: 5, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	with, _ := NewVivaldi(m, DefaultVivaldi)
	with.Run(2000)
	flat := DefaultVivaldi
	flat.Height = false
	without, _ := NewVivaldi(m, flat)
	without.Run(2000)
	a, b := Evaluate(m, with), Evaluate(m, without)
	if a.Median > 0.01 || b.Median < 3*a.Median {
		t.Errorf("noise-free heights model: with heights %+v, without %+v", a, b)
	}
}

func TestVivaldiUpdateIsTheSpringRule(t *testing.T) {
	cfg := VivaldiConfig{Dims: 2, CC: 0.25, CE: 0.25, Neighbors: 1}
	rng := rand.New(rand.NewPCG(1, 1))

	// Too close: dist 10 < rtt 20. w = 1/(1+1), δ = cc·w = 0.125, push
	// 0.125·(20−10) = 1.25 away from the remote at (10, 0).
	// eₛ = 10/20 = 0.5, e = 0.5·0.25·0.5 + 1·(1 − 0.125) = 0.9375.
	n := VivaldiNode{Coord: Coord{Vec: []float64{0, 0}}, Err: 1}
	n.Update(cfg, Coord{Vec: []float64{10, 0}}, 1, 20, rng)
	if !near(n.Coord.Vec, []float64{-1.25, 0}) || math.Abs(n.Err-0.9375) > 1e-12 {
		t.Errorf("after one sample: %+v, want at (-1.25, 0) with error 0.9375", n)
	}

	// With heights: gap 5, heights 1 + 2, dist 8, rtt 16, force
	// 0.125·8 = 1; u = [(−3, −4), 3] / 8.
	cfg.Height = true
	n = VivaldiNode{Coord: Coord{Vec: []float64{0, 0}, Height: 1}, Err: 1}
	n.Update(cfg, Coord{Vec: []float64{3, 4}, Height: 2}, 1, 16, rng)
	if !near(n.Coord.Vec, []float64{-3.0 / 8, -4.0 / 8}) || math.Abs(n.Coord.Height-(1+3.0/8)) > 1e-12 {
		t.Errorf("with heights: %+v, want at (-0.375, -0.5) with height 1.375", n.Coord)
	}

	// Too far, pushed by a sure node with a large height: the height
	// would fall by 0.25·(0.5 − 16)·11/16 ≈ 2.7 below 1, and stops at
	// MinHeight.
	n = VivaldiNode{Coord: Coord{Vec: []float64{0, 0}, Height: 1}, Err: 1}
	n.Update(cfg, Coord{Vec: []float64{3, 4}, Height: 10}, 1e-9, 0.5, rng)
	if n.Coord.Height != MinHeight {
		t.Errorf("a sample far shorter than the heights left height %v, want MinHeight", n.Coord.Height)
	}

	// A sure node barely moves for an unsure one: w = 0.01/(0.01+1).
	n = VivaldiNode{Coord: Coord{Vec: []float64{0, 0}}, Err: 0.01}
	cfg.Height = false
	n.Update(cfg, Coord{Vec: []float64{10, 0}}, 1, 20, rng)
	if moved := -n.Coord.Vec[0]; math.Abs(moved-0.25*0.01/1.01*10) > 1e-12 {
		t.Errorf("a sure node moved %v", moved)
	}

	// Two nodes at one point push apart in some direction, by the force.
	n = NewVivaldiNode(cfg)
	n.Update(cfg, Coord{Vec: []float64{0, 0}}, 1, 8, rng)
	if d := math.Hypot(n.Coord.Vec[0], n.Coord.Vec[1]); math.Abs(d-0.125*8) > 1e-12 {
		t.Errorf("from one point: moved %v, want 1", d)
	}
}

func near(a, b []float64) bool {
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-12 {
			return false
		}
	}
	return len(a) == len(b)
}

func TestVivaldiIsDeterministic(t *testing.T) {
	m, _ := SyntheticLatency(LatencyConfig{Nodes: 200, Dims: 2, Clusters: 5, Width: 150, Spread: 15, Height: 5, Noise: 0.05, Detours: 0.05, Seed: 9})
	run := func(seed uint64) *Vivaldi {
		cfg := DefaultVivaldi
		cfg.Seed = seed
		v, err := NewVivaldi(m, cfg)
		if err != nil {
			t.Fatal(err)
		}
		v.Run(50)
		return v
	}
	a, b, c := run(1), run(1), run(2)
	differ := false
	for i := range a.Nodes {
		if !slices.Equal(a.Nodes[i].Coord.Vec, b.Nodes[i].Coord.Vec) || a.Nodes[i].Err != b.Nodes[i].Err {
			t.Fatalf("same seed, node %d: %+v and %+v", i, a.Nodes[i], b.Nodes[i])
		}
		differ = differ || !slices.Equal(a.Nodes[i].Coord.Vec, c.Nodes[i].Coord.Vec)
	}
	if !differ {
		t.Errorf("seeds 1 and 2 gave the same coordinates")
	}
}

func TestVivaldiRejectsBadConfig(t *testing.T) {
	m, _ := SyntheticLatency(LatencyConfig{Nodes: 10, Dims: 2, Clusters: 2, Width: 100, Spread: 10, Seed: 1})
	for _, c := range []struct {
		change func(*VivaldiConfig)
		want   string
	}{
		{func(c *VivaldiConfig) { c.CC = 0 }, "cc 0"},
		{func(c *VivaldiConfig) { c.CE = 1.5 }, "ce 1.5"},
		{func(c *VivaldiConfig) { c.CC = math.NaN() }, "cc NaN"},
		{func(c *VivaldiConfig) { c.Dims = 0 }, "dims 0"},
		{func(c *VivaldiConfig) { c.Neighbors = 0 }, "neighbors 0"},
	} {
		cfg := DefaultVivaldi
		c.change(&cfg)
		if _, err := NewVivaldi(m, cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error naming %q", cfg, err, c.want)
		}
	}
	// More neighbours than other nodes: every other node is a neighbour.
	cfg := DefaultVivaldi
	cfg.Neighbors = 100
	v, err := NewVivaldi(m, cfg)
	if err != nil || len(v.neighbors[0]) != 9 {
		t.Errorf("100 neighbours among 10 nodes: %v, %d neighbours", err, len(v.neighbors[0]))
	}
}
