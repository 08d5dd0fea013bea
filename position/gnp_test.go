package position

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// Bounds for the default 1,000-node Internet, measured over matrix and
// algorithm seeds 1–8: GNP median 0.056–0.066, 90th percentile 0.19–0.25.
// The noise alone (5% log-normal per pair, 5% of pairs on a detour) puts
// the best possible median near 0.035.
const (
	gnpMedianBound = 0.09
	gnpP90Bound    = 0.33
)

func TestGNPPredictsTheThousandNodeInternet(t *testing.T) {
	g, err := EmbedGNP(thousand(), DefaultGNP)
	if err != nil {
		t.Fatal(err)
	}
	acc := Evaluate(thousand(), g)
	t.Logf("GNP, 15 landmarks, 7 dimensions: %+v", acc)
	if acc.Pairs != 1000*999/2 || acc.Median > gnpMedianBound || acc.P90 > gnpP90Bound {
		t.Errorf("GNP on 1,000 nodes: %+v, want median ≤ %v and p90 ≤ %v", acc, gnpMedianBound, gnpP90Bound)
	}
}

// Latencies that are exactly Euclidean distances embed exactly in a space
// of the same dimension: GNP's error is rounding only.
func TestGNPRecoversEuclideanSpace(t *testing.T) {
	for _, dims := range []int{2, 3} {
		m, err := SyntheticLatency(LatencyConfig{Nodes: 300, Dims: dims, Clusters: 4, Width: 150, Spread: 15, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		g, err := EmbedGNP(m, GNPConfig{Landmarks: 8, Dims: dims, Restarts: 2, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		if acc := Evaluate(m, g); acc.P90 > 1e-4 {
			t.Errorf("Euclidean %d-D space embedded in %d-D: %+v, want errors below 1e-4", dims, dims, acc)
		}
	}
}

func TestJacobiEigen(t *testing.T) {
	a := []float64{
		4, 1, 2,
		1, 3, 0,
		2, 0, 5,
	}
	orig := slices.Clone(a)
	values, vectors := jacobiEigen(a, 3)
	sum := 0.0
	for e := range 3 {
		sum += values[e]
		for i := range 3 {
			av := 0.0
			for k := range 3 {
				av += orig[i*3+k] * vectors[k*3+e]
			}
			if math.Abs(av-values[e]*vectors[i*3+e]) > 1e-12 {
				t.Errorf("eigenpair %d: (A·v)[%d] = %v, λ·v[%d] = %v", e, i, av, i, values[e]*vectors[i*3+e])
			}
		}
	}
	if math.Abs(sum-12) > 1e-12 {
		t.Errorf("eigenvalues %v sum to %v, want the trace 12", values, sum)
	}
}

func TestGNPIsDeterministic(t *testing.T) {
	m, _ := SyntheticLatency(LatencyConfig{Nodes: 200, Dims: 2, Clusters: 5, Width: 150, Spread: 15, Height: 5, Noise: 0.05, Detours: 0.05, Seed: 9})
	cfg := GNPConfig{Landmarks: 10, Dims: 4, Restarts: 2, Seed: 3}
	a, _ := EmbedGNP(m, cfg)
	b, _ := EmbedGNP(m, cfg)
	for i := range a.Coords {
		if !slices.Equal(a.Coords[i], b.Coords[i]) {
			t.Fatalf("same seed, node %d at %v and %v", i, a.Coords[i], b.Coords[i])
		}
	}
	cfg.Seed = 4
	c, _ := EmbedGNP(m, cfg)
	if slices.Equal(a.Landmarks, c.Landmarks) {
		t.Errorf("seeds 3 and 4 chose the same landmarks %v", a.Landmarks)
	}
	isLandmark := map[int]bool{}
	for _, l := range a.Landmarks {
		if isLandmark[l] || l < 0 || l >= m.N() {
			t.Errorf("landmarks %v: %d repeated or out of range", a.Landmarks, l)
		}
		isLandmark[l] = true
	}
}

func TestGNPRejectsBadConfig(t *testing.T) {
	m, _ := SyntheticLatency(LatencyConfig{Nodes: 10, Dims: 2, Clusters: 2, Width: 100, Spread: 10, Seed: 1})
	for _, c := range []struct {
		cfg  GNPConfig
		is   error
		want string
	}{
		{GNPConfig{Landmarks: 5, Dims: 7, Restarts: 1}, ErrTooFewLandmarks, "5 landmarks, need at least dims+1 = 8"},
		{GNPConfig{Landmarks: 11, Dims: 2, Restarts: 1}, ErrTooFewLandmarks, "11 landmarks among 10 nodes"},
		{GNPConfig{Landmarks: 5, Dims: 0, Restarts: 1}, nil, "dims 0"},
		{GNPConfig{Landmarks: 5, Dims: 2, Restarts: 0}, nil, "restarts 0"},
	} {
		_, err := EmbedGNP(m, c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) || c.is != nil && !errors.Is(err, c.is) {
			t.Errorf("%+v: got %v, want an error naming %q", c.cfg, err, c.want)
		}
	}
}
