package explore

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// The visited set keeps every fingerprint and its tag through its
// growths and through the widening of its tags, at 9.1–10.3 bytes a state
// (11.4–12.9 with 16-bit tags, 13.7–15.4 once they are 32 bits), and a
// thousandth more for the spare slots past the last home.
func TestFPSet(t *testing.T) {
	const n = 200_000
	for _, mode := range []string{"untagged", "tagged", "widened"} {
		tagged := mode != "untagged"
		s := newFPSet(tagged)
		rng := rand.New(rand.NewPCG(3, 5))
		var xs []uint64
		tag := func(i int, x uint64) uint32 {
			if mode == "widened" && i >= n/2 {
				return uint32(x) | 1<<16 // the first of these widens the tags
			}
			return uint32(uint16(x))
		}
		for i := 0; i < n; i++ {
			x := rng.Uint64()
			xs = append(xs, x)
			isNew, slot := s.Add(x)
			if !isNew {
				t.Fatalf("%x: not new", x)
			}
			if tagged {
				s.SetTag(slot, tag(i, x))
			}
			if s.n > 1<<14 { // past the first tables, where spare slots weigh more
				per := float64(s.Bytes()) / float64(s.Len())
				lo, hi := 9.1, 10.32
				switch {
				case s.wide != nil:
					lo, hi = 13.7, 15.46
				case tagged:
					lo, hi = 11.4, 12.92
				}
				if per < lo-0.01 || per > hi+0.01 {
					t.Fatalf("%s: %d states, %.2f bytes a state", mode, s.Len(), per)
				}
			}
		}
		if (s.wide != nil) != (mode == "widened") {
			t.Fatalf("%s: tags widened %v", mode, s.wide != nil)
		}
		for i, x := range xs {
			isNew, slot := s.Add(x)
			if isNew {
				t.Fatalf("%x: lost", x)
			}
			if tagged && s.Tag(slot) != tag(i, x) {
				t.Fatalf("%s: %x: tag %x, want %x", mode, x, s.Tag(slot), tag(i, x))
			}
		}
		if s.Len() != len(xs) {
			t.Fatalf("%d, want %d", s.Len(), len(xs))
		}
		s.free()
	}
}

// Fingerprints whose homes are the last slots overflow the spare slots
// past them, which double; those of one home keep their order, and
// every one its tag, whichever order they came in.
func TestFPSetSpareSlots(t *testing.T) {
	s := newFPSet(true)
	rng := rand.New(rand.NewPCG(7, 11))
	var ms []uint64
	for i := 0; i < 300; i++ {
		m := ^uint64(0) - rng.Uint64N(1<<40) // the last home
		if i%3 == 0 {
			m = rng.Uint64N(1<<40) + 1 // the first
		}
		if isNew, slot := s.addMixed(m); isNew {
			ms = append(ms, m)
			s.SetTag(slot, uint32(uint16(m)))
		}
	}
	if spare := len(s.slots) - s.homes; spare <= pad(s.homes) {
		t.Fatalf("%d spare slots: want more than %d", spare, pad(s.homes))
	}
	var prev uint64
	for i, m := range s.slots {
		if m != 0 && m <= prev {
			t.Fatalf("slot %d holds %x after %x", i, m, prev)
		}
		prev = max(prev, m)
	}
	for _, m := range ms {
		isNew, slot := s.addMixed(m)
		if isNew || !s.hasMixed(m) || s.Tag(slot) != uint32(uint16(m)) {
			t.Fatalf("%x: new %v, tag %x", m, isNew, s.Tag(slot))
		}
		if s.hasMixed(m-1) && !slices.Contains(ms, m-1) {
			t.Fatalf("%x: found, never added", m-1)
		}
	}
	s.free()
}

// Depth first with sleep sets, the search keeps under 16 bytes a state:
// the fingerprints and each state's sleep set in a 16-bit tag.
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

// With more than 16 steps enabled in many states (two-phase commit
// with 5 RMs and a duplication: 42% of 17,420 states), the sleep sets
// still fit under 16 bytes a state: every tag widened to 32 bits, rather
// than the wide masks kept beside with their fingerprints (18.5 bytes a
// state).
func TestSearchBytesPerStateWideSleepSets(t *testing.T) {
	cfg := setup(t, "commit", "two-phase-commit", 6, nil)
	cfg.Strategy, cfg.POR, cfg.Dups = DFS, true, 1
	r := explore(t, cfg)
	if r.States != 17420 || r.BytesPerState > 16 {
		t.Fatalf("%d states, %.1f bytes a state; want 17420, at most 16", r.States, r.BytesPerState)
	}
	t.Logf("%d states, %.1f bytes a state", r.States, r.BytesPerState)
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
