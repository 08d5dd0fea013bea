package explore

import (
	"math/rand/v2"
	"testing"
)

// foreseeModels are searches where steps are foreseen: depth first with
// sleep sets in a set network, asynchronous, without faults.
var foreseeModels = []walkModel{
	{"2pc-3rm-por", "commit", "two-phase-commit", 4, nil, func(c *Config) { c.Strategy, c.POR = DFS, true }},
	{"2pc-4rm-por", "commit", "two-phase-commit", 5, nil, func(c *Config) { c.Strategy, c.POR = DFS, true }},
	{"1pc-por", "commit", "one-phase-commit", 4, nil, func(c *Config) {
		c.Strategy, c.POR = DFS, true
		c.Checks, c.Safety = []string{"commit-consistency"}, []string{"commit-consistency"}
	}},
	{"2pc-5rm-por", "commit", "two-phase-commit", 6, nil, func(c *Config) { c.Strategy, c.POR = DFS, true }},
	{"2pc-6rm-por", "commit", "two-phase-commit", 7, nil, func(c *Config) { c.Strategy, c.POR = DFS, true }},
}

// Skipping the steps foreseen to lead to a state met again and pruned
// (foresee.go) finds what taking them does: the same states, steps,
// quiet steps, terminal states, depth and verdicts, the same
// counterexample step for step. With 5 RMs it skips most revisits: over
// a tenth of the steps taken.
func TestForeseenStepsChangeNothing(t *testing.T) {
	models := foreseeModels
	if testing.Short() || raceEnabled {
		models = models[:3]
	}
	for _, m := range models {
		t.Run(m.name, func(t *testing.T) {
			taken, skipped := takenAndSkipped(t, m, &skipForeseen)
			if a, b := outcome(taken), outcome(skipped); a != b {
				t.Fatalf("taking foreseen steps:  %s\nskipping them: %s", a, b)
			}
			if a, b := summary(taken), summary(skipped); a != b {
				t.Fatalf("taking foreseen steps:  %s\nskipping them: %s", a, b)
			}
			if taken.Foreseen != 0 {
				t.Fatalf("%d steps foreseen with foreseeing off", taken.Foreseen)
			}
			taking := skipped.Transitions - skipped.Quiet // the steps not quiet
			if m.name == "2pc-5rm-por" && 10*skipped.Foreseen < taking {
				t.Errorf("%d of %d steps not quiet foreseen, want at least a tenth", skipped.Foreseen, taking)
			}
			// Effects are learned while they take less than half a byte
			// a state (the last one learned may pass that).
			states := float64(skipped.States)
			if (skipped.BytesPerState-taken.BytesPerState)*states > states/2+512 {
				t.Errorf("%.2f bytes a state, %.2f taking foreseen steps", skipped.BytesPerState, taken.BytesPerState)
			}
			t.Logf("%s: %d of %d steps foreseen, %.2f bytes a state (%.2f taking them)", outcome(skipped), skipped.Foreseen, skipped.Transitions, skipped.BytesPerState, taken.BytesPerState)
		})
	}
}

// takenAndSkipped explores m twice: taking the steps that skip (a switch
// on by default) lets the search skip, then skipping them.
func takenAndSkipped(t *testing.T, m walkModel, skip *bool) (taken, skipped *Result) {
	defer func() { *skip = true }()
	var rs [2]*Result
	for i, on := range []bool{false, true} {
		*skip = on
		cfg := setup(t, m.family, m.algo, m.nodes, m.inputs)
		m.tweak(&cfg)
		rs[i] = explore(t, cfg)
	}
	return rs[0], rs[1]
}

// Each step foreseen leads where it was foreseen to: taken all the same,
// it reaches the state of the fingerprint foreseen, and that state is
// pruned when it was foreseen pruned and only then.
func TestForeseenStepsAreExact(t *testing.T) {
	models := foreseeModels
	if testing.Short() || raceEnabled {
		models = models[:3]
	}
	defer func() { checkForeseen = nil }()
	for _, m := range models {
		t.Run(m.name, func(t *testing.T) {
			var checked, pruned, wrong int
			checkForeseen = func(foreseen, got uint64, p, gotPruned bool) {
				checked++
				if p {
					pruned++
				}
				if foreseen != got || p != gotPruned {
					wrong++
					if wrong <= 3 {
						t.Errorf("foreseen %x pruned %v; reached %x pruned %v", foreseen, p, got, gotPruned)
					}
				}
			}
			cfg := setup(t, m.family, m.algo, m.nodes, m.inputs)
			m.tweak(&cfg)
			r := explore(t, cfg)
			if checked == 0 || (m.algo == "two-phase-commit" && pruned == 0) {
				t.Fatalf("%d steps foreseen, %d of them pruned: want some", checked, pruned)
			}
			if r.Foreseen != 0 {
				t.Errorf("%d steps skipped while checking", r.Foreseen)
			}
			t.Logf("%d steps foreseen, %d pruned, %d wrong", checked, pruned, wrong)
		})
	}
}

// covers, which stops ranking once the mask is covered, answers as the
// whole ranking does (sleepBits).
func TestCoversIsTheWholeRanking(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var lv level
	for trial := 0; trial < 5000; trial++ {
		labels := make([]label, rng.IntN(32))
		for i := range labels {
			labels[i] = label{id: rng.Uint64N(40), node: int32(rng.IntN(4))}
		}
		sleep := make([]label, rng.IntN(12))
		for i := range sleep {
			sleep[i] = label{id: rng.Uint64N(40)}
		}
		m := rng.Uint32() & (1<<len(labels) - 1)
		if trial%2 == 0 {
			m &= rng.Uint32() & rng.Uint32() // fewer bits: covered more often
		}
		ranks, _ := lv.sleepBits(labels, sleep)
		if got, want := covers(labels, sleep, m), m&^ranks == 0; got != want {
			t.Fatalf("covers(%v, %v, %b) = %v, want %v", labels, sleep, m, got, want)
		}
	}
}
