package clock_test

import (
	"testing"
	"time"

	"github.com/cohort-go/cohort/clock"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

func TestFaultTolerantAverage(t *testing.T) {
	cases := []struct {
		ds          []time.Duration
		bound, want time.Duration
	}{
		{[]time.Duration{0, 3 * ms, -3 * ms}, 0, 0},
		{[]time.Duration{0, 2 * ms, 4 * ms, 1000 * ms}, 0, 1006 * ms / 4}, // everyone counts: dragged
		{[]time.Duration{0, 2 * ms, 4 * ms, 1000 * ms}, 10 * ms, 2 * ms},  // the broken clock left out
		{[]time.Duration{-1000 * ms, 0, 2 * ms, 4 * ms}, 10 * ms, 2 * ms}, // either side
		{[]time.Duration{0, 10 * ms, 20 * ms}, 10 * ms, 10 * ms},          // the bound is inclusive
		{[]time.Duration{0, 10 * ms, 21 * ms}, 10 * ms, 5 * ms},           // ... and strict beyond
		{[]time.Duration{7 * ms}, 1 * ms, 7 * ms},                         // alone
		// Sorted −6, −5, 5, 6: the lower median is −5ms; within 5ms of it
		// are −6 and −5.
		{[]time.Duration{5 * ms, -5 * ms, 6 * ms, -6 * ms}, 5 * ms, -5500 * us},
	}
	for _, c := range cases {
		if got := clock.FaultTolerantAverage(c.ds, c.bound); got != c.want {
			t.Errorf("FaultTolerantAverage(%v, %v) = %v, want %v", c.ds, c.bound, got, c.want)
		}
	}
}

// offsetsAt returns each process's last reading at or before true time at,
// as its clock minus true time.
func offsetsAt(t testing.TB, tr *trace.Trace, at time.Duration) map[proc.ID]time.Duration {
	events, values := outputsOf[clock.Reading](t, tr, "reading")
	off := map[proc.ID]time.Duration{}
	for i, e := range events {
		if time.Duration(e.Time) <= at {
			off[proc.ID(e.Node)] = values[i].Clock - time.Duration(e.Time)
		}
	}
	return off
}

// With exact delays and clocks that do not drift, one round brings every
// clock to the average of them all, the daemon's included (by slewing, so
// it takes a while). A clock far from the median is left out of the
// average (told to slew towards the others, it is still far from them at
// the end of this run); averaged in, it drags everyone.
func TestBerkeleyAveragesTheClocks(t *testing.T) {
	offsets := []time.Duration{0, 4 * ms, -2 * ms, 1 * ms, 2 * ms}
	for _, c := range []struct {
		name   string
		broken time.Duration // added to p4's clock
		bound  time.Duration
		want   time.Duration // where the good clocks end
	}{
		{"all good", 0, 20 * ms, 1 * ms},
		{"one broken, excluded", 800 * ms, 20 * ms, (0 + 4 - 2 + 1) * ms / 4},
		{"one broken, averaged in", 800 * ms, 0, -1}, // dragged: see below
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := clock.DefaultBerkeley
			cfg.Bound = c.bound
			cfg.Discipline.SlewRate = 0.1 // let 160ms settle within the run
			tr := simulate(t, sim.Config{
				Nodes: 5, Seed: 1, New: must(t)(clock.NewBerkeley(cfg)),
				Clocks: func(id proc.ID) sim.HWClock {
					if id == 4 {
						return sim.HWClock{Offset: offsets[id] + c.broken}
					}
					return sim.HWClock{Offset: offsets[id]}
				},
				Network:  sim.Network{Latency: sim.Constant(ms)},
				Deadline: 3 * time.Second,
			})
			off := offsetsAt(t, tr, 3*time.Second)
			for id := range proc.ID(4) {
				if c.want < 0 {
					// The broken clock pulls the average 160ms ahead at
					// the first round, and the good clocks follow it.
					if off[id] < 100*ms {
						t.Errorf("p%d ends %v from true time: not dragged by the broken clock", id, off[id])
					}
					continue
				}
				if d := off[id] - c.want; d > us || d < -us {
					t.Errorf("p%d ends %v from true time, want %v", id, off[id], c.want)
				}
			}
		})
	}
}

// A machine applies each round's adjustment once, and never an older
// round's: duplicated and reordered messages do not make it over-correct.
// Over many seeds with jitter, drift and a lossy network, the clocks end
// within a few round trips of each other and never run backwards.
func TestBerkeleyKeepsTheGroupTogether(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		tr := simulate(t, sim.Config{
			Nodes: 2 + int(seed%6), Seed: seed, New: must(t)(clock.NewBerkeley(clock.DefaultBerkeley)),
			Clocks:   sim.Skew(5*ms, 1e-4, seed),
			Network:  sim.Network{Latency: sim.Uniform{Min: 200 * us, Max: 800 * us}, Loss: 0.05, Duplicate: 0.2, Reorder: 0.2},
			Deadline: 3 * time.Second,
		})
		checkRun(t, tr, seed, "integrity", "no-duplicates", "monotonic-clock")
		off := offsetsAt(t, tr, 3*time.Second)
		lo, hi := time.Duration(1<<62), -time.Duration(1<<62)
		for _, o := range off {
			lo, hi = min(lo, o), max(hi, o)
		}
		// Each estimate is off by at most half a round trip (0.8ms), and
		// the clocks drift apart by 2ρ·250ms = 50µs between rounds; the
		// readings compared are up to 100ms apart.
		if hi-lo > 2*ms {
			t.Errorf("seed %d: the clocks end %v apart: %v", seed, hi-lo, off)
		}
	}
}
