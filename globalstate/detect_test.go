package globalstate

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cohort-go/cohort/trace"
)

// linearizations calls f with every linearization of tr (its process
// events in an order that keeps happened-before: each process's order, and
// a receive after its send), found by trying every enabled event at every
// step; false if there are more than limit.
func linearizations(t *testing.T, tr *trace.Trace, limit int, f func(lin []int)) bool {
	t.Helper()
	hb, err := trace.NewHB(tr)
	if err != nil {
		t.Fatal(err)
	}
	n := tr.Header.Nodes
	hist := make([][]int, n)
	total := 0
	for p := range hist {
		hist[p] = hb.History(p)
		total += len(hist[p])
	}
	done := map[int]bool{}
	c := make([]int, n)
	lin := make([]int, 0, total)
	count := 0
	var rec func() bool
	rec = func() bool {
		if len(lin) == total {
			count++
			f(lin)
			return count < limit
		}
		for p := range n {
			if c[p] == len(hist[p]) {
				continue
			}
			i := hist[p][c[p]]
			if s, ok := hb.Send(i); ok && !done[s] {
				continue
			}
			c[p]++
			done[i] = true
			lin = append(lin, i)
			more := rec()
			lin = lin[:len(lin)-1]
			done[i] = false
			c[p]--
			if !more {
				return false
			}
		}
		return true
	}
	return rec()
}

// possibly and definitely, asked of small random runs with random
// predicates, agree with a brute force over every linearization: φ is
// possibly true if some state of some linearization satisfies it, and
// definitely true if every linearization has such a state. The brute
// force evaluates φ with its own interpreter. Each answer is asked twice,
// by the fast ways (the conjunctive algorithm, the initial, final and
// observed states) and by enumeration; the witnesses are checked.
func TestPossiblyDefinitelyMatchLinearizations(t *testing.T) {
	seeds := 1500
	if testing.Short() || raceEnabled {
		seeds = 300
	}
	var conj, tried, poss, defs, lattice int
	defer func() { wideCuts = false }()
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 9))
		n := 1 + r.IntN(3)
		tr := randomTrace(r, n, 4+r.IntN(9))
		hist := histories(t, tr)
		src := randomPredicate(r, n, 2)
		pred, err := Parse(src)
		if err != nil {
			t.Fatalf("seed %d: %q: %v", seed, src, err)
		}
		memo := map[string]bool{}
		holds := func(c trace.Cut) bool {
			k := cutKey(c)
			v, ok := memo[k]
			if !ok {
				v = naiveValue(pred.root, tr, hist, c) != 0
				memo[k] = v
			}
			return v
		}

		possibly, definitely := false, true
		complete := linearizations(t, tr, 200000, func(lin []int) {
			c := make(trace.Cut, n)
			hit := holds(c)
			for _, i := range lin {
				c[tr.Events[i].Node]++
				hit = hit || holds(c)
			}
			possibly = possibly || hit
			definitely = definitely && hit
		})
		if !complete {
			continue
		}
		tried++
		for _, mode := range []struct{ enumerate, wide bool }{{false, false}, {true, false}, {true, true}} {
			enumerate := mode.enumerate
			wideCuts = mode.wide // breadth-first over cuts of n entries, not packed in a word
			l := mustNew(t, tr, Options{Enumerate: enumerate})
			a, err := l.Possibly(pred)
			if err != nil {
				t.Fatalf("seed %d: possibly(%s): %v", seed, src, err)
			}
			if a.Holds != possibly {
				t.Fatalf("seed %d (enumerate %v, method %s): possibly(%s) = %v, brute force says %v\n%s", seed, enumerate, a.Method, src, a.Holds, possibly, dump(tr))
			}
			if a.Method == MethodConjunctive {
				conj++
			}
			if a.Holds {
				poss++
				if !l.Consistent(a.Cut) || !holds(a.Cut) {
					t.Fatalf("seed %d: possibly(%s)'s witness %v is not a consistent cut where it holds", seed, src, a.Cut)
				}
				checkPath(t, l, a.Path, a.Cut)
			}
			d, err := l.Definitely(pred)
			if err != nil {
				t.Fatalf("seed %d: definitely(%s): %v", seed, src, err)
			}
			if d.Holds != definitely {
				t.Fatalf("seed %d (enumerate %v, method %s): definitely(%s) = %v, brute force says %v\n%s", seed, enumerate, d.Method, src, d.Holds, definitely, dump(tr))
			}
			if d.Method == MethodBreadthFirst {
				lattice++
			}
			if d.Holds {
				defs++
				if d.Cut == nil || !holds(d.Cut) {
					t.Fatalf("seed %d: definitely(%s) without a state of the observed run where it holds: %v", seed, src, d.Cut)
				}
				if d.Method == MethodBreadthFirst || d.Method == MethodInitial {
					if d.Level == nil {
						t.Fatalf("seed %d: definitely(%s) by %s without its level", seed, src, d.Method)
					}
					checkLevel(t, tr, *d.Level, holds)
				}
				continue
			}
			checkLinearization(t, tr, d.Linearization, func(c trace.Cut) bool { return !holds(c) })
		}
	}
	t.Logf("%d runs: %d answers by the conjunctive algorithm, %d by breadth-first search; possibly held %d times, definitely %d", tried, conj, lattice, poss, defs)
	if tried < seeds/2 || conj == 0 || lattice == 0 || poss == 0 || defs == 0 {
		t.Errorf("the sample is poor: %d runs, %d conjunctive, %d breadth-first, %d possibly, %d definitely", tried, conj, lattice, poss, defs)
	}
}

