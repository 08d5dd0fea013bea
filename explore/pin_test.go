package explore

import (
	"fmt"
	"testing"
)

// pinned is one search whose outcome is pinned: what a change to the
// search's speed (the fingerprint, the visited set, saving and restoring
// a run) must leave as it is.
type pinned struct {
	name   string
	family string
	algo   string
	nodes  int
	inputs []string
	tweak  func(*Config)
	want   string // outcome
	slow   bool   // left out with -short and -race
}

func dfsPOR(c *Config) { c.Strategy, c.POR = DFS, true }

// pinnedSearches span the explorer's options: both strategies, sleep
// sets, quiet steps, symmetry, faults, synchronous timing, a set network
// and FIFO channels, liveness in cycles, and violations found.
var pinnedSearches = []pinned{
	{"2pc-3rm-bfs", "commit", "two-phase-commit", 4, nil, nil,
		"states 288 transitions 1601 quiet 0 terminal 0 cut 0 depth 10 exhausted true unknown 0", false},
	{"2pc-3rm-dfs", "commit", "two-phase-commit", 4, nil, func(c *Config) { c.Strategy = DFS },
		"states 288 transitions 1601 quiet 777 terminal 0 cut 0 depth 10 exhausted true unknown 0", false},
	{"2pc-5rm-dfs-por", "commit", "two-phase-commit", 6, nil, dfsPOR,
		"states 8832 transitions 35122 quiet 22106 terminal 0 cut 0 depth 16 exhausted true unknown 0", false},
	{"2pc-5rm-bfs", "commit", "two-phase-commit", 6, nil, nil,
		"states 8832 transitions 84225 quiet 0 terminal 0 cut 0 depth 16 exhausted true unknown 0", false},
	{"2pc-5rm-symmetry", "commit", "two-phase-commit", 6, nil, func(c *Config) { dfsPOR(c); c.Symmetry = true },
		"states 314 transitions 1773 quiet 0 terminal 0 cut 0 depth 16 exhausted true unknown 0", false},
	{"2pc-5rm-symmetry-faults", "commit", "two-phase-commit", 6, nil, func(c *Config) {
		dfsPOR(c)
		c.Symmetry, c.Crashes, c.Losses = true, 1, 1
	}, "states 4950 transitions 68458 quiet 0 terminal 2 cut 0 depth 25 exhausted true unknown 0", false},
	{"2pc-4rm-faults", "commit", "two-phase-commit", 5, nil, func(c *Config) { dfsPOR(c); c.Crashes, c.Losses, c.Dups = 1, 1, 1 },
		"states 68691 transitions 948793 quiet 376680 terminal 9 cut 0 depth 23 exhausted true unknown 0", true},
	{"2pc-7rm-dfs-por", "commit", "two-phase-commit", 8, nil, dfsPOR,
		"states 296448 transitions 1366370 quiet 922195 terminal 0 cut 0 depth 22 exhausted true unknown 0", true},
	{"1pc", "commit", "one-phase-commit", 3, nil, func(c *Config) { c.Checks = []string{"commit-consistency"}; c.Safety = c.Checks },
		"states 36 transitions 63 quiet 0 terminal 0 cut 0 depth 2 exhausted false unknown 0; commit-consistency broken (terminal false, cycle 0) by fire/2 fire/4 fire/8", false},
	{"1pc-dfs-por", "commit", "one-phase-commit", 4, nil, func(c *Config) {
		dfsPOR(c)
		c.Checks = []string{"commit-consistency"}
		c.Safety = c.Checks
	}, "states 78 transitions 331 quiet 178 terminal 0 cut 0 depth 7 exhausted false unknown 0; commit-consistency broken (terminal false, cycle 0) by fire/2 fire/3 fire/5 fire/8 fire/9", false},
	{"ra-3-dfs-por", "mutex", "ricart-agrawala", 3, nil, dfsPOR,
		"states 37617 transitions 48835 quiet 0 terminal 1188 cut 0 depth 18 exhausted true unknown 0", true},
	{"ra-2-bfs", "mutex", "ricart-agrawala", 2, nil, nil,
		"states 47 transitions 55 quiet 0 terminal 6 cut 0 depth 8 exhausted true unknown 0", false},
	{"ra-2-faults", "mutex", "ricart-agrawala", 2, nil, func(c *Config) { c.Crashes, c.Losses = 1, 1 },
		"states 82 transitions 126 quiet 0 terminal 1 cut 0 depth 4 exhausted false unknown 0; ME2 broken (terminal true, cycle 0) by fire/1 fire/3 fire/4 fire/5", false},
	{"ra-2-faults-dfs", "mutex", "ricart-agrawala", 2, nil, func(c *Config) {
		dfsPOR(c)
		c.Crashes, c.Losses, c.Dups = 1, 1, 1
		c.Checks, c.Safety = []string{"ME1"}, []string{"ME1"}
	}, "states 2304 transitions 4957 quiet 0 terminal 118 cut 0 depth 11 exhausted true unknown 0", false},
	{"ra-2-dups", "mutex", "ricart-agrawala", 2, nil, func(c *Config) { c.Dups = 1 },
		"states 571 transitions 841 quiet 0 terminal 58 cut 0 depth 10 exhausted true unknown 0", false},
	{"ra-2-cycles", "mutex", "ricart-agrawala", 2, nil, func(c *Config) { c.Cycles = true },
		"states 47 transitions 55 quiet 0 terminal 6 cut 0 depth 8 exhausted true unknown 0", false},
	{"maekawa-3-dfs-por", "mutex", "maekawa", 3, nil, dfsPOR,
		"states 6044 transitions 10313 quiet 0 terminal 100 cut 0 depth 24 exhausted true unknown 0", false},
	{"maekawa-deadlock", "mutex", "maekawa", 4, []string{"0:acquire", "1:acquire", "2:acquire"}, func(c *Config) { c.Checks = []string{"ME2"} },
		"states 2094 transitions 5778 quiet 0 terminal 1 cut 0 depth 10 exhausted false unknown 0; ME2 broken (terminal true, cycle 0) by fire/1 fire/2 fire/3 fire/4 fire/5 fire/6 fire/7 fire/8 fire/9 fire/10", false},
	{"ra-jr-me3", "mutex", "ricart-agrawala-jr", 3, []string{"0:acquire", "1:acquire", "0:acquire"}, func(c *Config) {
		c.Checks, c.Safety = []string{"ME3"}, []string{"ME3"}
	}, "states 239 transitions 434 quiet 0 terminal 0 cut 0 depth 7 exhausted false unknown 0; ME3 broken (terminal false, cycle 0) by fire/1 fire/2 fire/3 fire/4 fire/7 fire/8 fire/9 fire/10", false},
	{"suzuki-kasami-3", "mutex", "suzuki-kasami", 3, nil, dfsPOR,
		"states 1103 transitions 1873 quiet 0 terminal 10 cut 0 depth 15 exhausted true unknown 0", false},
	{"token-ring-3", "mutex", "token-ring", 3, nil, func(c *Config) { c.MaxStates = 3000 },
		"states 3000 transitions 8920 quiet 0 terminal 0 cut 0 depth 10 exhausted false unknown 0", false},
	{"bully-async-dfs", "election", "bully", 3, nil, func(c *Config) { c.Timing, c.Strategy, c.POR, c.MaxStates = Async, DFS, true, 100_000 },
		"states 29 transitions 28 quiet 0 terminal 1 cut 0 depth 28 exhausted false unknown 0; E1 broken (terminal true, cycle 0) by fire/1 fire/2 fire/3 fire/4 fire/5 fire/6 fire/7 fire/8 fire/9 fire/10 fire/11 fire/12 fire/13 fire/14 fire/15 fire/16 fire/17 fire/18 fire/21 fire/22 fire/23 fire/24 fire/25 fire/26 fire/27 fire/28 fire/29 fire/30", false},
	{"bully-2-dfs-por", "election", "bully", 2, nil, dfsPOR,
		"states 10 transitions 11 quiet 0 terminal 2 cut 0 depth 5 exhausted false unknown 0; E1 broken (terminal true, cycle 0) by fire/1 fire/3 fire/5 fire/6 fire/4", false},
	{"flooding-3", "election", "flooding", 3, nil, dfsPOR,
		"states 853 transitions 1204 quiet 0 terminal 1 cut 0 depth 19 exhausted true unknown 0", false},
	{"cmh-or-2", "deadlock", "cmh-or", 2, nil, nil,
		"states 207 transitions 292 quiet 0 terminal 14 cut 0 depth 18 exhausted true unknown 44", false},
}

