// Package consensus holds Cohort's replicated log: Raft (raft.go), written
// as a Cohort process against proc.Env — its timeouts drawn from the
// process's seeded random source, its term, vote and log kept in the
// process's stable storage — so that the simulator can run it under
// crashes that lose unsynced writes, partitions, pauses and clock drift,
// and replay any failing seed exactly.
//
// A Raft server drives a StateMachine. The registered algorithm
// ("consensus/raft") drives Log, which outputs every entry it applies
// with a digest of the whole sequence so far; the checkers of package
// check read those outputs: at most one leader per term (election
// safety), the same entry at every index on every server (state machine
// safety, which with the digests also covers log matching), and a leader
// elected after an entry was applied holds it (leader completeness).
// "consensus/raft-kv" drives KV (kv.go), a key-value store whose clients'
// histories the checker linearizable-kv judges. The services (lock,
// leader, group) are to drive state machines of their own.
package consensus
