package explore

import (
	"fmt"
	"testing"
)

// reached explores cfg and returns the (mixed) fingerprints of the states
// it reached, each a canonical representative with symmetry, and whether
// it found a violation.
func reached(t *testing.T, cfg Config) (map[uint64]bool, bool) {
	t.Helper()
	e, err := search(cfg)
	if err != nil {
		t.Fatal(err)
	}
	set := map[uint64]bool{}
	e.seen.each(func(m uint64) { set[m] = true })
	return set, e.res.Violation != nil
}

// Sleep sets do not prune a state's orbit away: with symmetry, depth first
// with sleep sets reaches exactly the representatives that depth first
// without them and breadth first reach, with the same verdict, on
// two-phase commit with 3 to 5 RMs, as TLA+ TwoPhase has it (a set
// network) and with messages received once, lost, duplicated or their
// receivers crashed. A sleep set is stored for a state's orbit; read
// against another member of it, it must name the same steps (renamed).
func TestSleepSetsKeepEveryOrbit(t *testing.T) {
	type variant struct {
		name  string
		tweak func(*Config)
	}
	variants := []variant{
		{"set-network", func(*Config) {}},
		{"once", func(c *Config) { c.SetNetwork = false }},
		{"once-loss", func(c *Config) { c.SetNetwork, c.Losses = false, 1 }},
		{"once-dup", func(c *Config) { c.SetNetwork, c.Dups = false, 1 }},
		{"crash", func(c *Config) { c.Crashes = 1 }},
		{"once-crash-loss", func(c *Config) { c.SetNetwork, c.Crashes, c.Losses = false, 1, 1 }},
	}
	for _, rms := range []int{3, 4, 5} {
		for _, v := range variants {
			if rms == 5 && v.name != "set-network" && (testing.Short() || raceEnabled) {
				continue
			}
			t.Run(fmt.Sprintf("%drm/%s", rms, v.name), func(t *testing.T) {
				cfg := setup(t, "commit", "two-phase-commit", rms+1, nil)
				cfg.Symmetry = true
				v.tweak(&cfg)
				var sets []map[uint64]bool
				var verdicts []bool
				for _, s := range []struct {
					strategy Strategy
					por      bool
				}{{DFS, true}, {DFS, false}, {BFS, false}} {
					c := cfg
					c.Strategy, c.POR = s.strategy, s.por
					set, bad := reached(t, c)
					sets, verdicts = append(sets, set), append(verdicts, bad)
				}
				for i, name := range []string{"dfs without sleep sets", "bfs"} {
					missed, extra := 0, 0
					for m := range sets[i+1] {
						if !sets[0][m] {
							missed++
						}
					}
					for m := range sets[0] {
						if !sets[i+1][m] {
							extra++
						}
					}
					if missed > 0 || extra > 0 || verdicts[0] != verdicts[i+1] {
						t.Errorf("dfs with sleep sets reached %d orbits, %s %d: %d of its missed, %d not among them; violation %v, %v",
							len(sets[0]), name, len(sets[i+1]), missed, extra, verdicts[0], verdicts[i+1])
					}
				}
				t.Logf("%d orbits", len(sets[0]))
			})
		}
	}
}