// checkLinearization checks that lin is a linearization of the whole run
// whose every state satisfies ok.
func checkLinearization(t *testing.T, tr *trace.Trace, lin []int, ok func(trace.Cut) bool) {
	t.Helper()
	l := mustNew(t, tr, Options{})
	if len(lin) != l.Events() {
		t.Fatalf("linearization %v has %d events of %d", lin, len(lin), l.Events())
	}
	c := l.Initial()
	if !ok(c) {
		t.Fatalf("linearization %v: its initial state fails", lin)
	}
	for _, i := range lin {
		e := tr.Events[i]
		c[e.Node]++
		if l.Event(int(e.Node), c[e.Node]) != i || !l.Consistent(c) {
			t.Fatalf("linearization %v does not keep happened-before at #%d", lin, i)
		}
		if !ok(c) {
			t.Fatalf("linearization %v: the state %v after #%d fails", lin, c, i)
		}
	}
}

// checkLevel checks that every linearization passes through φ within its
// first level events, and that one does not within level-1.
func checkLevel(t *testing.T, tr *trace.Trace, level int, holds func(trace.Cut) bool) {
	t.Helper()
	n := tr.Header.Nodes
	worst := 0
	linearizations(t, tr, 200000, func(lin []int) {
		c := make(trace.Cut, n)
		at := -1
		if holds(c) {
			at = 0
		}
		for j, i := range lin {
			if at >= 0 {
				break
			}
			c[tr.Events[i].Node]++
			if holds(c) {
				at = j + 1
			}
		}
		worst = max(worst, at)
	})
	if worst != level {
		t.Fatalf("definitely at level %d, but the latest first passage through φ of a linearization is after %d events", level, worst)
	}
}

func dump(tr *trace.Trace) string {
	s := ""
	for i := range tr.Events {
		s += tr.Events[i].String() + "\n"
	}
	return s
}

