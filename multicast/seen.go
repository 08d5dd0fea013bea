package multicast

import "slices"

// seen is a set of message identities that stays small however many
// messages a long-running group carries. Every origin numbers its messages
// to a group 1, 2, 3 ... (counters), so the set keeps, per (group, origin):
//
//   - a watermark w: every number ≤ w is in the set;
//   - the numbers above w+1 that are in the set, as sorted, disjoint,
//     non-adjacent runs [lo, hi].
//
// Adding w+1 raises the watermark and swallows the run that then touches
// it, so the set compacts as the gaps fill. Example: after 1, 2, 5, 6, 4
// the set is w=2, runs [4,6]; adding 3 gives w=6 and no runs.
//
// Memory is O(origins × gaps): a stream that arrives in any order within a
// window of k numbers never holds more than k/2 runs, and a number that
// never arrives (a copy lost for good) costs one run, not one entry per
// later message. Add and Has are O(log runs).
//
// Number 0 is no message's (origins start at 1): Has reports it present,
// so a copy carrying it is dropped as already seen, and Add ignores it.
//
// The zero value is not ready: make it with seen{}.
type seen map[source]*seqSet

// Add puts k in the set and reports whether it was new.
func (s seen) Add(k msgKey) bool {
	src := source{k.Group, k.Origin}
	set := s[src]
	if set == nil {
		set = &seqSet{}
		s[src] = set
	}
	return set.add(k.Seq)
}

// Has reports whether k is in the set.
func (s seen) Has(k msgKey) bool {
	if k.Seq == 0 {
		return true
	}
	set := s[source{k.Group, k.Origin}]
	return set != nil && set.has(k.Seq)
}

// size is what the set holds: one per (group, origin) and one per run
// above a watermark.
func (s seen) size() int {
	n := len(s)
	for _, set := range s {
		n += len(set.runs)
	}
	return n
}

// seqSet is one origin's numbers: all of 1..w, and runs above w+1.
type seqSet struct {
	w    uint64
	runs []seqRun // sorted; every lo ≥ w+2; a gap of at least one between runs
}

type seqRun struct{ lo, hi uint64 }

func (s *seqSet) has(x uint64) bool {
	if x <= s.w {
		return true
	}
	i := s.search(x)
	return i < len(s.runs) && s.runs[i].lo <= x && x <= s.runs[i].hi
}

// search returns the first run that ends at x−1 or later: the run that
// holds x, touches it from below, or lies above it.
func (s *seqSet) search(x uint64) int {
	i, _ := slices.BinarySearchFunc(s.runs, x, func(r seqRun, x uint64) int {
		if r.hi < x-1 { // x ≥ 1: every caller has x > w ≥ 0
			return -1
		}
		return 1
	})
	return i
}

func (s *seqSet) add(x uint64) bool {
	if x <= s.w {
		return false
	}
	i := s.search(x)
	if i < len(s.runs) && s.runs[i].lo <= x && x <= s.runs[i].hi {
		return false
	}
	below := i < len(s.runs) && s.runs[i].hi == x-1 // run i ends just below x
	j := i
	if below {
		j = i + 1
	}
	above := j < len(s.runs) && s.runs[j].lo == x+1 // run j starts just above x
	switch {
	case below && above:
		s.runs[i].hi = s.runs[j].hi
		s.runs = slices.Delete(s.runs, j, j+1)
	case below:
		s.runs[i].hi = x
	case above:
		s.runs[j].lo = x
	default:
		s.runs = slices.Insert(s.runs, i, seqRun{x, x})
	}
	if s.runs[0].lo == s.w+1 {
		s.w = s.runs[0].hi
		s.runs = slices.Delete(s.runs, 0, 1)
	}
	return true
}
