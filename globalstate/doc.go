// Package globalstate is the lattice of consistent global states of a
// recorded run, and predicates over it: possibly(φ) and definitely(φ).
//
// The terms are the process model's. A process's history is the sequence
// of its events; the global history is the union of the processes'
// histories. A cut is a union of prefixes of the histories, one per
// process — here a vector c, c[p] being how many of p's events it holds —
// and its frontier is the last event of each prefix. A cut is consistent
// if, for every event it contains, it contains every event that happened
// before it; the global state of a consistent cut (every process in the
// local state its prefix leaves it in) is a consistent global state. A run
// is a total order of all the events that keeps each process's order; a
// consistent run, or linearization, is one that also keeps happened-before.
// Not every run passes only through consistent global states; every
// linearization does, and a state S' is reachable from S if some
// linearization passes through both. (Package trace has happened-before
// and the consistency test of a single cut; this package uses them.)
//
// The consistent cuts of a run, ordered by inclusion, form a lattice whose
// least element is the initial state (no event) and whose greatest is the
// final one (every event); its paths from the initial to the final state
// are exactly the linearizations. Lattice enumerates it breadth-first,
// level by level (the level of a cut is the number of events it holds;
// Cooper & Marzullo 1991), or in lexical order, which needs memory for n
// vectors of n entries only, O(n²) for n processes, beside the trace's
// vector clocks (Garg, Elements of Distributed Computing, on global
// predicates; Alagar & Venkatesan).
//
// Over the lattice (Cooper & Marzullo 1991):
//
//   - possibly(φ): φ holds in some consistent global state — some
//     linearization of the run, not necessarily the one observed, passes
//     through a state where φ holds. Safety, "α is false in every reachable
//     state", is ¬possibly(α).
//   - definitely(φ): every linearization passes through a state where φ
//     holds. Liveness over one run, "β holds at some state of every
//     linearization", is definitely(β).
//
// Each answer comes with a witness: for possibly, a consistent cut where φ
// holds and a path of the lattice from the initial state to it (the
// events in an order that keeps happened-before); for not definitely, a
// whole linearization that never passes through φ.
//
// A conjunctive predicate φ = l1 ∧ … ∧ lk, each li over the local state of
// one process, is decided for possibly without enumerating the lattice
// (Garg & Waldecker 1994, weak conjunctive predicates: O(n²m) for m local
// states per process), and so is a predicate that is a disjunction of
// those — count(cs) >= 2 is the disjunction over the pairs of processes of
// cs(p) ∧ cs(q).
//
// # Predicates
//
// Predicates are written over the local state of each process, which is
// derived from its history in the trace:
//
//	cs           bool  in the critical section: after an "enter" output, until an
//	                   "exit" output, a crash or a leave (the mutex family's contract,
//	                   as the ME1 checker reads it)
//	wanting      bool  has asked: after an "acquire" input, until it enters, crashes
//	                   or leaves
//	up           bool  not crashed and not left (true before the first event)
//	events       int   how many events of the process the state follows
//	sent         int   how many messages it has sent
//	received     int   how many it has received
//	inputs[T]    int   how many inputs of type T it has had ("inputs[acquire]")
//	outputs[T]   int   how many outputs of type T it has produced ("outputs[enter]")
//
// A variable is read at one process, cs(p1), or over all of them:
// count(v) is how many processes have v true (or not 0), sum(v) adds v up,
// any(v) and all(v) are true if v holds at some or at every process.
// Numbers compare with == != < <= > >= and add with + and -; truth values
// combine with ! && || and parentheses:
//
//	pred   = or
//	or     = and { "||" and }
//	and    = not { "&&" not }
//	not    = "!" not | cmp
//	cmp    = sum [ ( "==" | "!=" | "<" | "<=" | ">" | ">=" ) sum ]
//	sum    = prim { ( "+" | "-" ) prim }
//	prim   = number | "true" | "false" | "(" pred ")"
//	       | var "(" process ")" | ( "count" | "sum" | "any" | "all" ) "(" var ")"
//	var    = name [ "[" type "]" ]
//	process = "p" number
//
// For example: count(cs) >= 2 (two processes in the critical section at
// once), cs(p0) && wanting(p1), all(up) && sum(sent) > 10. Parse reports a
// syntax error with the column and the text of the bad token.
package globalstate
