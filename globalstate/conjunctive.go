package globalstate

import (
	"github.com/cohort-go/cohort/trace"
)

// A conjunctive predicate is l1 ∧ … ∧ lk, each li a local predicate: a
// condition on the local state of one process. Whether some consistent
// global state satisfies one is decided without enumerating the lattice
// (Garg & Waldecker 1994, weak conjunctive predicates); a predicate that
// is a disjunction of conjunctive ones is possibly true if one of them is.
// dnf rewrites a predicate as such a disjunction where it can: negations
// pushed down to the atoms, && distributed over ||, and the aggregates
// over the processes expanded (count(cs) >= 2 is the disjunction, over the
// pairs p < q, of cs(p) ∧ cs(q)).

// maxTerms bounds the disjunction dnf builds: beyond it the predicate is
// decided by enumeration. count(cs) >= 2 over 256 processes has 32,640
// terms.
const maxTerms = 1 << 15

// literal is an atom of the predicate, or its negation: a truth value
// that reads the local state of process proc only (-1: of none).
type literal struct {
	proc int
	n    *node
	neg  bool
}

// term is a conjunction of literals; a dnf a disjunction of terms. The
// empty term is true, the empty dnf false.
type term []literal
type dnf []term

// toDNF rewrites n (negated if neg) as a disjunction of conjunctions of
// local literals over nprocs processes; false if it cannot within
// maxTerms terms.
func toDNF(n *node, neg bool, nprocs int) (dnf, bool) {
	if p, ok := local(n); ok {
		if p < 0 {
			// A constant: true is the one empty term, false no term.
			b := &bound{vals: map[varRef][][]int32{}}
			if b.boolFn(n)(nil) != neg {
				return dnf{term{}}, true
			}
			return dnf{}, true
		}
		return dnf{term{{proc: p, n: n, neg: neg}}}, true
	}
	switch n.op {
	case opNot:
		return toDNF(n.l, !neg, nprocs)
	case opAnd, opOr:
		x, ok := toDNF(n.l, neg, nprocs)
		if !ok {
			return nil, false
		}
		y, ok := toDNF(n.r, neg, nprocs)
		if !ok {
			return nil, false
		}
		if (n.op == opAnd) != neg {
			return product(x, y)
		}
		return union(x, y)
	case opAgg: // any, all over a variable
		any := (n.agg == "any") != neg
		lits := make(dnf, nprocs)
		for p := range nprocs {
			lits[p] = term{{proc: p, n: holdsAt(n.v, p), neg: neg}}
		}
		if any {
			return lits, true
		}
		out := dnf{term{}}
		for _, t := range lits {
			var ok bool
			if out, ok = product(out, dnf{t}); !ok {
				return nil, false
			}
		}
		return out, true
	case opCmp:
		return countDNF(n, neg, nprocs)
	}
	return nil, false
}

// local reports whether n is a truth value over the local state of at most
// one process (and which: -1 for none), with no aggregate.
func local(n *node) (int, bool) {
	if n.typ != tBool {
		return -1, false
	}
	proc, ok := -1, true
	walk(n, func(m *node) {
		switch m.op {
		case opAgg:
			ok = false
		case opVar:
			if proc >= 0 && proc != m.proc {
				ok = false
			}
			proc = m.proc
		}
	})
	return proc, ok
}

// holdsAt is "v(p) is true", or not 0 for a number.
func holdsAt(v varRef, p int) *node {
	x := &node{op: opVar, typ: variables[v.name].typ, v: v, proc: p}
	if x.typ == tBool {
		return x
	}
	return &node{op: opCmp, typ: tBool, rel: "!=", l: x, r: &node{op: opNum, typ: tInt}}
}

