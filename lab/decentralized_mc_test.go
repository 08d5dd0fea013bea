package lab

import (
	"math"
	"testing"

	"github.com/cohort-go/cohort/mutex"
)

// The simulator agrees with the exact condition, not with the textbook's
// formula (Tanenbaum & van Steen §6.3).
func TestMonteCarloDecentralized(t *testing.T) {
	runs := 1000
	if testing.Short() {
		runs = 300
	}
	for _, c := range []struct {
		N, m int
		p    float64
	}{{5, 3, 0.3}, {5, 4, 0.3}, {7, 5, 0.25}} {
		est, hits := MonteCarloDecentralized(c.N, c.m, c.p, runs, 1)
		exact, book := mutex.ExactViolation(c.N, c.m, c.p), mutex.SeedViolation(c.N, c.m, c.p)
		sd := math.Sqrt(exact * (1 - exact) / float64(runs))
		t.Logf("N=%d m=%d p=%v: simulated %.4f (%d of %d runs), exact %.4f ± %.4f, textbook formula %.4f",
			c.N, c.m, c.p, est, hits, runs, exact, sd, book)
		if math.Abs(est-exact) > 4*sd {
			t.Errorf("N=%d m=%d p=%v: simulated %.4f, exact %.4f: more than 4σ = %.4f apart", c.N, c.m, c.p, est, exact, 4*sd)
		}
		if book-exact > 8*sd && math.Abs(est-book) < 4*sd {
			t.Errorf("N=%d m=%d p=%v: simulated %.4f matches the textbook formula's %.4f rather than the exact %.4f", c.N, c.m, c.p, est, book, exact)
		}
	}
	// The probabilities of the textbook's table are far too small to be
	// seen.
	if est, hits := MonteCarloDecentralized(8, 5, 3.0/3600, 200, 1); hits != 0 || est != 0 {
		t.Errorf("N=8 m=5 p=3s/h: %d hits in 200 runs", hits)
	}
	if est, _ := MonteCarloDecentralized(5, 5, 0.3, 10, 1); !math.IsNaN(est) {
		t.Errorf("m = N accepted: %v", est)
	}
	// Reproducible.
	a, _ := MonteCarloDecentralized(5, 3, 0.3, 100, 7)
	b, _ := MonteCarloDecentralized(5, 3, 0.3, 100, 7)
	if a != b {
		t.Errorf("same seed, %v then %v", a, b)
	}
}
