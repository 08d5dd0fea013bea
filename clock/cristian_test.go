package clock_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/clock"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

const us = time.Microsecond

// The textbook formulas (Tanenbaum & van Steen §6.1),
// θ = ((T2−T1) + (T3−T4))/2 and δ = ((T4−T1) − (T3−T2))/2, on exchanges
// whose true offset and delays are known: the server is ahead by off; the
// request takes d1, the reply d2, the server holds it s.
func TestThetaAndDelay(t *testing.T) {
	cases := []struct{ off, d1, s, d2, theta, delta time.Duration }{
		{off: 10 * ms, d1: 5 * ms, s: 1 * ms, d2: 5 * ms, theta: 10 * ms, delta: 5 * ms}, // symmetric: exact
		{off: 0, d1: 3 * ms, s: 0, d2: 1 * ms, theta: 1 * ms, delta: 2 * ms},             // asymmetric: off by (d1−d2)/2
		{off: -7 * ms, d1: 1 * ms, s: 2 * ms, d2: 5 * ms, theta: -9 * ms, delta: 3 * ms}, // the error (d1−d2)/2 = −2ms ≤ δ
	}
	for _, c := range cases {
		t1 := 100 * ms               // client clock
		t2 := t1 + c.off + c.d1      // server clock
		t3 := t2 + c.s               // server clock
		t4 := t1 + c.d1 + c.s + c.d2 // client clock
		if got := clock.Theta(t1, t2, t3, t4); got != c.theta {
			t.Errorf("%+v: θ = %v, want %v", c, got, c.theta)
		}
		if got := clock.Delay(t1, t2, t3, t4); got != c.delta {
			t.Errorf("%+v: δ = %v, want %v", c, got, c.delta)
		}
		if err := clock.Theta(t1, t2, t3, t4) - c.off; err != (c.d1-c.d2)/2 || max(err, -err) > c.delta {
			t.Errorf("%+v: error %v, want (d1−d2)/2 within δ", c, err)
		}
	}
}

func TestFilterPick(t *testing.T) {
	samples := []clock.Sample{{Theta: 4 * ms, Delta: 3 * ms}, {Theta: 1 * ms, Delta: 1 * ms}, {Theta: 2 * ms, Delta: 2 * ms}, {Theta: 5 * ms, Delta: 1 * ms}}
	for _, c := range []struct {
		f    clock.Filter
		want time.Duration
	}{
		{clock.Latest, 5 * ms},
		{clock.MinDelay, 5 * ms}, // of two smallest δ, the newer
		{clock.MeanOffset, 3 * ms},
	} {
		if got := c.f.Pick(samples); got != c.want {
			t.Errorf("%v picks %v, want %v", c.f, got, c.want)
		}
	}
	if got := clock.MinDelay.Pick(samples[:3]); got != 1*ms {
		t.Errorf("min-delay picks %v of the first three, want 1ms", got)
	}
}

// With constant delays d1 up and d2 down, every θ a client computes is
// off by exactly (d1 − d2)/2 (and its drift's share of the round trip, a
// fraction of a microsecond), and its clock settles that far from true
// time: asymmetry is what bounds Cristian's accuracy.
func TestCristianErrorIsHalfTheAsymmetry(t *testing.T) {
	for _, c := range []struct{ d1, d2 time.Duration }{{1 * ms, 1 * ms}, {3 * ms, 1 * ms}, {1 * ms, 5 * ms}} {
		t.Run(fmt.Sprintf("up %v down %v", c.d1, c.d2), func(t *testing.T) {
			tr := simulate(t, sim.Config{
				Nodes: 3, Seed: 1, New: must(t)(clock.NewTimeSync(clock.DefaultCristian)),
				Clocks:   withServer(5*ms, 1e-4, 1),
				Network:  sim.Network{Links: asymmetric(3, sim.Constant(c.d1), sim.Constant(c.d2))},
				Deadline: 2 * time.Second,
			})
			events, samples := outputsOf[clock.Sample](t, tr, "sample")
			if len(samples) < 10 {
				t.Fatalf("only %d samples", len(samples))
			}
			want := (c.d1 - c.d2) / 2
			for i, s := range samples {
				// The server keeps true time: the true θ is t − H at T4.
				err := s.Theta - time.Duration(events[i].Time-events[i].Local)
				if d := err - want; d > us || d < -us {
					t.Fatalf("sample %d (%s): error %v, want (d1−d2)/2 = %v", i, events[i].String(), err, want)
				}
			}
			readings, values := outputsOf[clock.Reading](t, tr, "reading")
			last := len(values) - 1
			for readings[last].Node == 0 { // the server's
				last--
			}
			if off := values[last].Clock - time.Duration(readings[last].Time); off-want > 5*us || want-off > 5*us {
				t.Errorf("p%d settles %v from true time, want %v", readings[last].Node, off, want)
			}
		})
	}
}

