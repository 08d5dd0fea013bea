package lab

import (
	"flag"
	"fmt"
	"math"
	"testing"

	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
)

func swimAlgo(t *testing.T) (Family, proc.Algorithm) {
	t.Helper()
	f, err := Lookup("gossip")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range f.Algorithms {
		if a.Name == "swim" {
			return f, a
		}
	}
	t.Fatal("swim is not registered")
	return f, proc.Algorithm{}
}

// swimRun runs SWIM with params p on n members, unchecked, and returns
// its metrics.
func swimRun(t *testing.T, p epidemic.Params, n int, seed uint64) map[string]float64 {
	t.Helper()
	f, a := swimAlgo(t)
	o, err := ConfigureGossip(f, a, p)
	if err != nil {
		t.Fatal(err)
	}
	o.Nodes, o.Seed, o.NoCheck = n, &seed, true
	r, _, err := Sim(o)
	if err != nil {
		t.Fatal(err)
	}
	return r.Metrics
}

// TestSwimFirstDetectionMatchesTheory: over 100 crashes at n = 1000, the
// mean time from a crash to its first suspicion is within 20% of Das et
// al.'s e/(e−1) periods (the standard error of the mean of 100
// geometric draws with q = 1 − 1/e is about 0.1 period, 6%).
func TestSwimFirstDetectionMatchesTheory(t *testing.T) {
	simtest.NotUnderRace(t)
	var sum float64
	seeds := 5
	for seed := range uint64(seeds) {
		m := swimRun(t, epidemic.Params{}, 1000, seed+1)
		if m["detected"] != 1 {
			t.Errorf("seed %d: detected %v, want every crash", seed+1, m["detected"])
		}
		sum += m["first_detection_periods"]
	}
	got, want := sum/float64(seeds), epidemic.FirstDetectionPeriods(1000)
	if math.Abs(got-want) > 0.2*want {
		t.Errorf("first detection after %.3f periods on average, want %.3f ± 20%%", got, want)
	}
	t.Logf("first detection %.3f periods (theory %.3f)", got, want)
}

// TestSwimMessageLoadIsConstant: the messages sent per member and period
// are about 2 (a ping and an ack) whatever n.
func TestSwimMessageLoadIsConstant(t *testing.T) {
	simtest.NotUnderRace(t)
	for _, n := range []int{30, 300, 1000} {
		got := swimRun(t, epidemic.Params{}, n, 1)["messages_per_member_per_period"]
		if math.Abs(got-2) > 0.1 {
			t.Errorf("n = %d: %.3f messages per member and period, want 2 ± 0.1", n, got)
		}
	}
}

// swimBenchN is BenchmarkSwim's group size: 10^5 by default, fewer for
// quick comparisons.
var swimBenchN = flag.Int("swim.n", 100_000, "BenchmarkSwim: the number of members")

// BenchmarkSwim runs SWIM on 10^5 members (-swim.n) for 100 protocol
// periods, with the default workload's crashes and pause, unchecked:
// through lab.Sim, as `cohort sim` runs it (no trace kept, none hashed),
// and on the simulator alone with no trace sink.
func BenchmarkSwim(b *testing.B) {
	f, err := Lookup("gossip")
	if err != nil {
		b.Fatal(err)
	}
	a, err := f.Algorithm("swim")
	if err != nil {
		b.Fatal(err)
	}
	n := *swimBenchN
	report := func(b *testing.B, m map[string]float64, events int64) {
		for _, k := range []string{"first_detection_periods", "messages_per_member_per_period", "false_positives", "detected"} {
			b.ReportMetric(m[k], k)
		}
		b.ReportMetric(float64(events), "events")
	}
	b.Run(fmt.Sprintf("lab/n=%d/periods=100", n), func(b *testing.B) {
		for range b.N {
			o, err := ConfigureGossip(f, a, epidemic.Params{})
			if err != nil {
				b.Fatal(err)
			}
			o.Workload.(*SwimLoad).Periods = 100
			o.Nodes, o.NoCheck, o.NoHash = n, true, true
			r, _, err := Sim(o)
			if err != nil {
				b.Fatal(err)
			}
			report(b, r.Metrics, r.Events)
		}
	})
	b.Run(fmt.Sprintf("sim/n=%d/periods=100", n), func(b *testing.B) {
		for range b.N {
			a, err := epidemic.Configure(a, epidemic.Params{})
			if err != nil {
				b.Fatal(err)
			}
			w := NewSwimLoad(epidemic.Params{})
			w.Periods = 100
			s, err := sim.New(sim.Config{Nodes: n, Seed: 1, New: a.New, Workload: w, Faults: w.Faults(n, 1),
				Until: func(*sim.Sim) bool { return w.done }})
			if err != nil {
				b.Fatal(err)
			}
			res, err := s.Run()
			if err != nil {
				b.Fatal(err)
			}
			m, _ := swimMetrics(Finished{Result: res, Algo: "swim", Nodes: n, Workload: w, Series: map[string][]float64{}})
			report(b, m, res.Events)
		}
	})
}
