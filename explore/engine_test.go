package explore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
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
		{"ra-faults-dfs", "mutex", "ricart-agrawala", 2, nil, func(c *Config) {
			c.Crashes, c.Losses, c.Dups, c.Strategy, c.POR = 1, 1, 1, DFS, true
			c.Checks, c.Safety = []string{"ME1"}, []string{"ME1"}
		}},
		{"ra-dups", "mutex", "ricart-agrawala", 2, nil, func(c *Config) { c.Dups = 1 }},
		{"maekawa", "mutex", "maekawa", 4, []string{"0:acquire", "1:acquire", "2:acquire"}, func(c *Config) { c.Checks = []string{"ME2"} }},
		{"ra-jr", "mutex", "ricart-agrawala-jr", 3, []string{"0:acquire", "1:acquire", "0:acquire"}, func(c *Config) { c.Checks, c.Safety = []string{"ME3"}, []string{"ME3"} }},
		{"bully-async", "election", "bully", 3, nil, func(c *Config) { c.Timing, c.Strategy, c.POR, c.MaxStates = Async, DFS, true, 100_000 }},
		{"token-ring", "mutex", "token-ring", 3, nil, func(c *Config) { c.MaxStates = 3000 }},
	}
	if testing.Short() || raceEnabled {
		models = models[:5]
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
			want := "fork"
			if cfg := setup(t, m.family, m.algo, m.nodes, m.inputs); m.tweak != nil {
				if m.tweak(&cfg); cfg.Strategy == DFS {
					want = "undo" // backtracking
				}
			}
			if nu.Engine != want {
				t.Fatalf("engine %q, want %s", nu.Engine, want)
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

// cpuTime is the process's user and system time so far.
func cpuTime() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
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

// Breadth first holds the runs of at most heldRuns states yet to expand
// and reaches the others by replaying their paths; a replayed run's
// steps are then taken by saving and restoring it, as a held run's are.
// Holding few runs, or none once the heap is past heldHeap, finds what
// holding many does.
func TestBreadthFirstBeyondItsHeldRuns(t *testing.T) {
	defer func(n int, b uint64) { heldRuns, heldHeap = n, b }(heldRuns, heldHeap)
	for _, m := range []walkModel{
		{"ra-faults", "mutex", "ricart-agrawala", 2, nil, func(c *Config) { c.Crashes, c.Losses = 1, 1 }},
		{"maekawa", "mutex", "maekawa", 4, []string{"0:acquire", "1:acquire", "2:acquire"}, func(c *Config) { c.Checks = []string{"ME2"} }},
	} {
		var rs [3]string
		for i, bound := range []struct {
			runs int
			heap uint64
		}{{1 << 16, 1 << 30}, {4, 1 << 30}, {1 << 16, 1}} { // many; 4 runs; a heap always "full"
			heldRuns, heldHeap = bound.runs, bound.heap
			cfg := setup(t, m.family, m.algo, m.nodes, m.inputs)
			m.tweak(&cfg)
			rs[i] = summary(explore(t, cfg))
		}
		if rs[0] != rs[1] || rs[0] != rs[2] {
			t.Errorf("%s:\nholding many:      %s\nholding 4:         %s\nheap past its bound: %s", m.name, rs[0], rs[1], rs[2])
		}
	}
}

// BenchmarkEngines explores the same models with the replaying engine and
// the backtracking one (undo), side by side, and reports unique states per second and
// the search's bytes per state (two-phase commit with 7 RMs, 296,448
// states, with the backtracking engine only).
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
		{"ra-3-bfs", "mutex", "ricart-agrawala", 3, 37617, func(c *Config) { c.Strategy = BFS }},
		{"cmh-or-3", "deadlock", "cmh-or", 3, 6114, func(c *Config) { c.Strategy = BFS }},
	} {
		for _, replay := range []bool{true, false} {
			if replay && m.states == 0 {
				continue // 296,448 states: too long to replay
			}
			engine := "undo" // depth first backtracks
			if strings.HasSuffix(m.name, "-bfs") || m.name == "cmh-or-3" {
				engine = "fork" // breadth first forks the states it holds
			}
			if replay {
				engine = "replay"
			}
			b.Run(m.name+"/"+engine, func(b *testing.B) {
				var r *Result
				cpu0 := cpuTime()
				for i := 0; i < b.N; i++ {
					cfg := setup(b, m.family, m.algo, m.nodes, nil)
					m.tweak(&cfg)
					cfg.Replay = replay
					r = explore(b, cfg)
				}
				// On a shared machine the CPU time is steadier than the
				// wall clock.
				b.ReportMetric(float64(r.States)*float64(b.N)/(cpuTime()-cpu0).Seconds(), "states/cpu-s")
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

// With the resource managers interchangeable, two-phase commit's states
// fall into orbits under their renamings: 314 with 5 RMs (of 8,832
// states). Every strategy counts the same: the representative is
// canonical. (Stateright reports 665 for the same model with its symmetry
// reduction, whose representative — the RMs sorted by their own states,
// ties in index order — is not canonical, so its count depends on the
// search's order.)
func TestTwoPhaseCommitSymmetry(t *testing.T) {
	for _, c := range []struct {
		nodes int
		want  int64
	}{{4, 0}, {6, 314}} {
		var counts []int64
		for _, s := range []Strategy{BFS, DFS} {
			cfg := setup(t, "commit", "two-phase-commit", c.nodes, nil)
			cfg.Symmetry, cfg.Strategy, cfg.POR = true, s, s == DFS
			r := explore(t, cfg)
			counts = append(counts, r.States)
			if (c.want > 0 && r.States != c.want) || !r.Exhausted || r.Violation != nil {
				t.Errorf("%d RMs %v: %d states, exhausted %v, violation %v; want %d", c.nodes-1, s, r.States, r.Exhausted, r.Violation, c.want)
			}
		}
		if counts[0] != counts[1] {
			t.Errorf("%d RMs: bfs %d states, dfs %d", c.nodes-1, counts[0], counts[1])
		}
		t.Logf("%d RMs: %d orbits", c.nodes-1, counts[0])
	}
}

// Two states get the same representative exactly when a renaming of the
// RMs maps one to the other (their least fingerprints over every renaming
// agree), over the states of random walks.
func TestSymmetricFingerprintIsCanonical(t *testing.T) {
	cfg := setup(t, "commit", "two-phase-commit", 5, nil)
	cfg.Symmetry = true
	rng := rand.New(rand.NewPCG(1, 2))
	toOrbit, fromOrbit := map[uint64]uint64{}, map[uint64]uint64{}
	for walk := 0; walk < 200; walk++ {
		r, err := cfg.newRun(newHasher())
		if err != nil {
			t.Fatal(err)
		}
		for step := 0; step < 20; step++ {
			orbit := ^uint64(0)
			ids := slices.Clone(cfg.Symmetric)
			permute(ids, func(p []proc.ID) {
				perm := []proc.ID{0, 1, 2, 3, 4}
				for i, id := range cfg.Symmetric {
					perm[id] = p[i]
				}
				orbit = min(orbit, r.fingerprintWith(perm))
			})
			rep := r.fingerprint()
			if o, ok := toOrbit[rep]; ok && o != orbit {
				t.Fatalf("walk %d step %d: states of two orbits share a representative", walk, step)
			}
			if x, ok := fromOrbit[orbit]; ok && x != rep {
				t.Fatalf("walk %d step %d: states of one orbit have two representatives", walk, step)
			}
			toOrbit[rep], fromOrbit[orbit] = orbit, rep
			chs := r.choices(nil)
			if len(chs) == 0 {
				break
			}
			if err := r.apply(chs[rng.IntN(len(chs))]); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("%d orbits met", len(toOrbit))
}

func permute(a []proc.ID, f func([]proc.ID)) {
	var rec func(k int)
	rec = func(k int) {
		if k == len(a) {
			f(a)
			return
		}
		for i := k; i < len(a); i++ {
			a[k], a[i] = a[i], a[k]
			rec(k + 1)
			a[k], a[i] = a[i], a[k]
		}
	}
	rec(0)
}
