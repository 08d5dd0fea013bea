// Package logical holds the timestamps of logical time, the primitives
// that algorithms, hosts and checkers share: Lamport clocks and vector
// clocks (Lamport, "Time, clocks, and the ordering of events in a
// distributed system", 1978; Fidge and Mattern, 1988), and hybrid logical
// clocks (Kulkarni et al., 2014). The clock-synchronization family and the
// demonstrations of logical clocks are in package clock.
//
// Both clocks timestamp the events of a run so that timestamps respect the
// happens-before relation →, defined as the smallest transitive relation
// with a → b when
//
//   - a and b occur at the same process and a comes before b, or
//   - a is the send of a message and b is its receipt.
//
// Two events are concurrent when neither a → b nor b → a.
//
// A Lamport clock is one counter per process. It satisfies the clock
// condition
//
//	a → b  ⇒  C(a) < C(b)
//
// but not its converse: C(a) < C(b) says nothing when a and b are
// concurrent. Breaking ties by process id (Timestamp, or the scalar form
// Scalar) turns the timestamps into a total order that extends →, which is
// what algorithms such as Lamport's mutual exclusion need.
//
// A vector clock keeps one counter per process; entry j of Pi's vector is
// the number of events at Pj that Pi knows of. Vector timestamps satisfy the
// strong clock condition
//
//	a → b  ⇔  V(a) < V(b)
//
// where V(a) < V(b) means every entry of V(a) is at most the matching entry
// of V(b) and at least one is smaller. Vectors that are incomparable belong
// to concurrent events. Deliverable is the delivery test of causal
// multicast.
//
// A hybrid logical clock (HLC) pairs the largest physical time a process
// has heard of with a counter: it respects → like a Lamport clock and stays
// within the clocks' skew of physical time.
//
// The package is deterministic: it reads no time, draws no random numbers
// and does no I/O, so it can be used inside the state machines of package
// proc. Nothing in it is safe for concurrent use; each clock belongs to one
// process.
package logical
