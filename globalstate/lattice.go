package globalstate

import (
	"errors"
	"fmt"
	"math"

	"github.com/cohort-go/cohort/trace"
)

// Options bound the work and the memory of the lattice's algorithms.
type Options struct {
	// MaxStates is how many global states an enumeration may visit (or a
	// decision evaluate) before it gives up with an error wrapping
	// ErrTooManyStates; 0 means DefaultMaxStates.
	MaxStates int64
	// MaxEntries bounds memory, in vector entries: the trace's vector
	// clocks (events × processes) and a breadth-first level of the lattice
	// (states × processes) may not hold more; 0 means DefaultMaxEntries.
	// Beyond it New, or the search, fails with an error wrapping
	// ErrTooLarge.
	MaxEntries int64
	// Enumerate decides possibly and definitely by enumerating the lattice
	// even where a cheaper way exists (the conjunctive algorithm; the
	// initial, final and observed states). For tests and measurements.
	Enumerate bool
}

// DefaultMaxStates is the default bound on the states a search visits.
const DefaultMaxStates = 10_000_000

// DefaultMaxEntries is the default memory bound: 2^26 vector entries, 512
// MiB of vector clocks.
const DefaultMaxEntries = 1 << 26

// ErrTooManyStates is wrapped by the error of a search that would visit
// more global states than Options.MaxStates allows.
var ErrTooManyStates = errors.New("too many consistent global states")

// ErrTooLarge is wrapped by the error for a trace, or a level of its
// lattice, too large for the memory Options.MaxEntries allows.
var ErrTooLarge = errors.New("too large")

// Lattice is the lattice of consistent global states of one trace. Its
// methods do not change it; it is safe for concurrent use.
type Lattice struct {
	t   *trace.Trace
	hb  *trace.HB
	opt Options
	n   int
	// size[p] is the length of p's history; off[p] the global number of
	// its first event: event k (from 1) of p is global event off[p]+k-1.
	size []int
	off  []int
	ev   []int32 // trace index of each global event
	// The receive of global event g, if it is a matched one, received a
	// message sent by process from[g] as its event fromPos[g] (from 1);
	// from[g] is -1 otherwise.
	from, fromPos []int32
	// The receives that received the send g: kidProc[k], kidPos[k] for k
	// in kidStart[g] .. kidStart[g+1]-1.
	kidStart        []int32
	kidProc, kidPos []int32
	events          int // process events
}

// New builds the lattice of t's consistent global states. It fails, with
// an error wrapping trace.ErrFormat, for a trace whose events cannot be
// placed (see trace.NewHB), and with one wrapping ErrTooLarge for a trace
// whose vector clocks would take more than Options.MaxEntries entries.
func New(t *trace.Trace, opt Options) (*Lattice, error) {
	if opt.MaxStates <= 0 {
		opt.MaxStates = DefaultMaxStates
	}
	if opt.MaxEntries <= 0 {
		opt.MaxEntries = DefaultMaxEntries
	}
	n := t.Header.Nodes
	if n < 1 {
		return nil, fmt.Errorf("%w: header names %d nodes, want at least 1", trace.ErrFormat, n)
	}
	// The vector clocks are events × processes words: refuse before
	// allocating them.
	if e := int64(len(t.Events)); e > math.MaxInt32 || e*int64(n) > opt.MaxEntries {
		return nil, fmt.Errorf("%w: %d events × %d processes need %d vector-clock entries, more than the %d allowed",
			ErrTooLarge, len(t.Events), n, e*int64(n), opt.MaxEntries)
	}
	hb, err := trace.NewHB(t)
	if err != nil {
		return nil, err
	}
	l := &Lattice{t: t, hb: hb, opt: opt, n: n, size: make([]int, n), off: make([]int, n+1)}
	hist := make([][]int, n)
	for p := range n {
		hist[p] = hb.History(p)
		l.size[p] = len(hist[p])
		l.off[p+1] = l.off[p] + l.size[p]
	}
	E := l.off[n]
	l.events = E
	l.ev = make([]int32, E)
	l.from = make([]int32, E)
	l.fromPos = make([]int32, E)
	// where[i] is the global number of trace event i (process events).
	where := make([]int32, len(t.Events))
	for p := range n {
		for k, i := range hist[p] {
			g := l.off[p] + k
			l.ev[g] = int32(i)
			where[i] = int32(g)
		}
	}
	kids := make([]int32, E+1) // counts, then starts
	for g := range E {
		l.from[g] = -1
		s, ok := hb.Send(int(l.ev[g]))
		if !ok {
			continue
		}
		q := int(t.Events[s].Node)
		l.from[g] = int32(q)
		l.fromPos[g] = where[s] - int32(l.off[q]) + 1
		kids[where[s]+1]++
	}
	for g := range E {
		kids[g+1] += kids[g]
	}
	l.kidStart = kids
	l.kidProc = make([]int32, kids[E])
	l.kidPos = make([]int32, kids[E])
	fill := append([]int32(nil), kids[:E]...)
	for p := range n {
		for k := range l.size[p] {
			g := l.off[p] + k
			if q := l.from[g]; q >= 0 {
				sg := l.off[q] + int(l.fromPos[g]) - 1
				l.kidProc[fill[sg]] = int32(p)
				l.kidPos[fill[sg]] = int32(k + 1)
				fill[sg]++
			}
		}
	}
	return l, nil
}

