package overlay

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cohort-go/cohort/proc"
)

// Algorithms lists the family's algorithms: Pastry, then the circular
// baseline.
var Algorithms []proc.Algorithm

// order is the order of Algorithms, whatever the order the files register.
var order = []string{"pastry", "circular"}

func register(a proc.Algorithm) {
	a.Family = "overlay"
	if a.Inputs == nil {
		a.Inputs = Inputs
	}
	a.Messages = []proc.Message{Join{}, State{}, Announce{}, Route{}}
	Algorithms = append(Algorithms, a)
	slices.SortStableFunc(Algorithms, func(x, y proc.Algorithm) int {
		return slices.Index(order, x.Name) - slices.Index(order, y.Name)
	})
}

// DefaultLeaves is l, the leaf set's entries on each side: a leaf set of
// 2l = 16, Rowstron & Druschel's |L| = 16 with b = 4.
const DefaultLeaves = 8

// MaxHops bounds a route: a message that has made that many hops is
// delivered where it is (a broken state can make routes loop; the checker
// then finds the wrong node). Pastry's routes take ⌈log₁₆ N⌉; the circular
// baseline's N/2l.
const MaxHops = 1 << 20

// ---- inputs, outputs, messages ----

// Lookup asks the node to route Key to its home node.
type Lookup struct {
	Key GUID `json:"key"`
}

// Kind implements proc.Input.
func (Lookup) Kind() string { return "lookup" }

// Delivered: this node is Key's home, as far as it knows, and took
// delivery of a lookup after Hops hops (0: the node asked was the home).
type Delivered struct {
	Key  GUID `json:"key"`
	Hops int  `json:"hops"`
}

// Kind implements proc.Output.
func (Delivered) Kind() string { return "delivered" }

// Joined: the node has its tables and has announced itself; Entries is
// how many distinct nodes its leaf set and routing table hold.
type Joined struct {
	Entries int `json:"entries"`
}

// Kind implements proc.Output.
func (Joined) Kind() string { return "joined" }

// Join is the JOIN message, routed like a lookup with key X's nodeId;
// every node on the way sends X its state.
type Join struct {
	X    proc.ID
	Hops int
}

// Kind implements proc.Message.
func (Join) Kind() string { return "join" }

func (m Join) String() string { return fmt.Sprintf("JOIN(%v,h=%d)", m.X, m.Hops) }

// State is a node's state tables sent to a joining node: the sender's
// leaf set and routing table entries (the sender itself is implied). Row
// is the sender's place on the join's route (0: the contact); Final: the
// sender is the last, Z, numerically closest to X.
type State struct {
	Row   int
	Final bool
	Nodes []proc.ID
}

// Kind implements proc.Message.
func (State) Kind() string { return "state" }

func (m State) String() string {
	return fmt.Sprintf("STATE(row=%d,final=%t,n=%d)", m.Row, m.Final, len(m.Nodes))
}

// Announce: a node that has joined tells the nodes in its tables that it
// exists; they add it to theirs.
type Announce struct{}

// Kind implements proc.Message.
func (Announce) Kind() string { return "announce" }

func (Announce) String() string { return "ANNOUNCE" }

// Route carries a lookup one hop.
type Route struct {
	Key  GUID
	Hops int
}

// Kind implements proc.Message.
func (Route) Kind() string { return "route" }

func (m Route) String() string { return fmt.Sprintf("ROUTE(%s,h=%d)", m.Key.String()[:8], m.Hops) }

// Inputs builds the family's inputs by name: "lookup HEX" (32 hex
// digits).
func Inputs(name string, args []string) (proc.Input, error) {
	switch name {
	case "lookup":
		if len(args) != 1 {
			return nil, fmt.Errorf("lookup: want one key of 32 hex digits")
		}
		var k GUID
		if err := k.UnmarshalText([]byte(strings.TrimSpace(args[0]))); err != nil {
			return nil, err
		}
		return Lookup{Key: k}, nil
	}
	return nil, fmt.Errorf("unknown overlay input %q (known: lookup)", name)
}

// ---- the leaf set ----

// leafSet is Pastry's leaf set L: the l nodes numerically closest below
// the node (left, nearest first) and the l closest above (right). With
// fewer than 2l+1 nodes in all, both sides hold every other node.
type leafSet struct {
	self        GUID
	l           int
	left, right []proc.ID
}

// add considers node id for both sides; it reports whether it entered.
func (s *leafSet) add(id proc.ID) bool {
	g := NodeID(id)
	if g == s.self {
		return false
	}
	r := s.insert(&s.right, id, func(x proc.ID) GUID { return Clockwise(s.self, NodeID(x)) }, Clockwise(s.self, g))
	lf := s.insert(&s.left, id, func(x proc.ID) GUID { return Clockwise(NodeID(x), s.self) }, Clockwise(g, s.self))
	return r || lf
}

func (s *leafSet) insert(side *[]proc.ID, id proc.ID, dist func(proc.ID) GUID, d GUID) bool {
	ids := *side
	i, found := slices.BinarySearchFunc(ids, d, func(x proc.ID, d GUID) int { return Cmp(dist(x), d) })
	if found || i >= s.l {
		return false
	}
	ids = slices.Insert(ids, i, id)
	if len(ids) > s.l {
		ids = ids[:s.l]
	}
	*side = ids
	return true
}

