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
// The table is ordered (Amble & Knuth 1974, "Ordered hash tables"): a
// slot's home is its mixed fingerprint scaled to the table's size, which
// grows with the fingerprint, and the fingerprints are kept in
// increasing order along the array — an insertion shifts the rest of its
// run of full slots one slot on. So a lookup stops at the first larger
// fingerprint, and a growth is not a rehash: each fingerprint goes to its
// new home or, if that is taken, just after the one before it, which is
// never before its old slot, so a large array is grown where it is and
// the fingerprints moved on within it (resize). Instead of wrapping round,
// the array has spare slots past the last home (pad), doubled if a run
// would overflow them.
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
	slots []uint64 // homes 0 to homes-1, then the spare slots
	tags  []uint16 // nil: no tags, or wide ones
	wide  []uint32 // the tags, once one needed more than 16 bits
	homes int
	n     int
}

func newFPSet(tagged bool) fpSet { return newFPSetOf(1024, tagged) }

// newFPSetOf returns an empty set of homes slots (and their spares).
func newFPSetOf(homes int, tagged bool) fpSet {
	s := fpSet{slots: newTable[uint64](homes + pad(homes)), homes: homes}
	if tagged {
		s.tags = newTable[uint16](len(s.slots))
	}
	return s
}

// pad is the number of spare slots past homes of them, at first: about
// a thousandth. A run that overflows them doubles them (spare).
func pad(homes int) int { return 16 + homes/1024 }

func (s *fpSet) Len() int { return s.n }

// Bytes is the memory the set holds.
func (s *fpSet) Bytes() int { return 8*len(s.slots) + 2*len(s.tags) + 4*len(s.wide) }

// growth: a full table grows by 1/growth of its size. At 7/8 full, it is
// then 7/9 full: between 78% and 87.5% of the slots are used. (Each growth
// moves the whole table, so the states are moved 8 times on average, not
// 4 as they would with a quarter: in one pass, in order.)
const growth = 8

// home is the first slot of m, a mixed fingerprint: m scaled to the
// table's size (Lemire's multiply-shift; the size need not be a power of
// two). It never decreases as m increases.
func (s *fpSet) home(m uint64) int { return homeIn(m, s.homes) }

// homeIn is m's home in a table of homes homes.
func homeIn(m uint64, homes int) int {
	hi, _ := bits.Mul64(m, uint64(homes))
	return int(hi)
}

// Add adds x and reports whether it was new, and its slot (valid until
// the next Add) for Tag and SetTag.
func (s *fpSet) Add(x uint64) (bool, int) { return s.addMixed(mixed(x)) }

// mixed is x as the set stores it.
func mixed(x uint64) uint64 {
	if m := mix64(x); m != 0 {
		return m
	}
	return 1
}

func (s *fpSet) addMixed(m uint64) (bool, int) {
	if s.homes == 0 {
		*s = newFPSet(false)
	}
	if s.n+1 > s.homes/8*7 {
		s.grow()
	}
	for {
		if isNew, i, ok := s.insert(m); ok {
			return isNew, i
		}
		s.spare() // the run reached the end of the array
	}
}

// insert adds m, a mixed fingerprint, in order: after the smaller ones
// of its run, the larger ones shifted one slot on (their tags with
// them). ok is false, and the set unchanged, if the run has no room
// left before the end of the array.
func (s *fpSet) insert(m uint64) (isNew bool, i int, ok bool) {
	i = s.home(m)
	for i < len(s.slots) && s.slots[i] != 0 && s.slots[i] < m {
		i++
	}
	switch {
	case i == len(s.slots):
		return false, 0, false
	case s.slots[i] == m:
		return false, i, true
	case s.slots[i] != 0:
		end := i + 1 // the first empty slot after i
		for end < len(s.slots) && s.slots[end] != 0 {
			end++
		}
		if end == len(s.slots) {
			return false, 0, false
		}
		copy(s.slots[i+1:end+1], s.slots[i:end])
		switch {
		case s.tags != nil:
			copy(s.tags[i+1:end+1], s.tags[i:end])
			s.tags[i] = 0
		case s.wide != nil:
			copy(s.wide[i+1:end+1], s.wide[i:end])
			s.wide[i] = 0
		}
	}
	s.slots[i] = m
	s.n++
	return true, i, true
}

// Has reports whether x is in the set.
func (s *fpSet) Has(x uint64) bool { return s.hasMixed(mixed(x)) }

func (s *fpSet) hasMixed(m uint64) bool {
	_, ok := s.findMixed(m)
	return ok
}

// Find reports whether x is in the set, and its slot (valid until the
// next Add) for Tag.
func (s *fpSet) Find(x uint64) (int, bool) { return s.findMixed(mixed(x)) }

