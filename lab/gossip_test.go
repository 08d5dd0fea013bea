package lab

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/sim/simtest"
)

// gossipRun runs gossip algorithm algo with params p on n nodes, without
// a trace (the metrics come from the workload).
func gossipRun(t testing.TB, algo string, p epidemic.Params, n int, seed uint64) *Report {
	t.Helper()
	f, err := Lookup("gossip")
	if err != nil {
		t.Fatal(err)
	}
	a, err := f.Algorithm(algo)
	if err != nil {
		t.Fatal(err)
	}
	o, err := ConfigureGossip(f, a, p)
	if err != nil {
		t.Fatal(err)
	}
	o.Nodes, o.Seed, o.NoCheck = n, &seed, true
	r, _, err := Sim(o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

const theoryNodes = 10_000

// Pull: a susceptible node stays so only if the node it asks is
// susceptible too, so pᵢ₊₁ = pᵢ² (the notes). Summed over the rounds in
// which at least 30 nodes remain (the noise of fewer would swamp the law)
// and over four seeds, Σpᵢ₊₁ / Σpᵢ² is within 3% of 1. The exact finite-n
// law, pᵢ(npᵢ − 1)/(n − 1), is below pᵢ² by under 1% there.
func TestPullSquaresTheSusceptibleFraction(t *testing.T) {
	simtest.NotUnderRace(t)
	var num, den float64
	for seed := uint64(1); seed <= 4; seed++ {
		s := gossipRun(t, "pull", epidemic.Params{}, theoryNodes, seed).Series["susceptible"]
		for i := 0; i+1 < len(s); i++ {
			if s[i] <= 0.9 && s[i+1]*theoryNodes >= 30 {
				num += s[i+1]
				den += s[i] * s[i]
			}
		}
	}
	ratio := num / den
	t.Logf("pull: Σpᵢ₊₁/Σpᵢ² = %.4f", ratio)
	if math.Abs(ratio-1) > 0.03 {
		t.Errorf("pull: Σpᵢ₊₁/Σpᵢ² = %.4f, want 1 ± 0.03", ratio)
	}
}

// Push: a susceptible node stays so if none of the n(1 − pᵢ) infective
// nodes picks it, pᵢ₊₁ = pᵢ(1 − 1/(n−1))^{n(1−pᵢ)} ≈ pᵢ/e in the tail.
// Over the tail rounds (pᵢ ≤ 0.1, at least 30 nodes left) of four seeds,
// the measured Σpᵢ₊₁/Σpᵢ is within 6% of the law's (the counts there are
// a few hundred: about 3% of binomial noise).
func TestPushShrinksTheTailByE(t *testing.T) {
	simtest.NotUnderRace(t)
	var num, den, want float64
	for seed := uint64(1); seed <= 4; seed++ {
		s := gossipRun(t, "push", epidemic.Params{}, theoryNodes, seed).Series["susceptible"]
		for i := 0; i+1 < len(s); i++ {
			if s[i] <= 0.1 && s[i+1]*theoryNodes >= 30 {
				num += s[i+1]
				den += s[i]
				want += s[i] * math.Pow(1-1.0/(theoryNodes-1), theoryNodes*(1-s[i]))
			}
		}
	}
	got, law := num/den, want/den
	t.Logf("push tail: Σpᵢ₊₁/Σpᵢ = %.4f, law %.4f (1/e = %.4f)", got, law, 1/math.E)
	if math.Abs(got/law-1) > 0.06 {
		t.Errorf("push tail: Σpᵢ₊₁/Σpᵢ = %.4f, the law says %.4f (± 6%%)", got, law)
	}
}

// With fanout f, all n nodes have the update after about
// log_{f+1}(n) + ln(n)/f + O(1) rounds (the notes).
func TestRoundsToAllNearTheNotesEstimate(t *testing.T) {
	simtest.NotUnderRace(t)
	if testing.Short() {
		t.Skip("12 runs of 10^4 nodes")
	}
	for _, f := range []int{1, 2, 4} {
		var sum float64
		const seeds = 4
		for seed := uint64(1); seed <= seeds; seed++ {
			sum += gossipRun(t, "push", epidemic.Params{Fanout: f}, theoryNodes, seed).Metrics["rounds_to_all"]
		}
		got, want := sum/seeds, epidemic.RoundsToAll(theoryNodes, f)
		t.Logf("push, f=%d: %.2f rounds to all, the notes' estimate %.2f", f, got, want)
		if math.Abs(got-want) > 1.5 {
			t.Errorf("push, f=%d: %.2f rounds to all, the notes' estimate %.2f ± 1.5 (its O(1))", f, got, want)
		}
	}
}

// Rumor mongering with feedback and a coin is the notes' model; its
// residue tends to the root of s = e^{−(k+1)(1−s)} as n grows.
func TestRumorResidueMatchesTheModel(t *testing.T) {
	simtest.NotUnderRace(t)
	if testing.Short() {
		t.Skip("12 runs of 10^4 nodes")
	}
	for k := 1; k <= 3; k++ {
		var sum float64
		const seeds = 4
		for seed := uint64(1); seed <= seeds; seed++ {
			sum += gossipRun(t, "rumor", epidemic.Params{K: k}, theoryNodes, seed).Metrics["residue"]
		}
		got, want := sum/seeds, epidemic.Residue(k)
		t.Logf("rumor, k=%d: residue %.4f, the model's %.4f", k, got, want)
		if math.Abs(got/want-1) > 0.15 {
			t.Errorf("rumor, k=%d: residue %.4f, the model's %.4f ± 15%%", k, got, want)
		}
	}
}

// The metrics come from the workload, so a run without a trace has the
// same ones as a run with it, and the same trace hash; a run without the
// hash either has the same metrics.
func TestGossipMetricsNeedNoTrace(t *testing.T) {
	f, _ := Lookup("gossip")
	for _, algo := range []string{"push-pull", "rumor", "push-sum"} {
		a, _ := f.Algorithm(algo)
		var got [2]*Report
		for i, noCheck := range []bool{false, true} {
			o := f.Options(a)
			o.Nodes, o.NoCheck = 200, noCheck
			r, _, err := Sim(o)
			if err != nil {
				t.Fatal(err)
			}
			got[i] = r
		}
		if len(got[0].Metrics) == 0 || fmt.Sprint(got[0].Metrics) != fmt.Sprint(got[1].Metrics) || got[0].TraceSHA != got[1].TraceSHA {
			t.Errorf("%s: with the trace %v %s, without %v %s", algo, got[0].Metrics, got[0].TraceSHA, got[1].Metrics, got[1].TraceSHA)
		}
		if got[0].Failed() {
			t.Errorf("%s: %+v", algo, got[0].Checks)
		}
		// Nor do they need the hash.
		o := f.Options(a)
		o.Nodes, o.NoCheck, o.NoHash = 200, true, true
		bare, _, err := Sim(o)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(bare.Metrics) != fmt.Sprint(got[1].Metrics) || bare.TraceSHA != "" || bare.Events != got[1].Events {
			t.Errorf("%s: without the hash %v %q, %d events; with it %v, %d events", algo, bare.Metrics, bare.TraceSHA, bare.Events, got[1].Metrics, got[1].Events)
		}
		if algo != "push-sum" && len(got[1].Series["susceptible"]) == 0 {
			t.Errorf("%s: no susceptible series", algo)
		}
		// Every message is at least its tag and a length: bytes ≥ messages.
		if b, m := got[1].Metrics["bytes_per_node"], got[1].Metrics["messages_per_node"]; !(b >= m && m > 0) && !(algo == "push-sum" && b > 0) {
			t.Errorf("%s: %v bytes and %v messages per node", algo, b, m)
		}
	}
}

// cohort compare gossip: every run's checks hold, and the rows carry
// the theory where the sources give one.
func TestGossipCompare(t *testing.T) {
	simtest.NotUnderRace(t)
	defer func(old int) { gossipCompareNodeRuns = old }(gossipCompareNodeRuns)
	gossipCompareNodeRuns = 600 // two seeds per case
	rows, runs, err := Compare("gossip", []int{300}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if len(r.Failed) > 0 || r.Skip != "" {
			t.Errorf("%s %s: failed %v, skipped %q", r.Algo, r.Case, r.Failed, r.Skip)
		}
	}
	theory := map[string]bool{}
	pushSumCases := map[string]bool{}
	for _, r := range rows {
		if r.Algo == "push-sum" && r.Metric == "rounds_to_1e-6" && r.Measured != nil {
			pushSumCases[r.Case] = true
		}
		if r.Measured == nil && r.Metric != "pull_ratio" && r.Metric != "push_tail_ratio" {
			t.Errorf("%s %s %s: not measured", r.Algo, r.Case, r.Metric)
		}
		if r.Theory != nil {
			theory[r.Algo+" "+r.Metric] = true
		}
	}
	if len(pushSumCases) != 2 {
		t.Errorf("push-sum reaches 10⁻⁶ in cases %v, want both inputs'", pushSumCases)
	}
	for _, want := range []string{"push rounds_to_all", "pull pull_ratio", "rumor residue", "rumor updates_per_node", "push-sum messages_per_node_round"} {
		if !theory[want] {
			t.Errorf("no theory for %s", want)
		}
	}
}

// Demers et al.'s Table 1 (1000 sites, push, feedback, counters) is
// reproduced by the counter of useless contacts in a row with feedback
// judged as of the cycle's start: over ten seeds, the traffic within 3%
// and the residue within 25% (at k = 4 it is 3.6 nodes a run) for
// k = 1 .. 4.
func TestRumorCounterCyclesIsDemersTable1(t *testing.T) {
	simtest.NotUnderRace(t)
	for k := 1; k <= 4; k++ {
		var residue, traffic float64
		const seeds = 10
		for seed := uint64(1); seed <= seeds; seed++ {
			r := gossipRun(t, "rumor", epidemic.Params{K: k, Counter: true, Cycles: true}, 1000, seed)
			residue += r.Metrics["residue"] / seeds
			traffic += r.Metrics["updates_per_node"] / seeds
		}
		want := DemersTable1[k-1]
		t.Logf("k=%d: residue %.4f (Table 1: %.4f), traffic %.3f (%.2f)", k, residue, want.Residue, traffic, want.Traffic)
		if math.Abs(residue/want.Residue-1) > 0.25 || math.Abs(traffic/want.Traffic-1) > 0.03 {
			t.Errorf("k=%d: residue %.4f, traffic %.3f; Table 1 says %.4f and %.2f", k, residue, traffic, want.Residue, want.Traffic)
		}
	}
}

// SWIM's cases run up to 10⁵ members, as the issue measures them, and
// discovery's up to 10⁴ (the issue asks no discovery figures); past that
// they are skipped, saying why, and the other cases run at 10⁶.
func TestGossipCompareBoundsSwimAndDiscovery(t *testing.T) {
	var bounded, others int
	for _, c := range gossipCases {
		limit := map[bool]int{true: 100_000, false: 10_000}[slices.Contains(c.algos, "swim")]
		if slices.Contains(c.algos, "swim") || c.name == "advertise and find, plane" {
			bounded++
			if c.skip == nil || c.skip(limit) != "" || !strings.Contains(c.skip(limit+1), fmt.Sprintf("up to %d", limit)) {
				t.Errorf("%s: skip at %d %q, at %d %q", c.name, limit, c.skip(limit), limit+1, c.skip(limit+1))
			}
		} else if c.skip == nil || c.skip(1_000_000) == "" {
			others++
		}
	}
	if bounded != 3 || others != 20 {
		t.Errorf("%d cases bounded, %d others running at 10⁶; want 3 and 20 (push, pull, push-pull, 15 of rumor, 2 of push-sum)", bounded, others)
	}
}