// outcome is what a search found: its counts, its verdict and the
// counterexample's schedule.
func outcome(r *Result) string {
	s := fmt.Sprintf("states %d transitions %d quiet %d terminal %d cut %d depth %d exhausted %v unknown %d",
		r.States, r.Transitions, r.Quiet, r.Terminal, r.CutOff, r.MaxDepth, r.Exhausted, r.Unknown)
	if v := r.Violation; v != nil {
		s += fmt.Sprintf("; %s broken (terminal %v, cycle %d) by", v.Check.Name, v.Terminal, v.Cycle)
		for _, st := range v.Schedule.Steps {
			s += fmt.Sprintf(" %s/%d", st.Act, st.Seq)
		}
	}
	return s
}

// The explorer finds, on every pinned search, the states, transitions,
// verdicts and counterexamples' lengths it found before its speed was
// worked on
// (counterexamples as schedules: act/Seq).
func TestPinnedSearches(t *testing.T) {
	for _, p := range pinnedSearches {
		if p.slow && (raceEnabled || testing.Short()) {
			continue
		}
		cfg := setup(t, p.family, p.algo, p.nodes, p.inputs)
		if p.tweak != nil {
			p.tweak(&cfg)
		}
		if got := outcome(explore(t, cfg)); got != p.want {
			t.Errorf("%s:\n got %s\nwant %s", p.name, got, p.want)
		}
	}
}
