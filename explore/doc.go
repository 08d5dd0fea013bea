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
//   - Backtracking, not replaying (clone.go, sim.Saved). Depth first
//     keeps one run: where the search branches it saves the run's state
//     once (sim.Sim.Save copies the simulator's own state — pending
//     events, counters, timers, random sources — into storage reused from
//     one save to the next; the explorer adds its queue, trace length,
//     workload and message table), takes a step, explores on, and
//     restores the state before the next step, as SPIN undoes a
//     transition. Processes are copied on write: before a step the one
//     process it happens at is given a copy of its own (by its Clone
//     method if it has one, Cloner, else by a reflective copier whose plan
//     is compiled once per type: a type with nothing mutable behind a
//     reference is one assignment, a struct is assigned whole and only its
//     mutable fields copied deeply, funcs shared, a channel refused), and
//     so is the payload handed to it and, if it writes, its disk; the
//     saved state keeps the originals. A copy a restore drops is the
//     storage of the process's next copy if it can copy itself into one
//     (Recycler): a step then allocates nothing for it. Breadth first takes a state's
//     steps the same way and forks (sim.Sim.Fork: everything copied) only
//     the new states it holds, up to 65,536 not yet expanded, replaying
//     the others. A model whose runs cannot be saved (hardware clocks,
//     pauses, changing membership, vector clocks, a channel in a state)
//     falls back to replay, and Result.Engine says so ("undo" depth
//     first, "fork" breadth first). Config.Replay asks for the old
//     stateless engine: a state reached by re-running its path from the
//     start. The engines find the same states, verdicts and
//     counterexamples (engine_test.go compares them model by model, and
//     TestRestoreIsReplay a restored run with a replay of its path); a
//     counterexample is still a Schedule that replays byte for byte.
//     What remains per state is the simulator's step itself (and the
//     events the checkers read, recorded in the trace), the fingerprint
//     of the process that stepped, the sleep sets' bookkeeping and the
//     visited set (at millions of states, its cache misses): depth
//     first, 3.4·10⁵ (two-phase commit, 7 RMs) to 4.7·10⁵ (5 RMs)
//     states per CPU second on a machine loaded about 20, not
//     Stateright's 10⁶.
//   - Fingerprints (hash.go, hashplan.go, run.go). A state is hashed by
//     plans compiled once per type, as the copier plans its copies (a
//     struct is hashed as its fields at their offsets, a slice as its
//     elements; reflection only iterates maps): every process's state
//     and liveness, the workload's state, the faults used, and the
//     multiset of pending events by content (kind, processes, message or
//     tag), combined so that a step rehashes only what it changed: a
//     process's hash is cached until a step happens at it, and an event
//     is described and hashed once, when it is pushed; the pending
//     events' hashes are summed (a multiset). Message ids, Seq numbers,
//     timer ids and absolute times are not state. An algorithm may copy
//     itself (Cloner) instead of being copied reflectively.
//   - The visited set (set.go): 64-bit fingerprints in one flat open
//     addressing table grown by an eighth, mapped off the Go heap once
//     past a MiB and then grown in place (on Linux its mapping is
//     extended, so only the new pages are filled in; elsewhere it is
//     copied) (9.1–10.3 bytes a state; with
//     sleep sets, a tag a slot holds each state's sleep set as a mask
//     over its enabled steps: 16 bits, 11.4–12.9 bytes a state, widened
//     to 32 bits for every slot once a state has more than 16 steps
//     enabled needs it, 13.7–15.4; only a state with more than 31 keeps
//     its sleep set in a map). Hash compaction may merge two states: the
//     chance that any two of k collide is at most k²/2⁶⁵
//     (Result.Omission). Breadth first adds 5 bytes a state for the path
//     to it (the parent, and the step's position among the parent's
//     choices).
//   - Safety, incrementally (watch.go). A state's trace is its parent's
//     and one step's events, and the parent's was judged ok; a safety
//     checker whose breaking events are known (an Enter for ME1 and ME3,
//     a decision for commit consistency, a message the run's table of
//     messages does not vouch for, for integrity and no-duplicates) runs
//     on a new state only when a step since the last state judged on its
//     path brought one; others run on every new state. The run follows
//     what the checkers would find, to know which events can break them:
//     an enter breaks ME1 only while another process is inside, and ME3
//     only if an open request happened before the entering one's (vector
//     clocks over acquires, kept as the run goes), a decision breaks
//     commit consistency only after the other decision; so ME3 no longer
//     rebuilds happened-before at each entry. When no checker reads
//     labels, the runs record none (sim.Config.NoLabels: messages and
//     outputs are not formatted); a counterexample is recorded again,
//     with them, and judged again on that trace. The trace is a
//     chain of frozen segments shared by forks; a checker reads it in
//     place when it is one run's own. Depth first, when every safety
//     checker is watched and none is judged at terminal states, the runs
//     record only the kinds of events the watchers read
//     (sim.Config.TraceOnly: the decisions, for commit consistency), not
//     every send, receipt and timer; a state the watchers mark is judged
//     on its whole trace, recorded again by replaying its path.
//   - Time. Async fires any pending event next, timers included: timeouts
//     are unreliable. Sync (the default for algorithms that assume
//     synchrony) lets a message arrive at any time within one latency, in
//     any order with the others, but fires a timer only when nothing is
//     due before it — the bounded delays those algorithms rely on. A
//     state holds how far in the future each event is due, but not how
//     late an overdue message is (a bisimulation: see run.timed), which
//     makes bully at 3 processes finite (178,806 states).
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
//     shortest violation; the other checkers run at terminal states
//     (nothing enabled), which is where liveness — "the good thing never
//     happened" — is judged. A state cut off by the depth bound is counted, not
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
//     so its count depends on the search order. With sleep sets, a
//     state's sleep set is kept over its representative's steps (each
//     enabled step renamed as the state was): any member of the orbit
//     that meets it again reads it as the one that stored it meant it.
//   - A set network (Config.SetNetwork): messages that, once sent, may be
//     received any number of times, as in the TLA+ specifications; with it
//     two-phase commit (package commit) has the 288 states of TwoPhase
//     with 3 RMs and 8,832 with 5, the counts Stateright and TLC report.
package explore
