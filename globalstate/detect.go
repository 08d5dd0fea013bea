package globalstate

import (
	"fmt"

	"github.com/cohort-go/cohort/trace"
)

// Method is how a question was decided.
type Method string

// The methods.
const (
	// MethodConjunctive: the predicate is a disjunction of conjunctive
	// predicates, each decided by Garg & Waldecker's algorithm without
	// enumerating the lattice.
	MethodConjunctive Method = "conjunctive"
	// MethodLexical: the lattice enumerated in lexical order.
	MethodLexical Method = "lexical"
	// MethodBreadthFirst: Cooper & Marzullo's level-by-level search.
	MethodBreadthFirst Method = "breadth-first"
	// MethodInitial: the predicate holds in the initial state, which every
	// linearization passes through.
	MethodInitial Method = "initial-state"
	// MethodFinal: the predicate holds in the final state, which every
	// linearization passes through.
	MethodFinal Method = "final-state"
	// MethodObserved: the observed run, itself a linearization, never
	// passes through the predicate.
	MethodObserved Method = "observed-run"
)

// Answer is the answer to possibly(φ) or definitely(φ) over one trace,
// with its witness.
type Answer struct {
	Query     string `json:"query"`     // "possibly" or "definitely"
	Predicate string `json:"predicate"` // φ, as written canonically
	Holds     bool   `json:"holds"`     // the answer
	Method    Method `json:"method"`
	// States is the number of global states the search evaluated φ in;
	// for the conjunctive method, the candidate cuts it examined.
	States int64 `json:"states"`
	// Cut is a consistent cut where φ holds: for possibly, the witness;
	// for definitely, the first state of the observed run where φ holds.
	// nil when φ holds nowhere the answer looked.
	Cut trace.Cut `json:"cut,omitempty"`
	// Frontier is Cut's frontier: the trace index of each process's last
	// event in it, -1 where it holds none.
	Frontier []int `json:"frontier,omitempty"`
	// Path, for possibly, is a path of the lattice from the initial state
	// to Cut: Cut's events, as trace indexes, in an order that keeps
	// happened-before.
	Path []int `json:"path,omitempty"`
	// Linearization, when definitely(φ) is false, is a linearization of
	// the whole run — every process event, as trace indexes, in an order
	// that keeps happened-before — none of whose states satisfies φ.
	Linearization []int `json:"linearization,omitempty"`
	// Level, when definitely(φ) is true and the breadth-first search or
	// the initial state decided it, is the least number of events within
	// which every linearization has passed through φ; nil otherwise.
	Level *int `json:"level,omitempty"`
}

func (l *Lattice) answer(query string, b *bound) *Answer {
	return &Answer{Query: query, Predicate: b.pred.String()}
}

func (l *Lattice) withCut(a *Answer, c trace.Cut) {
	a.Cut = append(trace.Cut(nil), c...)
	a.Frontier = l.hb.Frontier(a.Cut)
}

// Possibly decides possibly(φ): whether φ holds in some consistent global
// state. A disjunction of conjunctive predicates is decided by Garg &
// Waldecker's algorithm; any other predicate by enumerating the lattice
// in lexical order until a state satisfies it. The witness is the least
// satisfying cut the method finds (for a conjunctive predicate, the least
// of all) and the path to it.
func (l *Lattice) Possibly(p *Predicate) (*Answer, error) {
	b, err := l.bind(p)
	if err != nil {
		return nil, err
	}
	a := l.answer("possibly", b)
	if !l.opt.Enumerate {
		if d, ok := toDNF(p.root, false, l.n); ok {
			a.Method = MethodConjunctive
			for _, t := range d {
				cut, steps, ok := l.weakConjunctive(b.locals(t))
				a.States += steps
				if ok {
					a.Holds = true
					l.withCut(a, cut)
					a.Path = l.Path(cut)
					return a, nil
				}
			}
			return a, nil
		}
	}
	a.Method = MethodLexical
	var found trace.Cut
	st, err := l.Lex(func(c trace.Cut) bool {
		if b.eval(c) {
			found = append(trace.Cut(nil), c...)
			return false
		}
		return true
	})
	a.States = st.States
	if err != nil {
		return nil, err
	}
	if found != nil {
		a.Holds = true
		l.withCut(a, found)
		a.Path = l.Path(found)
	}
	return a, nil
}

