package globalstate

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cohort-go/cohort/trace"
)

func cutKey(c trace.Cut) string {
	b := make([]byte, 0, 4*len(c))
	for _, v := range c {
		b = append(b, byte(v), byte(v>>8), ',')
	}
	return string(b)
}

func mustNew(t *testing.T, tr *trace.Trace, opt Options) *Lattice {
	t.Helper()
	l, err := New(tr, opt)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// The lattice's two enumerations visit exactly the consistent cuts that a
// brute force finds (every vector of prefix lengths, kept if package
// trace's test calls it consistent), each once: breadth-first by
// nondecreasing level, lexical in increasing lexical order.
func TestEnumerationsMatchBruteForce(t *testing.T) {
	seeds := 1500
	if testing.Short() {
		seeds = 300
	}
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 7))
		n := 1 + r.IntN(4)
		tr := randomTrace(r, n, r.IntN(7*n))
		want := bruteCuts(t, tr)
		l := mustNew(t, tr, Options{})

		var lex []trace.Cut
		st, err := l.Lex(func(c trace.Cut) bool { lex = append(lex, slices.Clone(c)); return true })
		if err != nil {
			t.Fatal(err)
		}
		if st.States != int64(len(lex)) {
			t.Fatalf("seed %d: Lex says %d states, visited %d", seed, st.States, len(lex))
		}
		// The brute force enumerates in lexical order too.
		if !slices.EqualFunc(lex, want, slices.Equal) {
			t.Fatalf("seed %d (%d processes, %d events): lexical enumeration\n%v\nbrute force\n%v", seed, n, len(tr.Events), lex, want)
		}

		var bfs []trace.Cut
		seen := map[string]bool{}
		level := 0
		st, err = l.BFS(func(c trace.Cut) bool {
			sum := 0
			for _, v := range c {
				sum += v
			}
			if sum < level {
				t.Fatalf("seed %d: breadth-first visited %v (level %d) after level %d", seed, c, sum, level)
			}
			level = sum
			if seen[cutKey(c)] {
				t.Fatalf("seed %d: breadth-first visited %v twice", seed, c)
			}
			seen[cutKey(c)] = true
			bfs = append(bfs, slices.Clone(c))
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(bfs) != len(want) || st.States != int64(len(want)) {
			t.Fatalf("seed %d: breadth-first visited %d states (stats %d), brute force finds %d", seed, len(bfs), st.States, len(want))
		}
		for _, c := range want {
			if !seen[cutKey(c)] {
				t.Fatalf("seed %d: breadth-first missed %v", seed, c)
			}
		}
		if st.Levels != l.Events()+1 {
			t.Fatalf("seed %d: %d levels for %d events", seed, st.Levels, l.Events())
		}
		if got, err := l.Count(); err != nil || got != int64(len(want)) {
			t.Fatalf("seed %d: Count = %d, %v; want %d", seed, got, err, len(want))
		}
	}
}

// Known lattices: n independent processes of k events have (k+1)^n
// states; a chain of messages through every process has one per level.
func TestLatticeCountsOfKnownRuns(t *testing.T) {
	ind := &trace.Trace{Header: trace.Header{Format: trace.FormatName, Nodes: 3}}
	for i := range 12 {
		ind.Events = append(ind.Events, trace.Event{Index: i, Node: int32(i % 3), Kind: trace.Timer, Peer: -1})
	}
	if got, _ := mustNew(t, ind, Options{}).Count(); got != 125 {
		t.Errorf("3 independent processes of 4 events: %d states, want 5³ = 125", got)
	}
	chain := &trace.Trace{Header: trace.Header{Format: trace.FormatName, Nodes: 3}}
	add := func(e trace.Event) { e.Index = len(chain.Events); chain.Events = append(chain.Events, e) }
	add(trace.Event{Node: 0, Kind: trace.Send, Msg: 1, Peer: 1})
	add(trace.Event{Node: 1, Kind: trace.Recv, Msg: 1, Peer: 0})
	add(trace.Event{Node: 1, Kind: trace.Send, Msg: 2, Peer: 2})
	add(trace.Event{Node: 2, Kind: trace.Recv, Msg: 2, Peer: 1})
	l := mustNew(t, chain, Options{})
	st, _ := l.BFS(func(trace.Cut) bool { return true })
	if st.States != 5 || st.MaxWidth != 1 || st.Levels != 5 {
		t.Errorf("a chain of 4 events: %+v, want 5 states on 5 levels of 1", st)
	}
}

