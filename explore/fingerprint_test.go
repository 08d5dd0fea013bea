package explore

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

// The incremental fingerprint (a process rehashed only when a step
// happened at it, an event hashed once when it is pushed) equals the one
// computed from scratch, in every state of random walks over models with
// timers, FIFO channels, a set network, crashes, losses, duplicates and
// synchronous time, in runs stepped and in runs forked; and the pending
// events stay in Seq order, which choices relies on.
func TestIncrementalFingerprintIsFull(t *testing.T) {
	for _, m := range []walkModel{
		{"2pc", "commit", "two-phase-commit", 4, nil, nil},
		{"ra-faults", "mutex", "ricart-agrawala", 3, nil, func(c *Config) { c.Crashes, c.Losses, c.Dups = 1, 1, 1 }},
		{"maekawa", "mutex", "maekawa", 4, []string{"0:acquire", "1:acquire", "2:acquire"}, nil},
		{"token-ring", "mutex", "token-ring", 3, nil, nil},
		{"bully-sync", "election", "bully", 3, nil, func(c *Config) { c.Crashes = 1 }},
		{"bully-async", "election", "bully", 3, nil, func(c *Config) { c.Timing = Async }},
		{"ra-cycles", "mutex", "ricart-agrawala", 2, nil, func(c *Config) { c.Cycles = true }},
	} {
		t.Run(m.name, func(t *testing.T) {
			cfg := setup(t, m.family, m.algo, m.nodes, m.inputs)
			if m.tweak != nil {
				m.tweak(&cfg)
			}
			rng := rand.New(rand.NewPCG(7, 11))
			cp := newCopier()
			states := 0
			for walk := 0; walk < 100; walk++ {
				r, err := cfg.newRun(newHasher())
				if err != nil {
					t.Fatal(err)
				}
				for step := 0; step < 40; step++ {
					if fast, full := r.fingerprint(), r.fingerprintFull(nil); fast != full {
						t.Fatalf("walk %d step %d: incremental %x, from scratch %x", walk, step, fast, full)
					}
					states++
					if !slices.IsSortedFunc(r.q.keys, func(a, b sim.Key) int { return cmp.Compare(a.Seq, b.Seq) }) {
						t.Fatalf("walk %d step %d: pending events out of Seq order", walk, step)
					}
					chs := r.choices(nil)
					if len(chs) == 0 {
						break
					}
					if rng.IntN(3) == 0 {
						if r, err = r.fork(cp); err != nil {
							t.Fatal(err)
						}
					}
					if err := r.apply(chs[rng.IntN(len(chs))]); err != nil {
						t.Fatal(err)
					}
				}
			}
			t.Logf("%d states compared", states)
		})
	}
}

