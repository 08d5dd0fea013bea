// Package snapshot records consistent global states of a running system:
// Chandy and Lamport's marker algorithm for FIFO channels (Chandy &
// Lamport, ACM TOCS 1985; Coulouris et al. §14.5.3), and Lai and Yang's colouring algorithm for channels that may
// reorder (Lai & Yang, IPL 1987), with the white-message counters of
// Mattern's variant (Mattern, JPDC 1993) for the channel states.
//
// Both are wrappers: a snapshot process holds any other proc.Process (a
// mutex, a gossip node, an account of the bank workload) and runs it
// unchanged, taking its messages through on their way in and out. The
// application state it records is what the wrapped process exposes through
// the optional Snapshotter interface; a process that does not implement it
// is recorded as null, and its channels are still recorded.
//
// A cut (Coulouris et al. §14.5): the union of a prefix of every process's
// history. It is consistent if, for every event it holds, it holds every
// event that happened before it — for messages: no message is received in
// the cut that was sent outside it. The state of a consistent cut is a
// consistent global state: the processes' recorded states, and for every
// channel the messages sent inside the cut and received outside it, in
// flight across the cut.
//
// The contract, for a host and a workload:
//
//   - A Take input makes the process begin a new snapshot, named by an ID
//     (the initiator and its count of snapshots begun). Several processes
//     may begin snapshots at once, and one process several in a row: the
//     snapshots are recorded side by side, each under its ID.
//   - When a process records its local state for a snapshot it outputs Cut
//     (the wrapped state in it): that output is the process's frontier
//     event, the last event of its history in the cut.
//   - When it has recorded the state of every incoming channel it outputs
//     Recorded, with the messages of each channel. The snapshot is complete
//     when every process has output Recorded.
//   - The channels are the edges of the topology (Env.Neighbors, in both
//     directions): the wrapped algorithm must send only to neighbours
//     (with the complete graph, the default, to anyone).
//
// The channel states are exactly the messages in flight across the cut;
// the checkers snapshot-consistent and snapshot-channels judge that from
// the trace alone, and bank-conserved judges the bank workload (Bank):
// the money in the accounts and in the channels adds up to the money
// there was at the start, in every recorded state.
package snapshot
