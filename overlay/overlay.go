package overlay

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Algorithms lists the family's algorithms: Pastry, the circular
// baseline, Scribe on Pastry, End System Multicast.
var Algorithms []proc.Algorithm

// order is the order of Algorithms, whatever the order the files register.
var order = []string{"pastry", "circular", "scribe", "esm"}

func register(a proc.Algorithm) {
	a.Family = "overlay"
	if a.Inputs == nil {
		a.Inputs = Inputs
	}
	if a.Messages == nil {
		a.Messages = []proc.Message{Join{}, State{}, Announce{}, Route{},
			Ack{}, Ping{}, Pong{}, LeafRequest{}, EntryRequest{}, RowRequest{}, Offer{}, Leaving{},
			Replica{}, Fetch{}, Fetched{},
			Subscribe{}, Publish{}, Data{}, Heartbeat{}, Prune{},
			RTTProbe{}, RTTEcho{}, NeighbourRequest{}, Neighbours{}}
	}
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
	Seq  uint64 // the hop's number, for its Ack (0: no ack wanted)
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

// Route carries a lookup one hop (or a DHT request: Op, Value).
type Route struct {
	Key   GUID
	Hops  int
	Seq   uint64 // the hop's number, for its Ack (0: no ack wanted)
	Op    Op
	Value string
}

// Kind implements proc.Message.
func (Route) Kind() string { return "route" }

func (m Route) String() string { return fmt.Sprintf("ROUTE(%s,h=%d)", m.Key, m.Hops) }

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
	case "put":
		if len(args) != 2 {
			return nil, fmt.Errorf("put: want a key of 32 hex digits and a value")
		}
		var k GUID
		if err := k.UnmarshalText([]byte(strings.TrimSpace(args[0]))); err != nil {
			return nil, err
		}
		return Put{Key: k, Value: args[1]}, nil
	case "get":
		if len(args) != 1 {
			return nil, fmt.Errorf("get: want one key of 32 hex digits")
		}
		var k GUID
		if err := k.UnmarshalText([]byte(strings.TrimSpace(args[0]))); err != nil {
			return nil, err
		}
		return Get{Key: k}, nil
	case "show-tables":
		return ShowTables{}, nil
	case "create-group", "join-group", "leave-group":
		if len(args) != 1 {
			return nil, fmt.Errorf("%s: want one group of 32 hex digits", name)
		}
		var g GUID
		if err := g.UnmarshalText([]byte(strings.TrimSpace(args[0]))); err != nil {
			return nil, err
		}
		return map[string]proc.Input{"create-group": CreateGroup{g}, "join-group": JoinGroup{g}, "leave-group": LeaveGroup{g}}[name], nil
	case "multicast":
		if len(args) != 2 {
			return nil, fmt.Errorf("multicast: want a group of 32 hex digits and a message id")
		}
		var g GUID
		if err := g.UnmarshalText([]byte(strings.TrimSpace(args[0]))); err != nil {
			return nil, err
		}
		id, err := strconv.ParseUint(strings.TrimSpace(args[1]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("multicast: message id %q: want a number", args[1])
		}
		return Multicast{Group: g, ID: id}, nil
	case "esm-join":
		return ESMJoin{}, nil
	case "esm-leave":
		return ESMLeave{}, nil
	case "esm-send":
		if len(args) != 1 {
			return nil, fmt.Errorf("esm-send: want a packet id")
		}
		id, err := strconv.ParseUint(strings.TrimSpace(args[0]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("esm-send: packet id %q: want a number", args[0])
		}
		return ESMSend{ID: id}, nil
	}
	return nil, fmt.Errorf("unknown overlay input %q (known: lookup, put, get, show-tables, create-group, join-group, leave-group, multicast, esm-join, esm-leave, esm-send)", name)
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
	if len(ids) >= s.l && Cmp(d, dist(ids[len(ids)-1])) >= 0 {
		return false // beyond a full side: most nodes heard of in a large overlay
	}
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

// remove takes id out of both sides; it reports the sides it was on.
func (s *leafSet) remove(id proc.ID) (left, right bool) {
	if i := slices.Index(s.left, id); i >= 0 {
		s.left, left = slices.Delete(s.left, i, i+1), true
	}
	if i := slices.Index(s.right, id); i >= 0 {
		s.right, right = slices.Delete(s.right, i, i+1), true
	}
	return left, right
}

func (s *leafSet) has(id proc.ID) bool {
	return slices.Contains(s.left, id) || slices.Contains(s.right, id)
}

// covers reports whether key lies within the leaf set's range: between
// its leftmost and rightmost entries. Both sides short of l entries means
// the node knows every node, and the range is the whole ring; one side
// short (a failed leaf not yet replaced) ends the range at that side's
// farthest entry (or the node itself).
func (s *leafSet) covers(key GUID) bool {
	if len(s.left) < s.l && len(s.right) < s.l {
		return true
	}
	return Cmp(Clockwise(s.self, key), Clockwise(s.self, s.edge(s.right))) <= 0 ||
		Cmp(Clockwise(key, s.self), Clockwise(s.edge(s.left), s.self)) <= 0
}

// edge is the nodeId of a side's farthest entry; the node's own if the
// side is empty.
func (s *leafSet) edge(side []proc.ID) GUID {
	if len(side) == 0 {
		return s.self
	}
	return NodeID(side[len(side)-1])
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

// nearest is the k nodes of L ∪ {self} numerically closest to key,
// closest first: the replica set of PAST.
func (s *leafSet) nearest(self proc.ID, key GUID, k int) []proc.ID {
	ids := slices.Concat([]proc.ID{self}, s.left, s.right)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	slices.SortFunc(ids, func(a, b proc.ID) int {
		if Closer(key, NodeID(a), NodeID(b)) {
			return -1
		}
		return 1
	})
	return ids[:min(k, len(ids))]
}

// ---- the node ----

// router is an algorithm's routing rule: the next hop toward key, or the
// node itself to take delivery. learn offers it a node it heard of;
// nodes lists what its own tables hold beyond the leaf set; forget
// removes a failed node, reporting the entry R[p][d] it held; row and
// entry read the table, for the repair of other nodes'.
type router interface {
	next(n *node, key GUID) proc.ID
	learn(n *node, id proc.ID) bool
	nodes(n *node) []proc.ID
	forget(n *node, id proc.ID) (p, d int, held bool)
	row(p int) []proc.ID
	entry(p, d int) proc.ID
}

// Config is a node's parameters.
type Config struct {
	// Leaves is l, the leaf set's entries on each side.
	Leaves int
	// KeepAlive is the period of the failure detector and of the
	// routing-table gossip (repair.go); 0: the node assumes no failures,
	// sends no keep-alives and wants no acknowledgements of its hops.
	KeepAlive time.Duration
	// HopTimeout is how long a hop waits for its acknowledgement before
	// the next node is presumed failed and the message routed around it.
	HopTimeout time.Duration
	// Replicas is k, the DHT's copies of each object (dht.go).
	Replicas int
	// Proximity makes the node measure its distance to the nodes it
	// hears of and choose by it: a nearby node to join through, the
	// neighbourhood set, the nearest candidate for each routing-table
	// entry, and the join's refinement of the table (proximity.go).
	// Without it the first candidate heard of stays.
	Proximity bool
}

// Repairing is the registered algorithms' configuration: failures
// detected by keep-alives every 10 s (with the simulator's 1 ms links:
// a lookup phase fits between two rounds), hops acknowledged within
// 50 ms, 3 replicas.
var Repairing = Config{Leaves: DefaultLeaves, KeepAlive: 10 * time.Second, HopTimeout: 50 * time.Millisecond, Replicas: 3}

// FailureFree is the configuration of runs without failures: no
// keep-alives, no acknowledgements (at 10⁶ nodes they would be most of
// the traffic).
var FailureFree = Config{Leaves: DefaultLeaves, HopTimeout: 50 * time.Millisecond, Replicas: 3}

// node is what Pastry and the circular baseline share: the leaf set, the
// join protocol (Rowstron & Druschel §2.4), the forwarding of lookups,
// the repair after failures (repair.go) and the DHT (dht.go). The routing
// rule is the algorithm's.
type node struct {
	id     proc.ID
	self   GUID
	cfg    Config
	leaves leafSet
	rt     router
	joined bool
	final  bool // Z's state has come
	told   map[proc.ID]bool
	failures
	proximity
	dht
	scribe
	flaw flaw // sound, but in the tests' broken variants
}

func newNode(id proc.ID, cfg Config, rt router) *node {
	g := NodeID(id)
	return &node{id: id, self: g, cfg: cfg, leaves: leafSet{self: g, l: cfg.Leaves}, rt: rt}
}

// Start: the run has no joins, and every process is present from the
// start: the node knows them all, as if each had joined in turn. It costs
// O(N log N) per node: large overlays are built by joins.
func (n *node) Start(env proc.Env) {
	for i := range env.N() {
		if proc.ID(i) != n.id {
			n.learn(env, proc.ID(i))
		}
	}
	n.joined = true
	n.startKeepAlive(env)
}

// Join: X (this node) asks contact A to route a JOIN with key X.
func (n *node) Join(env proc.Env, contact proc.ID) {
	n.startKeepAlive(env)
	if contact == proc.None {
		n.joined = true
		env.Output(Joined{})
		return
	}
	if n.cfg.Proximity {
		n.seek(env, contact) // the JOIN goes through a node near X
		return
	}
	env.Send(contact, Join{X: n.id})
}

// learn takes id into the tables where it belongs; a node presumed
// failed is not taken back (another's stale table may still list it).
// With proximity, id is probed (if it is not measured yet): its answer
// offers it again, with its distance. A node that enters the leaf set
// may take over the groups this node roots (Scribe).
func (n *node) learn(env proc.Env, id proc.ID) bool {
	if id == n.id || id == proc.None || n.presumedDead(id) {
		return false
	}
	a := n.leaves.add(id)
	b := n.rt.learn(n, id)
	n.measure(env, id)
	if a && len(n.groups) > 0 {
		n.handOver(env)
	}
	return a || b
}

// known lists every node in the tables, without repeats, sorted.
func (n *node) known() []proc.ID {
	ids := slices.Concat(n.leaves.left, n.leaves.right, n.rt.nodes(n))
	slices.Sort(ids)
	return slices.Compact(ids)
}

func (n *node) Receive(env proc.Env, from proc.ID, m proc.Message) {
	n.now = env.Now()
	n.heard(from)
	switch m := m.(type) {
	case Join:
		n.ack(env, from, m.Seq)
		n.onJoin(env, m)
	case State:
		n.onState(env, from, m)
	case Announce:
		n.learn(env, from)
	case Route:
		n.ack(env, from, m.Seq)
		n.route(env, m)
	default:
		if !n.receiveRepair(env, from, m) && !n.receiveProximity(env, from, m) && !n.receiveDHT(env, from, m) {
			n.receiveScribe(env, from, m)
		}
	}
}

// onJoin: a node on the JOIN's route sends X its state tables, then
// forwards the JOIN as it would a lookup of X's nodeId; the last node, Z,
// says so.
//
// A node that lists X already knows an earlier incarnation (X failed and
// came back under the same address): it drops it, lest the JOIN be routed
// to X itself; X's announcement brings it back.
func (n *node) onJoin(env proc.Env, m Join) {
	n.leaves.remove(m.X)
	n.rt.forget(n, m.X)
	next := n.next(NodeID(m.X), m.Hops)
	env.Send(m.X, State{Row: m.Hops, Final: next == n.id, Nodes: n.known()})
	if next != n.id {
		n.forward(env, next, Join{X: m.X, Hops: m.Hops + 1})
	}
}

// onState: X takes the sender and its tables into its own (row i of its
// routing table comes from the i-th node on the route, its leaf set from
// Z; learning every entry offered gives those and more). Once Z's state
// has come, X announces itself to every node in its tables; a state that
// comes later is learnt, and its new nodes told.
func (n *node) onState(env proc.Env, from proc.ID, m State) {
	var fresh []proc.ID
	if n.learn(env, from) {
		fresh = append(fresh, from)
	}
	for _, id := range m.Nodes {
		if n.learn(env, id) {
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
		n.refine(env)
		return
	}
	for _, id := range fresh {
		if !n.told[id] {
			n.told[id] = true
			env.Send(id, Announce{})
		}
	}
}

func (n *node) Input(env proc.Env, in proc.Input) {
	n.now = env.Now()
	switch in := in.(type) {
	case Lookup:
		n.route(env, Route{Key: in.Key})
	case Put:
		n.route(env, Route{Key: in.Key, Op: OpPut, Value: in.Value})
	case Get:
		n.route(env, Route{Key: in.Key, Op: OpGet})
	case ShowTables:
		n.showTables(env)
	case proc.Leave:
		n.leave(env)
	default:
		n.scribeInput(env, in)
	}
}

// next is the routing rule's choice, but a route at MaxHops ends here.
func (n *node) next(key GUID, hops int) proc.ID {
	if hops >= MaxHops {
		return n.id
	}
	return n.rt.next(n, key)
}

// route forwards a lookup (or a DHT request) one hop, or takes delivery.
func (n *node) route(env proc.Env, m Route) {
	next := n.next(m.Key, m.Hops)
	if next == n.id {
		n.deliver(env, m)
		return
	}
	m.Hops++
	n.forward(env, next, m)
}

// deliver: this node is the key's home.
func (n *node) deliver(env proc.Env, m Route) {
	switch m.Op {
	case OpLookup:
		env.Output(Delivered{Key: m.Key, Hops: m.Hops})
	default:
		n.atHome(env, m)
	}
}

// Entries is how many distinct nodes the node's tables hold: its state.
func (n *node) Entries() int { return len(n.known()) }

// Stater is implemented by the family's processes: the size of their state.
type Stater interface{ Entries() int }

// Build is the constructor of the family's algorithm name with
// configuration cfg (nil for an unknown name): runs without failures use
// FailureFree, no keep-alives.
func Build(name string, cfg Config) func(proc.ID, int) proc.Process {
	switch name {
	case "pastry":
		return func(id proc.ID, _ int) proc.Process { return NewPastry(id, cfg) }
	case "circular":
		return func(id proc.ID, _ int) proc.Process { return NewCircular(id, cfg) }
	}
	return nil
}
