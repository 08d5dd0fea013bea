package explore

import (
	"math/rand/v2"
	"testing"

	"github.com/cohort-go/cohort/proc"
)

// An algorithm's Clone (Cloner) is a deep copy: the copy hashes as the
// original does, and stays so while the original goes on — in every
// state of random walks. So is a Recycler's CloneInto, each into the
// copy it made a step before.
func TestClonersAreDeepCopies(t *testing.T) {
	for _, m := range []struct {
		family, algo string
		nodes        int
		tweak        func(*Config)
	}{
		{"commit", "two-phase-commit", 4, nil},
		{"mutex", "ricart-agrawala", 3, func(c *Config) { c.Crashes, c.Dups = 1, 1 }},
		{"mutex", "ricart-agrawala-jr", 3, nil},
		{"deadlock", "cmh-or", 3, nil},
		{"deadlock", "cmh", 3, nil},
	} {
		var inputs []string
		if m.algo == "cmh" {
			inputs = []string{"0:begin 1 2", "1:begin 2 0", "2:begin 0 1"}
		}
		cfg := setup(t, m.family, m.algo, m.nodes, inputs)
		if m.tweak != nil {
			m.tweak(&cfg)
		}
		rng := rand.New(rand.NewPCG(9, 9))
		h := newHasher()
		cloned, recycled := 0, 0
		for walk := 0; walk < 50; walk++ {
			r, err := cfg.newRun(h)
			if err != nil {
				t.Fatal(err)
			}
			type copyOf struct {
				p    proc.Process
				hash uint64
			}
			var copies []copyOf
			spares := make([]copyOf, m.nodes) // the last CloneInto's, per process
			for step := 0; step < 30; step++ {
				for _, c := range append(copies, spares...) {
					if c.p != nil && h.of(c.p) != c.hash {
						t.Fatalf("%s: a clone changed as its original went on", m.algo)
					}
				}
				for id := 0; id < m.nodes; id++ {
					p := r.s.Process(proc.ID(id))
					if p == nil {
						continue // crashed
					}
					cl, ok := p.(Cloner)
					if !ok || cl.Clone() == nil {
						t.Fatalf("%s: no Clone", m.algo)
					}
					c := cl.Clone()
					if h.of(c) != h.of(p) {
						t.Fatalf("%s walk %d step %d: p%d's clone differs from it", m.algo, walk, step, id)
					}
					copies = append(copies, copyOf{c, h.of(c)})
					cloned++
					rc, ok := p.(Recycler)
					if !ok {
						if m.algo == "two-phase-commit" || m.algo == "ricart-agrawala" {
							t.Fatalf("%s: no CloneInto", m.algo)
						}
						continue
					}
					dst := spares[id].p
					if dst == nil {
						dst = cl.Clone()
					}
					if c = rc.CloneInto(dst); c == nil {
						t.Fatalf("%s: CloneInto refused a copy of its own", m.algo)
					}
					if h.of(c) != h.of(p) {
						t.Fatalf("%s walk %d step %d: p%d's copy into an old one differs from it", m.algo, walk, step, id)
					}
					spares[id] = copyOf{c, h.of(c)}
					recycled++
				}
				chs := r.choices(nil)
				if len(chs) == 0 {
					break
				}
				if err := r.apply(chs[rng.IntN(len(chs))]); err != nil {
					t.Fatal(err)
				}
			}
		}
		t.Logf("%s: %d clones, %d into old ones", m.algo, cloned, recycled)
	}
}
