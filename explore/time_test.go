package explore

import (
	"math/rand/v2"
	"testing"
)

// Bully at 3 processes, in the synchronous model it assumes, with an
// Elect at p0: every state is explored and E1, E2 and agreement hold in
// all of them. (Keeping how late each overdue message is as state, the
// search did not end within a million states.)
func TestBullyExhausted(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("178,806 states")
	}
	cfg := setup(t, "election", "bully", 3, nil)
	cfg.Strategy, cfg.POR = DFS, true
	r := explore(t, cfg)
	if !r.Exhausted || r.Violation != nil {
		t.Fatalf("%s", summary(r))
	}
	t.Logf("%s, %d transitions, %v", summary(r), r.Transitions, r.Elapsed)
}

// Forgetting how late an overdue event is merges only states that behave
// alike: whenever random walks meet two states that differ only in
// lateness, they enable the same steps, and the same steps lead them to
// states that again differ only so, three steps deep.
func TestLatenessAbstractionIsBisimulation(t *testing.T) {
	for _, crashes := range []int{0, 1} {
		cfg := setup(t, "election", "bully", 3, nil)
		cfg.Crashes = crashes
		rng := rand.New(rand.NewPCG(5, uint64(crashes)))
		cp := newCopier()
		reps := map[uint64]*run{}
		exact := map[uint64]uint64{}
		pairs := 0
		for walk := 0; walk < 300; walk++ {
			r, err := cfg.newRun(newHasher())
			if err != nil {
				t.Fatal(err)
			}
			for step := 0; step < 30; step++ {
				a := r.fingerprint()
				exactLateness = true
				x := r.fingerprintFull(nil)
				exactLateness = false
				if rep, ok := reps[a]; !ok {
					reps[a], exact[a] = mustFork(t, r, cp), x
				} else if exact[a] != x {
					pairs++
					bisimilar(t, cp, rep, r, 3)
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
		if pairs == 0 {
			t.Fatalf("crashes %d: no two states that differ only in lateness met", crashes)
		}
		t.Logf("crashes %d: %d pairs of states differing only in lateness, bisimilar 3 steps deep", crashes, pairs)
	}
}

func mustFork(t *testing.T, r *run, cp *copier) *run {
	t.Helper()
	f, err := r.fork(cp)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// bisimilar fails t unless a and b enable steps with the same labels and
// each leads both to states with one fingerprint, depth steps deep.
func bisimilar(t *testing.T, cp *copier, a, b *run, depth int) {
	t.Helper()
	steps := func(r *run) map[uint64]choice {
		m := map[uint64]choice{}
		for _, ch := range r.choices(nil) {
			m[r.label(ch).id] = ch
		}
		return m
	}
	sa, sb := steps(a), steps(b)
	if len(sa) != len(sb) {
		t.Fatalf("states merged by lateness enable %d and %d steps", len(sa), len(sb))
	}
	for l, ca := range sa {
		cb, ok := sb[l]
		if !ok {
			t.Fatalf("a step enabled in one state merged by lateness is not in the other")
		}
		if depth == 0 {
			continue
		}
		na, nb := mustFork(t, a, cp), mustFork(t, b, cp)
		if err := na.apply(ca); err != nil {
			t.Fatal(err)
		}
		if err := nb.apply(cb); err != nil {
			t.Fatal(err)
		}
		if na.fingerprint() != nb.fingerprint() {
			t.Fatalf("one step leads states merged by lateness apart")
		}
		bisimilar(t, cp, na, nb, depth-1)
	}
}
