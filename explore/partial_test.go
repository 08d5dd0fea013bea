package explore

import (
	"testing"
)

// A depth-first search whose safety checkers are all watched records only
// the events they read, and judges a state on its whole trace recorded
// again: the same states, verdicts and counterexamples (schedule and
// trace) as when its runs record every event.
func TestPartialTraceJudgesAsTheWhole(t *testing.T) {
	for _, c := range []struct {
		name  string
		algo  string
		nodes int
	}{
		{"1pc", "one-phase-commit", 4}, // a violation: judged on a trace recorded again
		{"2pc", "two-phase-commit", 4},
	} {
		var outs [2]string
		var traces [2]string
		for i, whole := range []bool{true, false} {
			cfg := setup(t, "commit", c.algo, c.nodes, nil)
			cfg.Strategy, cfg.POR = DFS, true
			cfg.Checks = []string{"commit-consistency"}
			cfg.Safety = cfg.Checks
			wholeTraces = whole
			e, err := search(cfg)
			wholeTraces = false
			if err != nil {
				t.Fatal(err)
			}
			e.seen.free()
			if partial := e.cfg.traceOnly != 0; partial == whole {
				t.Fatalf("%s: runs record a partial trace: %v, want %v", c.name, partial, !whole)
			}
			outs[i] = outcome(e.res)
			if v := e.res.Violation; v != nil {
				for _, ev := range v.Trace.Events {
					traces[i] += string(ev.AppendJSON(nil)) + "\n"
				}
			}
		}
		if outs[0] != outs[1] || traces[0] != traces[1] {
			t.Errorf("%s: partial traces give %s, whole ones %s (counterexample traces equal: %v)", c.name, outs[1], outs[0], traces[0] == traces[1])
		}
		if (c.algo == "one-phase-commit") != (traces[0] != "") {
			t.Errorf("%s: counterexample trace %q", c.name, traces[0])
		}
	}
}
