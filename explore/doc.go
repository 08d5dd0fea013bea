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
//   - Forking, not replaying (clone.go). Where the search branches, the
//     run is forked: sim.Sim.Fork copies the simulator's own state (the
//     pending events under the same keys and slots, counters, random
//     sources, stable storage) field by field, the explorer copies its
//     queue, trace and workload, and each process is deep-copied — by its
//     Clone method if it has one (Cloner), else by a reflective copier
//     whose plan is compiled once per type (a type with nothing mutable
//     behind a reference is one assignment; a struct is assigned whole and
//     only its mutable fields are copied deeply; funcs are shared, a
//     channel is refused). Payloads in flight are shared unless they hold
//     something mutable. A step is then taken once, not once per state
//     below it. A model whose runs cannot be forked (hardware clocks,
//     pauses, changing membership, vector clocks, a channel in a state)
//     falls back to replay, and Result.Engine says so. Config.Replay asks
//     for the old stateless engine: a state reached by re-running its path
//     from the start, depth first replaying only to branch, breadth first
//     replaying every child. Both engines find the same states, verdicts
//     and counterexamples (engine_test.go compares them model by model);
//     a counterexample is still a Schedule that replays byte for byte.
//     Breadth first holds the forked runs of up to 65,536 states not yet
//     expanded, and replays the others.
//     What remains per state is the simulator's step itself (each event
//     recorded in the trace), the fingerprint (every process and pending
//     event hashed again) and the safety checkers, which read the whole
//     trace: 10⁴ states/s, not Stateright's 10⁶ (left to do: hash only the
//     process that moved, and check safety incrementally).
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
//     is judged. A state cut off by the depth bound is counted, not
//     judged. History properties (ME3) are judged on the first path to
//     each state.
//   - Liveness in cycles (Config.Cycles, lasso.go; mutual exclusion). A
//     run that never ends ends in a cycle of the finite state graph, which
//     the explorer then keeps (breadth first, no POR, ~300–500 bytes a
//     state). Once the search is exhausted, each strongly connected
//     component of the states where a process p waits (Acquire given, no
//     Enter since) is tested for a fair cycle under weak fairness on every
//     event (one pending and enabled throughout the cycle is handled in
//     it; crashes, losses and duplicates are choices, not obligations): a
//     component has one exactly when each label enabled in all its states
//     is taken by one of its edges. Such a cycle breaks ME2; the schedule
//     reaches it and goes round once (Violation.Cycle steps).
//   - Symmetry (Config.Symmetry, symmetry.go). Interchangeable processes
//     (two-phase commit's resource managers; Symmetric says which) are
//     renamed to a canonical representative before fingerprinting: the
//     least fingerprint over the renamings that sort them by a signature
//     invariant under renaming (own state, up, events to and from it, ids
//     of interchangeable processes hashed alike); proc.ID values are
//     renamed by the hasher, id-indexed state by the process's PermuteIDs
//     (Permuter). The count is the number of orbits, the same for every
//     strategy: 314 for two-phase commit with 5 RMs. Stateright's 665 for
//     the same model comes from a representative that sorts the RMs by
//     their own states only, ties in index order, which is not canonical,
//     so its count depends on the search order.
//   - A set network (Config.SetNetwork): messages that, once sent, may be
//     received any number of times, as in the TLA+ specifications; with it
//     two-phase commit (package commit) has the 288 states of TwoPhase
//     with 3 RMs and 8,832 with 5, the counts Stateright and TLC report.
package explore
