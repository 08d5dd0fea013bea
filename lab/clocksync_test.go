package lab

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check/checktest"
	"github.com/cohort-go/cohort/clock"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/scenario"
	"github.com/cohort-go/cohort/trace"
)

// The comparisons of Tanenbaum & van Steen §6.1 in simulation. Each test
// asserts what the textbook claims and, with -figures DIR, draws it:
//
//	go test ./lab -run 'Sync' -v -figures /tmp/figures
var figures = flag.String("figures", "", "write the clock synchronization comparisons' charts (SVG) to this directory")

const (
	ms = time.Millisecond
	us = time.Microsecond
)

// figure writes p to DIR/name.svg when -figures is given.
func figure(t *testing.T, name string, p trace.LinePlot) {
	t.Helper()
	if *figures == "" {
		return
	}
	if err := os.MkdirAll(*figures, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(*figures, name+".svg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := trace.WriteLinePlot(f, p); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", f.Name())
}

// syncRun runs a clocks algorithm with the scenario text, the seed and,
// if newf is set, another configuration of it; every check must hold.
func syncRun(t *testing.T, algo, scen string, seed uint64, newf func(proc.ID, int) proc.Process) (SyncQuality, *Report, *trace.Trace) {
	t.Helper()
	sc, err := scenario.Parse(algo+" test scenario", []byte(scen))
	if err != nil {
		t.Fatal(err)
	}
	r, tr := simulate(t, "clocks", algo, func(o *Options) {
		o.Scenario, o.Seed = sc, &seed
		if newf != nil {
			o.Algo.New = newf
		}
	})
	for _, c := range r.Checks {
		if !c.OK {
			t.Fatalf("%s seed %d: %s", algo, seed, c.Counterexample)
		}
	}
	return MeasureSync(ClockOffsets(tr)), r, tr
}

func mustNew(t *testing.T) func(func(proc.ID, int) proc.Process, error) func(proc.ID, int) proc.Process {
	return func(f func(proc.ID, int) proc.Process, err error) func(proc.ID, int) proc.Process {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
}

// sampleErrors returns, for every sample a client of Cristian or NTP
// output, its θ's error (the server keeps true time, so the true θ is
// t − H at T4) and its δ.
func sampleErrors(t *testing.T, tr *trace.Trace) (errs, deltas []time.Duration) {
	for _, e := range tr.Events {
		if e.Kind == trace.Output && e.Type == "sample" {
			var s clock.Sample
			if err := json.Unmarshal(e.Data, &s); err != nil {
				t.Fatal(err)
			}
			errs = append(errs, s.Theta-time.Duration(e.Time-e.Local))
			deltas = append(deltas, s.Delta)
		}
	}
	return errs, deltas
}

func msOf(d int64) float64 { return float64(d) / 1e6 }
func usOf(d int64) float64 { return float64(d) / 1e3 }

// A hand-made run: p0 keeps true time; p1 is 3 ms behind, steps to 2 ms
// ahead at 5 ms and slews back to 1 ms ahead by 15 ms; p2 is 1 ms ahead
// and synced at 10 ms, then drifts to 1 ms behind. The run converges at
// 10 ms; from then on the offsets are joined by straight lines.
func TestMeasureSyncOnHandMadeReadings(t *testing.T) {
	b := checktest.New(3)
	at := func(tm time.Duration, node int32, off time.Duration, synced bool) {
		i := b.Output(node, clock.Reading{Clock: tm + off, Synced: synced})
		b.Trace.Events[i].Time = int64(tm)
	}
	at(0, 0, 0, true)
	at(0, 1, -3*ms, false)
	at(0, 2, 1*ms, false)
	at(5*ms, 1, -3*ms, false) // just before p1's step
	at(5*ms, 1, 2*ms, true)   // just after
	at(10*ms, 0, 0, true)
	at(10*ms, 2, 1*ms, true)
	at(15*ms, 1, 1*ms, true)
	at(20*ms, 0, 0, true)
	at(20*ms, 1, 1*ms, true)
	at(20*ms, 2, -1*ms, true)
	series := ClockOffsets(&b.Trace)
	if len(series) != 3 || series[1].Synced != int64(5*ms) || series[2].Synced != int64(10*ms) {
		t.Fatalf("series %+v", series)
	}
	q := MeasureSync(series)
	// At 10 ms: 0, 1.5 (half-way from 2 to 1), 1; at 15: 0, 1, 0; at 20:
	// 0, 1, −1.
	want := SyncQuality{Converged: int64(10 * ms), From: int64(10 * ms), Precision: int64(2 * ms), Accuracy: int64(1500 * us),
		Times: []int64{int64(10 * ms), int64(15 * ms), int64(20 * ms)}, PrecisionAt: []int64{int64(1500 * us), int64(ms), int64(2 * ms)},
		AccuracyAt: []int64{int64(1500 * us), int64(ms), int64(ms)}}
	if fmt.Sprint(q) != fmt.Sprint(want) {
		t.Errorf("got  %+v\nwant %+v", q, want)
	}
	// Synced from the start, the run is measured from a quarter of it, 5ms:
	// p1's step counts from both sides, 3 ms behind while p2 is 1 ms ahead.
	for i := range series {
		series[i].Synced = 0
	}
	if q := MeasureSync(series); q.From != int64(5*ms) || q.Precision != int64(4*ms) || q.Accuracy != int64(3*ms) {
		t.Errorf("from %v: precision %v, accuracy %v; want 5ms, 4ms and 3ms", q.From, q.Precision, q.Accuracy)
	}
	// A crash breaks the line: no value between the crash and the next
	// reading.
	b.Local(2, trace.Crash)
	b.Trace.Events[len(b.Trace.Events)-1].Time = int64(21 * ms)
	at(30*ms, 2, 5*ms, false)
	series = ClockOffsets(&b.Trace)
	if _, ok := series[2].at(int64(25*ms), false); ok || !series[2].Break[len(series[2].T)-1] {
		t.Errorf("the line of p2 goes across its crash: %+v", series[2])
	}
}

// `cohort sim clocks --algo X --json` for every synchronization: the
// metrics are there, the run converges early, and the checks hold.
func TestSyncDefaultsReportMetrics(t *testing.T) {
	for _, c := range []struct {
		algo     string
		accuracy bool // external synchronization: accuracy is meaningful
	}{
		{"cristian", true}, {"ntp", true}, {"berkeley", false}, {"rbs", false}, {"hlc", true},
	} {
		r, _ := simulate(t, "clocks", c.algo, nil)
		if r.Failed() {
			t.Fatalf("%s: %+v", c.algo, r.Checks)
		}
		m := r.Metrics
		for _, k := range []string{"precision_ns", "accuracy_ns", "converged_ns", "messages"} {
			if _, ok := m[k]; !ok {
				t.Errorf("%s: no %s in %v", c.algo, k, m)
			}
		}
		if _, ok := m["stamps"]; ok {
			t.Errorf("%s reports stamps: %v", c.algo, m)
		}
		if m["converged_ns"] < 0 || m["converged_ns"] > 2e9 || m["precision_ns"] <= 0 || m["precision_ns"] > 5e6 ||
			m["messages"] != float64(r.Messages.Total) {
			t.Errorf("%s: metrics %v", c.algo, m)
		}
		if c.accuracy && m["accuracy_ns"] > 5e6 {
			t.Errorf("%s: accuracy %v", c.algo, m["accuracy_ns"])
		}
		t.Logf("%-9s precision %7.1fµs  accuracy %7.1fµs  messages %4.0f  converged at %.0fms", c.algo,
			m["precision_ns"]/1e3, m["accuracy_ns"]/1e3, m["messages"], m["converged_ns"]/1e6)
	}
	r, _ := simulate(t, "clocks", "hlc", nil)
	if r.Metrics["hlc_ahead_ns"] <= 0 || r.Metrics["hlc_ahead_ns"] > 4e6+1e3 {
		t.Errorf("hlc: l − pt reached %vns; the clocks are at most 4ms (and 200ns of drift) apart", r.Metrics["hlc_ahead_ns"])
	}
}

// timeServerNet is a network for Cristian and NTP with a time server p0 on
// true time and three clients that drift.
func timeServerNet(links, latency string) string {
	return `nodes: 4
network:
  latency: ` + latency + `
` + links + `clocks:
  max_offset: 5ms
  max_drift: 1e-4
  nodes:
    - {node: 0, offset: 0, drift: 0}
stop:
  deadline: 5s
`
}

// Asymmetric delay bounds Cristian's accuracy: with the request taking A
// longer than the reply on average, every θ errs by (d1 − d2)/2 — within
// its δ — and on average by A/2; the clocks settle about A/2 from true
// time, and no client does better.
func TestSyncCristianAccuracyFollowsAsymmetry(t *testing.T) {
	var xs, mean, half, acc []float64
	for _, a := range []time.Duration{0, 500 * us, 1 * ms, 2 * ms, 4 * ms} {
		links := "  links:\n"
		for c := 1; c <= 3; c++ {
			links += fmt.Sprintf("    - {from: %d, to: 0, latency: \"uniform:%v,%v\"}\n", c, 500*us+a, 1500*us+a)
		}
		q, _, tr := syncRun(t, "cristian", timeServerNet(links, "uniform:500us,1500us"), 1, nil)
		errs, deltas := sampleErrors(t, tr)
		var sum time.Duration
		for i, e := range errs {
			if bound := deltas[i] + time.Duration(2e-4*float64(deltas[i])) + 2; e > bound || -e > bound {
				t.Fatalf("A = %v: error %v beyond δ = %v", a, e, deltas[i])
			}
			sum += e
		}
		m := sum / time.Duration(len(errs))
		t.Logf("asymmetry %v: mean θ error %v over %d samples (A/2 = %v); accuracy %v, precision %v",
			a, m, len(errs), a/2, time.Duration(q.Accuracy), time.Duration(q.Precision))
		if d := m - a/2; d > 60*us || d < -60*us {
			t.Errorf("A = %v: mean error %v, want A/2 = %v", a, m, a/2)
		}
		// Each θ is within ±(jitter)/2 = ±0.5ms of A/2; the clock moves
		// between such corrections, and drifts 25µs between polls.
		if q.Accuracy < int64(a/2) || q.Accuracy > int64(a/2+600*us) {
			t.Errorf("A = %v: accuracy %v, want between A/2 and A/2 + 0.6ms", a, time.Duration(q.Accuracy))
		}
		xs = append(xs, msOf(int64(a)))
		mean, half, acc = append(mean, msOf(int64(m))), append(half, msOf(int64(a/2))), append(acc, msOf(q.Accuracy))
	}
	figure(t, "cristian-asymmetry", trace.LinePlot{
		Title:  "Cristian: the error is half the asymmetry (jitter ±0.5ms each way)",
		XLabel: "asymmetry A = mean(d_request) − mean(d_reply) (ms)", YLabel: "error (ms)",
		Series: []trace.Series{{Name: "A/2", X: xs, Y: half}, {Name: "mean θ error", X: xs, Y: mean}, {Name: "accuracy α", X: xs, Y: acc}},
	})
}

// NTP's filter against plain averaging: under heavy-tailed jittery
// latency (lognormal, median 1 ms, σ = 1), the sample with the smallest δ
// has the least room for error; the average of the last eight takes in
// every queueing spike. Cristian (the last sample alone) is worst.
func TestSyncNTPFilterBeatsAveraging(t *testing.T) {
	filters := []struct {
		name string
		cfg  clock.TimeSyncConfig
	}{
		{"cristian (last sample)", clock.DefaultCristian},
		{"mean of last 8", func() clock.TimeSyncConfig { c := clock.DefaultNTP; c.Filter = clock.MeanOffset; return c }()},
		{"ntp (min δ of last 8)", clock.DefaultNTP},
	}
	seeds := 8
	scen := timeServerNet("", "lognormal:1ms,1")
	acc := make([][]float64, len(filters))
	var xs []float64
	wins := 0
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		xs = append(xs, float64(seed))
		for i, f := range filters {
			q, _, tr := syncRun(t, "ntp", scen, seed, mustNew(t)(clock.NewTimeSync(f.cfg)))
			acc[i] = append(acc[i], usOf(q.Accuracy))
			if seed == 1 {
				p, _ := OffsetPlot(tr, f.name+": offsets in the steady state — "+describeSync(q), q.From)
				figure(t, "ntp-filter-"+strings.Fields(f.name)[0], p)
			}
		}
		if acc[2][seed-1] < acc[1][seed-1] {
			wins++
		}
	}
	var series []trace.Series
	for i, f := range filters {
		t.Logf("%-24s accuracy per seed (µs): %.0f", f.name, acc[i])
		series = append(series, trace.Series{Name: f.name, X: xs, Y: acc[i]})
	}
	figure(t, "ntp-filter", trace.LinePlot{
		Title:  "Accuracy under lognormal jitter (median 1ms, σ = 1)",
		XLabel: "seed", YLabel: "accuracy α = max |C(t) − t| (µs)", Series: series,
	})
	if m0, m1, m2 := meanOf(acc[0]), meanOf(acc[1]), meanOf(acc[2]); !(m2 < m1 && m1 < m0) || wins < seeds-1 {
		t.Errorf("mean accuracy: last %.0fµs, mean %.0fµs, min-delay %.0fµs; min-delay won %d of %d seeds",
			m0, m1, m2, wins, seeds)
	}
}

func meanOf(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// broadcastNet is one medium for everybody: every message takes 1 ms give
// or take 20µs (receive-side nondeterminism), and clocks drift by up to
// maxDrift.
func broadcastNet(maxDrift float64, server bool) string {
	s := `nodes: 5
network:
  latency: normal:1ms,20us
clocks:
  max_offset: 5ms
  max_drift: ` + fmt.Sprint(maxDrift) + "\n"
	if server {
		s += "  nodes:\n    - {node: 0, offset: 0, drift: 0}\n"
	}
	return s + "stop:\n  deadline: 5s\n"
}

// Sender-side nondeterminism: the server's reply waits up to J between
// T3 and its departure, and so does each RBS beacon before it goes out.
// It goes straight into NTP's θ (by −wait/2; the min-δ filter only picks
// the luckiest of eight), while RBS, which compares receive times only,
// does not see it.
func TestSyncRBSRemovesSenderJitter(t *testing.T) {
	seeds := 3
	var xs, ntpP, rbsP []float64
	for _, j := range []time.Duration{0, 500 * us, 1 * ms, 2 * ms, 4 * ms} {
		var np, rp float64
		for seed := uint64(1); seed <= uint64(seeds); seed++ {
			nc := clock.DefaultNTP
			nc.ReplyHold = j
			q, _, _ := syncRun(t, "ntp", broadcastNet(1e-4, true), seed, mustNew(t)(clock.NewTimeSync(nc)))
			np += usOf(q.Precision) / float64(seeds)
			rc := clock.DefaultRBS
			rc.SendJitter = j
			q, _, _ = syncRun(t, "rbs", broadcastNet(1e-4, false), seed, mustNew(t)(clock.NewRBS(rc)))
			rp += usOf(q.Precision) / float64(seeds)
		}
		t.Logf("sender jitter up to %v: precision NTP %.1fµs, RBS %.1fµs (mean of %d seeds)", j, np, rp, seeds)
		xs, ntpP, rbsP = append(xs, msOf(int64(j))), append(ntpP, np), append(rbsP, rp)
	}
	figure(t, "rbs-sender-jitter", trace.LinePlot{
		Title:  "Sender-side jitter hurts NTP; RBS does not see it",
		XLabel: "sender's random wait before sending, up to J (ms)", YLabel: "precision π = max |Cp − Cq| (µs)",
		Series: []trace.Series{{Name: "NTP (8 samples, min δ)", X: xs, Y: ntpP}, {Name: "RBS (regression, M = 8)", X: xs, Y: rbsP}},
	})
	last := len(xs) - 1
	if ntpP[last] < 2*ntpP[0] || ntpP[last]-ntpP[0] < 150 {
		t.Errorf("NTP's precision went from %.1fµs to only %.1fµs with 4ms of sender jitter", ntpP[0], ntpP[last])
	}
	for i := range xs {
		if rbsP[i] > 1.5*rbsP[0]+10 {
			t.Errorf("RBS's precision went from %.1fµs to %.1fµs with %vms of sender jitter", rbsP[0], rbsP[i], xs[i])
		}
		if i > 1 && rbsP[i] >= ntpP[i] {
			t.Errorf("with %vms of sender jitter RBS (%.1fµs) is not better than NTP (%.1fµs)", xs[i], rbsP[i], ntpP[i])
		}
	}
}

// When clocks drift, the average of the last M offsets describes the
// middle of the window, not now, and the receivers drift apart between
// beacons; regression extrapolates the offset and follows the drift. It
// pays for it in noise: extrapolating a line to the newest beacon weighs
// each receive time's jitter about twice as much as the mean does, so
// without drift averaging is better. The comparison is of the mean
// precision over the steady state (the maximum, which one unlucky beacon
// decides, is drawn too).
func TestSyncRBSRegressionBeatsAveraging(t *testing.T) {
	seeds := 3
	var xs []float64
	var avgMean, regMean, avgMax, regMax []float64
	for _, rho := range []float64{0, 2.5e-5, 5e-5, 1e-4} {
		var am, rm, ax, rx float64
		for seed := uint64(1); seed <= uint64(seeds); seed++ {
			for _, regression := range []bool{false, true} {
				c := clock.DefaultRBS
				c.Regression = regression
				q, _, tr := syncRun(t, "rbs", broadcastNet(rho, false), seed, mustNew(t)(clock.NewRBS(c)))
				mean, top := q.MeanPrecision()/1e3/float64(seeds), usOf(q.Precision)/float64(seeds)
				if regression {
					rm, rx = rm+mean, rx+top
				} else {
					am, ax = am+mean, ax+top
				}
				if seed == 1 && rho == 1e-4 {
					name := map[bool]string{false: "averaging", true: "regression"}[regression]
					p, _ := OffsetPlot(tr, "RBS, "+name+", ρ ≤ 1e-4: steady state — "+describeSync(q), q.From)
					figure(t, "rbs-"+name, p)
				}
			}
		}
		t.Logf("drift up to %g: precision averaging %.1fµs mean, %.1fµs max; regression %.1fµs mean, %.1fµs max (%d seeds)",
			rho, am, ax, rm, rx, seeds)
		xs = append(xs, rho*1e6)
		avgMean, regMean, avgMax, regMax = append(avgMean, am), append(regMean, rm), append(avgMax, ax), append(regMax, rx)
	}
	figure(t, "rbs-drift", trace.LinePlot{
		Title:  "RBS under drift (M = 8, receive jitter σ = 20µs)",
		XLabel: "largest drift ρ (ppm)", YLabel: "precision π (µs)",
		Series: []trace.Series{{Name: "averaging, mean", X: xs, Y: avgMean}, {Name: "regression, mean", X: xs, Y: regMean},
			{Name: "averaging, max", X: xs, Y: avgMax}, {Name: "regression, max", X: xs, Y: regMax}},
	})
	last := len(xs) - 1
	if regMean[last] > 0.7*avgMean[last] || regMax[last] > avgMax[last] {
		t.Errorf("at ρ = 1e-4: regression %.1fµs mean (%.1fµs max), averaging %.1fµs (%.1fµs): want regression better",
			regMean[last], regMax[last], avgMean[last], avgMax[last])
	}
	if avgMean[last] < 3*avgMean[0] || regMean[last] > 1.3*regMean[0] {
		t.Errorf("as drift grew to 1e-4, averaging went from %.1fµs to %.1fµs and regression from %.1fµs to %.1fµs: want averaging to lag and regression to follow",
			avgMean[0], avgMean[last], regMean[0], regMean[last])
	}
	if avgMean[0] > regMean[0] {
		t.Errorf("without drift averaging (%.1fµs) should beat regression (%.1fµs)", avgMean[0], regMean[0])
	}
}

// One broken clock, a second ahead, among five: averaged in, it drags the
// whole group away from true time; left out (more than 20 ms from the
// median), the others stay where they were.
func TestSyncBerkeleyIgnoresABrokenClock(t *testing.T) {
	scen := `nodes: 5
network:
  latency: lognormal:1ms,0.5
clocks:
  max_offset: 5ms
  max_drift: 1e-4
  nodes:
    - {node: 4, offset: 1s, drift: 1e-4}
stop:
  deadline: 5s
`
	var series []trace.Series
	for _, bound := range []time.Duration{clock.DefaultBerkeley.Bound, 0} {
		c := clock.DefaultBerkeley
		c.Bound = bound
		_, _, tr := syncRun(t, "berkeley", scen, 1, mustNew(t)(clock.NewBerkeley(c)))
		all := ClockOffsets(tr)
		good := all[:4]
		q := MeasureSync(good)
		// The good clocks' mean offset over time.
		s := trace.Series{Name: map[bool]string{true: "broken clock left out", false: "broken clock averaged in"}[bound > 0]}
		worst := 0.0
		for _, tm := range good[0].T {
			var sum float64
			for _, g := range good {
				v, _ := g.at(tm, true)
				sum += float64(v)
			}
			s.X, s.Y = append(s.X, float64(tm)/1e9), append(s.Y, sum/4/1e6)
			if tm > int64(time.Second) {
				worst = max(worst, math.Abs(sum/4))
			}
		}
		series = append(series, s)
		t.Logf("%s: the good clocks' mean offset reaches %.2fms after 1s; among them %s", s.Name, worst/1e6, describeSync(q))
		if bound > 0 && (worst > 5e6 || q.Precision > 5e6) {
			t.Errorf("with the broken clock left out, the good clocks are %.2fms off true time, %v apart", worst/1e6, time.Duration(q.Precision))
		}
		// Slewing at 0.5% limits the drag to 5ms a second, towards an
		// average 200ms ahead.
		if bound == 0 && worst < 15e6 {
			t.Errorf("with the broken clock averaged in, the good clocks moved only %.2fms", worst/1e6)
		}
	}
	figure(t, "berkeley-broken-clock", trace.LinePlot{
		Title:  "Berkeley, one clock 1s ahead among five",
		XLabel: "true time t (s)", YLabel: "mean offset of the four good clocks (ms)", Series: series,
	})
}
