package lab

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/sim"
)

// pushSumRun runs push-sum on n nodes with the named input; with keep,
// the trace is kept and checked.
func pushSumRun(t *testing.T, input string, n int, seed uint64, keep bool, net NetworkFlags) (*Report, *PushSumLoad) {
	t.Helper()
	f, _ := Lookup("gossip")
	a, _ := f.Algorithm("push-sum")
	o, err := ConfigureGossip(f, a, epidemic.Params{})
	if err != nil {
		t.Fatal(err)
	}
	l := o.Workload.(*PushSumLoad)
	if err := l.SetInput(input); err != nil {
		t.Fatal(err)
	}
	o.Nodes, o.Seed, o.NoCheck, o.Network = n, &seed, !keep, net
	r, _, err := Sim(o)
	if err != nil {
		t.Fatal(err)
	}
	return r, l
}

// The rounds to a relative error ε: present for 10⁻², 10⁻⁴ and 10⁻⁶,
// more for a smaller ε, within Kempe et al.'s O(log n + log 1/ε) with
// the constants of check.PushSumRounds, and no fewer for the mean error
// than for the largest. With all the mass on one node no estimate is
// within 10⁻² before every node has some of it: mass at most doubles
// its holders each round, so that takes log₂ n rounds at least. The
// largest error never grows (each estimate is a weighted mean of
// estimates of the round before), and the run goes on until it is
// within 10⁻⁶.
func TestPushSumRoundsToError(t *testing.T) {
	const n = 1000
	for _, input := range []string{"uniform", "one"} {
		for seed := uint64(1); seed <= 3; seed++ {
			r, _ := pushSumRun(t, input, n, seed, false, NetworkFlags{})
			m := r.Metrics
			last := 0.0
			for _, eps := range PushSumTargets {
				name := pushSumRoundsTo(eps)
				got, ok := m[name]
				bound := math.Ceil(2*math.Log2(n) + 3*math.Log2(1/eps))
				switch {
				case !ok:
					t.Errorf("%s seed %d: no %s in %v", input, seed, name, m)
				case got <= last || got > bound:
					t.Errorf("%s seed %d: %s = %v, want above %v (the larger ε's) and at most %v", input, seed, name, got, last, bound)
				case !(m[name+"_mean"] > 0 && m[name+"_mean"] <= got):
					t.Errorf("%s seed %d: %s_mean = %v, want in (0, %v]", input, seed, name, m[name+"_mean"], got)
				}
				last = got
			}
			if input == "one" && m["rounds_to_1e-2"] < math.Log2(n) {
				t.Errorf("one seed %d: rounds_to_1e-2 = %v, below log₂ n = %.1f", seed, m["rounds_to_1e-2"], math.Log2(n))
			}
			e := r.Series["max_error"]
			for i := 1; i < len(e); i++ {
				if e[i] > e[i-1]*(1+1e-9) {
					t.Errorf("%s seed %d: the largest error grows after round %d: %v → %v", input, seed, i, e[i-1], e[i])
				}
			}
			if want := check.PushSumRounds(n) + 5; len(e) < want || e[len(e)-1] > 1e-6 || m["max_error"] > 1e-6 {
				t.Errorf("%s seed %d: %d rounds ending at error %v (max_error %v); want at least %d and within 1e-6", input, seed, len(e), e[len(e)-1], m["max_error"], want)
			}
			t.Logf("%s seed %d: rounds to 1e-2/1e-4/1e-6: %v/%v/%v (mean error %v/%v/%v)", input, seed,
				m["rounds_to_1e-2"], m["rounds_to_1e-4"], m["rounds_to_1e-6"], m["rounds_to_1e-2_mean"], m["rounds_to_1e-4_mean"], m["rounds_to_1e-6_mean"])
		}
	}
}

