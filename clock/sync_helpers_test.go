package clock_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
	"github.com/cohort-go/cohort/trace"
)

// simulate runs cfg in the simulator and returns its trace.
func simulate(t testing.TB, cfg sim.Config) *trace.Trace {
	t.Helper()
	return simtest.Run(t, "clocks", cfg).Trace
}

// must returns a function that returns a constructor, or fails the test
// on its error: New: must(t)(clock.NewRBS(cfg)).
func must(t testing.TB) func(func(proc.ID, int) proc.Process, error) func(proc.ID, int) proc.Process {
	return func(f func(proc.ID, int) proc.Process, err error) func(proc.ID, int) proc.Process {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
}

// withServer is a clock model in which process 0 (a time server) keeps
// true time and the others draw offsets up to maxOffset and drifts up to
// maxDrift from seed.
func withServer(maxOffset time.Duration, maxDrift float64, seed uint64) sim.ClockModel {
	others := sim.Skew(maxOffset, maxDrift, seed)
	return func(id proc.ID) sim.HWClock {
		if id == 0 {
			return sim.HWClock{}
		}
		return others(id)
	}
}

// outputsOf returns the events of outputs of type kind, decoded into T.
func outputsOf[T any](t testing.TB, tr *trace.Trace, kind string) (events []trace.Event, values []T) {
	t.Helper()
	for _, e := range tr.Events {
		if e.Kind == trace.Output && e.Type == kind {
			var v T
			if err := json.Unmarshal(e.Data, &v); err != nil {
				t.Fatalf("#%d: %v", e.Index, err)
			}
			events, values = append(events, e), append(values, v)
		}
	}
	return events, values
}

// asymmetric returns links on which every request to process 0 takes up
// and every reply down.
func asymmetric(n int, up, down sim.Dist) []sim.Link {
	var links []sim.Link
	for i := 1; i < n; i++ {
		links = append(links, sim.Link{From: proc.ID(i), To: 0, Latency: up}, sim.Link{From: 0, To: proc.ID(i), Latency: down})
	}
	return links
}
