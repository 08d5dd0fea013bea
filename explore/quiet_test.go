package explore

import "testing"

// Skipping the steps known to change nothing (quiet.go) finds what taking
// them does: the same states, terminal states, depth and verdicts, the
// same counterexample step for step, and the same number of steps
// counted (but for the paths a replaying search no longer replays); and
// in two-phase commit's set network it skips a third to two thirds of them.
func TestQuietStepsChangeNothing(t *testing.T) {
	models := []walkModel{
		{"2pc-3rm-dfs", "commit", "two-phase-commit", 4, nil, func(c *Config) { c.Strategy = DFS }},
		{"2pc-4rm-por", "commit", "two-phase-commit", 5, nil, func(c *Config) { c.Strategy, c.POR = DFS, true }},
		{"2pc-5rm-por", "commit", "two-phase-commit", 6, nil, func(c *Config) { c.Strategy, c.POR = DFS, true }},
		{"1pc-por", "commit", "one-phase-commit", 4, nil, func(c *Config) {
			c.Strategy, c.POR = DFS, true
			c.Checks, c.Safety = []string{"commit-consistency"}, []string{"commit-consistency"}
		}},
		{"2pc-3rm-replay", "commit", "two-phase-commit", 4, nil, func(c *Config) { c.Strategy, c.POR, c.Replay = DFS, true, true }},
	}
	if testing.Short() || raceEnabled {
		models = models[:2]
	}
	for _, m := range models {
		t.Run(m.name, func(t *testing.T) {
			taken, skipped := takenAndSkipped(t, m, &skipQuiet)
			if a, b := summary(taken), summary(skipped); a != b {
				t.Fatalf("taking quiet steps:  %s\nskipping them: %s", a, b)
			}
			// (Replaying, a step skipped is also a path not replayed.)
			replay := skipped.Engine == "replay"
			if taken.Quiet != 0 ||
				(!replay && taken.Transitions != skipped.Transitions) || (replay && taken.Transitions < skipped.Transitions) {
				t.Fatalf("steps: %d taking quiet steps (%d quiet), %d skipping them", taken.Transitions, taken.Quiet, skipped.Transitions)
			}
			if !replay && skipped.Violation == nil && 3*skipped.Quiet < skipped.Transitions {
				t.Errorf("%d of %d steps skipped as quiet, want at least a third", skipped.Quiet, skipped.Transitions)
			}
			t.Logf("%s: %d of %d steps quiet", summary(skipped), skipped.Quiet, skipped.Transitions)
		})
	}
}
