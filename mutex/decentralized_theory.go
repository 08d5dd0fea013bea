package mutex

import (
	"math"
)

// How robust is decentralized voting? Tanenbaum & van Steen §6.3 answer:
// let p = Δt/T be the probability that a coordinator resets during an
// interval Δt, with lifetime T; the probability that k of m coordinators
// reset in the same interval is P[k] = C(m,k) p^k (1−p)^(m−k); correctness
// is violated when only a minority of the holder's coordinators remain,
// m − f ≤ N/2, i.e. f ≥ m − N/2; so a violation has probability
// Σ_{k=m−N/2}^{N} P[k].
//
// That condition says the coordinators that still remember the holder are
// no longer a majority; but a second client needs more than that to get
// in: m grants of its own. The holder kept m grants, so N−m coordinators
// are free; with f of the holder's coordinators reset there are N−m+f,
// and a second client can enter only if N−m+f ≥ m: f ≥ 2m−N. Since
// m > N/2, 2m−N ≥ ⌈m−N/2⌉ (equal only for odd N and m = (N+1)/2), so the
// exact probability is never above the textbook's.
//
// Neither formula reproduces Tanenbaum & van Steen's table: for N = 8,
// m = 5 and p = 3 s/h = 1/1200, the textbook's sum is 4.2e-3 and the exact
// one 6.9e-6, where the table says < 1e-15; for N = 32, m = 24 they are
// 1.7e-19 and 4.0e-44 against < 1e-73 (the tests print every row). The
// table follows p^m instead, the single term k = m (all m of the holder's
// coordinators reset): each bound is the next power of ten above it —
// (1/1200)^5 = 4.0e-16 < 1e-15, (1/1200)^24 = 1.3e-74 < 1e-73,
// (1/120)^17 = 4.5e-36 < 1e-35 — except N = 8, m = 6 at 30 s/h, two powers
// above ((1/120)^6 = 3.3e-13 < 1e-11). The table was computed as if the sum
// started at k = m.

// SeedViolation is the textbook's violation probability, Σ_{k=⌈m−N/2⌉}^{N}
// C(m,k) p^k (1−p)^(m−k): the chance that at least m − N/2 of the holder's
// m coordinators reset (for odd N, m − N/2 is not whole and f ≥ m − N/2
// means f ≥ ⌈m − N/2⌉). Terms with k > m are 0 (C(m,k) = 0). It returns NaN
// unless N ≥ 1, N/2 < m ≤ N and 0 ≤ p ≤ 1.
func SeedViolation(N, m int, p float64) float64 {
	if !decTheoryArgs(N, m, p) {
		return math.NaN()
	}
	lo := m - N/2 // ⌈m − N/2⌉ = m − ⌊N/2⌋
	return binomialTail(m, lo, p)
}

// ExactViolation is the probability that a second client can collect m
// grants while the holder is in the critical section: that at least 2m−N
// of the holder's m coordinators reset, Σ_{k=2m−N}^{m} C(m,k) p^k (1−p)^(m−k).
// It returns NaN for the arguments SeedViolation rejects.
func ExactViolation(N, m int, p float64) float64 {
	if !decTheoryArgs(N, m, p) {
		return math.NaN()
	}
	return binomialTail(m, 2*m-N, p)
}

func decTheoryArgs(N, m int, p float64) bool {
	return N >= 1 && 2*m > N && m <= N && p >= 0 && p <= 1
}

// binomialTail is P[X ≥ lo] for X ~ Binomial(m, p), lo ≥ 1. Each term is
// computed in log space, so that tails like 1e-70 keep their relative
// precision (about 1e-13), and summed from the smallest up.
func binomialTail(m, lo int, p float64) float64 {
	switch {
	case lo > m:
		return 0
	case p == 0:
		return 0
	case p == 1:
		return 1
	}
	lp, lq := math.Log(p), math.Log1p(-p)
	lgm, _ := math.Lgamma(float64(m + 1))
	sum := 0.0
	for k := m; k >= lo; k-- {
		lgk, _ := math.Lgamma(float64(k + 1))
		lgr, _ := math.Lgamma(float64(m - k + 1))
		sum += math.Exp(lgm - lgk - lgr + float64(k)*lp + float64(m-k)*lq)
	}
	return min(sum, 1)
}
