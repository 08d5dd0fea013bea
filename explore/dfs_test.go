package explore

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// A label's rank is how many of the state's labels have a smaller id,
// repeats counted: its position among the ids sorted, as a binary search
// finds it. Labels with one id share a rank, and distinct ids get
// distinct ranks, below the number of labels. Ranking two ids in one pass
// (rank2) gives each the rank and places that ranking it alone does.
func TestRankIsThePositionAmongSortedIDs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 1000; trial++ {
		n := rng.IntN(33)
		var labels []label
		for i := 0; i < n; i++ {
			id := rng.Uint64N(24) // small ids: repeats are common
			if rng.IntN(4) == 0 {
				id = rng.Uint64()
			}
			labels = append(labels, label{id: id, node: int32(rng.IntN(4))})
		}
		var ids []uint64
		for _, l := range labels {
			ids = append(ids, l.id)
		}
		slices.Sort(ids)
		for k := 0; k < 40; k++ {
			id := rng.Uint64N(26)
			if k%10 == 0 && n > 0 {
				id = labels[rng.IntN(n)].id
			}
			wantRank, wantFound := slices.BinarySearch(ids, id)
			if got, found := rank(labels, id); got != wantRank || found != wantFound {
				t.Fatalf("rank(%v, %d) = %d, %v; want %d, %v", labels, id, got, found, wantRank, wantFound)
			}
			// rankAt, and rank2 for this id and another, agree: the
			// rank, and the places of the labels with the id.
			var wantAt uint64
			for j, l := range labels {
				if l.id == id {
					wantAt |= 1 << j
				}
			}
			if got, at := rankAt(labels, id); got != wantRank || at != wantAt {
				t.Fatalf("rankAt(%v, %d) = %d, %b; want %d, %b", labels, id, got, at, wantRank, wantAt)
			}
			other := rng.Uint64N(26)
			otherRank, otherAt := rankAt(labels, other)
			if na, wa, nb, wb := rank2(labels, id, other); na != wantRank || wa != wantAt || nb != otherRank || wb != otherAt {
				t.Fatalf("rank2(%v, %d, %d) = %d, %b, %d, %b; want %d, %b, %d, %b", labels, id, other, na, wa, nb, wb, wantRank, wantAt, otherRank, otherAt)
			}
		}
	}
}

// Depth first with sleep sets takes exactly the steps it took when a
// sleep set's ranks were found by sorting and every state's labels were
// listed after its steps: the same states and the same transitions, so
// the same pruning. With symmetry a sleep set's bits rank the labels of
// the state's representative (its steps renamed as the representative
// has them), so any member of an orbit reads them as the one that stored
// them meant them. (Ranked among a member's own labels, they named other
// steps in another member: the search took 1,766 and 3,064 transitions
// there, re-exploring where a sleep set read askew was no subset.)
func TestSleepSetsTakeTheSameSteps(t *testing.T) {
	for _, c := range []struct {
		family, algo  string
		nodes         int
		symmetry      bool
		states, steps int64
		slow          bool
	}{
		{"commit", "two-phase-commit", 4, false, 288, 894, false},
		{"commit", "two-phase-commit", 6, false, 8832, 35122, false},
		{"commit", "two-phase-commit", 5, true, 166, 792, false},
		{"commit", "two-phase-commit", 6, true, 314, 1773, false},
		{"mutex", "maekawa", 3, false, 6044, 10313, false},
		{"mutex", "ricart-agrawala", 3, false, 37617, 48835, true},
	} {
		if c.slow && (raceEnabled || testing.Short()) {
			continue
		}
		cfg := setup(t, c.family, c.algo, c.nodes, nil)
		cfg.Strategy, cfg.POR, cfg.Symmetry = DFS, true, c.symmetry
		r := explore(t, cfg)
		if r.States != c.states || r.Transitions != c.steps {
			t.Errorf("%s %s, %d nodes, symmetry %v: %d states, %d transitions; want %d, %d",
				c.family, c.algo, c.nodes, c.symmetry, r.States, r.Transitions, c.states, c.steps)
		}
	}
}