// observed is the observed run: the process events in trace order, a
// linearization.
func (l *Lattice) observed() []int {
	out := make([]int, 0, l.events)
	for i := range l.t.Events {
		if l.t.Events[i].Kind.IsProcess() {
			out = append(out, i)
		}
	}
	return out
}

// firstObserved is the first state of the observed run where φ holds, and
// how many states it evaluated.
func (l *Lattice) firstObserved(b *bound) (trace.Cut, int64) {
	c := make(trace.Cut, l.n)
	states := int64(1)
	if b.eval(c) {
		return c, states
	}
	for _, i := range l.observed() {
		c[l.t.Events[i].Node]++
		states++
		if b.eval(c) {
			return c, states
		}
	}
	return nil, states
}

// Definitely decides definitely(φ): whether every linearization of the run
// passes through a state where φ holds. It holds if φ holds in the initial
// or the final state, which every linearization passes through; it fails
// if the observed run avoids φ. Otherwise Cooper & Marzullo's search
// decides it: level by level, keep the states reachable from the initial
// state through states where φ is false; definitely(φ) holds if that set
// empties before the final state, and fails with the linearization that
// reaches the final state through it. Memory: two levels of states, and 8
// bytes for each state of the search to rebuild that linearization.
func (l *Lattice) Definitely(p *Predicate) (*Answer, error) {
	b, err := l.bind(p)
	if err != nil {
		return nil, err
	}
	a := l.answer("definitely", b)
	if !l.opt.Enumerate {
		first, states := l.firstObserved(b)
		a.States = states
		if first == nil {
			a.Method = MethodObserved
			a.Linearization = l.observed()
			return a, nil
		}
		switch {
		case b.eval(l.Initial()):
			a.Holds, a.Method, a.Level = true, MethodInitial, new(0)
			l.withCut(a, first)
			return a, nil
		case b.eval(l.Final()):
			a.Holds, a.Method = true, MethodFinal
			l.withCut(a, first)
			return a, nil
		}
	}
	a.Method = MethodBreadthFirst
	lin, avoided, level, states, err := l.avoid(b)
	a.States += states
	if err != nil {
		return nil, err
	}
	if avoided {
		a.Linearization = lin
		return a, nil
	}
	a.Holds, a.Level = true, &level
	if first, _ := l.firstObserved(b); first != nil {
		l.withCut(a, first)
	}
	return a, nil
}

