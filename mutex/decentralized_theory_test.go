package mutex

import (
	"fmt"
	"math"
	"math/big"
	"strings"
	"testing"
)

// decTableRows are the rows of Tanenbaum & van Steen's table of violation
// probabilities (§6.3), with the bound the table gives for p = 3 s/h and
// for p = 30 s/h.
var decTableRows = []struct {
	N, m            int
	table3, table30 float64 // the table's "< 10^-x"
}{
	{8, 5, 1e-15, 1e-10},
	{8, 6, 1e-18, 1e-11},
	{16, 9, 1e-27, 1e-18},
	{16, 12, 1e-36, 1e-24},
	{32, 17, 1e-52, 1e-35},
	{32, 24, 1e-73, 1e-49},
}

// decRatTail is P[X ≥ lo], X ~ Binomial(m, p), in exact rational
// arithmetic.
func decRatTail(m, lo int, p *big.Rat) *big.Rat {
	sum := new(big.Rat)
	q := new(big.Rat).Sub(big.NewRat(1, 1), p)
	for k := max(lo, 0); k <= m; k++ {
		c := new(big.Rat).SetInt(new(big.Int).Binomial(int64(m), int64(k)))
		pk := new(big.Rat).SetInt64(1)
		for range k {
			pk.Mul(pk, p)
		}
		for range m - k {
			pk.Mul(pk, q)
		}
		sum.Add(sum, c.Mul(c, pk))
	}
	return sum
}

// The textbook's table cannot be reproduced from its formula with p = Δt/T:
// the values are printed here, and every property that must hold is
// checked.
func TestTextbookTableDiscrepancy(t *testing.T) {
	ps := []*big.Rat{big.NewRat(3, 3600), big.NewRat(30, 3600)}
	var b strings.Builder
	fmt.Fprintf(&b, "%-3s %-3s %-7s %-12s %-12s %-12s %-12s\n", "N", "m", "p", "book table", "book formula", "exact", "p^m")
	for _, r := range decTableRows {
		for i, pr := range ps {
			p, _ := pr.Float64()
			book, exact := SeedViolation(r.N, r.m, p), ExactViolation(r.N, r.m, p)
			table := []float64{r.table3, r.table30}[i]
			fmt.Fprintf(&b, "%-3d %-3d %-7s < %-10.0e %-12.3e %-12.3e %-12.3e\n", r.N, r.m, []string{"3s/h", "30s/h"}[i], table, book, exact, math.Pow(p, float64(r.m)))

			for name, v := range map[string]float64{"textbook": book, "exact": exact} {
				if !(v >= 0 && v <= 1) {
					t.Errorf("N=%d m=%d p=%v: %s = %v, not a probability", r.N, r.m, p, name, v)
				}
			}
			if 2*r.m-r.N < r.m-r.N/2 {
				t.Fatalf("N=%d m=%d: 2m−N < ⌈m−N/2⌉", r.N, r.m)
			}
			if exact > book {
				t.Errorf("N=%d m=%d p=%v: exact %v above the textbook's %v, though it sums fewer terms", r.N, r.m, p, exact, book)
			}
			// Both sums, against exact rational arithmetic.
			for _, c := range []struct {
				name string
				got  float64
				lo   int
			}{{"textbook", book, r.m - r.N/2}, {"exact", exact, 2*r.m - r.N}} {
				want, _ := decRatTail(r.m, c.lo, pr).Float64()
				if rel := math.Abs(c.got-want) / want; rel > 1e-12 {
					t.Errorf("N=%d m=%d p=%v: %s = %.15e, exact arithmetic gives %.15e (relative error %.1e)", r.N, r.m, p, c.name, c.got, want, rel)
				}
			}
			// The table's bounds are far below either formula...
			if exact < 1e3*table {
				t.Errorf("N=%d m=%d p=%v: exact %v is not far above the table's %v", r.N, r.m, p, exact, table)
			}
			// ... and just above p^m, the last term alone: the probability
			// that all m coordinators reset.
			if pm := math.Pow(p, float64(r.m)); pm >= table || pm < table/100 {
				t.Errorf("N=%d m=%d p=%v: p^m = %.2g, not within the two decades below the table's %g", r.N, r.m, p, pm, table)
			}
		}
		// Monotone in p.
		lo, hi := ps[0], ps[1]
		pl, _ := lo.Float64()
		ph, _ := hi.Float64()
		if SeedViolation(r.N, r.m, pl) >= SeedViolation(r.N, r.m, ph) || ExactViolation(r.N, r.m, pl) >= ExactViolation(r.N, r.m, ph) {
			t.Errorf("N=%d m=%d: not increasing in p", r.N, r.m)
		}
	}
	t.Logf("Tanenbaum & van Steen's violation table against its formula (p = Δt/T) and the exact condition f ≥ 2m−N:\n%s", b.String())
}

func TestViolationEdges(t *testing.T) {
	for _, c := range []struct {
		N, m int
		p    float64
	}{{0, 1, 0.1}, {4, 2, 0.1}, {4, 5, 0.1}, {4, 3, -0.1}, {4, 3, 1.5}, {4, 3, math.NaN()}} {
		if !math.IsNaN(SeedViolation(c.N, c.m, c.p)) || !math.IsNaN(ExactViolation(c.N, c.m, c.p)) {
			t.Errorf("N=%d m=%d p=%v accepted", c.N, c.m, c.p)
		}
	}
	if SeedViolation(8, 5, 0) != 0 || ExactViolation(8, 5, 0) != 0 || SeedViolation(8, 5, 1) != 1 || ExactViolation(8, 5, 1) != 1 {
		t.Error("p = 0 or 1: want 0 and 1")
	}
	// m = N: both need all N to reset... the textbook formula only N − N/2
	// of them.
	if got, want := ExactViolation(6, 6, 0.5), math.Pow(0.5, 6); math.Abs(got-want) > 1e-15 {
		t.Errorf("ExactViolation(6, 6, 0.5) = %v, want 0.5^6", got)
	}
	// Odd N: f ≥ m − N/2 = 1.5 means f ≥ 2.
	want, _ := decRatTail(4, 2, big.NewRat(3, 10)).Float64()
	if got := SeedViolation(5, 4, 0.3); math.Abs(got-want) > 1e-15 {
		t.Errorf("SeedViolation(5, 4, 0.3) = %v, want P[f ≥ 2] = %v", got, want)
	}
	// Tiny values keep their precision.
	if got := ExactViolation(32, 24, 1e-6); got <= 0 || math.Abs(got/(735471*1e-96)-1) > 1e-4 {
		t.Errorf("ExactViolation(32, 24, 1e-6) = %v, want about C(24,16)·1e-96 ≈ %v", got, 735471*1e-96)
	}
}
