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
// exists; they add it to theirs. To the nodes of its leaf set it sends
// its leaf set too (Left, Right): each answers with an Offer of the nodes it
// knows that belong there and are missing — another node that joined at
// the same moment, which Z could not know of (Rowstron & Druschel 2001
// §2.4: the joiner sends its state to the nodes in its tables, which
// update their own; here the exchange goes both ways, for the leaf sets
// whose correctness the routes rest on).
type Announce struct{ Leaves *Leaves }

// Leaves is a leaf set's two sides, nearest first. (Announce holds it by
// pointer: an Announce without one, most of them, costs no allocation.)
type Leaves struct{ Left, Right []proc.ID }

// Kind implements proc.Message.
func (Announce) Kind() string { return "announce" }

func (m Announce) String() string {
	if m.Leaves == nil {
		return "ANNOUNCE"
	}
	return fmt.Sprintf("ANNOUNCE(left=%d,right=%d)", len(m.Leaves.Left), len(m.Leaves.Right))
}

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
//
// Each side is kept sorted by distance from the node, with the distances
// beside it (ld, rd: going down the ring for left, up for right), so that
// offering a node costs one comparison with the side's farthest entry —
// the fate of most nodes heard of in a large overlay — and otherwise a
// binary search and an insertion in place: no hashing of the entries, no
// re-sorting, no allocation once a side is full. The farthest distance of
// each side is kept inline too (lfar, rfar), so that the common case
// reads nothing beyond the node itself.
type leafSet struct {
	self        GUID
	lfar, rfar  GUID
	l           int
	left, right []proc.ID
	ld, rd      []GUID
}

// add considers node id for both sides; it reports whether it entered.
func (s *leafSet) add(id proc.ID) bool { return s.addG(id, NodeID(id)) }

// addG is add with id's nodeId g already computed.
func (s *leafSet) addG(id proc.ID, g GUID) bool {
	if g == s.self {
		return false
	}
	r := s.insert(&s.right, &s.rd, &s.rfar, id, Clockwise(s.self, g))
	lf := s.insert(&s.left, &s.ld, &s.lfar, id, Clockwise(g, s.self))
	return r || lf
}

// insert puts id, at distance d, into the side ids (distances ds,
// farthest far) where it belongs, if among the l nearest.
func (s *leafSet) insert(ids *[]proc.ID, ds *[]GUID, far *GUID, id proc.ID, d GUID) bool {
	if len(*ids) >= s.l && !less(d, *far) {
		return false // beyond a full side: most nodes heard of in a large overlay
	}
	// The place, by a scan from the far end (a side holds l entries, 8
	// by default: a scan is as quick as a binary search, and inline).
	i := len(*ds)
	for i > 0 && less(d, (*ds)[i-1]) {
		i--
	}
	if i > 0 && (*ds)[i-1] == d || i >= s.l {
		return false
	}
	if *ds == nil {
		*ids, *ds = make([]proc.ID, 0, s.l+1), make([]GUID, 0, s.l+1)
	}
	if len(*ids) < s.l {
		*ids, *ds = append(*ids, 0), append(*ds, GUID{})
	}
	copy((*ids)[i+1:], (*ids)[i:])
	copy((*ds)[i+1:], (*ds)[i:])
	(*ids)[i], (*ds)[i] = id, d
	*far = edge(*ds)
	return true
}

// less reports whether a < b.
func less(a, b GUID) bool { return a.Hi < b.Hi || a.Hi == b.Hi && a.Lo < b.Lo }

