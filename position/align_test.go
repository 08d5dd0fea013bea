package position

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAlign checks that Align undoes a rigid motion: points turned,
// reflected, moved and set in a higher-dimensional space come back onto
// the truth; and that it does not scale (a shrunken copy stays shrunken).
func TestAlign(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	truth := make([][]float64, 50)
	for i := range truth {
		truth[i] = []float64{100 * rng.Float64(), 100 * rng.Float64()}
	}
	near := func(a, b [][]float64, tol float64) bool {
		for i := range a {
			for k := range a[i] {
				if math.Abs(a[i][k]-b[i][k]) > tol {
					return false
				}
			}
		}
		return true
	}
	th := 2.0
	cases := []struct {
		name string
		f    func(x, y float64) []float64
		same bool
	}{
		{"turned and moved", func(x, y float64) []float64 {
			return []float64{math.Cos(th)*x - math.Sin(th)*y + 40, math.Sin(th)*x + math.Cos(th)*y - 7}
		}, true},
		{"reflected", func(x, y float64) []float64 { return []float64{-x, y} }, true},
		{"in 3-D, tilted", func(x, y float64) []float64 {
			return []float64{x, math.Cos(th) * y, math.Sin(th)*y + 5}
		}, true},
		{"shrunk", func(x, y float64) []float64 { return []float64{x / 2, y / 2} }, false},
	}
	for _, c := range cases {
		est := make([][]float64, len(truth))
		for i, p := range truth {
			est[i] = c.f(p[0], p[1])
		}
		got := Align(est, truth)
		if len(got) != len(truth) || len(got[0]) != 2 {
			t.Fatalf("%s: %d points of %d dimensions", c.name, len(got), len(got[0]))
		}
		if near(got, truth, 1e-6) != c.same {
			t.Errorf("%s: aligned onto the truth: %v, want %v (first point %v, truth %v)", c.name, !c.same, c.same, got[0], truth[0])
		}
		if !c.same {
			// Half the size, about the truth's centre.
			if d, want := distance(got[0], got[1]), distance(truth[0], truth[1])/2; math.Abs(d-want) > 1e-6 {
				t.Errorf("%s: distance %v, want %v", c.name, d, want)
			}
		}
	}
}

// TestNodeErrors checks each node's median relative error: exact
// coordinates have none; a node put far off has the largest.
func TestNodeErrors(t *testing.T) {
	m, g, err := SyntheticNetwork(LatencyConfig{Nodes: 30, Dims: 2, Clusters: 2, Width: 100, Spread: 10, Height: 5, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	exact := &Vivaldi{}
	for i := range g.Pos {
		exact.Nodes = append(exact.Nodes, VivaldiNode{Coord: Coord{Vec: g.Pos[i], Height: g.Height[i]}})
	}
	for i, e := range NodeErrors(m, exact) {
		if e > 1e-9 {
			t.Errorf("node %d: error %v with the true coordinates and no noise", i, e)
		}
	}
	exact.Nodes[7].Coord.Vec = []float64{1000, 1000}
	errs := NodeErrors(m, exact)
	for i, e := range errs {
		if i != 7 && e >= errs[7] {
			t.Errorf("node %d's error %v is not below the moved node's %v", i, e, errs[7])
		}
	}
}
