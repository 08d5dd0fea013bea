// Package deadlock detects and resolves distributed deadlocks, in two
// models (Kshemkalyani & Singhal, "Distributed Computing", ch. 10;
// Coulouris et al. §17.5 on distributed deadlocks and edge chasing):
//
//   - the AND model: transactions lock resources held at other processes;
//     a transaction asks for all its resources at once and is blocked
//     until every one of them is granted (resources.go); a cycle of the
//     wait-for graph is a deadlock;
//   - the OR model (communication deadlock): a process blocks until any
//     one of a set of processes answers it (communication.go); only a
//     knot is a deadlock — every process reachable from it waits.
//
// In the OR model, cmh-or (cmhor.go) is Chandy, Misra and Haas's
// diffusing computation: a blocked process queries its dependent set,
// blocked processes pass the first query of a computation on and reply
// when all theirs have replied, and replies from all prove the initiator
// deadlocked. The checkers or-deadlock-detected and or-deadlock-no-phantom
// judge it against the OR wait-for graph (communication.go says how it is
// rebuilt from a trace).
//
// In the AND model, two detectors run on the same resource model (Site):
//
//   - cmh: Chandy, Misra and Haas's edge chasing (Chandy, Misra & Haas,
//     ACM TOCS 1983; Kshemkalyani & Singhal §10.6): a blocked process
//     sends probes along its wait-for edges; a probe that comes back to
//     its initiator proves a cycle, and the initiator aborts itself;
//     a blocked process probes again while it stays blocked, backing off
//     (the waits between its computations double up to a bound, as in
//     cmh-or);
//   - timeout: the naive detector of many databases: a process blocked
//     longer than T declares a deadlock and aborts itself, whether or not
//     there is one.
//
// The resource model. Process p owns resource rp (one per process, named
// by its owner) and keeps its lock table: the transaction holding it and a
// FIFO queue of the transactions waiting for it. A process also runs one
// transaction at a time (Begin input): it sends a Request to the owner of
// every resource the transaction wants, is blocked until each owner sends
// its Grant, holds them all until the Finish input, then sends each owner a
// Release. A transaction aborted by a detector sends a Release to every
// owner it asked, which frees a resource it held or withdraws its request
// from the queue.
//
// The wait-for graph, as the checkers rebuild it from a trace: there is an
// edge p → q when the owner of some resource r has p's current transaction
// in r's queue and q's current transaction holding r. The outputs that
// make it up:
//
//   - at the transaction's process: "txn" {txn, want} when it begins and
//     asks, "acquired" {txn} when it holds everything, "released" {txn}
//     when it ends, "aborted" {txn, reason} when a detector aborts it;
//   - at the resource's owner: "granted" {res, txn}, "blocked" {res, txn,
//     holder} (queued behind holder: the edge txn → holder), "freed" {res,
//     txn} (the holder released it) and "withdrawn" {res, txn} (a queued
//     request removed by an abort);
//   - "detector" {wait_ns} at start: the detector's promise — it declares a
//     deadlock it is part of within wait_ns of the cycle's forming, plus
//     the time its messages take;
//   - "deadlock" {txn, cycle} when a process declares that its transaction
//     is deadlocked (cycle: the processes of the cycle its probe went round,
//     starting with itself; none for the timeout detector, which cannot
//     tell).
//
// The checkers deadlock-detected and deadlock-no-phantom (package check)
// judge the detectors against that graph.
package deadlock
