package explore

import "math/bits"

// fpSet is a set of 64-bit fingerprints: open addressing with linear
// probing in one flat array of 8-byte slots (hash compaction, as TLC and
// SPIN store states: the state itself is never kept). It grows by an
// eighth when 7/8 full, so between 78% and 87.5% of its slots are used
// and a state costs 9.1 to 10.3 bytes. A fingerprint is stored mixed
// (mix64, a bijection), so a growth moves the slots without hashing
// them again. Zero is the empty slot (a fingerprint that mixes to 0 is
// stored as 1).
//
// With tags (Config.POR), each slot also holds a tag (the sleep set the
// state was explored with, dfs.go): 16 bits a slot, 11.4 to 12.9 bytes a
// state, until a tag needs more; then every slot's tag is widened to 32
// bits, 12 bytes a slot, 13.7 to 15.4 bytes a state.
//
// Two different states with one fingerprint are one state to the search,
// which then misses the second and all it alone leads to. With k states
// and fingerprints that behave as independent uniform 64-bit values, the
// probability that any two of them collide is at most k(k−1)/2⁶⁵
// (Holzmann's analysis of hash compaction): 2.7·10⁻⁸ for a million
// states, 2.7·10⁻⁴ for 10⁸ (Result.Omission).
//
// A large set's arrays are mapped off the Go heap (newTable), so a set
// must be freed (free) once the search is done with it.
type fpSet struct {
	slots []uint64
	tags  []uint16 // nil: no tags, or wide ones
	wide  []uint32 // the tags, once one needed more than 16 bits
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
func (s *fpSet) Bytes() int { return 8*len(s.slots) + 2*len(s.tags) + 4*len(s.wide) }

// growth: a full table grows by 1/growth of its size. At 7/8 full, it is
// then 7/9 full: between 78% and 87.5% of the slots are used. (Each growth
// rehashes the table, so the states are rehashed 8 times on average, not
// 4 as they would with a quarter.)
const growth = 8

// home is the first slot of m, a mixed fingerprint: m scaled to the
// table's size (Lemire's multiply-shift; the size need not be a power of
// two).
func (s *fpSet) home(m uint64) int {
	hi, _ := bits.Mul64(m, uint64(len(s.slots)))
	return int(hi)
}

// Add adds x and reports whether it was new, and its slot (valid until
// the next Add) for Tag and SetTag.
func (s *fpSet) Add(x uint64) (bool, int) {
	m := mix64(x)
	if m == 0 {
		m = 1
	}
	if len(s.slots) == 0 {
		*s = newFPSet(false)
	}
	if s.n+1 > len(s.slots)/8*7 {
		s.grow()
	}
	return s.insert(m)
}

// insert adds m, a mixed fingerprint.
func (s *fpSet) insert(x uint64) (bool, int) {
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

// Has reports whether x is in the set.
func (s *fpSet) Has(x uint64) bool {
	if len(s.slots) == 0 {
		return false
	}
	m := mix64(x)
	if m == 0 {
		m = 1
	}
	for i := s.home(m); ; i++ {
		if i == len(s.slots) {
			i = 0
		}
		switch s.slots[i] {
		case m:
			return true
		case 0:
			return false
		}
	}
}

// each calls f with every fingerprint in the set, mixed (mix64), in no
// particular order.
func (s *fpSet) each(f func(m uint64)) {
	for _, m := range s.slots {
		if m != 0 {
			f(m)
		}
	}
}

// Tag and SetTag read and write the tag of the slot Add returned.
func (s *fpSet) Tag(i int) uint32 {
	if s.wide != nil {
		return s.wide[i]
	}
	return uint32(s.tags[i])
}

func (s *fpSet) SetTag(i int, t uint32) {
	if s.wide == nil {
		if t <= 0xFFFF {
			s.tags[i] = uint16(t)
			return
		}
		s.wide = newTable[uint32](len(s.tags))
		for j, t := range s.tags {
			s.wide[j] = uint32(t)
		}
		freeTable(s.tags)
		s.tags = nil
	}
	s.wide[i] = t
}

func (s *fpSet) grow() {
	old, oldTags, oldWide := s.slots, s.tags, s.wide
	size := len(old) + len(old)/growth
	s.slots = newTable[uint64](size)
	if oldTags != nil {
		s.tags = newTable[uint16](size)
	}
	if oldWide != nil {
		s.wide = newTable[uint32](size)
	}
	s.n = 0
	for j, x := range old {
		if x != 0 {
			_, i := s.insert(x)
			switch {
			case oldTags != nil:
				s.tags[i] = oldTags[j]
			case oldWide != nil:
				s.wide[i] = oldWide[j]
			}
		}
	}
	freeTable(old)
	freeTable(oldTags)
	freeTable(oldWide)
}

// free gives the set's storage back; the set is then empty.
func (s *fpSet) free() {
	freeTable(s.slots)
	freeTable(s.tags)
	freeTable(s.wide)
	*s = fpSet{}
}

// bigTable: a table of this many bytes or more is mapped off the Go heap
// (newTable).
const bigTable = 1 << 20

// omission bounds the probability that two of k states share a
// fingerprint: k(k−1)/2⁶⁵.
func omission(k int64) float64 { return float64(k) * float64(k-1) / (1 << 65) }
