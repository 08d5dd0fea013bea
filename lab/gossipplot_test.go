package lab

import (
	"math"
	"testing"

	"github.com/cohort-go/cohort/epidemic"
)

// The theory's curves start at p₀ = 1 − 1/n and follow the notes'
// recurrences; push-pull loses at least as fast as each alone.
func TestGossipSusceptibleTheory(t *testing.T) {
	const n = 1000
	pull := SusceptibleTheory("pull", n, 1, 100)
	push := SusceptibleTheory("push", n, 1, 100)
	both := SusceptibleTheory("push-pull", n, 1, 100)
	if pull[0] != 1-1.0/n || push[0] != pull[0] || both[0] != pull[0] {
		t.Fatalf("p₀: %v %v %v", pull[0], push[0], both[0])
	}
	for i := 1; i < len(pull); i++ {
		if pull[i] != pull[i-1]*pull[i-1] {
			t.Errorf("pull p%d = %v, want p%d² = %v", i, pull[i], i-1, pull[i-1]*pull[i-1])
		}
	}
	// The curves end at the first round below one node.
	for _, s := range [][]float64{pull, push, both} {
		if s[len(s)-1] >= 1.0/n || s[len(s)-2] < 1.0/n {
			t.Errorf("tail %v: want it to end just below 1/n", s[len(s)-3:])
		}
	}
	// In the tail push divides by about e each round.
	if r := push[len(push)-1] / push[len(push)-2]; math.Abs(r-1/math.E) > 0.01 {
		t.Errorf("push tail ratio %v, want ≈ 1/e", r)
	}
	if len(both) > min(len(pull), len(push)) {
		t.Errorf("push-pull takes %d rounds, push %d, pull %d", len(both), len(push), len(pull))
	}
	if got := SusceptibleTheory("pull", n, 1, 3); len(got) != 4 {
		t.Errorf("3 rounds: %d points", len(got))
	}
	if SusceptibleTheory("swim", n, 1, 10) != nil {
		t.Error("swim has no susceptible curve")
	}
}

// Rumor mongering's chart marks the notes' residue; a run without a
// per-round series has nothing to draw.
func TestGossipPlot(t *testing.T) {
	r := gossipRun(t, "rumor", epidemic.Params{}, 1000, 1)
	p, ok := GossipPlot(r, epidemic.Params{}, "rumor")
	if !ok || len(p.Series) != 1 || len(p.Marks) != 1 || p.Marks[0].Y0 != math.Log10(epidemic.Residue(1)) {
		t.Errorf("rumor: %v, %d series, marks %+v; want the measured series and the residue at log₁₀ %v", ok, len(p.Series), p.Marks, epidemic.Residue(1))
	}
	if _, ok := GossipPlot(&Report{Algo: "swim"}, epidemic.Params{}, "swim"); ok {
		t.Error("a report without series plots")
	}
}
