package explore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cohort-go/cohort/proc"
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
	e.seen.free()
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

// A sleep set stored by one member of an orbit names the same steps to
// another. Two runs of two-phase commit, the second taking each step of
// the first with the RMs renamed, meet one representative at every step,
// and their steps renamed to it are its steps (the same labels). A sleep
// set the first stores, read back by the second with a random set of its
// steps, prunes exactly when the stored steps, renamed, are among those
// read, renamed, and otherwise leaves the steps read that were stored.
// (Renamed to the representative, a step of either run may be another
// one's image under a symmetry of the state itself — all RMs alike at
// the start — which reaches the same orbits.) Ranked among each run's own
// labels, the stored bits named other steps: read askew, this fails at
// the first state whose RMs differ.
func TestSleepSetNamesTheSameStepsAcrossAnOrbit(t *testing.T) {
	cfg := setup(t, "commit", "two-phase-commit", 5, nil)
	cfg.Symmetry, cfg.SetNetwork, cfg.Losses = true, false, 1
	rng := rand.New(rand.NewPCG(3, 4))
	checked, pruned := 0, 0
	for walk := 0; walk < 300; walk++ {
		h := newHasher()
		a, err := cfg.newRun(h)
		if err != nil {
			t.Fatal(err)
		}
		b, err := cfg.newRun(h)
		if err != nil {
			t.Fatal(err)
		}
		perm := []proc.ID{0, 1, 2, 3, 4}
		rng.Shuffle(4, func(i, j int) { perm[i+1], perm[j+1] = perm[j+1], perm[i+1] })
		for step := 0; step < 20; step++ {
			fa, fb := a.fingerprint(), b.fingerprint()
			if fa != fb {
				t.Fatalf("walk %d step %d: renamed runs with two representatives", walk, step)
			}
			chsA, labA := a.enabled(nil, nil, true)
			chsB, labB := b.enabled(nil, nil, true)
			if len(chsA) == 0 {
				break
			}
			// twin[i]: the step of b that is a's i-th renamed.
			canonA := a.perm
			a.perm = perm
			renamed := a.canonical(chsA, labA, nil)
			a.perm = canonA
			twin := make([]int, len(chsA))
			for i, l := range renamed {
				twin[i] = slices.IndexFunc(labB, func(m label) bool { return m.id == l.id })
				if twin[i] < 0 {
					t.Fatalf("walk %d step %d: a step of one run has no twin in the renamed run", walk, step)
				}
			}
			repA, repB := a.canonical(chsA, labA, nil), b.canonical(chsB, labB, nil)
			if !sameLabels(repA, repB) {
				t.Fatalf("walk %d step %d: the runs' steps renamed to their representative differ:\n%v\n%v", walk, step, repA, repB)
			}
			var stored, read []label
			want := map[label]bool{} // the steps read that were stored
			inRead := map[label]bool{}
			for _, l := range labB {
				if rng.IntN(2) == 0 {
					read, inRead[repB[slices.Index(labB, l)]] = append(read, l), true
				}
			}
			subset := true
			for i, l := range labA {
				if rng.IntN(3) == 0 {
					stored = append(stored, l)
					if !inRead[repA[i]] {
						subset = false
					}
				}
			}
			for _, l := range read {
				for _, s := range stored {
					if repA[slices.Index(labA, s)] == repB[slices.Index(labB, l)] {
						want[l] = true
					}
				}
			}
			if len(stored) == 0 {
				continue
			}
			e := &explorer{seen: newFPSet(true), sleeps: map[uint64][]label{}}
			_, slot := e.seen.Add(fa)
			var lvA, lvB level
			ranked, key, _ := lvA.inFrame(a, chsA, labA, stored, true)
			e.storeSleep(&lvA, ranked, key, fa, slot)
			ranked, key, from := lvB.inFrame(b, chsB, labB, read, true)
			out, ok := e.againSleep(&lvB, ranked, key, from, fb, slot)
			if ok != subset {
				t.Fatalf("walk %d step %d: stored %v, read %v: pruned %v, want %v", walk, step, stored, read, ok, subset)
			}
			if !ok && (len(out) != len(want) || slices.ContainsFunc(out, func(l label) bool { return !want[l] })) {
				t.Fatalf("walk %d step %d: explored again with %v, want %v", walk, step, out, want)
			}
			checked++
			if ok {
				pruned++
			}
			k := rng.IntN(len(chsA))
			if err := a.apply(chsA[k]); err != nil {
				t.Fatal(err)
			}
			if err := b.apply(chsB[twin[k]]); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("%d sleep sets read across an orbit, %d of them pruning", checked, pruned)
}

func sameLabels(a, b []label) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	less := func(x, y label) int {
		switch {
		case x.id != y.id:
			if x.id < y.id {
				return -1
			}
			return 1
		}
		return int(x.node - y.node)
	}
	slices.SortFunc(a, less)
	slices.SortFunc(b, less)
	return slices.Equal(a, b)
}
