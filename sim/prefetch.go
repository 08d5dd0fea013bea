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
		prefetch((*[2]unsafe.Pointer)(unsafe.Pointer(&nd.p))[1])
	}
	if nd.rng != nil {
		prefetch(unsafe.Pointer(nd.rng))
	}
}
