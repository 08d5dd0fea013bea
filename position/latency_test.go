package position

import (
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
)

// thousand is the default synthetic Internet of 1,000 nodes, built once
// for the tests that need it.
var thousand = sync.OnceValue(func() *Matrix {
	m, err := SyntheticLatency(DefaultLatency)
	if err != nil {
		panic(err)
	}
	return m
})

func TestNewMatrixKeepsEveryEntry(t *testing.T) {
	const n = 6
	rtt := make([][]float64, n)
	for i := range rtt {
		rtt[i] = make([]float64, n)
		for j := range rtt[i] {
			if i != j {
				rtt[i][j] = float64(10*min(i, j) + max(i, j))
			}
		}
	}
	m, err := NewMatrix(rtt)
	if err != nil {
		t.Fatal(err)
	}
	if m.N() != n {
		t.Fatalf("N() = %d", m.N())
	}
	for i := range n {
		for j := range n {
			if got := m.RTT(i, j); got != rtt[i][j] {
				t.Errorf("RTT(%d, %d) = %v, want %v", i, j, got, rtt[i][j])
			}
		}
	}
}

func TestNewMatrixNamesTheBadEntry(t *testing.T) {
	good := func() [][]float64 {
		return [][]float64{{0, 10, 20}, {10, 0, 30}, {20, 30, 0}}
	}
	cases := []struct {
		name   string
		change func(m [][]float64) [][]float64
		want   string
	}{
		{"NaN", func(m [][]float64) [][]float64 { m[1][2] = math.NaN(); return m }, "rtt[1][2] = NaN"},
		{"negative", func(m [][]float64) [][]float64 { m[2][0] = -5; return m }, "rtt[2][0] = -5"},
		{"zero between two nodes", func(m [][]float64) [][]float64 { m[0][1], m[1][0] = 0, 0; return m }, "rtt[0][1] = 0"},
		{"infinite", func(m [][]float64) [][]float64 { m[0][2] = math.Inf(1); return m }, "rtt[0][2] = +Inf"},
		{"asymmetric", func(m [][]float64) [][]float64 { m[0][1] = 11; return m }, "rtt[0][1] = 11 but rtt[1][0] = 10"},
		{"diagonal", func(m [][]float64) [][]float64 { m[2][2] = 1; return m }, "rtt[2][2] = 1"},
		{"ragged", func(m [][]float64) [][]float64 { m[1] = m[1][:2]; return m }, "row 1 has 2 entries, want 3"},
		{"one node", func([][]float64) [][]float64 { return [][]float64{{0}} }, "1 nodes, need at least 2"},
	}
	for _, c := range cases {
		_, err := NewMatrix(c.change(good()))
		if !errors.Is(err, ErrBadLatency) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want ErrBadLatency naming %q", c.name, err, c.want)
		}
	}
}

func TestSyntheticLatency(t *testing.T) {
	cfg := DefaultLatency
	cfg.Nodes = 200
	a, err := SyntheticLatency(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := SyntheticLatency(cfg)
	cfg.Seed = 2
	c, _ := SyntheticLatency(cfg)
	same, differ := true, false
	for i := range a.N() {
		for j := i + 1; j < a.N(); j++ {
			v := a.RTT(i, j)
			if !(v > 1) || v > 1000 {
				t.Fatalf("rtt(%d, %d) = %v ms: outside the model's range", i, j, v)
			}
			if a.RTT(j, i) != v {
				t.Fatalf("rtt not symmetric at (%d, %d)", i, j)
			}
			same = same && b.RTT(i, j) == v
			differ = differ || c.RTT(i, j) != v
		}
	}
	if !same || !differ {
		t.Errorf("same seed gives the same matrix: %v; another seed a different one: %v", same, differ)
	}
	// Without noise, detours and heights, the matrix is Euclidean and
	// keeps the triangle inequality; the default model breaks it.
	flat := LatencyConfig{Nodes: 60, Dims: 2, Clusters: 3, Width: 100, Spread: 10, Seed: 3}
	if m, _ := SyntheticLatency(flat); triangleViolations(m) != 0 {
		t.Errorf("a Euclidean model violates the triangle inequality %d times", triangleViolations(m))
	}
	if v := triangleViolations(a); v == 0 {
		t.Errorf("the default model never violates the triangle inequality")
	}
	for _, bad := range []struct {
		cfg  LatencyConfig
		want string
	}{
		{LatencyConfig{Nodes: 1, Dims: 2, Clusters: 1}, "nodes 1"},
		{LatencyConfig{Nodes: MaxNodes + 1, Dims: 2, Clusters: 1}, "nodes 5001"},
		{LatencyConfig{Nodes: 10, Dims: 0, Clusters: 1}, "dims 0"},
		{LatencyConfig{Nodes: 10, Dims: 2, Clusters: 0}, "clusters 0"},
		{LatencyConfig{Nodes: 10, Dims: 2, Clusters: 1, Noise: -0.1}, "noise -0.1"},
		{LatencyConfig{Nodes: 10, Dims: 2, Clusters: 1, Height: math.NaN()}, "height NaN"},
		{LatencyConfig{Nodes: 10, Dims: 2, Clusters: 1, Detours: 1.5}, "detours 1.5"},
	} {
		if _, err := SyntheticLatency(bad.cfg); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: got %v, want an error naming %q", bad.cfg, err, bad.want)
		}
	}
}

// triangleViolations counts the triangles among the first 60 nodes whose
// one side is longer than the other two together.
func triangleViolations(m *Matrix) int {
	v, n := 0, min(m.N(), 60)
	for i := range n {
		for j := range n {
			for k := range n {
				if i != j && j != k && i != k && m.RTT(i, k) > m.RTT(i, j)+m.RTT(j, k)+1e-9 {
					v++
				}
			}
		}
	}
	return v
}

type table [][]float64

func (p table) Predict(i, j int) float64 { return p[i][j] }

func TestEvaluate(t *testing.T) {
	m, err := NewMatrix([][]float64{
		{0, 10, 20, 40},
		{10, 0, 10, 50},
		{20, 10, 0, 100},
		{40, 50, 100, 0},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Relative errors 0.1, 0, 0.5, 0.2, 0.3, 0.05 for (0,1) (0,2) (0,3)
	// (1,2) (1,3) (2,3); sorted 0, 0.05, 0.1, 0.2, 0.3, 0.5.
	p := table{
		{0, 11, 20, 20},
		{11, 0, 8, 65},
		{20, 8, 0, 95},
		{20, 65, 95, 0},
	}
	got := Evaluate(m, p)
	if got.Pairs != 6 || math.Abs(got.Median-0.1) > 1e-12 || math.Abs(got.P90-0.5) > 1e-12 {
		t.Errorf("Evaluate = %+v, want 6 pairs, median 0.1 (3rd of 6), p90 0.5 (6th of 6)", got)
	}
	if q := quantile([]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.9); q != 9 {
		t.Errorf("p90 of 1..10 = %v, want 9", q)
	}
}
