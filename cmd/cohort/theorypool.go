package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/cohort-go/cohort/pool"
	"github.com/spf13/cobra"
)

// Bounds of cohort theory pool's inputs: a histogram of at most maxHist
// concurrency levels, at most maxPoolPeriods simulated periods (each a
// binary search in the histogram, for three sizes), Uniform(0, N) with N
// at most maxUniformN.
const (
	maxHist        = 1 << 16
	maxPoolPeriods = 10_000_000
	maxUniformN    = 1e12
)

func newTheoryPoolCmd() *cobra.Command {
	var c1, c2, uniform float64
	var hist string
	var periods int
	var seed uint64
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "pool",
		Short: "Best thread-pool size n* from the creation cost c1, the upkeep c2 and the concurrency's distribution",
		Long: `The thread-pool model of the process chapters (Tanenbaum & van Steen §3.1):
a thread costs c1 to create and c2 per period to keep in the pool; r
requests run at once, r drawn from p(r). A pool of n saves min(r, n)
creations and costs c2·n:

  E(n) = Σ_{r≤n} (c1·r − c2·n) f(r) + Σ_{r>n} (c1·n − c2·n) f(r)

With ξ = c2/c1 the best size n* is where P(r ≤ n) reaches 1 − ξ;
for Uniform(0, N), n* = N(1 − ξ), so ⌊n*⌋/N ≤ 1 − ξ < (1 + ⌊n*⌋)/N.

  --uniform N         the closed form for r ~ Uniform(0, N)
  --hist w0,w1,...    any distribution: wr is the weight of r requests at once
  --simulate PERIODS  (with --hist) a seeded simulation of pools of n*−1, n*
                      and n*+1 threads: the measured benefit per period`,
		Example: `  cohort theory pool --c1 10 --c2 1 --uniform 100
  cohort theory pool --c1 10 --c2 4 --hist 5,20,30,20,10,5,4,3,2,1
  cohort theory pool --c1 10 --c2 0.5 --hist 50,0,0,0,0,0,0,0,10 --simulate 100000 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c := pool.Costs{C1: c1, C2: c2}
			if !(c1 > 0) || math.IsInf(c1, 0) {
				return usageErr("--c1 %v: want a positive number (the cost of creating a thread)", c1)
			}
			if !(c2 >= 0) || math.IsInf(c2, 0) {
				return usageErr("--c2 %v: want a non-negative number (the upkeep of a pooled thread per period)", c2)
			}
			if (uniform != 0) == (hist != "") {
				return usageErr("give exactly one of --uniform N and --hist w0,w1,...")
			}
			if periods < 0 || periods > maxPoolPeriods {
				return usageErr("--simulate %d: want 0..%d periods", periods, maxPoolPeriods)
			}
			out := map[string]any{"c1": c1, "c2": c2, "xi": c.Xi()}
			w := cmd.OutOrStdout()
			if hist == "" {
				if !(uniform > 0) || uniform > maxUniformN {
					return usageErr("--uniform %v: want N in (0, %g]", uniform, maxUniformN)
				}
				if periods > 0 {
					return usageErr("--simulate needs --hist (a discrete distribution to draw from)")
				}
				n, err := pool.Uniform(c, uniform)
				if err != nil {
					return usageErr("%v", err)
				}
				fl := math.Floor(n)
				out["uniform"], out["n_star"], out["n_star_floor"] = uniform, n, fl
				out["benefit"] = pool.UniformBenefit(n, c, uniform)
				if asJSON {
					return json.NewEncoder(w).Encode(out)
				}
				fmt.Fprintf(w, "r ~ Uniform(0, %g), c1=%g, c2=%g, ξ=%.4g\n", uniform, c1, c2, c.Xi())
				fmt.Fprintf(w, "  n* = N(1−ξ) = %.4g   ⌊n*⌋ = %g   (⌊n*⌋/N = %.4g ≤ 1−ξ = %.4g < (1+⌊n*⌋)/N = %.4g)\n",
					n, fl, fl/uniform, 1-c.Xi(), (1+fl)/uniform)
				fmt.Fprintf(w, "  E(n*) = %.6g per period\n", out["benefit"])
				return nil
			}
			h, err := parseHist(hist)
			if err != nil {
				return err
			}
			n, err := pool.Optimal(c, h)
			if err != nil {
				return usageErr("--hist: %v", err)
			}
			out["hist"], out["n_star"], out["benefit"] = h, n, pool.Benefit(n, c, h)
			type simRow struct {
				N       int     `json:"n"`
				Benefit float64 `json:"benefit"`
				Model   float64 `json:"model"`
			}
			var sims []simRow
			if periods > 0 {
				for k := max(0, n-1); k <= n+1; k++ {
					s := pool.Simulate(k, c, h, periods, rand.New(rand.NewPCG(seed, 1))) // the same draws for every size
					sims = append(sims, simRow{N: k, Benefit: s.Benefit(), Model: pool.Benefit(k, c, h)})
				}
				out["simulated"], out["periods"], out["seed"] = sims, periods, seed
			}
			if asJSON {
				return json.NewEncoder(w).Encode(out)
			}
			fmt.Fprintf(w, "r from a histogram of %d levels, c1=%g, c2=%g, ξ=%.4g\n", len(h), c1, c2, c.Xi())
			fmt.Fprintf(w, "  n* = %d   E(n*) = %.6g per period\n", n, out["benefit"])
			for _, s := range sims {
				fmt.Fprintf(w, "  simulated n=%d: %.6g per period (model %.6g)\n", s.N, s.Benefit, s.Model)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.Float64Var(&c1, "c1", 0, "cost of creating a thread (any unit)")
	f.Float64Var(&c2, "c2", 0, "cost of keeping one pooled thread for a period (same unit)")
	f.Float64Var(&uniform, "uniform", 0, "r ~ Uniform(0, N): the closed form")
	f.StringVar(&hist, "hist", "", "the distribution of r as weights w0,w1,... (at most 65536)")
	f.IntVar(&periods, "simulate", 0, "simulate pools of n*−1, n*, n*+1 for this many periods (with --hist)")
	f.Uint64Var(&seed, "seed", 1, "seed of the simulation")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

// parseHist reads "w0,w1,...": non-negative weights, at most maxHist,
// some positive.
func parseHist(s string) (pool.Histogram, error) {
	fields := strings.Split(s, ",")
	if len(fields) > maxHist {
		return nil, usageErr("--hist: %d weights, more than %d", len(fields), maxHist)
	}
	h := make(pool.Histogram, len(fields))
	for i, f := range fields {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v >= 0) || math.IsInf(v, 0) {
			return nil, usageErr("--hist: weight %d (r=%d) is %q: want a non-negative number", i+1, i, f)
		}
		h[i] = v
	}
	if err := h.Validate(); err != nil {
		return nil, usageErr("--hist: %v", err)
	}
	return h, nil
}