// For a conjunctive predicate the cuts where it holds are closed under
// intersection, and the algorithm finds the least of them: the
// intersection of all. The enumeration agrees.
func TestConjunctiveFindsTheLeastCut(t *testing.T) {
	atoms := []string{"cs(p%d)", "!cs(p%d)", "wanting(p%d)", "events(p%d) >= 2", "sent(p%d) >= 1", "received(p%d) == 1", "up(p%d)", "outputs[enter](p%d) == 1"}
	found := 0
	for seed := range uint64(1000) {
		r := rand.New(rand.NewPCG(seed, 10))
		n := 1 + r.IntN(4)
		tr := randomTrace(r, n, r.IntN(7*n))
		src := ""
		for p := range n {
			if r.IntN(3) == 0 {
				continue
			}
			if src != "" {
				src += " && "
			}
			src += sprintf(atoms[r.IntN(len(atoms))], p)
		}
		if src == "" {
			src = "true"
		}
		pred := MustParse(src)
		l := mustNew(t, tr, Options{})
		b, err := l.bind(pred)
		if err != nil {
			t.Fatal(err)
		}
		d, ok := toDNF(pred.root, false, n)
		if !ok || len(d) != 1 {
			t.Fatalf("%s is conjunctive, but toDNF gives %v, %v", src, d, ok)
		}
		var least trace.Cut
		_, err = l.Lex(func(c trace.Cut) bool {
			if b.eval(c) {
				if least == nil {
					least = slices.Clone(c)
				}
				for p := range c {
					least[p] = min(least[p], c[p])
				}
			}
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		a, err := l.Possibly(pred)
		if err != nil {
			t.Fatal(err)
		}
		if a.Method != MethodConjunctive || a.Holds != (least != nil) {
			t.Fatalf("seed %d: possibly(%s) = %v by %s; the enumeration says %v", seed, src, a.Holds, a.Method, least != nil)
		}
		if least != nil {
			found++
			if !slices.Equal(a.Cut, least) {
				t.Fatalf("seed %d: possibly(%s) found %v; the least satisfying cut is %v", seed, src, a.Cut, least)
			}
		}
	}
	if found < 100 {
		t.Errorf("only %d of 1000 runs satisfied their predicate", found)
	}
}

// A disjunction of conjunctive predicates is decided term by term;
// count(cs) >= 2 over n processes is C(n,2) terms; a predicate beyond
// maxTerms, or over two processes at once, is enumerated.
func TestWhichPredicatesAreConjunctive(t *testing.T) {
	for _, c := range []struct {
		src   string
		n     int
		terms int // -1: not a disjunction of conjunctive predicates
	}{
		{"cs(p0) && cs(p1)", 3, 1},
		{"count(cs) >= 2", 4, 6},
		{"count(cs) > 1", 4, 6},
		{"count(cs) <= 1", 3, 3},    // at least 2 of 3 outside
		{"!(count(cs) >= 2)", 3, 3}, // the same
		{"count(cs) == 1", 3, 3},    // one in, two out
		{"2 <= count(cs)", 3, 3},    // flipped
		{"count(cs) >= 0", 3, 1},    // true
		{"count(cs) >= 4", 3, 0},    // false
		{"all(up)", 3, 1},           // one term of 3
		{"any(cs)", 3, 3},           // three terms
		{"!all(up)", 3, 3},          // some process down
		{"cs(p0) || wanting(p1)", 2, 2},
		{"sent(p0) > 2 && received(p0) < sent(p0)", 2, 1},
		{"sent(p0) > received(p1)", 2, -1}, // two processes in one comparison
		{"sum(sent) >= 3", 2, -1},
		{"count(cs) >= count(up)", 2, -1},
		{"count(cs) >= 2", 300, -1}, // 44,850 pairs
	} {
		p := MustParse(c.src)
		d, ok := toDNF(p.root, false, c.n)
		switch {
		case c.terms < 0 && ok:
			t.Errorf("%s over %d processes: %d terms, want enumeration", c.src, c.n, len(d))
		case c.terms >= 0 && (!ok || len(d) != c.terms):
			t.Errorf("%s over %d processes: %d terms (%v), want %d", c.src, c.n, len(d), ok, c.terms)
		}
	}
}

func TestDefinitelyIsBounded(t *testing.T) {
	ind := &trace.Trace{Header: trace.Header{Format: trace.FormatName, Nodes: 4}}
	for i := range 40 {
		ind.Events = append(ind.Events, trace.Event{Index: i, Node: int32(i % 4), Kind: trace.Timer, Peer: -1})
	}
	l := mustNew(t, ind, Options{MaxStates: 1000, Enumerate: true})
	if _, err := l.Definitely(MustParse("events(p0) == 5 && events(p1) == 5")); !errors.Is(err, ErrTooManyStates) {
		t.Errorf("definitely over 14641 states with 1000 allowed: %v", err)
	}
	if _, err := l.Possibly(MustParse("events(p0) + events(p1) + events(p2) + events(p3) == 41")); !errors.Is(err, ErrTooManyStates) {
		t.Errorf("possibly over 14641 states with 1000 allowed: %v", err)
	}
	var pe *PredicateError
	if _, err := l.Possibly(MustParse("cs(p4)")); !errors.As(err, &pe) || pe.Token != "cs(p4)" || pe.Col != 1 {
		t.Errorf("cs(p4) of a 4-process trace: %v", err)
	} else if want := `predicate "cs(p4)": column 1: "cs(p4)" names process p4, but the trace has p0..p3`; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

// Holds evaluates a predicate in any cut's state, as the independent
// interpreter does; entries out of range are clamped.
func TestHoldsMatchesTheInterpreter(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 13))
		n := 1 + r.IntN(4)
		tr := randomTrace(r, n, 30)
		hist := histories(t, tr)
		l := mustNew(t, tr, Options{})
		pred := MustParse(randomPredicate(r, n, 3))
		c := make(trace.Cut, n)
		for p := range c {
			c[p] = r.IntN(len(hist[p]) + 1)
		}
		got, err := l.Holds(pred, c)
		if err != nil {
			t.Fatal(err)
		}
		if want := naiveValue(pred.root, tr, hist, c) != 0; got != want {
			t.Fatalf("seed %d: %s at %v = %v, want %v", seed, pred, c, got, want)
		}
		wide := append(slices.Clone(c), 7)
		wide[0] = -3
		c[0] = 0
		if got, _ := l.Holds(pred, wide); got != (naiveValue(pred.root, tr, hist, c) != 0) {
			t.Fatalf("seed %d: %s at %v is not its value at %v", seed, pred, wide, c)
		}
	}
}
