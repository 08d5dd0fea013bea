// Package overlay holds Cohort's structured peer-to-peer overlays as state
// machines: Pastry's prefix routing and join (Rowstron & Druschel,
// Middleware 2001; Coulouris et al. §10.5; Tanenbaum & van Steen §5.2),
// the circular baseline that routes along the leaf set alone, their
// handling of failures (repair.go: keep-alives, lookups routed around
// failed nodes, leaf-set and routing-table repair, the periodic exchange
// of rows), Pastry's locality — tables chosen by measured round trips,
// the neighbourhood set, a join through a nearby node and its table's
// refinement (proximity.go, with Config.Proximity) — and a DHT on them
// with PAST's replicas (dht.go). Two
// application-level multicasts build trees: Scribe on Pastry (scribe.go:
// Castro, Druschel, Kermarrec & Rowstron 2002), and End System Multicast
// among the hosts themselves (esm.go: Chu, Rao & Zhang 2000; its members
// switch to clearly better parents periodically, loop-free and without
// a packet lost or doubled), measured on
// a transit-stub physical network (transitstub.go) for their depth,
// delay penalty and link stress.
//
// Nodes and keys have 128-bit identifiers (GUID) on a ring; an object
// lives at the node whose identifier is numerically closest to its key
// (on the ring: the smaller of the two distances around it; an exact tie
// goes to the node with the smaller identifier). A node's identifier is a
// hash of its address (NodeID), so anyone who knows the address knows the
// identifier: the checkers compute the oracle from the trace alone.
//
// The contract, for a host and a workload: a node joins through a contact
// (proc.Joiner); the first node starts alone. A Lookup{Key} input routes
// the key hop by hop; the node that takes delivery outputs
// Delivered{Key, Hops}. Put{Key, Value} and Get{Key} are the DHT's: the
// key's home outputs Stored and Got. ShowTables makes a node output its
// Tables. A node that fails stops; one that leaves (proc.Leave) tells the
// nodes in its tables. Scribe's and ESM's inputs and outputs are in their
// files (CreateGroup, JoinGroup, LeaveGroup, Multicast → Received;
// ESMJoin, ESMLeave, ESMSend → ESMReceived, ESMParent).
package overlay