// remove takes id out of both sides; it reports the sides it was on.
func (s *leafSet) remove(id proc.ID) (left, right bool) {
	if i := slices.Index(s.left, id); i >= 0 {
		s.left, s.ld, left = slices.Delete(s.left, i, i+1), slices.Delete(s.ld, i, i+1), true
		s.lfar = edge(s.ld)
	}
	if i := slices.Index(s.right, id); i >= 0 {
		s.right, s.rd, right = slices.Delete(s.right, i, i+1), slices.Delete(s.rd, i, i+1), true
		s.rfar = edge(s.rd)
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
	return Cmp(Clockwise(s.self, key), s.rfar) <= 0 || Cmp(Clockwise(key, s.self), s.lfar) <= 0
}

// edge is the distance of a side's farthest entry (0, the node itself,
// if the side is empty).
func edge(ds []GUID) GUID {
	if len(ds) == 0 {
		return GUID{}
	}
	return ds[len(ds)-1]
}

// closest is the node of L ∪ {self} numerically closest to key. On the
// ring it is one of key's two neighbours among those nodes, and each side
// is sorted by distance from the node: the candidates are the entries
// either side of key's own distance on each side, and the node itself
// (which beats any neighbour found only by going round the ring).
func (s *leafSet) closest(self proc.ID, key GUID) proc.ID {
	best, bg := self, s.self
	for side := range 2 {
		ids, ds, d := s.right, s.rd, Clockwise(s.self, key)
		if side == 1 {
			ids, ds, d = s.left, s.ld, Clockwise(key, s.self)
		}
		i := 0
		for i < len(ds) && less(ds[i], d) {
			i++
		}
		for j := max(i-1, 0); j <= i && j < len(ids); j++ {
			if g := NodeID(ids[j]); Closer(key, g, bg) {
				best, bg = ids[j], g
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
	learn(n *node, id proc.ID, g GUID) bool
	nodes(n *node) []proc.ID
	forget(n *node, id proc.ID) (p, d int, held bool)
	row(dst []proc.ID, p int) []proc.ID
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
	// FullJoin is Rowstron & Druschel's join in full: every node on the
	// JOIN's route sends the joiner all of its tables, and the joiner
	// announces itself to every node of its own; otherwise the nodes on
	// the route send the rows the joiner can use (node.joinState) and it
	// announces itself to its leaf set and the rows where it is new
	// (node.toTell). Proximity implies it.
	FullJoin bool
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
//
// The fields are in the order of use: what nearly every message reads
// (the identifiers, the configuration, the leaf set's bounds, the
// routing table's header, the failed nodes) first, so that in a large
// overlay, where a node's state is rarely still in cache when its next
// message comes, one delivery waits for few lines of memory. The leaf
// set's entries (lbuf) and the routing table's first rows (tbuf) come
// next, held inline rather than in allocations of their own: reading
// them through a pointer was a second wait for memory once the node had
// arrived (a JOIN's hop reads the rows of its prefix, an announcement
// the row where the joiner belongs). What only some messages read — the
// Scribe groups, the queued JOINs, proximity, the DHT — is last.
type node struct {
	id     proc.ID
	joined bool
	final  bool // Z's state has come
	flaw   flaw // sound, but in the tests' broken variants
	self   GUID
	cfg    Config
	leaves leafSet
	rt     router
	table  pastry // Pastry's routing table, rt's (held here: near the leaf set, its rows in tbuf)
	failures
	lbuf leafBuf
	tbuf [tableRows][Radix]proc.ID // the table's first rows (Pastry's; unused by the circular baseline)
	scribe
	queued     []Join // JOINs that came before this node had joined
	*proximity        // (allocated by the first use: nil without Config.Proximity)
	dht
}

// CacheLines is how many cache lines of a node's state a delivery may
// read (1,000 of its 1,136 bytes): the identifiers and configuration,
// the leaf set's bounds, the table's header, the clock, the leaf set
// and the table's rows — so the simulator prefetches them all when the
// node's event is next (sim.Spread), not only the first. It reads
// nothing of the node.
func (*node) CacheLines() int { return nodeLines }

// nodeLines is the 64-byte lines from a node's start to the end of its
// table's rows (TestNodeLines).
const nodeLines = 16

// leafBuf is the room for a leaf set of up to DefaultLeaves entries a
// side: the nodes, then their distances.
type leafBuf struct {
	ids [2][DefaultLeaves]proc.ID
	ds  [2][DefaultLeaves]GUID
}

func newNode(id proc.ID, cfg Config, rt router) *node {
	g := NodeID(id)
	n := &node{id: id, self: g, cfg: cfg, leaves: leafSet{self: g, l: cfg.Leaves}, rt: rt}
	if l := cfg.Leaves; l <= DefaultLeaves {
		b := &n.lbuf
		n.leaves.left, n.leaves.right = b.ids[0][:0:l], b.ids[1][:0:l]
		n.leaves.ld, n.leaves.rd = b.ds[0][:0:l], b.ds[1][:0:l]
	}
	return n
}

// newPastryNode is a node routing by Pastry's rule, with its table inline.
func newPastryNode(id proc.ID, cfg Config) *node {
	n := newNode(id, cfg, nil)
	n.rt, n.table.rows = &n.table, n.tbuf[:0]
	return n
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
	leaf, table := n.learnWhere(env, id)
	return leaf || table
}

// learnWhere is learn, reporting whether id entered the leaf set and
// whether it entered the routing table.
func (n *node) learnWhere(env proc.Env, id proc.ID) (leaf, table bool) {
	if id == n.id || id == proc.None || n.presumedDead(id) {
		return false, false
	}
	g := NodeID(id)
	leaf = n.leaves.addG(id, g)
	table = n.rt.learn(n, id, g)
	n.measure(env, id)
	if leaf && len(n.groups) > 0 {
		n.handOver(env)
	}
	return leaf, table
}

// known lists every node in the tables, without repeats, sorted.
func (n *node) known() []proc.ID {
	ids := n.rt.nodes(n)
	ids = append(ids, n.leaves.left...)
	ids = append(ids, n.leaves.right...)
	slices.Sort(ids)
	return slices.Compact(ids)
}

func (n *node) Receive(env proc.Env, from proc.ID, m proc.Message) {
	n.now = env.Now()
	n.heard(from)
	switch m := m.(type) {
	case Join:
		n.ack(env, from, m.Seq)
		if !n.joined && n.flaw != joinsBlind {
			// This node is itself joining (it was drawn as a contact the
			// moment it arrived): it routes the JOIN once it has its
			// tables, lest X take its empty state for the overlay's.
			n.queued = append(n.queued, m)
			return
		}
		n.onJoin(env, m)
	case State:
		n.onState(env, from, m)
	case Announce:
		n.onAnnounce(env, from, m)
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
	env.Send(m.X, State{Row: m.Hops, Final: next == n.id, Nodes: n.joinState(m.X)})
	if next != n.id {
		n.forward(env, next, Join{X: m.X, Hops: m.Hops + 1})
	}
}

// joinState is what this node, on the route of X's JOIN, sends X: in
// Rowstron & Druschel's join (§2.4) all its tables, of which X takes
// row i from the i-th node and its leaf set from the last. Rows beyond
// s = shl(this node, X) would give X a single entry (their nodes share
// exactly s digits with X, and the same digit s): this node sends its
// rows 0 to s (the lower rows fill the holes its predecessors' left)
// and its leaf set (the final node's is X's; the others' are
// candidates for X's deepest rows, and bring X nodes that joined beside
// it at the same time). With proximity or FullJoin it sends all its
// tables: X chooses each entry as the nearest of many candidates.
func (n *node) joinState(x proc.ID) []proc.ID {
	if n.cfg.Proximity || n.cfg.FullJoin {
		return n.known()
	}
	s := SharedPrefix(NodeID(x), n.self)
	ids := make([]proc.ID, 0, Radix*(s+1)+len(n.leaves.left)+len(n.leaves.right))
	for p := 0; p <= s && p < Digits; p++ {
		ids = n.rt.row(ids, p)
	}
	ids = append(ids, n.leaves.left...)
	return append(ids, n.leaves.right...)
}

// onState: X takes the sender and its tables into its own (row i of its
// routing table comes from the i-th node on the route, its leaf set from
// Z; learning every entry offered gives those and more). Once Z's state
// has come, X announces itself to every node in its tables, and routes
// the JOINs that came to it meanwhile; a state that comes later is
// learnt, and the nodes it brings into the tables told.
func (n *node) onState(env proc.Env, from proc.ID, m State) {
	var fresh []proc.ID // (kept only once joined: the join announces to all)
	if n.learn(env, from) && n.joined {
		fresh = append(fresh, from)
	}
	for _, id := range m.Nodes {
		if n.learn(env, id) && n.joined {
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
		env.Output(Joined{Entries: n.announceJoined(env)})
		n.refine(env)
		queued := n.queued
		n.queued = nil
		for _, j := range queued {
			n.onJoin(env, j)
		}
		return
	}
	for _, id := range fresh {
		n.announce(env, id)
	}
}

// Informed is how many nodes sharing more than p digits with a joiner
// the joiner must know for it to skip announcing itself to the nodes of
// its table's row p (see toTell).
var Informed = 1

// announceJoined: this node has just joined, and tells the nodes of
// its tables that it exists — its leaf set, with the leaf set itself
// (one copy for all: a message is not changed once sent), and the
// routing-table nodes that toTell picks. It returns how many distinct
// nodes its tables hold.
func (n *node) announceJoined(env proc.Env) int {
	table := n.rt.nodes(n)
	tell := n.toTell(table)
	entries := 0
	for _, id := range table {
		if n.leaves.has(id) {
			continue // told below
		}
		entries++
		if tell.of(n, id) {
			env.Send(id, Announce{})
		}
	}
	var mine *Leaves
	if n.flaw != joinsBlind {
		mine = &Leaves{Left: slices.Clone(n.leaves.left), Right: slices.Clone(n.leaves.right)}
	}
	for _, id := range n.leaves.left {
		entries++
		env.Send(id, Announce{mine})
	}
	for _, id := range n.leaves.right {
		if !slices.Contains(n.leaves.left, id) { // (in both sides in an overlay of 2l nodes or fewer)
			entries++
			env.Send(id, Announce{mine})
		}
	}
	return entries
}

// toTell is which of the nodes of its routing table, table, a node that
// has just joined announces itself to. Rowstron & Druschel (2001 §2.4)
// send the joiner's state to every node of its tables; but a node T of
// row p (sharing p digits with X) would only take X into its entry
// R[p][X[p]], and that entry is already held if any node sharing p+1
// digits with X reached T before — which X can judge: if X itself knows
// such a node, so, most likely, does T. As in MSPastry's join (Castro,
// Costa & Rowstron 2004, where the joiner tells only its leaf set), X
// tells the rows in which it is the first of its prefix that it knows —
// in an overlay of N nodes, the deepest row, ⌈log₁₆ N⌉'s, which is
// sparse — and its leaf set (announceJoined), some 16 + a few nodes in
// place of (2^b − 1)·log₁₆ N + 2l. A routing-table entry left empty
// costs at most a hop (the rare case of the routing rule); the leaf
// sets, on which delivery rests, are told as before. With proximity or
// FullJoin every table node is told: X may be nearer than the node its
// entry holds (Castro et al. 2002).
func (n *node) toTell(table []proc.ID) (t telling) {
	t.all = n.cfg.Proximity || n.cfg.FullJoin
	if t.all {
		return t
	}
	for _, side := range [3][]proc.ID{table, n.leaves.left, n.leaves.right} {
		for _, id := range side {
			for q := SharedPrefix(NodeID(id), n.self) - 1; q >= 0; q-- {
				t.deeper[q]++
			}
		}
	}
	return t
}

// telling is toTell's answer (a value, not a closure: it costs no
// allocation). deeper[p]: how many known nodes share more than p digits
// with this one; all: every node is told.
type telling struct {
	all    bool
	deeper [Digits + 1]int32
}

// of reports whether node id is to be told.
func (t *telling) of(n *node, id proc.ID) bool {
	return t.all || t.deeper[SharedPrefix(NodeID(id), n.self)] == 0
}

// announce tells id that this node exists; a leaf is sent the leaf set
// too, for it to offer what is missing.
func (n *node) announce(env proc.Env, id proc.ID) {
	if n.leaves.has(id) && n.flaw != joinsBlind {
		env.Send(id, Announce{&Leaves{Left: slices.Clone(n.leaves.left), Right: slices.Clone(n.leaves.right)}})
		return
	}
	env.Send(id, Announce{})
}

// onAnnounce: X has joined. It is learnt; if it sent its leaf set, the
// nodes this one knows that belong there and are missing (itself aside:
// X knows it) are offered back.
func (n *node) onAnnounce(env proc.Env, x proc.ID, m Announce) {
	n.learn(env, x)
	if m.Leaves == nil {
		return
	}
	theirs := m.Leaves
	// A node fits a side of X's leaf set if the side has room or the node
	// is nearer X than the side's farthest entry.
	gx := NodeID(x)
	reach := func(side []proc.ID, dist func(GUID) GUID) GUID {
		if len(side) < n.leaves.l {
			return GUID{^uint64(0), ^uint64(0)}
		}
		return dist(NodeID(side[len(side)-1]))
	}
	up := func(g GUID) GUID { return Clockwise(gx, g) }
	down := func(g GUID) GUID { return Clockwise(g, gx) }
	right, left := reach(theirs.Right, up), reach(theirs.Left, down)
	var missing []proc.ID
	for _, side := range [2][]proc.ID{n.leaves.left, n.leaves.right} {
		for _, id := range side {
			if g := NodeID(id); id == x || Cmp(up(g), right) >= 0 && Cmp(down(g), left) >= 0 {
				continue // (does not fit: no need to look for it in X's sides)
			}
			if !slices.Contains(theirs.Left, id) && !slices.Contains(theirs.Right, id) && !slices.Contains(missing, id) && !n.silentOrDead(env, id) {
				missing = append(missing, id)
			}
		}
	}
	if len(missing) > 0 {
		env.Send(x, Offer{Nodes: missing, Missing: true})
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
