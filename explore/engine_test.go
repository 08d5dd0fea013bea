package explore

import (
	"fmt"
	"testing"
)

// The forking engine reaches the states the replaying one does: the same
// counts, the same verdicts, the same counterexamples, step for step, on
// models with timers, FIFO channels, a set network, crashes, losses and
// duplicates, in both strategies.
func TestForkMatchesReplay(t *testing.T) {
	type model struct {
		name   string
		family string
		algo   string
		nodes  int
		inputs []string
		tweak  func(*Config)
	}
	models := []model{
		{"2pc-bfs", "commit", "two-phase-commit", 4, nil, nil},
		{"2pc-dfs-por", "commit", "two-phase-commit", 4, nil, func(c *Config) { c.Strategy, c.POR = DFS, true }},
		{"1pc", "commit", "one-phase-commit", 3, nil, func(c *Config) { c.Checks = []string{"commit-consistency"}; c.Safety = c.Checks }},
		{"ra-dfs-por", "mutex", "ricart-agrawala", 2, nil, func(c *Config) { c.Strategy, c.POR = DFS, true }},
		{"ra-faults", "mutex", "ricart-agrawala", 2, nil, func(c *Config) { c.Crashes, c.Losses = 1, 1 }},
		{"ra-dups", "mutex", "ricart-agrawala", 2, nil, func(c *Config) { c.Dups = 1 }},
		{"maekawa", "mutex", "maekawa", 4, []string{"0:acquire", "1:acquire", "2:acquire"}, func(c *Config) { c.Checks = []string{"ME2"} }},
		{"ra-jr", "mutex", "ricart-agrawala-jr", 3, []string{"0:acquire", "1:acquire", "0:acquire"}, func(c *Config) { c.Checks, c.Safety = []string{"ME3"}, []string{"ME3"} }},
		{"bully-async", "election", "bully", 3, nil, func(c *Config) { c.Timing, c.Strategy, c.POR, c.MaxStates = Async, DFS, true, 100_000 }},
		{"token-ring", "mutex", "token-ring", 3, nil, func(c *Config) { c.MaxStates = 3000 }},
	}
	if testing.Short() || raceEnabled {
		models = models[:4]
	}
	for _, m := range models {
		t.Run(m.name, func(t *testing.T) {
			var rs [2]*Result
			for i, replay := range []bool{true, false} {
				cfg := setup(t, m.family, m.algo, m.nodes, m.inputs)
				if m.tweak != nil {
					m.tweak(&cfg)
				}
				cfg.Replay = replay
				rs[i] = explore(t, cfg)
			}
			old, nu := rs[0], rs[1]
			if nu.Engine != "fork" {
				t.Fatalf("engine %q, want fork", nu.Engine)
			}
			if a, b := summary(old), summary(nu); a != b {
				t.Fatalf("replay: %s\nfork:   %s", a, b)
			}
			if nu.Transitions > old.Transitions {
				t.Errorf("fork took %d steps, replay %d", nu.Transitions, old.Transitions)
			}
			t.Logf("%s (replay %d steps, fork %d)", summary(nu), old.Transitions, nu.Transitions)
		})
	}
}

func summary(r *Result) string {
	s := fmt.Sprintf("states %d terminal %d cut %d depth %d exhausted %v unknown %d",
		r.States, r.Terminal, r.CutOff, r.MaxDepth, r.Exhausted, r.Unknown)
	if v := r.Violation; v != nil {
		s += fmt.Sprintf(" violation %s terminal %v steps", v.Check.Name, v.Terminal)
		for _, st := range v.Schedule.Steps {
			s += fmt.Sprintf(" %s/%d", st.Act, st.Seq)
		}
		s += fmt.Sprintf(" events %d", len(v.Trace.Events))
	}
	return s
}

// BenchmarkEngines explores the same models with the replaying engine and
// the forking one, side by side, and reports unique states per second and
// the search's bytes per state.
func BenchmarkEngines(b *testing.B) {
	for _, m := range []struct {
		name   string
		family string
		algo   string
		nodes  int
		states int64
		tweak  func(*Config)
	}{
		{"2pc-5rm", "commit", "two-phase-commit", 6, 8832, func(c *Config) { c.Strategy, c.POR = DFS, true }},
		{"2pc-7rm", "commit", "two-phase-commit", 8, 0, func(c *Config) { c.Strategy, c.POR = DFS, true }},
		{"ra-3", "mutex", "ricart-agrawala", 3, 37617, func(c *Config) { c.Strategy, c.POR = DFS, true }},
	} {
		for _, replay := range []bool{true, false} {
			engine := "fork"
			if replay {
				engine = "replay"
			}
			b.Run(m.name+"/"+engine, func(b *testing.B) {
				var r *Result
				for i := 0; i < b.N; i++ {
					cfg := setup(b, m.family, m.algo, m.nodes, nil)
					m.tweak(&cfg)
					cfg.Replay = replay
					r = explore(b, cfg)
				}
				if m.states > 0 && r.States != m.states {
					b.Fatalf("%d states, want %d", r.States, m.states)
				}
				b.ReportMetric(float64(r.States)/r.Elapsed.Seconds(), "states/s")
				b.ReportMetric(r.BytesPerState, "bytes/state")
				b.ReportMetric(float64(r.States), "states")
			})
		}
	}
}