// avoid is Cooper & Marzullo's breadth-first search for definitely: the
// states reachable from the initial state through states where φ is
// false, level by level. It returns a linearization that reaches the
// final state so, or the level at which no such state is left.
func (l *Lattice) avoid(b *bound) (lin []int, avoided bool, level int, states int64, err error) {
	if pk, ok := l.packing(); ok {
		return l.avoidPacked(b, pk)
	}
	n := l.n
	buf := make(trace.Cut, n)
	load := func(s []int32) trace.Cut {
		for p, v := range s {
			buf[p] = int(v)
		}
		return buf
	}
	cur := make([]int32, n)
	states = 1
	if b.eval(load(cur)) {
		return nil, false, 0, states, nil
	}
	if l.events == 0 {
		return []int{}, true, 0, states, nil // the initial state is the final one
	}
	// For each level, each state's predecessor on the level before (its
	// index there) and the process whose event led from it.
	type step struct{ parent, proc int32 }
	steps := [][]step{{{-1, -1}}}
	var next []int32
	set := newCutSet(n)
	for level = 1; ; level++ {
		next = next[:0]
		set.reset(&next)
		var here []step
		width := len(cur) / n
		for i := range width {
			s := cur[i*n : (i+1)*n]
			for p := range n {
				if !l.enabled(s, p) {
					continue
				}
				s[p]++
				idx, fresh := set.add(s)
				s[p]--
				if !fresh {
					continue
				}
				if int64(len(next)) > l.opt.MaxEntries {
					return nil, false, 0, states, fmt.Errorf("%w: level %d of the lattice holds more than %d states of %d processes (the memory allowed)",
						ErrTooLarge, level, len(next)/n, n)
				}
				if states >= l.opt.MaxStates {
					return nil, false, 0, states, l.tooMany()
				}
				states++
				if b.eval(load(next[idx*n : (idx+1)*n])) {
					set.mark(idx) // φ: the search stops here
					here = append(here, step{-1, -1})
					continue
				}
				here = append(here, step{int32(i), int32(p)})
			}
		}
		// Keep the states where φ is false.
		kept := cur[:0]
		var keptSteps []step
		for idx := range len(next) / n {
			if set.marked(idx) {
				continue
			}
			kept = append(kept, next[idx*n:(idx+1)*n]...)
			keptSteps = append(keptSteps, here[idx])
		}
		if len(keptSteps) == 0 {
			return nil, false, level, states, nil
		}
		steps = append(steps, keptSteps)
		if level == l.events {
			// The final state, reached without φ: walk back.
			procs := make([]int32, level)
			i := 0
			for lv := level; lv > 0; lv-- {
				st := steps[lv][i]
				procs[lv-1] = st.proc
				i = int(st.parent)
			}
			c := make([]int, n)
			lin = make([]int, level)
			for j, p := range procs {
				c[p]++
				lin[j] = l.Event(int(p), c[p])
			}
			return lin, true, 0, states, nil
		}
		cur = kept // in the old level's storage; next's is reused
	}
}

// cutSet is a hash set of the cuts of one level, stored in a flat slice
// of n entries per cut. Its table is reused from level to level: an entry
// belongs to the current level if its generation is the set's.
type cutSet struct {
	n      int
	cuts   *[]int32
	table  []uint64 // generation<<32 | index+1 of a cut; other generations are empty
	hashes []uint64 // hash of each cut of the level
	hit    []bool
	count  int
	gen    uint64
}

func newCutSet(n int) *cutSet { return &cutSet{n: n, table: make([]uint64, 64)} }

func (s *cutSet) reset(cuts *[]int32) {
	s.cuts = cuts
	s.count = 0
	s.hit = s.hit[:0]
	s.hashes = s.hashes[:0]
	s.gen++
	if s.gen == 1<<32 {
		clear(s.table)
		s.gen = 1
	}
}

func hashCut(c []int32) uint64 {
	h := uint64(14695981039346656037)
	for _, v := range c {
		h ^= uint64(uint32(v))
		h *= 1099511628211
	}
	return h ^ h>>29
}

// add inserts c (copied) and returns its index, and whether it is new.
func (s *cutSet) add(c []int32) (int, bool) {
	if 2*(s.count+1) > len(s.table) {
		s.grow()
	}
	mask := uint64(len(s.table) - 1)
	hc := hashCut(c)
	for h := hc & mask; ; h = (h + 1) & mask {
		e := s.table[h]
		if e>>32 != s.gen {
			*s.cuts = append(*s.cuts, c...)
			s.table[h] = s.gen<<32 | uint64(s.count+1)
			s.hit = append(s.hit, false)
			s.hashes = append(s.hashes, hc)
			s.count++
			return s.count - 1, true
		}
		idx := int(uint32(e) - 1)
		if s.hashes[idx] == hc && equal32((*s.cuts)[idx*s.n:(idx+1)*s.n], c) {
			return idx, false
		}
	}
}

func (s *cutSet) grow() {
	old := s.table
	s.table = make([]uint64, 2*len(old))
	mask := uint64(len(s.table) - 1)
	for _, e := range old {
		if e>>32 != s.gen {
			continue
		}
		h := s.hashes[uint32(e)-1] & mask
		for s.table[h]>>32 == s.gen {
			h = (h + 1) & mask
		}
		s.table[h] = e
	}
}

func (s *cutSet) mark(idx int)        { s.hit[idx] = true }
func (s *cutSet) marked(idx int) bool { return s.hit[idx] }

func equal32(a, b []int32) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
