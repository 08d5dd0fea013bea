package sim

import "unsafe"

// Prefetching. At 10⁵ processes and more, the records a delivery touches
// — the destination's node record, its random source, its state — are
// scattered over tens of megabytes, and each first read is a cache miss
// that the processor waits for. The open bucket of the calendar holds the
// events to come in the order they fire (but for those pushed into it
// since it opened), so as each event is popped the simulator asks the
// processor for the node record of the event a few places further on, and
// for what the record of a nearer one points to, a pipeline of two stages
// (Mowry, Lam and Gupta 1992: software prefetching a known distance
// ahead). Writes wait for memory too: each event pushed goes into its
// bucket's next free line, so the calendar asks for the line after it as
// it writes one (calendar.place). Opening a bucket reads its blocks,
// written long ago, from memory: the count fetches each block two ahead
// (calendar.open). A prefetch is a hint: it changes no result, only when
// memory arrives.

// prefetchFrom is the smallest run that prefetches: below it, the
// records stay in cache and the hints would only cost their calls.
// (A variable, so that a test can compare runs with and without.)
var prefetchFrom = 1 << 14

// How far ahead, in events, the simulator asks for the records of the
// events to come: first a node record, then, once it has arrived, what
// it points to. An event takes a few hundred nanoseconds to handle, about
// as long as a read from memory, so a few events ahead is in time; much
// further, and what was fetched may be evicted before it is used.
const (
	recordAhead = 8
	stateAhead  = 3
)

// prefetchAhead asks for the node record of the event recordAhead places
// after the next one, and for the process state and random source of the
// event stateAhead places after it, whose record was asked for
// recordAhead-stateAhead events ago. (The events ahead are those of the
// open bucket in the order of its sub-buckets, which is the order they
// fire in but for the events pushed into it since it opened; see
// calendar.upcoming.)
func (s *Sim) prefetchAhead() {
	var record, state, rng unsafe.Pointer // nil: nothing to ask for
	if e := s.cal.upcoming(recordAhead); e != nil && e.item.kind <= evInput && uint(e.item.node) < uint(len(s.nodes)) {
		record = unsafe.Pointer(&s.nodes[e.item.node])
	}
	if e := s.cal.upcoming(stateAhead); e != nil && e.item.kind <= evInput && uint(e.item.node) < uint(len(s.nodes)) {
		nd := &s.nodes[e.item.node]
		// An interface value is a type word and a data word; the data
		// word points to the process (all of Cohort's are pointers).
		w := (*[2]unsafe.Pointer)(unsafe.Pointer(&nd.p))
		state, rng = w[1], unsafe.Pointer(nd.rng)
		if w[0] != s.spread.typ {
			s.spread.typ, s.spread.lines = w[0], 1
			if sp, ok := nd.p.(Spread); ok {
				s.spread.lines = max(sp.CacheLines(), 1)
			}
		}
		if s.spread.lines > 1 { // the state's lines after its first
			prefetchLines(unsafe.Add(state, 64), s.spread.lines-1)
		}
	}
	prefetch3(record, state, rng)
}

// Spread is implemented by a process whose every delivery reads several
// cache lines of its state (an overlay node reads its identifiers, its
// leaf set's bounds, its table's header, then its leaf set): the
// simulator prefetches that many lines from the process's address, not
// only the first, when its event is next. CacheLines must not read the
// process's state (it is called on a process not yet in cache); a
// constant is the intent. Like every prefetch, it changes no result.
type Spread interface{ CacheLines() int }

// spread caches the last process type's answer to Spread: runs hold one
// type of process, or a few, so the assertion is rarely made.
type spread struct {
	typ   unsafe.Pointer // the process's type word
	lines int
}