// Under jittery, asymmetric delays, drift, loss, duplication, reordering
// and a client's crash and recovery, over many seeds, every sample's error
// is within its δ — the bound the client can compute for itself — up to
// the drift's share; and no clock runs backwards, Cristian's or NTP's.
func TestCristianErrorWithinDelay(t *testing.T) {
	worst := 0.0
	for seed := uint64(1); seed <= 60; seed++ {
		up := sim.LogNormal{Median: time.Duration(500+seed*37%2000) * us, Sigma: 0.6}
		down := sim.Uniform{Min: 200 * us, Max: time.Duration(400+seed*53%3000) * us}
		cfg := clock.DefaultCristian
		if seed%2 == 0 {
			cfg = clock.DefaultNTP
		}
		cfg.Poll = 50 * ms
		client := proc.ID(1 + seed%3)
		tr := simulate(t, sim.Config{
			Nodes: 4, Seed: seed, New: must(t)(clock.NewTimeSync(cfg)),
			Clocks:  withServer(5*ms, 1e-4, seed),
			Network: sim.Network{Links: asymmetric(4, up, down), Loss: 0.05, Duplicate: 0.05, Reorder: 0.1},
			Faults: []sim.Fault{{Kind: sim.Crash, Node: client, At: time.Duration(seed%7) * 100 * ms},
				{Kind: sim.Recover, Node: client, At: time.Duration(seed%7)*100*ms + 150*ms}},
			Deadline: time.Second,
		})
		events, samples := outputsOf[clock.Sample](t, tr, "sample")
		for i, s := range samples {
			err := s.Theta - time.Duration(events[i].Time-events[i].Local)
			bound := s.Delta + time.Duration(2e-4*float64(s.Delta)) + 2
			if err > bound || -err > bound {
				t.Fatalf("seed %d, %s: error %v beyond δ = %v", seed, events[i].String(), err, s.Delta)
			}
			worst = max(worst, float64(max(err, -err))/float64(s.Delta))
		}
		checkRun(t, tr, seed, "integrity", "no-duplicates", "monotonic-clock")
	}
	t.Logf("largest |error|/δ over the samples: %.3f", worst)
	if worst < 0.5 {
		t.Errorf("no sample came near its bound (largest |error|/δ %.3f): the delays are not asymmetric enough to test it", worst)
	}
}

// Sender-side nondeterminism: the server stamps T3 and the reply leaves up
// to ReplyHold later. The wait looks like reply delay, so θ comes out low
// by half of it — and δ grows by the same half.
func TestReplyHoldBiasesTheta(t *testing.T) {
	cfg := clock.DefaultCristian
	cfg.ReplyHold = 2 * ms
	cfg.Poll = 20 * ms
	tr := simulate(t, sim.Config{
		Nodes: 3, Seed: 7, New: must(t)(clock.NewTimeSync(cfg)),
		Clocks:   withServer(5*ms, 1e-4, 7),
		Network:  sim.Network{Latency: sim.Constant(ms)},
		Deadline: 2 * time.Second,
	})
	events, samples := outputsOf[clock.Sample](t, tr, "sample")
	var sum time.Duration
	for i, s := range samples {
		err := s.Theta - time.Duration(events[i].Time-events[i].Local)
		// err = −hold/2, δ = 1ms + hold/2 (and drift's sub-µs share)
		if err > us || err < -ms-us || (s.Delta-ms)+err > us || (s.Delta-ms)+err < -us {
			t.Fatalf("%s: error %v with δ %v, want −(δ − 1ms) in [−1ms, 0]", events[i].String(), err, s.Delta)
		}
		sum += err
	}
	if mean := sum / time.Duration(len(samples)); mean > -400*us || mean < -600*us {
		t.Errorf("mean error %v, want about −ReplyHold/4 = −500µs", mean)
	}
}

// checkRun runs the named checkers on a run and fails on any violation,
// printing the counterexample and the seed.
func checkRun(t *testing.T, tr *trace.Trace, seed uint64, names ...string) {
	t.Helper()
	results, err := check.Run(tr, names...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if !r.OK() {
			t.Fatalf("seed %d: %s", seed, r.Counterexample(tr))
		}
	}
}

// NTP's clock filter keeps the last eight samples; a Cristian client
// corrects by each one. Both ask the server every poll, 2 messages a
// client.
func TestTimeSyncMessages(t *testing.T) {
	for _, cfg := range []clock.TimeSyncConfig{clock.DefaultCristian, clock.DefaultNTP} {
		tr := simulate(t, sim.Config{
			Nodes: 5, Seed: 3, New: must(t)(clock.NewTimeSync(cfg)),
			Network:  sim.Network{Latency: sim.Constant(ms)},
			Deadline: time.Second - ms,
		})
		sends := map[string]int{}
		for _, e := range tr.Events {
			if e.Kind == trace.Send {
				sends[e.Type]++
				if (e.Type == "time-req") != (e.Peer == 0) || (e.Type == "time-reply") != (e.Node == 0) {
					t.Fatalf("%v: %s", cfg.Filter, e.String())
				}
			}
		}
		// Polls at 0, 250, 500 and 750 ms, from 4 clients.
		if sends["time-req"] != 16 || sends["time-reply"] != 16 {
			t.Errorf("%v: sent %v, want 16 requests and 16 replies", cfg.Filter, sends)
		}
		_, readings := outputsOf[clock.Reading](t, tr, "reading")
		if len(readings) == 0 || !readings[0].Synced {
			t.Errorf("%v: the server's first reading should be synced: %+v", cfg.Filter, readings[:1])
		}
	}
}