// Checking safety incrementally (watch.go) finds what running every
// safety checker on every new state finds: the same states, verdicts and
// counterexamples, on models that hold and models that break ME3,
// commit consistency and (with crashes, losses and duplicates) the
// message checkers' bookkeeping.
func TestIncrementalSafetyMatchesFull(t *testing.T) {
	for _, m := range []walkModel{
		{"ra-faults", "mutex", "ricart-agrawala", 2, nil, func(c *Config) { c.Crashes, c.Losses, c.Dups = 1, 1, 1 }},
		{"ra-dfs-por", "mutex", "ricart-agrawala", 3, nil, func(c *Config) { c.Strategy, c.POR = DFS, true }},
		{"ra-jr", "mutex", "ricart-agrawala-jr", 3, []string{"0:acquire", "1:acquire", "0:acquire"}, func(c *Config) { c.Checks, c.Safety = []string{"ME3"}, []string{"ME3"} }},
		{"ra-jr-dfs", "mutex", "ricart-agrawala-jr", 3, []string{"0:acquire", "1:acquire", "0:acquire"}, func(c *Config) {
			c.Checks, c.Safety, c.Strategy, c.POR = []string{"ME3"}, []string{"ME3"}, DFS, true
		}},
		{"1pc", "commit", "one-phase-commit", 3, nil, func(c *Config) { c.Checks = []string{"commit-consistency"}; c.Safety = c.Checks }},
		{"2pc", "commit", "two-phase-commit", 4, nil, nil},
		{"lamport-dups", "mutex", "lamport", 2, nil, func(c *Config) { c.Dups, c.Losses = 1, 1 }},
		{"token-ring", "mutex", "token-ring", 3, nil, func(c *Config) { c.MaxStates = 3000 }},
		{"cmh-or", "deadlock", "cmh-or", 3, nil, nil},
		{"cmh-or-phantom-dfs", "deadlock", "cmh-or", 3, []string{"0:await 1 2", "1:await 2", "2:await 0"}, func(c *Config) {
			c.Checks = []string{"or-deadlock-detected", "or-deadlock-no-phantom"}
			c.Safety, c.Strategy, c.POR, c.MaxStates = c.Checks, DFS, true, 20000
		}},
		{"cmh", "deadlock", "cmh", 3, []string{"0:begin 1 2", "1:begin 2 0", "2:begin 0 1"}, func(c *Config) {
			c.Checks = []string{"deadlock-detected", "deadlock-no-phantom"}
			c.Safety, c.MaxStates = c.Checks, 8000
		}},
		{"timeout-phantom", "deadlock", "timeout", 3, []string{"0:begin 1", "1:begin 2", "2:begin 0 1"}, func(c *Config) {
			c.Checks = []string{"deadlock-detected", "deadlock-no-phantom"}
			c.Safety = c.Checks
		}},
	} {
		t.Run(m.name, func(t *testing.T) {
			if testing.Short() && m.name == "ra-dfs-por" {
				t.Skip("long")
			}
			var rs [2]*Result
			for i, full := range []bool{true, false} {
				cfg := setup(t, m.family, m.algo, m.nodes, m.inputs)
				if m.tweak != nil {
					m.tweak(&cfg)
				}
				fullChecks = full
				rs[i] = explore(t, cfg)
				fullChecks = false
			}
			if a, b := summary(rs[0]), summary(rs[1]); a != b {
				t.Fatalf("full:        %s\nincremental: %s", a, b)
			}
			t.Log(summary(rs[1]))
		})
	}
}

