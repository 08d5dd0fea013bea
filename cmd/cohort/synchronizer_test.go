package main

import (
	"strings"
	"testing"
)

// TestSimSynchronizer: `cohort sim synchronizer` runs flooding under each
// synchronizer, checked, with the control messages per round of the
// formulas: on a ring of 8, 2|E| = 16 for α, 2(N−1) = 14 for β; and with
// a constant delay every round of α takes exactly 3 delays.
func TestSimSynchronizer(t *testing.T) {
	for _, c := range []struct {
		algo    string
		control float64
	}{{"alpha", 16}, {"beta", 14}, {"gamma", -1}} {
		r := simJSON(t, "synchronizer", "--algo", c.algo, "--nodes", "8", "--topology", "ring", "--latency", "1ms", "--reorder", "0")
		if got := metricOf(r, "control_per_round"); c.control >= 0 && got != c.control {
			t.Errorf("%s on a ring of 8: %v control messages per round, want %v", c.algo, got, c.control)
		}
		if got := metricOf(r, "elected_round"); got != 8 {
			t.Errorf("%s: elected in round %v, want D+1 = 8", c.algo, got)
		}
		if c.algo == "alpha" {
			if got := metricOf(r, "round_time_delays"); got != 3 {
				t.Errorf("alpha: %v delays per round, want 3", got)
			}
		}
	}
	r := simJSON(t, "synchronizer", "--algo", "gamma", "--gamma-k", "3", "--nodes", "20", "--topology", "random", "--degree", "3")
	if metricOf(r, "clusters") < 1 || metricOf(r, "elected_round") != 20 {
		t.Errorf("gamma on a random graph: %v clusters, elected in round %v", metricOf(r, "clusters"), metricOf(r, "elected_round"))
	}
	for _, bad := range [][]string{
		{"synchronizer", "--topology", "star"},
		{"synchronizer", "--algo", "gamma", "--gamma-k", "1"},
		{"synchronizer", "--algo", "beta", "--gamma-k", "3"},
		{"synchronizer", "--topology", "random", "--degree", "65"},
		{"synchronizer", "--degree", "2"},
		{"synchronizer", "--algo", "alpha", "--nodes", "513"},
		{"election", "--gamma-k", "3"},
		{"mutex", "--topology", "ring"},
	} {
		code, _, errs := cli(t, append([]string{"sim"}, bad...)...)
		if code != 2 || !strings.Contains(errs, bad[len(bad)-1]) && !strings.Contains(errs, bad[len(bad)-2]) {
			t.Errorf("%v: exit %d (%s), want 2 naming the value", bad, code, errs)
		}
	}
}
