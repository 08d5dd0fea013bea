package pool

import (
	"math"
	"math/rand/v2"
	"testing"
)

// bruteForce maximises Benefit over every n from 0 to len(h), and
// returns the smallest maximiser.
func bruteForce(c Costs, h Histogram) int {
	best, bestE := 0, Benefit(0, c, h)
	for n := 1; n <= len(h); n++ {
		if e := Benefit(n, c, h); e > bestE+1e-9*math.Abs(bestE)+1e-12 {
			best, bestE = n, e
		}
	}
	return best
}

func randomHistogram(rng *rand.Rand) Histogram {
	h := make(Histogram, 1+rng.IntN(40))
	for r := range h {
		if rng.IntN(3) > 0 {
			h[r] = float64(rng.IntN(100))
		}
	}
	h[rng.IntN(len(h))]++
	return h
}

func TestOptimalMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		h := randomHistogram(rng)
		c := Costs{C1: 1 + rng.Float64()*100, C2: rng.Float64() * 120}
		if i%7 == 0 {
			c.C2 = 0
		}
		got, err := Optimal(c, h)
		if err != nil {
			t.Fatal(err)
		}
		if want := bruteForce(c, h); got != want {
			t.Fatalf("case %d: c=%+v h=%v: Optimal = %d (E=%v), brute force = %d (E=%v)",
				i, c, h, got, Benefit(got, c, h), want, Benefit(want, c, h))
		}
	}
}

// The optimum satisfies the textbook's condition: the distribution
// function at ⌊n*⌋ − 1 is below 1 − ξ, and at ⌊n*⌋ it reaches it (for a
// discrete r, F(n) = P(r ≤ n) jumps at the integers).
func TestOptimalCondition(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		h := randomHistogram(rng)
		c := Costs{C1: 10, C2: rng.Float64() * 9.9}
		n, err := Optimal(c, h)
		if err != nil {
			t.Fatal(err)
		}
		F := func(k int) float64 {
			if k < 0 {
				return 0
			}
			s := 0.0
			for r := 0; r <= k && r < len(h); r++ {
				s += h[r]
			}
			return s / h.total()
		}
		if !(F(n-1) < 1-c.Xi()+1e-12 && 1-c.Xi() <= F(n)+1e-12) {
			t.Fatalf("c=%+v h=%v: n*=%d, F(n*-1)=%v, 1-ξ=%v, F(n*)=%v", c, h, n, F(n-1), 1-c.Xi(), F(n))
		}
	}
}

func TestUniformClosedForm(t *testing.T) {
	for _, tc := range []struct {
		c    Costs
		N    float64
		want float64
	}{
		{Costs{C1: 10, C2: 1}, 100, 90},
		{Costs{C1: 10, C2: 5}, 64, 32},
		{Costs{C1: 1, C2: 0}, 16, 16},
		{Costs{C1: 1, C2: 1}, 16, 0},
		{Costs{C1: 1, C2: 3}, 16, 0},
	} {
		got, err := Uniform(tc.c, tc.N)
		if err != nil || math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Uniform(%+v, %v) = %v, %v; want %v", tc.c, tc.N, got, err, tc.want)
		}
		// The textbook's condition on ⌊n*⌋.
		if xi := tc.c.Xi(); xi < 1 {
			f := math.Floor(got)
			if !(f/tc.N <= 1-xi+1e-12 && 1-xi < (1+f)/tc.N) {
				t.Errorf("%+v N=%v: ⌊n*⌋=%v breaks ⌊n*⌋/N ≤ 1−ξ < (1+⌊n*⌋)/N", tc.c, tc.N, f)
			}
		}
	}
	if _, err := Uniform(Costs{C1: 0, C2: 1}, 10); err == nil {
		t.Error("c1 = 0 accepted")
	}
	if _, err := Uniform(Costs{C1: 1, C2: 1}, -1); err == nil {
		t.Error("N = -1 accepted")
	}
}

// UniformBenefit's closed form against a numerical integration of the
// textbook's E(n), and its maximum, found on a fine grid, against Uniform.
func TestUniformBenefit(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 50 {
		c := Costs{C1: 1 + rng.Float64()*10, C2: rng.Float64() * 5}
		N := 1 + rng.Float64()*200
		integral := func(n float64) float64 {
			const steps = 4000
			e, dr := 0.0, N/steps
			for i := range steps {
				r := (float64(i) + 0.5) * dr
				if r < n {
					e += (c.C1*r - c.C2*n) / N * dr
				} else {
					e += (c.C1*n - c.C2*n) / N * dr
				}
			}
			return e
		}
		best, bestE := 0.0, math.Inf(-1)
		for i := 0; i <= 2000; i++ {
			n := N * float64(i) / 1000 // up to 2N
			e := UniformBenefit(n, c, N)
			if n <= N {
				if d := math.Abs(e - integral(n)); d > 1e-3*(1+math.Abs(e)) {
					t.Fatalf("c=%+v N=%v n=%v: closed form %v, integral %v", c, N, n, e, integral(n))
				}
			}
			if e > bestE {
				best, bestE = n, e
			}
		}
		want, _ := Uniform(c, N)
		if math.Abs(best-want) > N/500 {
			t.Fatalf("c=%+v N=%v: grid maximum at %v, closed form %v", c, N, best, want)
		}
	}
}

// A simulated pool (seeded) against the model: its measured benefit per
// period is E(n) within sampling error, and the size with the best
// measured benefit is n* (or as good as it, within the error).
func TestSimulationAgreesWithModel(t *testing.T) {
	periods := 20000
	if raceEnabled {
		periods = 5000
	}
	for i, tc := range []struct {
		c Costs
		h Histogram
	}{
		{Costs{C1: 10, C2: 1}, Histogram{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}}, // Uniform{0..16}
		{Costs{C1: 10, C2: 4}, Histogram{5, 20, 30, 20, 10, 5, 4, 3, 2, 1}},
		{Costs{C1: 10, C2: 0.5}, Histogram{50, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10}}, // bursty
	} {
		nstar, err := Optimal(tc.c, tc.h)
		if err != nil {
			t.Fatal(err)
		}
		best, bestB := -1, math.Inf(-1)
		var atStar float64
		for n := 0; n <= len(tc.h); n++ {
			s := Simulate(n, tc.c, tc.h, periods, rand.New(rand.NewPCG(7, uint64(i)))) // common random numbers
			b := s.Benefit()
			sd := tc.c.C1 * float64(len(tc.h)) / math.Sqrt(float64(periods))
			if e := Benefit(n, tc.c, tc.h); math.Abs(b-e) > 4*sd {
				t.Errorf("case %d n=%d: simulated benefit %.3f, E(n) = %.3f (±%.3f)", i, n, b, e, 4*sd)
			}
			if b > bestB {
				best, bestB = n, b
			}
			if n == nstar {
				atStar = b
			}
		}
		if best != nstar && bestB-atStar > 0.02*tc.c.C1 {
			t.Errorf("case %d: simulation's best size %d (%.3f) beats n*=%d (%.3f)", i, best, bestB, nstar, atStar)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []Costs{{C1: 0}, {C1: -1}, {C1: math.NaN()}, {C1: 1, C2: -1}, {C1: math.Inf(1)}} {
		if _, err := Optimal(c, Histogram{1}); err == nil {
			t.Errorf("Optimal accepted %+v", c)
		}
	}
	for _, h := range []Histogram{nil, {0, 0}, {1, -1}, {math.NaN()}} {
		if _, err := Optimal(Costs{C1: 1}, h); err == nil {
			t.Errorf("Optimal accepted histogram %v", h)
		}
	}
}