// Trace is the trace the lattice is of.
func (l *Lattice) Trace() *trace.Trace { return l.t }

// HB is the trace's happened-before relation.
func (l *Lattice) HB() *trace.HB { return l.hb }

// Nodes is the number of processes.
func (l *Lattice) Nodes() int { return l.n }

// Events is the number of process events: the level of the final state.
func (l *Lattice) Events() int { return l.events }

// Len is the length of process p's history.
func (l *Lattice) Len(p int) int { return l.size[p] }

// Initial is the initial state: no event.
func (l *Lattice) Initial() trace.Cut { return make(trace.Cut, l.n) }

// Final is the final state: every event.
func (l *Lattice) Final() trace.Cut { return append(trace.Cut(nil), l.size...) }

// Event is the trace index of event k (from 1) of process p.
func (l *Lattice) Event(p, k int) int { return int(l.ev[l.off[p]+k-1]) }

// entry is VC(state k of p)[q]: how many events of q happened before
// process p's k-th event or are it (0 for the initial state).
func (l *Lattice) entry(p, k, q int) int {
	if k == 0 {
		return 0
	}
	return int(l.hb.Entry(int(l.ev[l.off[p]+k-1]), q))
}

// enabled reports whether p's next event can be added to the consistent
// cut c: it is a receive whose send is in c, or not a receive.
func (l *Lattice) enabled(c []int32, p int) bool {
	k := int(c[p])
	if k >= l.size[p] {
		return false
	}
	g := l.off[p] + k
	q := l.from[g]
	return q < 0 || c[q] >= l.fromPos[g]
}

// removable reports whether the last event of q in the consistent cut c
// can be taken out of it: no receive of it is in c.
func (l *Lattice) removable(c []int32, q int) bool {
	k := int(c[q])
	if k == 0 {
		return false
	}
	g := l.off[q] + k - 1
	for i := l.kidStart[g]; i < l.kidStart[g+1]; i++ {
		if c[l.kidProc[i]] >= l.kidPos[i] {
			return false
		}
	}
	return true
}

// Stats describe an enumeration.
type Stats struct {
	States   int64 `json:"states"`              // consistent global states visited
	Levels   int   `json:"levels,omitempty"`    // breadth-first: levels visited (the final state's is Events()+1)
	MaxWidth int   `json:"max_width,omitempty"` // breadth-first: the most states on one level
}

func (l *Lattice) tooMany() error {
	return fmt.Errorf("%w: more than %d (the limit)", ErrTooManyStates, l.opt.MaxStates)
}

// BFS visits every consistent global state once, level by level (by the
// number of events; Cooper & Marzullo), and within a level in the order it
// generates them. visit gets the state's cut, valid during the call only;
// returning false stops the enumeration. A level is generated from the
// one before without a table of states seen: a state is made only from its
// canonical predecessor, the one without the last event of the first
// process whose last event can be taken out. Memory is two levels.
func (l *Lattice) BFS(visit func(c trace.Cut) bool) (Stats, error) {
	n := l.n
	var st Stats
	cur := make([]int32, n) // level 0: the initial state
	var next []int32
	buf := make(trace.Cut, n)
	for {
		width := len(cur) / n
		st.Levels++
		st.MaxWidth = max(st.MaxWidth, width)
		for i := range width {
			if st.States >= l.opt.MaxStates {
				return st, l.tooMany()
			}
			st.States++
			for p, v := range cur[i*n : (i+1)*n] {
				buf[p] = int(v)
			}
			if !visit(buf) {
				return st, nil
			}
		}
		next = next[:0]
		for i := range width {
			s := cur[i*n : (i+1)*n]
			for p := range n {
				if !l.enabled(s, p) {
					continue
				}
				s[p]++
				if l.canonical(s, p) {
					if int64(len(next)+n) > l.opt.MaxEntries {
						s[p]--
						return st, fmt.Errorf("%w: level %d of the lattice holds more than %d states of %d processes (the memory allowed); the lexical enumeration needs no levels",
							ErrTooLarge, st.Levels, len(next)/n, n)
					}
					if st.States+int64(len(next)/n) >= l.opt.MaxStates {
						s[p]--
						return st, l.tooMany()
					}
					next = append(next, s...)
				}
				s[p]--
			}
		}
		if len(next) == 0 {
			return st, nil
		}
		cur, next = next, cur
	}
}

