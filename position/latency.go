package position

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// Matrix holds the round-trip times between n nodes, in milliseconds:
// symmetric, zero on the diagonal, positive and finite elsewhere. It stores
// the upper triangle only.
type Matrix struct {
	n   int
	rtt []float64 // row i, column j > i at tri(i, j)
}

// ErrBadLatency reports a latency matrix that is not square, symmetric,
// finite, positive off the diagonal and zero on it.
var ErrBadLatency = errors.New("bad latency")

// NewMatrix checks rtt (milliseconds; rtt[i][j] between nodes i and j) and
// copies it into a Matrix. Errors name the first bad entry.
func NewMatrix(rtt [][]float64) (*Matrix, error) {
	n := len(rtt)
	if n < 2 {
		return nil, fmt.Errorf("%w: %d nodes, need at least 2", ErrBadLatency, n)
	}
	m := &Matrix{n: n, rtt: make([]float64, n*(n-1)/2)}
	for i, row := range rtt {
		if len(row) != n {
			return nil, fmt.Errorf("%w: row %d has %d entries, want %d", ErrBadLatency, i, len(row), n)
		}
	}
	for i := range n {
		if v := rtt[i][i]; v != 0 {
			return nil, fmt.Errorf("%w: rtt[%d][%d] = %v, want 0 on the diagonal", ErrBadLatency, i, i, v)
		}
		for j := i + 1; j < n; j++ {
			v, w := rtt[i][j], rtt[j][i]
			for _, e := range []struct {
				i, j int
				v    float64
			}{{i, j, v}, {j, i, w}} {
				if math.IsNaN(e.v) || math.IsInf(e.v, 0) || e.v <= 0 {
					return nil, fmt.Errorf("%w: rtt[%d][%d] = %v, want a positive number of milliseconds", ErrBadLatency, e.i, e.j, e.v)
				}
			}
			if v != w {
				return nil, fmt.Errorf("%w: rtt[%d][%d] = %v but rtt[%d][%d] = %v, want a symmetric matrix", ErrBadLatency, i, j, v, j, i, w)
			}
			m.rtt[m.tri(i, j)] = v
		}
	}
	return m, nil
}

// N returns the number of nodes.
func (m *Matrix) N() int { return m.n }

// RTT returns the round-trip time between nodes i and j, milliseconds.
func (m *Matrix) RTT(i, j int) float64 {
	switch {
	case i == j:
		return 0
	case i > j:
		i, j = j, i
	}
	return m.rtt[m.tri(i, j)]
}

// tri indexes the upper triangle, i < j.
func (m *Matrix) tri(i, j int) int { return i*(2*m.n-i-1)/2 + j - i - 1 }

// LatencyConfig describes a synthetic Internet, after the model that
// motivated Vivaldi's height vectors: a node sits somewhere on a plane of
// continents (its core position) and pays an access delay to reach the core
// (its height), so
//
//	rtt(i, j) = ‖posᵢ − posⱼ‖ + hᵢ + hⱼ
//
// times a noise factor per pair — and a few pairs take a detour, a route
// longer than the direct one, which breaks the triangle inequality as real
// routes do. Units are milliseconds of round-trip time.
type LatencyConfig struct {
	Nodes    int     // at least 2; default 1000
	Dims     int     // dimensions of the core space; default 2
	Clusters int     // continents: cluster centres uniform in a square of side Width; default 5
	Width    float64 // side of the square of cluster centres, ms; default 150
	Spread   float64 // standard deviation of a node around its centre, per dimension, ms; default 15
	Height   float64 // mean access delay, ms: Height·(0.1 + 0.9·Exp(1)); default 5
	Noise    float64 // standard deviation of the multiplicative noise exp(N(0, Noise)); default 0.05
	Detours  float64 // fraction of pairs whose route is longer by a factor uniform in 1..2; default 0.05
	Seed     uint64
}

// DefaultLatency is the default synthetic Internet of 1,000 nodes.
var DefaultLatency = LatencyConfig{Nodes: 1000, Dims: 2, Clusters: 5, Width: 150, Spread: 15, Height: 5, Noise: 0.05, Detours: 0.05, Seed: 1}

// MaxNodes bounds the synthetic matrices (a matrix of n nodes holds
// n(n−1)/2 numbers).
const MaxNodes = 5000

// SyntheticLatency draws a latency matrix from cfg. The same cfg gives the
// same matrix.
func SyntheticLatency(cfg LatencyConfig) (*Matrix, error) {
	m, _, err := SyntheticNetwork(cfg)
	return m, err
}

// Ground is the truth behind a synthetic latency matrix, which coordinate
// systems try to recover from the round-trip times alone: each node's
// position on the plane of continents and its access height,
// milliseconds.
type Ground struct {
	Pos    [][]float64
	Height []float64
}

// SyntheticNetwork is SyntheticLatency with the truth it drew the matrix
// from.
func SyntheticNetwork(cfg LatencyConfig) (*Matrix, Ground, error) {
	if cfg.Nodes < 2 || cfg.Nodes > MaxNodes {
		return nil, Ground{}, fmt.Errorf("nodes %d: want 2 to %d", cfg.Nodes, MaxNodes)
	}
	if cfg.Dims < 1 || cfg.Dims > 10 {
		return nil, Ground{}, fmt.Errorf("dims %d: want 1 to 10", cfg.Dims)
	}
	if cfg.Clusters < 1 {
		return nil, Ground{}, fmt.Errorf("clusters %d: need at least 1", cfg.Clusters)
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"width", cfg.Width}, {"spread", cfg.Spread}, {"height", cfg.Height}, {"noise", cfg.Noise}, {"detours", cfg.Detours}} {
		if math.IsNaN(p.v) || math.IsInf(p.v, 0) || p.v < 0 {
			return nil, Ground{}, fmt.Errorf("%s %v: want a finite number, not negative", p.name, p.v)
		}
	}
	if cfg.Detours > 1 {
		return nil, Ground{}, fmt.Errorf("detours %v: want a fraction from 0 to 1", cfg.Detours)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6c6174656e6379))
	centres := make([][]float64, cfg.Clusters)
	for c := range centres {
		centres[c] = make([]float64, cfg.Dims)
		for k := range centres[c] {
			centres[c][k] = cfg.Width * rng.Float64()
		}
	}
	n := cfg.Nodes
	pos := make([][]float64, n)
	height := make([]float64, n)
	for i := range n {
		c := centres[rng.IntN(cfg.Clusters)]
		pos[i] = make([]float64, cfg.Dims)
		for k := range pos[i] {
			pos[i][k] = c[k] + cfg.Spread*rng.NormFloat64()
		}
		height[i] = cfg.Height * (0.1 + 0.9*rng.ExpFloat64())
	}
	m := &Matrix{n: n, rtt: make([]float64, n*(n-1)/2)}
	for i := range n {
		for j := i + 1; j < n; j++ {
			d := distance(pos[i], pos[j]) + height[i] + height[j]
			d *= math.Exp(cfg.Noise * rng.NormFloat64())
			if rng.Float64() < cfg.Detours {
				d *= 1 + rng.Float64()
			}
			m.rtt[m.tri(i, j)] = d
		}
	}
	return m, Ground{Pos: pos, Height: height}, nil
}

func distance(a, b []float64) float64 {
	s := 0.0
	for k := range a {
		d := a[k] - b[k]
		s += d * d
	}
	return math.Sqrt(s)
}