// covers reports whether key lies within the leaf set's range: between
// its leftmost and rightmost entries. A side with fewer than l entries
// means the node knows every node, and the range is the whole ring.
func (s *leafSet) covers(key GUID) bool {
	if len(s.left) < s.l || len(s.right) < s.l {
		return true
	}
	return Cmp(Clockwise(s.self, key), Clockwise(s.self, NodeID(s.right[len(s.right)-1]))) <= 0 ||
		Cmp(Clockwise(key, s.self), Clockwise(NodeID(s.left[len(s.left)-1]), s.self)) <= 0
}

// closest is the node of L ∪ {self} numerically closest to key.
func (s *leafSet) closest(self proc.ID, key GUID) proc.ID {
	best := self
	for _, side := range [2][]proc.ID{s.left, s.right} {
		for _, id := range side {
			if Closer(key, NodeID(id), NodeID(best)) {
				best = id
			}
		}
	}
	return best
}

// ---- the node ----

// router is an algorithm's routing rule: the next hop toward key, or the
// node itself to take delivery. learn offers it a node it heard of;
// nodes lists what its own tables hold beyond the leaf set.
type router interface {
	next(n *node, key GUID) proc.ID
	learn(n *node, id proc.ID) bool
	nodes(n *node) []proc.ID
}

// node is what Pastry and the circular baseline share: the leaf set, the
// join protocol (Rowstron & Druschel §2.4), the forwarding of lookups.
// The routing rule is the algorithm's.
type node struct {
	id     proc.ID
	self   GUID
	leaves leafSet
	rt     router
	joined bool
	final  bool // Z's state has come
	told   map[proc.ID]bool
}

func newNode(id proc.ID, l int, rt router) *node {
	g := NodeID(id)
	return &node{id: id, self: g, leaves: leafSet{self: g, l: l}, rt: rt}
}

// Start: the run has no joins, and every process is present from the
// start: the node knows them all, as if each had joined in turn. It costs
// O(N log N) per node: large overlays are built by joins.
func (n *node) Start(env proc.Env) {
	for i := range env.N() {
		if proc.ID(i) != n.id {
			n.learn(proc.ID(i))
		}
	}
	n.joined = true
}

// Join: X (this node) asks contact A to route a JOIN with key X.
func (n *node) Join(env proc.Env, contact proc.ID) {
	if contact == proc.None {
		n.joined = true
		env.Output(Joined{})
		return
	}
	env.Send(contact, Join{X: n.id})
}

func (n *node) learn(id proc.ID) bool {
	if id == n.id || id == proc.None {
		return false
	}
	a := n.leaves.add(id)
	b := n.rt.learn(n, id)
	return a || b
}

// known lists every node in the tables, without repeats, sorted.
func (n *node) known() []proc.ID {
	ids := slices.Concat(n.leaves.left, n.leaves.right, n.rt.nodes(n))
	slices.Sort(ids)
	return slices.Compact(ids)
}

func (n *node) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m := m.(type) {
	case Join:
		n.onJoin(env, m)
	case State:
		n.onState(env, from, m)
	case Announce:
		n.learn(from)
	case Route:
		n.route(env, m.Key, m.Hops)
	}
}

// onJoin: a node on the JOIN's route sends X its state tables, then
// forwards the JOIN as it would a lookup of X's nodeId; the last node, Z,
// says so.
func (n *node) onJoin(env proc.Env, m Join) {
	next := n.next(NodeID(m.X), m.Hops)
	env.Send(m.X, State{Row: m.Hops, Final: next == n.id, Nodes: n.known()})
	if next != n.id {
		env.Send(next, Join{X: m.X, Hops: m.Hops + 1})
	}
}

// onState: X takes the sender and its tables into its own (row i of its
// routing table comes from the i-th node on the route, its leaf set from
// Z; learning every entry offered gives those and more). Once Z's state
// has come, X announces itself to every node in its tables; a state that
// comes later is learnt, and its new nodes told.
func (n *node) onState(env proc.Env, from proc.ID, m State) {
	var fresh []proc.ID
	for _, id := range append([]proc.ID{from}, m.Nodes...) {
		if n.learn(id) {
			fresh = append(fresh, id)
		}
	}
	if m.Final {
		n.final = true
	}
	if !n.final {
		return
	}
	if !n.joined {
		n.joined = true
		n.told = map[proc.ID]bool{}
		ids := n.known()
		for _, id := range ids {
			n.told[id] = true
			env.Send(id, Announce{})
		}
		env.Output(Joined{Entries: len(ids)})
		return
	}
	for _, id := range fresh {
		if !n.told[id] {
			n.told[id] = true
			env.Send(id, Announce{})
		}
	}
}

func (n *node) Timeout(proc.Env, any) {}

func (n *node) Input(env proc.Env, in proc.Input) {
	if l, ok := in.(Lookup); ok {
		n.route(env, l.Key, 0)
	}
}

// next is the routing rule's choice, but a route at MaxHops ends here.
func (n *node) next(key GUID, hops int) proc.ID {
	if hops >= MaxHops {
		return n.id
	}
	return n.rt.next(n, key)
}

// route forwards a lookup of key one hop, or takes delivery.
func (n *node) route(env proc.Env, key GUID, hops int) {
	next := n.next(key, hops)
	if next == n.id {
		env.Output(Delivered{Key: key, Hops: hops})
		return
	}
	env.Send(next, Route{Key: key, Hops: hops + 1})
}

// Entries is how many distinct nodes the node's tables hold: its state.
func (n *node) Entries() int { return len(n.known()) }

// Stater is implemented by the family's processes: the size of their state.
type Stater interface{ Entries() int }