// countDNF expands count(v) REL k, k a constant, in either order.
func countDNF(n *node, neg bool, nprocs int) (dnf, bool) {
	agg, other, rel := n.l, n.r, n.rel
	if agg.op != opAgg {
		agg, other = other, agg
		rel = map[string]string{"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}[rel]
	}
	if agg.op != opAgg || agg.agg != "count" {
		return nil, false
	}
	if other.typ != tInt || hasVar(other) {
		return nil, false
	}
	k := (&bound{vals: map[varRef][][]int32{}}).intFn(other)(nil)
	if neg {
		rel = map[string]string{"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}[rel]
	}
	N := int64(nprocs)
	pos := func(p int) literal { return literal{proc: p, n: holdsAt(agg.v, p)} }
	negl := func(p int) literal { return literal{proc: p, n: holdsAt(agg.v, p), neg: true} }
	switch rel {
	case ">=":
		return atLeast(k, nprocs, pos)
	case ">":
		return atLeast(k+1, nprocs, pos)
	case "<=":
		return atLeast(N-k, nprocs, negl)
	case "<":
		return atLeast(N-k+1, nprocs, negl)
	case "==":
		x, ok := atLeast(k, nprocs, pos)
		if !ok {
			return nil, false
		}
		y, ok := atLeast(N-k, nprocs, negl)
		if !ok {
			return nil, false
		}
		return product(x, y)
	case "!=":
		x, ok := atLeast(k+1, nprocs, pos)
		if !ok {
			return nil, false
		}
		y, ok := atLeast(N-k+1, nprocs, negl)
		if !ok {
			return nil, false
		}
		return union(x, y)
	}
	return nil, false
}

func hasVar(n *node) bool {
	found := false
	walk(n, func(m *node) { found = found || m.op == opVar || m.op == opAgg })
	return found
}

// atLeast is "lit(p) holds for at least k of the processes": the
// disjunction, over the sets of k processes, of their literals.
func atLeast(k int64, nprocs int, lit func(p int) literal) (dnf, bool) {
	if k <= 0 {
		return dnf{term{}}, true
	}
	if k > int64(nprocs) {
		return dnf{}, true
	}
	if binomialOver(nprocs, int(k), maxTerms) {
		return nil, false
	}
	var out dnf
	set := make([]int, k)
	var rec func(i, from int)
	rec = func(i, from int) {
		if i == len(set) {
			t := make(term, len(set))
			for j, p := range set {
				t[j] = lit(p)
			}
			out = append(out, t)
			return
		}
		for p := from; p <= nprocs-(len(set)-i); p++ {
			set[i] = p
			rec(i+1, p+1)
		}
	}
	rec(0, 0)
	return out, true
}

// binomialOver reports whether C(n, k) > limit.
func binomialOver(n, k, limit int) bool {
	k = min(k, n-k)
	c := 1
	for i := 1; i <= k; i++ {
		c = c * (n - k + i) / i
		if c > limit {
			return true
		}
	}
	return false
}

func product(x, y dnf) (dnf, bool) {
	if len(x)*len(y) > maxTerms {
		return nil, false
	}
	out := make(dnf, 0, len(x)*len(y))
	for _, a := range x {
		for _, b := range y {
			if t, ok := conjoin(a, b); ok {
				out = append(out, t)
			}
		}
	}
	return out, true
}

// conjoin is a ∧ b without repeated literals; false if it holds a literal
// and its negation (the term is false).
func conjoin(a, b term) (term, bool) {
	t := append(make(term, 0, len(a)+len(b)), a...)
	for _, lit := range b {
		dup := false
		for _, o := range t {
			if o.proc == lit.proc && (o.n == lit.n || render(o.n, 0) == render(lit.n, 0)) {
				if o.neg != lit.neg {
					return nil, false
				}
				dup = true
				break
			}
		}
		if !dup {
			t = append(t, lit)
		}
	}
	return t, true
}

func union(x, y dnf) (dnf, bool) {
	if len(x)+len(y) > maxTerms {
		return nil, false
	}
	return append(append(dnf{}, x...), y...), true
}

// conjunct is the local predicate of one process in a term: holds[k] is
// whether it holds in the process's local state after k events.
type conjunct struct {
	proc  int
	holds []bool
}

// locals evaluates a term's literals at every local state of their
// processes, one conjunct per process.
func (b *bound) locals(t term) []conjunct {
	l := b.l
	byProc := map[int]int{}
	var out []conjunct
	c := make(trace.Cut, l.n)
	for _, lit := range t {
		i, ok := byProc[lit.proc]
		if !ok {
			i = len(out)
			byProc[lit.proc] = i
			h := make([]bool, l.size[lit.proc]+1)
			for k := range h {
				h[k] = true
			}
			out = append(out, conjunct{lit.proc, h})
		}
		f := b.boolFn(lit.n)
		h := out[i].holds
		for k := range h {
			if h[k] {
				c[lit.proc] = k
				h[k] = f(c) != lit.neg
			}
		}
		c[lit.proc] = 0
	}
	return out
}

// weakConjunctive is Garg & Waldecker's algorithm: the least consistent
// cut in which every conjunct holds, if there is one. Each process has a
// candidate state, the first at or after its pointer where its conjunct
// holds. If the candidate of q knows of more events of p than p's
// candidate has (VC(state of q)[p] > state of p), p's candidate happened
// before q's and before every later state of q: no consistent cut holds
// both, and p moves on to the first state where its conjunct holds that
// includes those events. When no pair conflicts, the candidates are
// pairwise consistent, and the cut that adds to them, for every other
// process, just what they know of it is consistent. Each move goes forward
// and costs O(k) comparisons for k conjuncts: O(k²m) for m states per
// process. steps counts the candidate cuts examined.
func (l *Lattice) weakConjunctive(cs []conjunct) (cut trace.Cut, steps int64, ok bool) {
	k := len(cs)
	at := make([]int, k)
	advance := func(i, from int) bool {
		h := cs[i].holds
		for j := max(from, at[i]); j < len(h); j++ {
			if h[j] {
				at[i] = j
				return true
			}
		}
		return false
	}
	for i := range cs {
		if !advance(i, 0) {
			return nil, 1, false
		}
	}
	// queue holds the conjuncts whose candidate may force others forward:
	// for every pair (j, i) with j not queued, i's candidate includes what
	// j's knows of i.
	queue := make([]int, k)
	queued := make([]bool, k)
	for i := range queue {
		queue[i], queued[i] = i, true
	}
	steps = 1
	for len(queue) > 0 {
		j := queue[0]
		queue = queue[1:]
		queued[j] = false
		for i := range cs {
			if i == j {
				continue
			}
			if need := l.entry(cs[j].proc, at[j], cs[i].proc); need > at[i] {
				steps++
				if !advance(i, need) {
					return nil, steps, false
				}
				if !queued[i] {
					queue, queued[i] = append(queue, i), true
				}
			}
		}
	}
	cut = make(trace.Cut, l.n)
	fixed := make([]bool, l.n)
	for i, c := range cs {
		cut[c.proc] = at[i]
		fixed[c.proc] = true
	}
	for r := range l.n {
		if fixed[r] {
			continue
		}
		for i, c := range cs {
			cut[r] = max(cut[r], l.entry(c.proc, at[i], r))
		}
	}
	return cut, steps, true
}
