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

// copyCounted wraps a process that is a Recycler and counts the copies
// made afresh (Clone), not into the storage of an earlier one.
type copyCounted struct{ proc.Process }

// freshCopies counts copyCounted's Clone calls.
var freshCopies int

func (c *copyCounted) Clone() proc.Process {
	freshCopies++
	return &copyCounted{c.Process.(Cloner).Clone()}
}

func (c *copyCounted) CloneInto(dst proc.Process) proc.Process {
	d, ok := dst.(*copyCounted)
	if !ok {
		return nil
	}
	if d.Process = c.Process.(Recycler).CloneInto(d.Process); d.Process == nil {
		return nil
	}
	return d
}

// Backtracking copies a process before it steps, into the storage of a
// copy a restore dropped: a copy is made afresh only when more are held
// at once than ever before, not once per step. Every copy made below a
// saved state is dropped when the search restores it, those a deeper
// saved state held too.
func TestBacktrackingReusesEveryDroppedCopy(t *testing.T) {
	cfg := setup(t, "commit", "two-phase-commit", 5, nil)
	cfg.Strategy, cfg.POR = DFS, true
	newProcess := cfg.Algo.New
	cfg.Algo.New = func(id proc.ID, n int) proc.Process { return &copyCounted{newProcess(id, n)} }
	freshCopies = 0
	r := explore(t, cfg)
	if r.Engine != "undo" || r.States != 1568 {
		t.Fatalf("engine %q, %d states; want undo, 1568", r.Engine, r.States)
	}
	// At most one copy per process and saved depth is held at once
	// (and the copier's own, once per process, to check it can copy).
	if most := cfg.Nodes * (r.MaxDepth + 2); freshCopies > most {
		t.Errorf("%d copies made afresh for %d steps; want at most %d", freshCopies, r.Transitions-r.Quiet, most)
	}
}
