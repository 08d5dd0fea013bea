package overlay

import (
	"fmt"
	"maps"
	"slices"

	"github.com/cohort-go/cohort/proc"
)

// A DHT on the overlay: the key-based routing API as its users call it,
// put(key, value) and get(key), with PAST's replication (Rowstron &
// Druschel, "Storage management and caching in PAST", SOSP 2001;
// Coulouris et al. §10.5.2). An object lives at the k nodes numerically
// closest to its key — its home and the k−1 next, all in the home's leaf
// set (k ≤ l + 1), so that it survives the failure of up to k−1 of them:
//
//   - put routes the object to the key's home, which stores it and sends
//     a copy to the other k−1 of the replica set, then says Stored;
//   - get routes to the key's home, which answers from its store, or, if
//     it has none (it became the home by a join or a failure since the
//     put), fetches a copy from its leaf set, where the replica set was;
//   - every keep-alive period each holder of a copy sends it to the
//     replica set as its own leaf set now has it: a node that joined
//     among the k closest gets its copy, and a failed holder's place is
//     filled — the replica count is restored after churn.
//
// Objects are immutable, as in PAST: a key is put once.

// Op is what a Route carries: a lookup, or a DHT request.
type Op uint8

// The routed operations.
const (
	OpLookup Op = iota
	OpPut
	OpGet
)

// Put asks the node to store Value under Key in the DHT.
type Put struct {
	Key   GUID   `json:"key"`
	Value string `json:"value"`
}

// Kind implements proc.Input.
func (Put) Kind() string { return "put" }

// Get asks the node for the value under Key.
type Get struct {
	Key GUID `json:"key"`
}

// Kind implements proc.Input.
func (Get) Kind() string { return "get" }

// Stored: this node, Key's home, stored a put's value and sent it to
// the replica set of Replicas nodes (itself included), Hops hops from
// where it was asked.
type Stored struct {
	Key      GUID `json:"key"`
	Hops     int  `json:"hops"`
	Replicas int  `json:"replicas"`
}

// Kind implements proc.Output.
func (Stored) Kind() string { return "stored" }

// Got answers a get at Key's home: the value, or Found false.
type Got struct {
	Key   GUID   `json:"key"`
	Value string `json:"value"`
	Found bool   `json:"found"`
	Hops  int    `json:"hops"`
}

// Kind implements proc.Output.
func (Got) Kind() string { return "got" }

// Replica is a copy of an object for a member of its replica set.
type Replica struct {
	Key   GUID
	Value string
}

// Kind implements proc.Message.
func (Replica) Kind() string { return "replica" }

// Fetch asks a member of the replica set for its copy.
type Fetch struct{ Key GUID }

// Kind implements proc.Message.
func (Fetch) Kind() string { return "fetch" }

// Fetched answers a Fetch.
type Fetched struct {
	Key   GUID
	Value string
	Found bool
}

// Kind implements proc.Message.
func (Fetched) Kind() string { return "fetched" }

type fetchTimeout struct{ Key GUID }

// dht is a node's share of the DHT.
type dht struct {
	store   map[GUID]string
	waiting map[GUID][]Route // gets at this home waiting for a fetched copy
	asked   map[GUID]int     // fetches not yet answered
}

// replicaSet is the k nodes of L ∪ {self} closest to key, less this node.
func (n *node) replicaSet(key GUID) []proc.ID {
	if n.flaw == noReplicas {
		return nil
	}
	return slices.DeleteFunc(n.leaves.nearest(n.id, key, n.cfg.Replicas), func(x proc.ID) bool { return x == n.id })
}

func (n *node) keep(key GUID, value string) {
	if n.store == nil {
		n.store = map[GUID]string{}
	}
	n.store[key] = value
}

// atHome serves a put or a get that has reached its key's home.
func (n *node) atHome(env proc.Env, m Route) {
	switch m.Op {
	case OpPut:
		n.keep(m.Key, m.Value)
		for _, r := range n.replicaSet(m.Key) {
			env.Send(r, Replica{m.Key, m.Value})
		}
		env.Output(Stored{Key: m.Key, Hops: m.Hops, Replicas: n.cfg.Replicas})
	case OpGet:
		if v, ok := n.store[m.Key]; ok {
			env.Output(Got{Key: m.Key, Value: v, Found: true, Hops: m.Hops})
			return
		}
		// Any leaf may hold a copy: the replica set as it was before
		// the joins and failures that made this node the home.
		holders := slices.Concat(n.leaves.left, n.leaves.right)
		slices.Sort(holders)
		holders = slices.Compact(holders)
		if n.flaw == noReplicas || len(holders) == 0 {
			env.Output(Got{Key: m.Key, Hops: m.Hops})
			return
		}
		if n.waiting == nil {
			n.waiting, n.asked = map[GUID][]Route{}, map[GUID]int{}
		}
		if len(n.waiting[m.Key]) == 0 {
			for _, r := range holders {
				env.Send(r, Fetch{m.Key})
			}
			n.asked[m.Key] = len(holders)
			env.SetTimer(max(n.cfg.HopTimeout, 1), fetchTimeout{m.Key})
		}
		n.waiting[m.Key] = append(n.waiting[m.Key], m)
	}
}

// answer answers the gets waiting for key.
func (n *node) answer(env proc.Env, key GUID, value string, found bool) {
	for _, m := range n.waiting[key] {
		env.Output(Got{Key: key, Value: value, Found: found, Hops: m.Hops})
	}
	delete(n.waiting, key)
	delete(n.asked, key)
}

// receiveDHT handles the DHT's messages; it reports whether m was one.
func (n *node) receiveDHT(env proc.Env, from proc.ID, m proc.Message) bool {
	switch m := m.(type) {
	case Replica:
		n.keep(m.Key, m.Value)
	case Fetch:
		v, ok := n.store[m.Key]
		env.Send(from, Fetched{m.Key, v, ok})
	case Fetched:
		if len(n.waiting[m.Key]) == 0 {
			return true
		}
		if m.Found {
			n.keep(m.Key, m.Value)
			n.answer(env, m.Key, m.Value, true)
		} else if n.asked[m.Key]--; n.asked[m.Key] == 0 {
			n.answer(env, m.Key, "", false)
		}
	default:
		return false
	}
	return true
}

func (n *node) fetchTimedOut(env proc.Env, key GUID) {
	if len(n.waiting[key]) > 0 {
		n.answer(env, key, "", false)
	}
}

// rereplicate: each holder of a copy sends it to the replica set as its
// leaf set has it now.
func (n *node) rereplicate(env proc.Env) {
	for _, key := range slices.SortedFunc(maps.Keys(n.store), Cmp) {
		for _, r := range n.replicaSet(key) {
			env.Send(r, Replica{key, n.store[key]})
		}
	}
}

func (m Replica) String() string { return fmt.Sprintf("REPLICA(%s)", m.Key) }