// With all the mass on one node, node 0 holds n and the others 0: the
// average is 1, and the checkers, which read the mass given from the
// trace, judge the estimates against the same average as the workload.
func TestPushSumOneNodeInput(t *testing.T) {
	const n = 64
	r, l := pushSumRun(t, "one", n, 1, true, NetworkFlags{})
	if l.truth != 1 {
		t.Errorf("the workload's average is %v, want 1", l.truth)
	}
	for i := range n {
		if x, want := l.X(i), map[bool]float64{true: n, false: 0}[i == 0]; x != want {
			t.Errorf("node %d holds %v, want %v", i, x, want)
		}
	}
	for _, c := range r.Checks {
		if c.Name == "push-sum-mass" || c.Name == "push-sum-error" {
			if c.Status != check.OK.String() {
				t.Errorf("%s: %s %s", c.Name, c.Status, c.Detail)
			}
		}
	}
	if len(r.Checks) == 0 || r.Metrics["max_error"] > 1e-6 {
		t.Errorf("checks %v, max_error %v", r.Checks, r.Metrics["max_error"])
	}
}

// A lossy network loses the mass of the shares it drops: the estimates
// converge, but not to the average. push-sum-mass says so, no
// rounds_to_1e-6 is reported, and the run stops at twice its rounds.
func TestPushSumLossNeverReachesTheTarget(t *testing.T) {
	const n = 200
	loss := 0.05
	r, l := pushSumRun(t, "one", n, 1, true, NetworkFlags{Loss: &loss})
	if _, ok := r.Metrics["rounds_to_1e-6"]; ok {
		t.Errorf("rounds_to_1e-6 = %v under loss", r.Metrics["rounds_to_1e-6"])
	}
	if want := 2 * (check.PushSumRounds(n) + 5); len(l.errors) != want {
		t.Errorf("%d rounds, want %d", len(l.errors), want)
	}
	failed := false
	for _, c := range r.Checks {
		failed = failed || c.Name == "push-sum-mass" && c.Status == check.Violated.String()
	}
	if !failed {
		t.Errorf("push-sum-mass holds under loss: %v", r.Checks)
	}
}

// The inputs by name; another name is bad input, named.
func TestPushSumInput(t *testing.T) {
	for _, c := range []struct {
		name string
		x    [3]float64 // nodes 0, 1, 2 of 3
	}{{"uniform", [3]float64{1, 2, 3}}, {"", [3]float64{1, 2, 3}}, {"one", [3]float64{3, 0, 0}}} {
		x, err := PushSumInput(c.name, 3)
		if err != nil {
			t.Fatalf("%q: %v", c.name, err)
		}
		if got := [3]float64{x(0), x(1), x(2)}; got != c.x {
			t.Errorf("%q: %v, want %v", c.name, got, c.x)
		}
	}
	_, err := PushSumInput("two", 3)
	if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), `"two"`) {
		t.Errorf("input two: %v", err)
	}
	if err := NewPushSumLoad(epidemic.Params{}).SetInput("two"); err == nil {
		t.Errorf("SetInput(two): no error")
	}
}

// The reference figures stand beside the rounds at 10⁶ nodes, for the
// average, and nowhere else.
func TestPushSumReferenceAtAMillion(t *testing.T) {
	for _, c := range []struct {
		input     string
		nodes     int
		aggregate string
		want      []float64
	}{
		{"uniform", 1_000_000, "", []float64{27, 41, 54}},
		{"one", 1_000_000, "", []float64{47, 64, 74}},
		{"one", 1000, "", nil},
		{"one", 1_000_000, "sum", nil},
	} {
		l := &PushSumLoad{Input: c.input, Params: epidemic.Params{Aggregate: c.aggregate}, s: []float64{1}, w: []float64{1}, truth: 1, errors: []float64{1, 0}, meanErrors: []float64{1, 0}}
		_, th := pushSumMetrics(Finished{Nodes: c.nodes, Workload: l, Series: map[string][]float64{}, Result: sim.Result{}})
		for i, eps := range PushSumTargets {
			got := th[pushSumRoundsTo(eps)]
			switch {
			case c.want == nil && got != nil:
				t.Errorf("%+v: theory %s = %v, want none", c, pushSumRoundsTo(eps), *got)
			case c.want != nil && (got == nil || *got != c.want[i]):
				t.Errorf("%+v: theory %s = %v, want %v", c, pushSumRoundsTo(eps), got, c.want[i])
			}
		}
	}
}
