// Package clock is the clocks family: the demonstrations of logical clocks
// (Lamport's correction of drifting clocks, vector clocks, hybrid logical
// clocks) and physical clock synchronization — Cristian, NTP-style
// filtering, Berkeley, reference broadcast — as state machines for the
// simulator and the live runtime. The timestamps themselves (Lamport,
// vector, HLC) are in package logical, which hosts and checkers use too.
package clock