// canonical reports whether p, whose last event was just added to make s,
// is the first process whose last event can be taken out of s.
func (l *Lattice) canonical(s []int32, p int) bool {
	for q := range p {
		if l.removable(s, q) {
			return false
		}
	}
	return true
}

// Lex visits every consistent global state once, in lexical order of the
// cuts (c[0] varies slowest). It chooses c[0], c[1] ... in turn; the
// vector clocks of the events chosen so far bound the later entries from
// below, and an entry whose event happened after an earlier choice's
// frontier ends the loop over that entry. Every partial choice extends to
// a consistent cut, so no work is wasted, and the memory is the n lower
// bounds of n entries: O(n²), for the n processes that have events (it
// fails with an error wrapping ErrTooLarge if n² is more than
// Options.MaxEntries). visit gets the state's cut, valid during the call
// only; returning false stops the enumeration.
func (l *Lattice) Lex(visit func(c trace.Cut) bool) (Stats, error) {
	var act []int // the processes with events; the others stay at 0
	for p := range l.n {
		if l.size[p] > 0 {
			act = append(act, p)
		}
	}
	m := len(act)
	var st Stats
	c := make(trace.Cut, l.n)
	if m == 0 {
		st.States = 1
		visit(c)
		return st, nil
	}
	if int64(m)*int64(m) > l.opt.MaxEntries {
		return st, fmt.Errorf("%w: the lexical enumeration of %d processes with events needs %d² lower bounds, more than the %d entries allowed",
			ErrTooLarge, m, m, l.opt.MaxEntries)
	}
	lb := make([]int32, m*m) // row k: lower bounds on act[k..] given the choices for act[0..k-1]
	var err error
	var rec func(k int) bool
	rec = func(k int) bool {
		row := lb[k*m : (k+1)*m]
		p := act[k]
		last := k == m-1
		for v := int(row[k]); v <= l.size[p]; v++ {
			var e int
			if v > 0 {
				e = int(l.ev[l.off[p]+v-1])
				ok := true
				for j := range k {
					if int(l.hb.Entry(e, act[j])) > c[act[j]] {
						ok = false
						break
					}
				}
				if !ok {
					break
				}
			}
			c[p] = v
			if last {
				if st.States >= l.opt.MaxStates {
					err = l.tooMany()
					return false
				}
				st.States++
				if !visit(c) {
					return false
				}
				continue
			}
			nxt := lb[(k+1)*m : (k+2)*m]
			for j := k + 1; j < m; j++ {
				nxt[j] = row[j]
				if v > 0 {
					nxt[j] = max(nxt[j], int32(l.hb.Entry(e, act[j])))
				}
			}
			if !rec(k + 1) {
				return false
			}
		}
		c[p] = 0
		return true
	}
	rec(0)
	return st, err
}

// Count is the number of consistent global states, counted in lexical
// order.
func (l *Lattice) Count() (int64, error) {
	st, err := l.Lex(func(trace.Cut) bool { return true })
	return st.States, err
}

// Consistent reports whether c is a consistent cut of the trace (package
// trace's test).
func (l *Lattice) Consistent(c trace.Cut) bool {
	ok, _ := l.hb.Consistent(c)
	return ok
}

// Path lists the events of the consistent cut c in trace order: an order
// that keeps happened-before (a receive's send comes first in the trace),
// so every prefix of it is a consistent cut — a path of the lattice from
// the initial state to c.
func (l *Lattice) Path(c trace.Cut) []int {
	in := make([]bool, len(l.t.Events))
	total := 0
	for p := range l.n {
		for k := 1; k <= min(max(c[p], 0), l.size[p]); k++ {
			in[l.Event(p, k)] = true
			total++
		}
	}
	path := make([]int, 0, total)
	for i, ok := range in {
		if ok {
			path = append(path, i)
		}
	}
	return path
}
