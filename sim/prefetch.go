package sim

import "unsafe"

// Prefetching. At 10⁵ processes and more, the records a delivery touches
// — the destination's node record, its random source, its state — are
// scattered over tens of megabytes, and each first read is a cache miss
// that the processor waits for. The calendar knows the next events a
// sub-bucket ahead (about eight), so when it loads them the simulator asks
// the processor to fetch their records, and when an event is next in line,
// what those records point to (Mowry, Lam and Gupta 1992: software
// prefetching a known distance ahead). Writes wait for memory too: each
// event pushed goes into its bucket's next free line, so the calendar
// asks for the line after it as it writes one (calendar.place). Opening
// a bucket reads its blocks, written long ago, from memory: the count
// fetches each block two ahead (calendar.open). A prefetch is a hint: it
// changes no result, only when memory arrives.

// prefetchFrom is the smallest run that prefetches: below it, the
// records stay in cache and the hints would only cost their calls.
// (A variable, so that a test can compare runs with and without.)
var prefetchFrom = 1 << 14

// prefetchEvents prefetches the node records of events that the calendar
// has just brought ahead of the rest.
func (s *Sim) prefetchEvents(evs []event) {
	for i := range evs {
		n := evs[i].item.node
		if int(n) < len(s.nodes) && evs[i].item.kind <= evInput {
			prefetch(unsafe.Pointer(&s.nodes[n]))
		}
	}
}

// prefetchNext prefetches what the next event's node record points to:
// its process's state and its random source.
func (s *Sim) prefetchNext() {
	e := s.cal.peek()
	if e == nil || int(e.item.node) >= len(s.nodes) || e.item.kind > evInput {
		return
	}
	nd := &s.nodes[e.item.node]
	if nd.p != nil {
		// An interface value is a type word and a data word; the data
		// word points to the process (all of Cohort's are pointers).
		w := (*[2]unsafe.Pointer)(unsafe.Pointer(&nd.p))
		if w[0] != s.spread.typ {
			s.spread.typ, s.spread.lines = w[0], 1
			if sp, ok := nd.p.(Spread); ok {
				s.spread.lines = max(sp.CacheLines(), 1)
			}
		}
		prefetchLines(w[1], s.spread.lines)
	}
	if nd.rng != nil {
		prefetch(unsafe.Pointer(nd.rng))
	}
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
