package explore

import (
	"math/rand/v2"
	"testing"
)

// The visited set keeps every fingerprint and its tag through its
// growths, at 9.1–10.3 bytes a state (11.4–12.9 with tags).
func TestFPSet(t *testing.T) {
	for _, tagged := range []bool{false, true} {
		s := newFPSet(tagged)
		rng := rand.New(rand.NewPCG(3, 5))
		var xs []uint64
		for i := 0; i < 200_000; i++ {
			x := rng.Uint64()
			xs = append(xs, x)
			isNew, slot := s.Add(x)
			if !isNew {
				t.Fatalf("%x: not new", x)
			}
			if tagged {
				s.SetTag(slot, uint16(x))
			}
			if s.n > 1024 {
				per := float64(s.Bytes()) / float64(s.Len())
				lo, hi := 9.1, 10.3
				if tagged {
					lo, hi = 11.4, 12.9
				}
				if per < lo-0.01 || per > hi+0.01 {
					t.Fatalf("tagged %v: %d states, %.2f bytes a state", tagged, s.Len(), per)
				}
			}
		}
		for _, x := range xs {
			isNew, slot := s.Add(x)
			if isNew {
				t.Fatalf("%x: lost", x)
			}
			if tagged && s.Tag(slot) != uint16(x) {
				t.Fatalf("%x: tag %x", x, s.Tag(slot))
			}
		}
		if s.Len() != len(xs) {
			t.Fatalf("%d, want %d", s.Len(), len(xs))
		}
	}
}

// The table of wide sleep sets keeps every mask through its growths, and
// a mask written again replaces the old.
func TestMaskTable(t *testing.T) {
	var m maskTable
	rng := rand.New(rand.NewPCG(7, 9))
	want := map[uint64]uint32{}
	for i := 0; i < 50_000; i++ {
		x := 2 + rng.Uint64()%40_000 // some keys again
		if i == 0 {
			x = 0 // stored as 1, which is not used here
		}
		want[x] = rng.Uint32()
		m.Put(x, want[x])
	}
	for x, w := range want {
		if got := m.Get(x); got != w {
			t.Fatalf("%x: mask %x, want %x", x, got, w)
		}
	}
	if m.n != len(want) || m.Get(1<<63) != 0 {
		t.Fatalf("%d masks, want %d; an absent key has mask %x", m.n, len(want), m.Get(1<<63))
	}
}

// Depth first with sleep sets, the search keeps under 16 bytes a state:
// the fingerprints and each state's sleep set in a 16-bit tag (past 15
// enabled steps, in the table of wide masks).
func TestSearchBytesPerState(t *testing.T) {
	cfg := setup(t, "commit", "two-phase-commit", 6, nil)
	cfg.Strategy, cfg.POR = DFS, true
	r := explore(t, cfg)
	if r.States != 8832 || r.BytesPerState > 16 {
		t.Fatalf("%d states, %.1f bytes a state; want 8832, at most 16", r.States, r.BytesPerState)
	}
	if r.Omission <= 0 || r.Omission > 1e-11 {
		t.Errorf("omission probability %g for %d states", r.Omission, r.States)
	}
	t.Logf("%d states, %.1f bytes a state, omission probability %.1e", r.States, r.BytesPerState, r.Omission)
}

// Breadth first keeps under 16 bytes a state too: the fingerprints and
// the trail (a parent and a step's position, 5 bytes a state).
func TestBreadthFirstBytesPerState(t *testing.T) {
	if testing.Short() {
		t.Skip("8,832 states breadth first")
	}
	cfg := setup(t, "commit", "two-phase-commit", 6, nil)
	r := explore(t, cfg)
	if r.States != 8832 || r.BytesPerState > 16 {
		t.Fatalf("%d states, %.1f bytes a state; want 8832, at most 16", r.States, r.BytesPerState)
	}
	t.Logf("%d states, %.1f bytes a state", r.States, r.BytesPerState)
}

// A trail gives back every state's parent and position, those of 255 and
// beyond included.
func TestTrail(t *testing.T) {
	var tr trail
	for j := 0; j < 5000; j++ {
		tr.add(int32(j/3), j%300)
	}
	for j := int32(0); j < 5000; j++ {
		if p, k := tr.at(j); p != j/3 || k != int(j%300) {
			t.Fatalf("state %d: parent %d step %d, want %d and %d", j, p, k, j/3, j%300)
		}
	}
	if tr.Len() != 5000 {
		t.Fatalf("%d states", tr.Len())
	}
}
