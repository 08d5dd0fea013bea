package main

import (
	"encoding/json"
	"fmt"

	"github.com/cohort-go/cohort/lab"
	"github.com/cohort-go/cohort/mutex"
	"github.com/spf13/cobra"
)

// maxSimulate bounds --simulate: at about 20 µs a run (each a small
// simulation), the most takes minutes, not days.
const maxSimulate = 10_000_000

func newTheoryCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "theory",
		Short: "Evaluate the textbooks' formulas (and estimate them by simulation)",
	}
	cmd.AddCommand(newTheoryDecentralizedCmd(), newTheoryPoolCmd())
	return cmd
}

func newTheoryDecentralizedCmd() *cobra.Command {
	var n, m, runs int
	var p float64
	var seed uint64
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "mutex-decentralized",
		Short: "Probability that decentralized voting breaks mutual exclusion when coordinators reset",
		Long: `The robustness analysis of decentralized mutual exclusion in Tanenbaum &
van Steen §6.3: N coordinators, a process needs m > N/2 votes, and a
coordinator resets (forgetting its vote) during the critical section with
probability p.

  textbook_formula  Σ_{k=m−N/2}^{N} C(m,k) p^k (1−p)^(m−k), as the textbook
                    writes it
  exact             Σ_{k=2m−N}^{m} C(m,k) p^k (1−p)^(m−k): a second process
                    can collect m votes only if at least 2m − N of the
                    holder's voters reset
  monte_carlo       (with --simulate RUNS) the fraction of simulated runs,
                    with resetting coordinators, in which the ME1 checker
                    catches two processes in the critical section`,
		Example: `  cohort theory mutex-decentralized --coordinators 8 --quorum 5 --p 0.000833
  cohort theory mutex-decentralized --coordinators 5 --quorum 3 --p 0.3 --simulate 2000 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if n < 1 {
				return usageErr("--coordinators %d: need at least 1", n)
			}
			if m <= n/2 || m > n {
				return usageErr("--quorum %d: must be a majority of the %d coordinators (%d..%d)", m, n, n/2+1, n)
			}
			if !(p >= 0 && p <= 1) {
				return usageErr("--p %v: want a probability between 0 and 1", p)
			}
			if runs < 0 || runs > maxSimulate {
				return usageErr("--simulate %d: want 0..%d runs (each is a simulation)", runs, maxSimulate)
			}
			out := map[string]any{
				"coordinators": n, "quorum": m, "p": p,
				"textbook_formula": mutex.SeedViolation(n, m, p),
				"exact":            mutex.ExactViolation(n, m, p),
			}
			if runs > 0 {
				est, hits := lab.MonteCarloDecentralized(n, m, p, runs, seed)
				out["monte_carlo"], out["runs"], out["violations"] = est, runs, hits
			}
			w := cmd.OutOrStdout()
			if asJSON {
				return json.NewEncoder(w).Encode(out)
			}
			fmt.Fprintf(w, "N=%d coordinators, quorum m=%d, reset probability p=%g\n", n, m, p)
			fmt.Fprintf(w, "  textbook formula %.6g\n", out["textbook_formula"])
			fmt.Fprintf(w, "  exact condition  %.6g\n", out["exact"])
			if runs > 0 {
				fmt.Fprintf(w, "  simulated        %.6g  (%d violations in %d runs)\n", out["monte_carlo"], out["violations"], runs)
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&n, "coordinators", 8, "number of coordinators N")
	cmd.Flags().IntVar(&m, "quorum", 5, "votes needed m (> N/2)")
	cmd.Flags().Float64Var(&p, "p", 3.0/3600, "probability that a coordinator resets during a critical section (Δt/T)")
	cmd.Flags().IntVar(&runs, "simulate", 0, "also estimate by simulating this many runs")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "random seed for --simulate")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
