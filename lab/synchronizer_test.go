package lab

import "testing"

// TestSynchronizerComparison: in every comparison case the synchronizers'
// messages per round are the formulas' exactly, flooding elects in round
// N as in lockstep, and with a constant delay α's and β's rounds take
// exactly their 3 and 2 + 2·height delays (γ's at most 3 + 4·height).
func TestSynchronizerComparison(t *testing.T) {
	rows, runs, err := Compare("synchronizer", []int{12}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3*5 {
		t.Fatalf("%d runs, want 3 synchronizers × 5 cases", len(runs))
	}
	for _, r := range runs {
		if len(r.Failed) > 0 || r.Skip != "" {
			t.Errorf("%s, %s: failed %v, skipped %q", r.Algo, r.Case, r.Failed, r.Skip)
		}
	}
	for _, r := range rows {
		if r.Theory == nil || r.Measured == nil {
			continue
		}
		m, th := *r.Measured, *r.Theory
		switch {
		case r.Metric == "round_time_delays" && r.Case == "grid-exp", r.Metric == "round_time_delays" && r.Algo == "gamma":
			if m > th {
				t.Errorf("%s, %s: %v delays per round, over the bound %v", r.Algo, r.Case, m, th)
			}
		case m != th:
			t.Errorf("%s, %s: %s = %v, theory %v", r.Algo, r.Case, r.Metric, m, th)
		}
	}
}
