package explore

import (
	"math/rand/v2"
	"testing"

	"github.com/cohort-go/cohort/check"
)

// The requests the run follows (mutexWatch) never miss a violation: on
// random walks over algorithms that keep and that break ME1 and ME3,
// with crashes, losses and duplicates, every step after which the
// checker finds a violation it did not find before marks that checker.
// And they spare most enters the checkers: on algorithms that keep both,
// few steps mark them.
func TestMutexWatchMarksEveryBreak(t *testing.T) {
	for _, m := range []walkModel{
		{"ra-jr", "mutex", "ricart-agrawala-jr", 3, []string{"0:acquire", "1:acquire", "0:acquire"}, nil},
		{"decentralized", "mutex", "decentralized", 3, nil, func(c *Config) { c.Crashes = 1 }},
		{"central", "mutex", "central", 3, []string{"0:acquire", "1:acquire", "2:acquire", "1:acquire"}, func(c *Config) { c.Losses, c.Dups = 1, 1 }},
		{"maekawa", "mutex", "maekawa", 4, []string{"0:acquire", "1:acquire", "2:acquire", "3:acquire"}, nil},
		{"suzuki-kasami", "mutex", "suzuki-kasami", 3, nil, func(c *Config) { c.Crashes, c.Dups = 1, 1 }},
		{"ra", "mutex", "ricart-agrawala", 3, []string{"0:acquire", "1:acquire", "2:acquire", "0:acquire"}, func(c *Config) { c.Crashes, c.Losses = 1, 1 }},
	} {
		t.Run(m.name, func(t *testing.T) {
			cfg := setup(t, m.family, m.algo, m.nodes, m.inputs)
			if m.tweak != nil {
				m.tweak(&cfg)
			}
			cfg.Safety = []string{"ME1", "ME3"}
			cfg.watchers = watchersOf(cfg.Safety)
			rng := rand.New(rand.NewPCG(5, 8))
			steps, marked, broke := 0, 0, 0
			for walk := 0; walk < 600; walk++ {
				r, err := cfg.newRun(newHasher())
				if err != nil {
					t.Fatal(err)
				}
				r.w.dirty = 0
				var was [2]check.Status
				for step := 0; step < 50; step++ {
					chs := r.choices(nil)
					if len(chs) == 0 {
						break
					}
					if err := r.apply(chs[rng.IntN(len(chs))]); err != nil {
						t.Fatal(err)
					}
					steps++
					if r.w.dirty != 0 {
						marked++
					}
					results, err := check.Run(r.rec.Trace(), cfg.Safety...)
					if err != nil {
						t.Fatal(err)
					}
					for j, res := range results {
						if res.Status == check.Violated && was[j] != check.Violated {
							broke++
							if r.w.dirty&(1<<uint(j)) == 0 {
								t.Fatalf("walk %d step %d: %s broken (%s), not marked", walk, step, res.Name, res.Detail)
							}
						}
						was[j] = res.Status
					}
					r.w.dirty = 0
				}
			}
			t.Logf("%d steps, %d marked, %d breaks", steps, marked, broke)
			if m.name == "ra" && marked*10 > steps {
				t.Errorf("%d of %d steps marked: the watch spares few enters", marked, steps)
			}
		})
	}
}