// Backtracking (save a state, step on, restore it) brings a run back to
// the very state it saved: after random walks that save and restore at
// random, the run's fingerprint, trace, pending events and message table
// equal a fresh replay of its path, and stepping on from a restored state
// changes nothing that an earlier saved state shares (processes,
// payloads and disks are copied on write), nor does stepping a run forked
// off it.
func TestRestoreIsReplay(t *testing.T) {
	for _, m := range []walkModel{
		{"2pc", "commit", "two-phase-commit", 4, nil, nil},
		{"ra-faults", "mutex", "ricart-agrawala", 3, nil, func(c *Config) { c.Crashes, c.Losses, c.Dups = 1, 1, 1 }},
		{"maekawa", "mutex", "maekawa", 4, []string{"0:acquire", "1:acquire", "2:acquire"}, nil},
		{"suzuki-kasami", "mutex", "suzuki-kasami", 3, nil, func(c *Config) { c.Crashes = 1 }},
		{"bully-sync", "election", "bully", 3, nil, func(c *Config) { c.Crashes = 1 }},
		{"bully-async", "election", "bully", 3, nil, func(c *Config) { c.Timing = Async; c.Dups = 1 }},
	} {
		t.Run(m.name, func(t *testing.T) {
			cfg := setup(t, m.family, m.algo, m.nodes, m.inputs)
			if m.tweak != nil {
				m.tweak(&cfg)
			}
			cfg.watchers = watchersOf(cfg.Safety)
			rng := rand.New(rand.NewPCG(3, 5))
			e := &explorer{cfg: &cfg, h: newHasher(), res: &Result{}, cp: newCopier()}
			restored := 0
			for walk := 0; walk < 60; walk++ {
				r, err := cfg.newRun(e.h)
				if err != nil {
					t.Fatal(err)
				}
				if err := r.copyable(e.cp, &saved{}); err != nil {
					t.Fatal(err)
				}
				r.cp = e.cp
				r.shareAll()
				type mark struct {
					sv   *saved
					path []choice
					fp   uint64
				}
				var stack []mark
				var path []choice
				for step := 0; step < 60; step++ {
					switch x := rng.IntN(6); {
					case x == 2:
						// Fork off a run and step it (as breadth first
						// holds a new state): r's trace is frozen, and a
						// restore must cut back into frozen segments.
						f, err := r.fork(e.cp)
						if err != nil {
							t.Fatal(err)
						}
						if chs := f.choices(nil); len(chs) > 0 {
							if err := f.apply(chs[rng.IntN(len(chs))]); err != nil {
								t.Fatal(err)
							}
						}
					case x == 0 || (x == 1 && len(stack) > 0):
						if x == 0 {
							sv := &saved{}
							if err := r.save(sv); err != nil {
								t.Fatal(err)
							}
							stack = append(stack, mark{sv, slices.Clone(path), r.fingerprintFull(nil)})
							break
						}
						top := stack[rng.IntN(len(stack))]
						for len(stack) > 0 && stack[len(stack)-1].sv != top.sv {
							stack = stack[:len(stack)-1]
						}
						r.restore(top.sv)
						path = slices.Clone(top.path)
						restored++
						if fp := r.fingerprintFull(nil); fp != top.fp {
							t.Fatalf("walk %d step %d: restored %x, saved %x", walk, step, fp, top.fp)
						}
						want, err := e.replay(path)
						if err != nil {
							t.Fatal(err)
						}
						if a, b := r.fingerprint(), want.fingerprintFull(nil); a != b {
							t.Fatalf("walk %d step %d: restored %x, replayed %x", walk, step, a, b)
						}
						if a, b := r.rec.Trace().Events, want.rec.Trace().Events; !slices.EqualFunc(a, b, sameEvent) {
							t.Fatalf("walk %d step %d: restored trace of %d events, replayed %d", walk, step, len(a), len(b))
						}
						if !slices.Equal(r.q.keys, want.q.keys) || !slices.Equal(r.w.msgs, want.w.msgs) || r.w.dirty != want.w.dirty || r.w.decided != want.w.decided || len(r.q.known) != len(want.q.known) ||
							fmt.Sprint(r.w.mx) != fmt.Sprint(want.w.mx) {
							t.Fatalf("walk %d step %d: restored queue or message table differ from the replay", walk, step)
						}
					}
					chs := r.choices(nil)
					if len(chs) == 0 {
						break
					}
					ch := chs[rng.IntN(len(chs))]
					if err := r.apply(ch); err != nil {
						t.Fatal(err)
					}
					path = append(path, ch)
				}
			}
			if restored < 50 {
				t.Fatalf("%d restores: the walks hardly backtracked", restored)
			}
			t.Logf("%d restores compared", restored)
		})
	}
}

func sameEvent(a, b trace.Event) bool {
	return a.Index == b.Index && a.Time == b.Time && a.Node == b.Node && a.Kind == b.Kind && a.Peer == b.Peer &&
		a.Msg == b.Msg && a.Type == b.Type && a.Label == b.Label && a.Lamport == b.Lamport && string(a.Data) == string(b.Data)
}

// walkModel is a model the random-walk tests explore: an algorithm of a
// family at a size, its inputs (nil: the family's usual ones) and a
// change to the explorer's Config (faults, timing).
type walkModel struct {
	name   string
	family string
	algo   string
	nodes  int
	inputs []string
	tweak  func(*Config)
}
