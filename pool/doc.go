// Package pool sizes a pool of worker threads the way the process
// organisation chapters reason about it (Tanenbaum & van Steen §3.1 on
// threads and thread pools, with the cost model of the lecture notes), and
// runs a pool that sizes itself by that reasoning.
//
// The model. Creating a thread costs c₁ (mostly allocating its memory);
// keeping one in the pool costs c₂ per period (mostly the context
// switches it causes). A pool holds n threads; r requests are in progress
// at once, r drawn from p(r). The r ≤ n requests find a thread ready and
// save its creation; r > n save n creations, and the others create their
// own. The expected benefit of a pool of n is
//
//	E(n) = Σ_{r=0..n} (c₁r − c₂n) f(r) + Σ_{r>n} (c₁n − c₂n) f(r)
//	     = c₁·E[min(r, n)] − c₂n,
//
// or, for a density p, E(n) = ∫₀ⁿ (c₁r − c₂n)p(r)dr + ∫ₙ^∞ (c₁n − c₂n)p(r)dr.
// One more thread gains c₁·P(r > n) − c₂, so with ξ = c₂/c₁ the best size
// n* is where the distribution function crosses 1 − ξ:
//
//	∫₀^⌊n*⌋ p(r)dr ≤ 1 − ξ < ∫₀^⌊n*+1⌋ p(r)dr,
//
// and for Uniform(0, N), ⌊n*⌋/N ≤ 1 − ξ < (1 + ⌊n*⌋)/N, that is
// n* = N(1 − ξ). A pool never pays (n* = 0) once ξ ≥ 1.
//
// Optimal computes n* for any distribution given as a histogram (the
// discrete sum, exactly); Uniform the closed form; Benefit and
// UniformBenefit evaluate E(n). Simulate runs a seeded pool for the
// tests to check them against. Pool is a pool of goroutines that
// measures c₁ and the concurrency it sees and resizes itself to n*.
//
// What it measures in Go: starting a goroutine costs about as much as
// waking a parked one (about a microsecond each), and a parked goroutine
// causes no context switches, so c₁ (what a ready worker saves) is near
// zero or below and a bare pool sizes itself to none — threads of an
// operating system, or workers that build something dear when they start
// (Config.CreateCost), are where a pool pays.
package pool
