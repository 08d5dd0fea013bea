package pool

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// Costs are the model's two prices, in any one unit (nanoseconds, say).
type Costs struct {
	// C1 is the cost of creating a thread; it must be positive.
	C1 float64
	// C2 is the cost of keeping one thread in the pool for one period
	// (one draw of the concurrency r); it must not be negative.
	C2 float64
}

// Validate names the bad field.
func (c Costs) Validate() error {
	switch {
	case !(c.C1 > 0) || math.IsInf(c.C1, 0):
		return fmt.Errorf("c1 = %v: must be a positive number", c.C1)
	case !(c.C2 >= 0) || math.IsInf(c.C2, 0):
		return fmt.Errorf("c2 = %v: must be a non-negative number", c.C2)
	}
	return nil
}

// Xi is ξ = c₂/c₁.
func (c Costs) Xi() float64 { return c.C2 / c.C1 }

// Histogram is a distribution of the concurrency r: h[r] is the weight
// of r requests in progress at once (counts, or probabilities). Weights
// must not be negative, and at least one must be positive; Optimal and
// Benefit normalise them.
type Histogram []float64

// Validate checks the weights.
func (h Histogram) Validate() error {
	total := 0.0
	for r, w := range h {
		if !(w >= 0) || math.IsInf(w, 0) {
			return fmt.Errorf("histogram weight of r=%d is %v: must be a non-negative number", r, w)
		}
		total += w
	}
	if !(total > 0) {
		return errors.New("histogram: no positive weight")
	}
	return nil
}

func (h Histogram) total() float64 {
	t := 0.0
	for _, w := range h {
		t += w
	}
	return t
}

// Benefit is E(n) for the discrete distribution h:
// Σ_{r≤n} (c₁r − c₂n)f(r) + Σ_{r>n} (c₁n − c₂n)f(r).
func Benefit(n int, c Costs, h Histogram) float64 {
	total := h.total()
	e := 0.0
	for r, w := range h {
		f := w / total
		e += (c.C1*float64(min(r, n)) - c.C2*float64(n)) * f
	}
	return e
}

// Optimal is n* for the discrete distribution h: the smallest n with
// P(r ≤ n) ≥ 1 − ξ. Below it one more thread gains c₁·P(r > n) − c₂ > 0;
// from it on, it gains nothing, so n* maximises Benefit (the smallest of
// the maximisers when there are several). It returns an error if c or h
// is invalid.
func Optimal(c Costs, h Histogram) (int, error) {
	if err := c.Validate(); err != nil {
		return 0, err
	}
	if err := h.Validate(); err != nil {
		return 0, err
	}
	total := h.total()
	target := 1 - c.Xi()
	if target <= 0 {
		return 0, nil
	}
	// P(r > n)·c₁ > c₂, computed from the tail to keep it exact when the
	// tail is small.
	tail := total
	for n, w := range h {
		tail -= w
		if tail < 0 {
			tail = 0
		}
		if c.C1*tail <= c.C2*total {
			return n, nil
		}
	}
	return len(h) - 1, nil
}

// Uniform is the closed form for r ~ Uniform(0, N): the continuous
// optimum n* = N(1 − ξ) (0 once ξ ≥ 1); its floor satisfies
// ⌊n*⌋/N ≤ 1 − ξ < (1 + ⌊n*⌋)/N.
func Uniform(c Costs, N float64) (float64, error) {
	if err := c.Validate(); err != nil {
		return 0, err
	}
	if !(N > 0) || math.IsInf(N, 0) {
		return 0, fmt.Errorf("N = %v: must be a positive number", N)
	}
	return N * max(0, 1-c.Xi()), nil
}

// UniformBenefit is E(n) for r ~ Uniform(0, N), in closed form:
// ∫₀ⁿ (c₁r − c₂n)/N dr + ∫ₙᴺ (c₁n − c₂n)/N dr for 0 ≤ n ≤ N, and
// c₁N/2 − c₂n beyond N.
func UniformBenefit(n float64, c Costs, N float64) float64 {
	if n >= N {
		return c.C1*N/2 - c.C2*n
	}
	return (c.C1*n*n/2-c.C2*n*n)/N + (c.C1-c.C2)*n*(N-n)/N
}

// Simulation is what Simulate measured.
type Simulation struct {
	Periods int
	// Created is the threads created beyond the pool, in all; Cost the
	// total cost, c₁ per thread created and c₂ per pool thread per period;
	// NoPool the cost without a pool (every request creates its thread).
	Created      int
	Cost, NoPool float64
}

// Benefit is the measured benefit per period: (NoPool − Cost)/Periods,
// the sample mean whose expectation is E(n).
func (s Simulation) Benefit() float64 { return (s.NoPool - s.Cost) / float64(s.Periods) }

// Simulate runs a pool of n threads for periods periods: in each, r
// requests arrive at once, r drawn from h with the seeded source rng; r ≤ n
// run on pool threads, each of the others creates a thread (c₁) that ends
// with its request; each of the n pool threads costs c₂ per period, busy
// or idle.
func Simulate(n int, c Costs, h Histogram, periods int, rng *rand.Rand) Simulation {
	cdf := make([]float64, len(h))
	acc, total := 0.0, h.total()
	for r, w := range h {
		acc += w / total
		cdf[r] = acc
	}
	s := Simulation{Periods: periods}
	for range periods {
		u := rng.Float64()
		r := min(sort.Search(len(cdf), func(i int) bool { return cdf[i] > u }), len(cdf)-1) // the first r with cdf[r] > u
		created := max(0, r-n)
		s.Created += created
		s.Cost += c.C1*float64(created) + c.C2*float64(n)
		s.NoPool += c.C1 * float64(r)
	}
	return s
}
