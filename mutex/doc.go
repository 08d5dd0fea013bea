// Package mutex holds Cohort's distributed mutual exclusion algorithms as
// state machines: central server, token ring, Lamport, Ricart–Agrawala (and
// its JUST-RELEASED and majority variants), Maekawa (basic and
// deadlock-free), decentralized voting, Suzuki–Kasami and Raymond.
//
// The algorithms follow Coulouris et al. (central server, ring, Lamport,
// Ricart–Agrawala with its JUST-RELEASED and majority variants, Maekawa's
// voting sets; the requirements ME1–ME3) and Tanenbaum & van Steen §6.3
// (centralized, token ring, decentralized voting and the comparison
// table).
//
// # The contract every algorithm keeps
//
// The application asks with the Acquire input and leaves with the Release
// input; a process issues at most one Acquire at a time and sends Release
// only after it entered. The algorithm outputs Enter when the process
// enters the critical section and Exit when it leaves (on Release). The
// checkers in package check judge runs by these outputs:
//
//   - ME1 (safety): at most one process between Enter and Exit at a time;
//   - ME2 (liveness): every Acquire is followed by an Enter; when requests
//     are stuck, the Waiting and Lent outputs give the wait-for graph,
//     and a cycle in it is reported as a deadlock;
//   - ME3 (happened-before order): if one Acquire happened before another,
//     the first is granted first.
//
// An algorithm that makes a process wait for others reports it with a
// Waiting output (whom it still needs) each time that set changes, and one
// whose permission can be held by another process reports it with Lent
// (to whom its vote, token or grant went; None when it is back). These two
// outputs cost nothing on the network; they make deadlocks explainable.
package mutex
