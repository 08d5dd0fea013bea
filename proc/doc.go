// Package proc is Cohort's process model: the contract between an algorithm
// and the host that runs it.
//
// An algorithm is a deterministic, I/O-free state machine (a Process). It
// never blocks, never reads the wall clock, never starts a goroutine and
// never touches a socket. Everything it does goes through the Env that the
// host hands to each call:
//
//	host ──Start/Receive/Timeout/Input──▶ Process ──Send/SetTimer/Output──▶ host
//
// Two hosts drive the same code: the deterministic simulator (package sim),
// with virtual time, a seeded network model and faults; and the live runtime,
// with real time and TCP. Because both call the same methods in the same
// way, what the simulator verified is what runs over the network.
//
// # The contract
//
//   - A host calls a Process's methods from one goroutine at a time; a
//     Process needs no locks.
//   - The Env passed to a call is valid only during that call. A Process must
//     not keep it; every method receives one.
//   - Start is called once before any other method, and again on a fresh
//     value after a crash-recovery (nothing survives a crash unless the
//     algorithm writes it to stable storage, which the model does not offer).
//   - Receive is called once per delivered message. Whether channels are
//     reliable or FIFO is a property of the network the host provides; an
//     algorithm states what it assumes in its Algorithm entry.
//   - Timeout is called when a timer set with SetTimer fires and was not
//     cancelled. Timers are measured on the process's local clock, which may
//     drift from true time.
//   - Input delivers a request from the application or workload (Acquire,
//     Multicast ...). Output is how the world learns what the process did
//     (EnteredCS, Elected, Delivered ...): the simulator records outputs for
//     checkers; the live host routes them to waiting callers.
//   - Membership may change during a run. A process absent at the start
//     joins later: the host builds it and, if it implements Joiner, calls
//     Join(env, contact) instead of Start, naming one member that is
//     present (a Pastry node, a SWIM or gossip member enters a running
//     system exactly so: through any one node it knows). A process that
//     leaves gracefully gets the Leave input, may send its goodbyes while
//     handling it, and then the host calls it no more. Algorithms written
//     for a fixed group need not care: a joining process that is not a
//     Joiner is simply started, and unknown inputs are ignored.
//   - Randomness comes only from Env.Rand, which the simulator seeds per
//     process from the run's seed, so a run can be replayed exactly.
//
// Messages, inputs and outputs are small values that name their kind
// (request, reply, enter ...); hosts count messages by kind and traces
// label them with String() when the value implements fmt.Stringer.
package proc
