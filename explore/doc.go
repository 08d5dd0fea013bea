// Package explore is an exhaustive explorer (an explicit-state model
// checker) of Cohort's algorithms. It drives the simulator itself, through
// its Queue interface, over every order of the pending events — message
// deliveries, timer firings, inputs — and over the faults it is allowed to
// choose (crash a process, lose a message, deliver one twice), checks the
// algorithm's properties, and returns a counterexample as a Schedule that
// `cohort sim FAMILY --schedule FILE` replays event for event.
//
// Design choices:
//
//   - Stateless search by replay. A state is reached by re-running its
//     path (a sequence of choices) from the start, so any process — any Go
//     struct, with maps, interfaces and closures in its workload — can be
//     explored without cloning it. Depth first, the run goes on along the
//     path and is replayed only to branch; breadth first, each child is a
//     replay. The cost is a factor of the depth per state: the price of
//     generality (about 10⁴ states/s on two cores, not Stateright's 10⁶).
//   - Fingerprints. A state is hashed reflectively (hash.go): every
//     process's state and liveness, the workload's state, the faults used,
//     and the multiset of pending events by content (kind, processes,
//     message or tag); message ids, Seq numbers, timer ids and absolute
//     times are not state. 64-bit fingerprints live in one flat open
//     addressing table (9–18 bytes a state); breadth first adds 16 bytes a
//     state for the path to it, and sleep sets add theirs.
//   - Time. Async fires any pending event next, timers included: timeouts
//     are unreliable. Sync (the default for algorithms that assume
//     synchrony) lets a message arrive at any time within one latency, in
//     any order with the others, but fires a timer only when nothing is
//     due before it — the bounded delays those algorithms rely on.
//   - Partial-order reduction (DFS): sleep sets (Godefroid 1996) with the
//     independence rule "steps at different processes commute"; a state met
//     again with a sleep set that is not a superset of its stored one is
//     explored again with their intersection, so every reachable state is
//     still visited (the counts do not change; the transitions do). Steps
//     at different processes commute in state but may see different clock
//     readings in Async; an algorithm whose state records Now is explored
//     soundly only without POR.
//   - Checkers. Safety checkers (those whose property is stated as
//     safety) run on each new state's trace, so breadth first finds a
//     shortest violation; every checker runs at terminal states (nothing
//     enabled), which is where liveness — "the good thing never happened" —
//     is judged. Cyclic states are not judged for liveness (left to do),
//     and a state cut off by the depth bound is counted, not judged.
//     History properties (ME3) are judged on the first path to each state.
//   - A set network (Config.SetNetwork): messages that, once sent, may be
//     received any number of times, as in the TLA+ specifications; with it
//     two-phase commit (package commit) has the 288 states of TwoPhase
//     with 3 RMs and 8,832 with 5, the counts Stateright and TLC report.
package explore
