package explore

// fpSet is a set of 64-bit fingerprints: open addressing with linear
// probing in one flat array, 8 bytes a slot, grown at 7/8 full, so a state
// costs between 9 and 18 bytes. Zero is the empty slot (a fingerprint of 0
// is stored as 1).
type fpSet struct {
	slots []uint64
	n     int
}

func (s *fpSet) Len() int { return s.n }

// Bytes is the memory the set holds.
func (s *fpSet) Bytes() int { return 8 * len(s.slots) }

// Add adds x and reports whether it was new.
func (s *fpSet) Add(x uint64) bool {
	if x == 0 {
		x = 1
	}
	if s.n+1 > len(s.slots)/8*7 {
		s.grow()
	}
	mask := uint64(len(s.slots) - 1)
	for i := mix64(x) & mask; ; i = (i + 1) & mask {
		switch s.slots[i] {
		case x:
			return false
		case 0:
			s.slots[i] = x
			s.n++
			return true
		}
	}
}

func (s *fpSet) grow() {
	old := s.slots
	size := max(1024, 2*len(old))
	s.slots = make([]uint64, size)
	s.n = 0
	for _, x := range old {
		if x != 0 {
			s.Add(x)
		}
	}
}
