package deadlock_test

import (
	"slices"
	"testing"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/deadlock"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim/simtest"
)

// backoffSweep is what a sweep of one model measured: detection messages
// sent, deadlocks formed and detected, declarations and phantoms, and
// every detection's latency (ns).
type backoffSweep struct {
	msgs, formed, detected, declared, phantoms int
	latencies                                  []int64
}

func (s backoffSweep) latency(q float64) float64 {
	l := slices.Clone(s.latencies)
	slices.Sort(l)
	return float64(l[int(q*float64(len(l)-1))]) / 1e6
}

// TestBackoffSendsFewerProbes runs the seeded sweeps of both models with
// the default backoff (waits doubling from 2 to 16 ms) and without it
// (MaxWait = Wait: a computation every 2 ms while blocked), on the same
// seeds: with it, the detectors send far fewer probes (under half) and
// queries and replies (under 80%: a computation is cut short where it
// meets a higher process, which then hurries its own), every
// deadlock is still declared within the bound (deadlock-detected and
// or-deadlock-detected hold in every run), no more declarations are
// phantoms, and detection latencies stay of the same order — a blocked
// process that drops a lower initiator's probe brings its own
// computation forward.
func TestBackoffSendsFewerProbes(t *testing.T) {
	for _, m := range []struct {
		name   string
		detect string
		cut    float64 // at most this fraction of the messages without backoff
		msgs   []string
		run    func(testing.TB, func(proc.ID, int) proc.Process, int, uint64, float64, int) *simtest.Recorded
		newP   func(fixed bool) proc.Process
	}{
		{"cmh", "deadlock-detected", 0.5, []string{"probe"}, run, func(fixed bool) proc.Process {
			p := deadlock.NewCMH(deadlock.DefaultProbeWait)
			if fixed {
				p.MaxWait = p.Wait
			}
			return p
		}},
		{"cmh-or", "or-deadlock-detected", 0.8, []string{"query", "reply"}, runOR, func(fixed bool) proc.Process {
			p := deadlock.NewCMHOR(deadlock.DefaultProbeWait)
			if fixed {
				p.MaxWait = p.Wait
			}
			return p
		}},
	} {
		var got [2]backoffSweep // fixed period, backoff
		for i, fixed := range []bool{true, false} {
			s := &got[i]
			for seed := uint64(1); seed <= seeds(); seed++ {
				n, c, want := setting(seed)
				r := m.run(t, func(proc.ID, int) proc.Process { return m.newP(fixed) }, n, seed, c, want)
				r.Hold(t, m.detect)
				for _, typ := range m.msgs {
					s.msgs += int(r.Result.Messages(typ))
				}
				if m.name == "cmh" {
					a, err := check.AnalyzeDeadlocks(r.Trace)
					if err != nil {
						t.Fatal(err)
					}
					s.formed, s.detected, s.phantoms = s.formed+a.Formed, s.detected+a.Detected, s.phantoms+len(a.Phantoms)
					s.latencies = append(s.latencies, a.Latencies...)
				} else {
					a, err := check.AnalyzeORDeadlocks(r.Trace)
					if err != nil {
						t.Fatal(err)
					}
					s.formed, s.detected, s.phantoms = s.formed+a.Formed, s.detected+a.Detected, s.phantoms+len(a.Phantoms)
					s.latencies = append(s.latencies, a.Latencies...)
				}
				s.declared += count(r.Trace, "deadlock")
			}
			t.Logf("%s, %s: %d messages (%s), %d deadlocks formed, %d detected, %d declarations, %d phantoms; latency median %.2f ms, 90th %.2f ms, max %.2f ms",
				m.name, map[bool]string{true: "fixed period", false: "backoff"}[fixed], s.msgs, m.msgs, s.formed, s.detected, s.declared, s.phantoms,
				s.latency(0.5), s.latency(0.9), s.latency(1))
		}
		fixed, back := got[0], got[1]
		if float64(back.msgs) > m.cut*float64(fixed.msgs) {
			t.Errorf("%s: %d detection messages with backoff, %d without: want at most %.0f%%", m.name, back.msgs, fixed.msgs, 100*m.cut)
		}
		if back.formed == 0 || back.detected < back.formed*9/10 {
			t.Errorf("%s with backoff: %d deadlocks formed, %d detected: want many, nearly all", m.name, back.formed, back.detected)
		}
		if back.phantoms*20 > back.declared {
			t.Errorf("%s with backoff: %d phantoms in %d declarations: want at most 1 in 20", m.name, back.phantoms, back.declared)
		}
		if back.latency(0.5) > 2*fixed.latency(0.5) {
			t.Errorf("%s: median detection latency %.2f ms with backoff, %.2f ms without: want at most twice", m.name, back.latency(0.5), fixed.latency(0.5))
		}
	}
}