// Stopping early, and the bound on the states.
func TestEnumerationStopsAndIsBounded(t *testing.T) {
	ind := &trace.Trace{Header: trace.Header{Format: trace.FormatName, Nodes: 4}}
	for i := range 40 {
		ind.Events = append(ind.Events, trace.Event{Index: i, Node: int32(i % 4), Kind: trace.Timer, Peer: -1})
	}
	l := mustNew(t, ind, Options{MaxStates: 1000}) // 11^4 = 14641 states
	for name, enum := range map[string]func(func(trace.Cut) bool) (Stats, error){"lex": l.Lex, "bfs": l.BFS} {
		visits := 0
		st, err := enum(func(trace.Cut) bool { visits++; return visits < 10 })
		if err != nil || visits != 10 || st.States != 10 {
			t.Errorf("%s stopped after 10: visited %d, stats %+v, %v", name, visits, st, err)
		}
		st, err = enum(func(trace.Cut) bool { return true })
		if !errors.Is(err, ErrTooManyStates) || st.States > 1000 {
			t.Errorf("%s over 1000 states: %+v, %v; want ErrTooManyStates within the bound", name, st, err)
		}
	}
	if _, err := l.Count(); !errors.Is(err, ErrTooManyStates) {
		t.Errorf("Count: %v", err)
	}
	if got, err := mustNew(t, ind, Options{MaxStates: 14641}).Count(); err != nil || got != 14641 {
		t.Errorf("exactly at the bound: %d, %v", got, err)
	}
	// Many processes, each with one event, independent: 2^3000 states. The
	// enumerations stop at the bound on states, or breadth-first at the
	// memory of a level (the 4.5 M states of level 2 with 3000 entries
	// each); the lexical enumeration's n² lower bounds always fit, since
	// New admitted the trace's events × n vector clocks.
	wide := &trace.Trace{Header: trace.Header{Format: trace.FormatName, Nodes: 3000}}
	for i := range 3000 {
		wide.Events = append(wide.Events, trace.Event{Index: i, Node: int32(i), Kind: trace.Timer, Peer: -1})
	}
	lw := mustNew(t, wide, Options{MaxStates: 1000})
	if _, err := lw.Lex(func(trace.Cut) bool { return true }); !errors.Is(err, ErrTooManyStates) {
		t.Errorf("lexical, 3000 processes: %v", err)
	}
	if _, err := lw.Possibly(MustParse("sum(sent) > 0")); !errors.Is(err, ErrTooManyStates) {
		t.Errorf("possibly by enumeration, 3000 processes: %v", err)
	}
	if a, err := lw.Possibly(MustParse("events(p0) == 1 && events(p2999) == 1")); err != nil || !a.Holds {
		t.Errorf("possibly of a conjunctive predicate needs no enumeration: %+v, %v", a, err)
	}
	_, err := mustNew(t, wide, Options{MaxEntries: 10_000_000}).BFS(func(trace.Cut) bool { return true })
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "level 2 of the lattice holds more than") {
		t.Errorf("breadth-first, 3000 processes: %v", err)
	}
	// A breadth-first level wider than the memory allowed.
	_, err = mustNew(t, ind, Options{MaxEntries: 400}).BFS(func(trace.Cut) bool { return true })
	if !errors.Is(err, ErrTooLarge) {
		t.Errorf("a level of more than 100 states of 4 processes with 400 entries allowed: %v", err)
	}
}

// A trace whose vector clocks would not fit is refused before they are
// allocated, naming the sizes.
func TestHugeTracesAreRefused(t *testing.T) {
	tr := &trace.Trace{Header: trace.Header{Format: trace.FormatName, Nodes: 60000}}
	for i := range 200000 {
		tr.Events = append(tr.Events, trace.Event{Index: i, Node: int32(i % 60000), Kind: trace.Timer, Peer: -1})
	}
	_, err := New(tr, Options{})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("200000 events × 60000 processes: %v", err)
	}
	want := "200000 events × 60000 processes need 12000000000 vector-clock entries, more than the 67108864 allowed"
	if got := err.Error(); !strings.Contains(got, want) {
		t.Errorf("error %q does not say %q", got, want)
	}
}

// Path lists a cut's events so that every prefix is consistent.
func TestPathIsAPathOfTheLattice(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 8))
		tr := randomTrace(r, 1+r.IntN(4), 25)
		l := mustNew(t, tr, Options{})
		cuts := bruteCuts(t, tr)
		c := cuts[r.IntN(len(cuts))]
		checkPath(t, l, l.Path(c), c)
	}
}

// checkPath checks that path goes from the initial state to c through
// consistent cuts, one event at a time.
func checkPath(t *testing.T, l *Lattice, path []int, c trace.Cut) {
	t.Helper()
	cur := l.Initial()
	for _, i := range path {
		e := l.Trace().Events[i]
		cur[e.Node]++
		if l.Event(int(e.Node), cur[e.Node]) != i {
			t.Fatalf("path %v: #%d is not p%d's next event", path, i, e.Node)
		}
		if !l.Consistent(cur) {
			t.Fatalf("path %v passes through the inconsistent cut %v", path, cur)
		}
	}
	if !slices.Equal(cur, c) {
		t.Fatalf("path %v ends at %v, want %v", path, cur, c)
	}
}