// findMixed looks m up from its home: the fingerprints ascend along the
// array, so the search stops at the first larger one or an empty slot.
func (s *fpSet) findMixed(m uint64) (int, bool) {
	i := s.home(m)
	for i < len(s.slots) && s.slots[i] != 0 && s.slots[i] < m {
		i++
	}
	return i, i < len(s.slots) && s.slots[i] == m
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

// grow moves the set into a table with an eighth more homes.
func (s *fpSet) grow() {
	homes := s.homes + s.homes/growth
	s.resize(homes, pad(homes))
}

// spare moves the set into a table with the same homes and twice the
// spare slots.
func (s *fpSet) spare() { s.resize(s.homes, 2*(len(s.slots)-s.homes)) }

// resize moves the set into a table of homes slots (no fewer than it has)
// and at least spare more, doubled until the last fingerprint fits: in
// order, each fingerprint to its home or, if the one before took that,
// to the slot after that one's. (With the same homes, every fingerprint
// stays where it was: the order decides the layout.)
//
// A table mapped off the heap (newTable) is resized in place: it is
// extended (growTable: on Linux its mapping grows, and only the new pages
// are the operating system's to fill) and the fingerprints moved on,
// from the last back (spread); one on the heap is merged into a new one
// (remake). No
// fingerprint moves back: with homes no smaller, each home is no
// earlier, and by induction along the order neither is each slot. A
// first pass, that only reads, finds where the last fingerprint goes and
// marks where every spreadRun-th one is and goes.
func (s *fpSet) resize(homes, spare int) {
	if 8*len(s.slots) < bigTable {
		s.remake(homes, spare) // on the heap: a new table costs no more
		return
	}
	var marks []move // a sixteenth of a byte a fingerprint, for this resize only
	next, j := 0, 0  // the first slot free after the last placed; fingerprints seen
	for at, m := range s.slots {
		if m == 0 {
			continue
		}
		i := max(homeIn(m, homes), next)
		if i < at {
			panic("explore: the visited set's fingerprints are out of order")
		}
		if j%spreadRun == 0 {
			marks = append(marks, move{at, i})
		}
		next = i + 1
		j++
	}
	for homes+spare < next {
		spare *= 2
	}
	old := len(s.slots)
	s.homes = homes
	size := homes + spare
	s.slots = growTable(s.slots, size)
	switch {
	case s.tags != nil:
		s.tags = growTable(s.tags, size)
	case s.wide != nil:
		s.wide = growTable(s.wide, size)
	}
	s.spread(old, marks)
}

// remake moves the set into a new table of homes slots and at least
// spare more (doubled until the fingerprints fit), merging: in order,
// each fingerprint to its home or, if the one before took that, to the
// slot after that one's.
func (s *fpSet) remake(homes, spare int) {
	old, oldTags, oldWide := s.slots, s.tags, s.wide
	for {
		s.homes = homes
		size := homes + spare
		s.slots = newTable[uint64](size)
		if oldTags != nil {
			s.tags = newTable[uint16](size)
		}
		if oldWide != nil {
			s.wide = newTable[uint32](size)
		}
		if s.merge(old, oldTags, oldWide) {
			break
		}
		freeTable(s.slots)
		freeTable(s.tags)
		freeTable(s.wide)
		spare *= 2
	}
	freeTable(old)
	freeTable(oldTags)
	freeTable(oldWide)
}

// merge fills the set's empty table with the fingerprints of old (in
// order) and their tags, and reports whether they fitted.
func (s *fpSet) merge(old []uint64, oldTags []uint16, oldWide []uint32) bool {
	next := 0 // the first slot free after the last one filled
	for j, m := range old {
		if m == 0 {
			continue
		}
		i := max(s.home(m), next)
		if i == len(s.slots) {
			return false
		}
		s.slots[i] = m
		switch {
		case oldTags != nil:
			s.tags[i] = oldTags[j]
		case oldWide != nil:
			s.wide[i] = oldWide[j]
		}
		next = i + 1
	}
	return true
}

// spreadRun: resize marks the first of every spreadRun fingerprints, in
// order, for spread.
const spreadRun = 256

// move is a fingerprint's slot before a resize and after.
type move struct{ from, to int }

// spread moves the fingerprints of the table's first old slots and
// their tags to their slots under the present homes, as resize found
// them (marks): run by run of spreadRun fingerprints from the last, each
// run's slots found again from its mark, and moved from its last
// fingerprint back. A fingerprint moves on, never back, and those after it have
// moved already to slots past its new one: its move overwrites none
// still to be moved. The slot it leaves is emptied (a fingerprint before
// it may move there later).
func (s *fpSet) spread(old int, marks []move) {
	var runs [spreadRun]move
	end := old
	for r := len(marks) - 1; r >= 0; r-- {
		mk := marks[r]
		n, next := 0, 0
		for at := mk.from; at < end; at++ {
			m := s.slots[at]
			if m == 0 {
				continue
			}
			i := mk.to
			if n > 0 {
				i = max(s.home(m), next)
			}
			runs[n] = move{at, i}
			next = i + 1
			n++
		}
		for k := n - 1; k >= 0; k-- {
			f, t := runs[k].from, runs[k].to
			if f == t {
				continue
			}
			s.slots[t], s.slots[f] = s.slots[f], 0
			switch {
			case s.tags != nil:
				s.tags[t], s.tags[f] = s.tags[f], 0
			case s.wide != nil:
				s.wide[t], s.wide[f] = s.wide[f], 0
			}
		}
		end = mk.from
	}
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
