package check_test

import (
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/deadlock"
	"github.com/cohort-go/cohort/lab"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
	"github.com/cohort-go/cohort/trace"
)

// TestDeadlockWatchFollowsTheCheckers: event by event along runs of both
// models, DeadlockWatch says a deadlock stands exactly when the detection
// checker, judging that prefix, finds one open at its end (no late one
// yet), and it reports a declaration exactly at each "deadlock" output.
// The explorer skips the checkers where the watch says nothing can have
// changed, so the two must agree.
func TestDeadlockWatchFollowsTheCheckers(t *testing.T) {
	net := sim.Network{Latency: sim.Uniform{Min: 200 * time.Microsecond, Max: 3 * time.Millisecond}, FIFO: true}
	standing, declared := 0, 0
	for _, m := range []struct {
		name string
		or   bool
		newP func(proc.ID, int) proc.Process
		load sim.Workload
	}{
		{"cmh", false, func(proc.ID, int) proc.Process { return deadlock.NewCMH(deadlock.DefaultProbeWait) }, &lab.DeadlockLoad{Txns: 4, Want: 2, Contention: 0.9}},
		{"timeout", false, func(proc.ID, int) proc.Process { return deadlock.NewTimeout(deadlock.DefaultTimeout) }, &lab.DeadlockLoad{Txns: 4, Want: 2, Contention: 0.9}},
		{"cmh-or", true, func(proc.ID, int) proc.Process { return deadlock.NewCMHOR(deadlock.DefaultProbeWait) }, &lab.DeadlockORLoad{Waits: 4, Want: 2, Contention: 0.9}},
	} {
		for seed := uint64(1); seed <= 3; seed++ {
			r := simtest.Run(t, "deadlock", sim.Config{Nodes: 4, Seed: seed, New: m.newP, Network: net, Workload: m.load, Deadline: 100 * time.Millisecond})
			tr := r.Trace
			w := check.NewDeadlockWatch(tr.Header.Nodes, m.or)
			for k := range min(len(tr.Events), 400) {
				e := &tr.Events[k]
				if got := w.Observe(e); got != (e.Kind == trace.Output && e.Type == "deadlock") {
					t.Fatalf("%s seed %d event #%d (%s): declaration %v", m.name, seed, k, e.Type, got)
				}
				prefix := &trace.Trace{Header: tr.Header, Events: tr.Events[:k+1]}
				var late int
				var open string
				if m.or {
					a, err := check.AnalyzeORDeadlocks(prefix)
					if err != nil {
						t.Fatal(err)
					}
					late, open = len(a.Late), a.Open
				} else {
					a, err := check.AnalyzeDeadlocks(prefix)
					if err != nil {
						t.Fatal(err)
					}
					late, open = len(a.Late), a.Open
				}
				if late == 0 && w.Standing() != (open != "") {
					t.Fatalf("%s seed %d event #%d: the watch says standing %v, the checker %q", m.name, seed, k, w.Standing(), open)
				}
				if w.Standing() {
					standing++
				}
				if e.Kind == trace.Output && e.Type == "deadlock" {
					declared++
				}
			}
			if !w.Sure() {
				t.Fatalf("%s seed %d: the watch lost the run", m.name, seed)
			}
		}
	}
	if standing == 0 || declared == 0 {
		t.Errorf("%d prefixes with a deadlock standing, %d declarations: the runs do not exercise the watch", standing, declared)
	}
	t.Logf("%d prefixes with a deadlock standing, %d declarations", standing, declared)
}
