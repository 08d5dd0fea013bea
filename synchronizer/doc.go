// Package synchronizer runs synchronous algorithms on asynchronous
// networks: Awerbuch's synchronizers α, β and γ (Awerbuch, "Complexity of
// network synchronization", JACM 1985; Lynch 1996, ch. 16; Attiya & Welch,
// ch. 11).
//
// A synchronous algorithm (a proc.Rounds: in round r a process receives
// what its neighbours sent in round r−1, then sends the messages of round
// r) assumes that every message of a round arrives before the next round
// begins. On an asynchronous network — delays finite but unbounded — no
// timer can promise that. A synchronizer wraps each process of the
// algorithm and tells it when to begin the next round, so that the
// synchronizer's safety property holds:
//
//	no process receives a message of round r after it has begun round r+1
//
// and the algorithm, unchanged, computes what it computes in lockstep.
//
// All three do the same work inside a round: every message of round r
// goes out tagged with r and is acknowledged by its receiver; a process
// whose messages of round r have all been acknowledged is safe for round
// r (nothing it sent in round r is still in flight). A message of round r
// that reaches a process still in round r (or earlier, from a neighbour a
// round ahead) is kept until its receiver begins round r+1. They differ
// in how a process learns that all its neighbours are safe, which is when
// it may begin round r+1:
//
//   - α: every safe process says SAFE to every neighbour; a process
//     begins round r+1 when it and all its neighbours are safe. Per round
//     2|E| messages, 3 delays (message, ack, SAFE): O(|E|) and O(1).
//   - β: on a spanning tree (a BFS tree rooted at p0), SAFE is
//     convergecast to the root when a whole subtree is safe, and the root
//     broadcasts PULSE down the tree. Per round 2(N−1) messages and
//     2 + 2·depth delays: O(|V|) and O(depth).
//   - γ: the graph is partitioned into clusters (Awerbuch's partition with
//     parameter k: a cluster grows by BFS layers while each layer
//     multiplies its size by more than k), with a BFS tree in each and one
//     preferred edge between each pair of neighbouring clusters. β runs
//     inside every cluster, and α between clusters over the preferred
//     edges: SAFE up the cluster tree, CLUSTER-SAFE down it and across the
//     preferred edges, READY up once the neighbouring clusters are safe,
//     PULSE down. Per round 4(N − clusters) + 2·preferred messages and at
//     most 3 + 4·height delays: O(k·|V|) and O(log_k |V|).
//
// Initialization. β and γ need a tree and a partition. Here each process
// learns the whole graph first — it floods its neighbour list, TOPO, and
// forwards every list it hears of for the first time (about 2|E| messages
// per process, N·2|E| in all, once) — and then computes, as every other
// process does, the same BFS tree or the same partition. Awerbuch builds
// them with cheaper distributed algorithms; the per-round costs, which are
// what the formulas above are about, do not depend on how the structures
// were built. α needs no initialization. A process begins round 1 when its
// initialization is done, and says how its structure came out in a
// Layout output.
//
// Outputs. A process outputs Round{r} when it begins round r (the checker
// sync-safe judges every received message against them) and whatever the
// wrapped algorithm outputs. A message of round r is labelled "[r<r>] "
// followed by the algorithm's own label.
//
// Assumptions: reliable channels (every message arrives, once), no
// failures, a connected graph; FIFO is not needed, nor any bound on
// delays. Every process's algorithm must finish in the same round (as
// flooding does, after D rounds): a process that has finished no longer
// takes part in the synchronization.
package synchronizer
