// Package election holds Cohort's leader election algorithms as state
// machines: the bully algorithm, ring elections (Chang–Roberts, and the
// variant that circulates the list of live ids), flooding in arbitrary
// graphs, the echo/wave election of wireless networks, and super-peer
// selection.
//
// The algorithms follow Coulouris et al. (requirements E1 and E2; the ring
// and bully algorithms; flooding), the original papers (Garcia-Molina 1982
// for the bully algorithm, Chang & Roberts 1979 for the ring) and Tanenbaum
// & van Steen §6.5 (the bully example: 7 crashes, 4 notices; the ring that
// circulates a list; elections in wireless and in large-scale systems).
//
// # The contract every algorithm keeps
//
// Each process has a variable elected, ⊥ at first. The application (or a
// failure detector) asks a process to start an election with the Elect
// input. A process reports every change of its elected variable with an
// Elected output naming the leader. The checkers in package check judge a
// run by these outputs, in Coulouris et al.'s words:
//
//   - E1 (safety): every participating process has elected = ⊥ or
//     elected = P, where P is the non-crashed process with the largest
//     identifier at the end of the run;
//   - E2 (liveness): every process participates and eventually sets
//     elected ≠ ⊥, or crashes;
//   - agreement: no two live processes end the run believing in different
//     leaders.
//
// Identifiers are the process ids (a larger id is a "better" process); an
// algorithm that elects by another capacity says so and reports it.
package election
