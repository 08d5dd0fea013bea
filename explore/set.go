package explore

import "math/bits"

// fpSet is a set of 64-bit fingerprints: open addressing with linear
// probing in one flat array of 8-byte slots (hash compaction, as TLC and
// SPIN store states: the state itself is never kept). It grows by a
// quarter when 7/8 full, so between 70% and 87.5% of its slots are used
// and a state costs 9.1 to 11.4 bytes. Zero is the empty slot (a
// fingerprint of 0 is stored as 1).
//
// With tags (Config.POR), each slot also holds a 16-bit tag (the sleep
// set the state was explored with, dfs.go): 10 bytes a slot, 11.4 to
// 14.3 bytes a state.
//
// Two different states with one fingerprint are one state to the search,
// which then misses the second and all it alone leads to. With k states
// and fingerprints that behave as independent uniform 64-bit values, the
// probability that any two of them collide is at most k(k−1)/2⁶⁵
// (Holzmann's analysis of hash compaction): 2.7·10⁻⁸ for a million
// states, 2.7·10⁻⁴ for 10⁸ (Result.Omission).
type fpSet struct {
	slots []uint64
	tags  []uint16 // nil: no tags
	n     int
}

func newFPSet(tagged bool) fpSet {
	s := fpSet{slots: make([]uint64, 1024)}
	if tagged {
		s.tags = make([]uint16, 1024)
	}
	return s
}

func (s *fpSet) Len() int { return s.n }

// Bytes is the memory the set holds.
func (s *fpSet) Bytes() int { return 8*len(s.slots) + 2*len(s.tags) }

// home is x's first slot: x's mixed hash scaled to the table's size
// (Lemire's multiply-shift; the size need not be a power of two).
func (s *fpSet) home(x uint64) int {
	hi, _ := bits.Mul64(mix64(x), uint64(len(s.slots)))
	return int(hi)
}

// Add adds x and reports whether it was new, and its slot (valid until
// the next Add) for Tag and SetTag.
func (s *fpSet) Add(x uint64) (bool, int) {
	if x == 0 {
		x = 1
	}
	if len(s.slots) == 0 {
		*s = newFPSet(false)
	}
	if s.n+1 > len(s.slots)/8*7 {
		s.grow()
	}
	for i := s.home(x); ; i++ {
		if i == len(s.slots) {
			i = 0
		}
		switch s.slots[i] {
		case x:
			return false, i
		case 0:
			s.slots[i] = x
			s.n++
			return true, i
		}
	}
}

// Tag and SetTag read and write the tag of the slot Add returned.
func (s *fpSet) Tag(i int) uint16       { return s.tags[i] }
func (s *fpSet) SetTag(i int, t uint16) { s.tags[i] = t }

func (s *fpSet) grow() {
	old, oldTags := s.slots, s.tags
	size := len(old) + len(old)/4
	s.slots = make([]uint64, size)
	if oldTags != nil {
		s.tags = make([]uint16, size)
	}
	s.n = 0
	for j, x := range old {
		if x != 0 {
			_, i := s.Add(x)
			if oldTags != nil {
				s.tags[i] = oldTags[j]
			}
		}
	}
}

// omission bounds the probability that two of k states share a
// fingerprint: k(k−1)/2⁶⁵.
func omission(k int64) float64 { return float64(k) * float64(k-1) / (1 << 65) }
