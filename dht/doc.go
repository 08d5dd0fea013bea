// Package dht is a live cluster's distributed hash table and
// application-level multicast: the overlay family's Pastry node with its
// DHT (PAST's replicas on the leaf set) and Scribe, one process running as
// one service on every node, with a Go API and an HTTP API.
//
// A node's Pastry nodeId is the hash of its cluster ID (overlay.NodeID),
// as in the simulator. The founding members (IDs below the node's N)
// start knowing one another; a node that joins the running cluster
// (package members, node.yaml's join:) joins the overlay through its
// contact by Pastry's join protocol. A key is a string, its GUID the
// first 128 bits of its SHA-256; a group is a name, its groupId likewise.
//
// What it guarantees, and what it does not: a put is acknowledged once
// the key's home holds the value and has sent it to the other Replicas−1
// nodes of its replica set (not once they hold it); every keep-alive
// period each holder sends its copies to the replica set as it is then,
// so a copy survives the crash of fewer than Replicas of the nodes
// closest to its key, once a period has passed since the put. Objects are
// PAST's, immutable: a key is put once (a second put of a key overwrites
// the copies it reaches, in no guaranteed order). A get routes to the
// key's home; a home that holds no copy (it became the home by a join or
// a failure) fetches one from its leaf set. A caller whose request is
// lost with a crashed node asks again after RequestTimeout. Nothing is
// kept on disk: a node that restarts rejoins empty and gets its copies
// back from its leaf set.
//
// A multicast is routed to the group's root (the node closest to the
// groupId) and sent down the Scribe tree; every member delivers each
// multicast at most once (a copy that comes again within 30 s of the
// first is dropped), and, with the tree intact, once. A tree broken
// by a crash is repaired within overlay.ScribeRepairBound; multicasts
// sent meanwhile may miss the members below the failed node. Not handled
// (the overlay's Scribe assumes the overlay is built before its groups):
// a node that joins closer to a groupId than the group's root becomes
// where multicasts are routed, and, holding no tree, drops them.
package dht
