package overlay

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Scribe is application-level multicast on Pastry (Castro, Druschel,
// Kermarrec & Rowstron, "SCRIBE: A large-scale and decentralized
// application-level multicast infrastructure", IEEE JSAC 20(8), 2002;
// Coulouris et al. §10.5). It is layered on the node's Pastry routing as
// the DHT is: a group is named by a groupId, a GUID, and its tree is the
// union of the Pastry routes from the members toward the groupId.
//
//   - Root: the node numerically closest to the groupId, the group's
//     home; create routes a CREATE there.
//   - Join: a member routes a JOIN toward the groupId; each node on the
//     way records the previous hop as a child. A node already in the tree
//     (a member, a forwarder with children, or the root) stops the JOIN
//     there; a node not yet in it becomes a forwarder and routes the JOIN
//     on, itself the child of the next hop.
//   - Multicast: the message is routed to the root, which sends it down
//     the tree: every node of the tree passes it to its children, and a
//     member delivers it.
//   - Leave: a member that leaves stops delivering; a node with no
//     children that is not a member prunes itself from its parent, which
//     may then prune itself in turn.
//   - Repair: a parent sends its children a heartbeat every
//     ScribeHeartbeat (a multicast serves as one): one message per child
//     node, naming every group in which it is a child here, however
//     many they are (a node is in the trees of many groups, and its
//     parents in all of them are among the few nodes of its routing
//     table). Heartbeats are keep-alives: a node that runs without
//     Pastry's (Config.KeepAlive 0, FailureFree: no failures) sends none.
//     A child that has not
//     heard its parent for ScribeSuspect presumes it failed, drops it
//     from its Pastry tables and routes a JOIN again: the route goes
//     around the failed node, and the child's subtree comes with it.
//     When the root fails, the children's JOINs reach the live node now
//     closest to the groupId, which finds itself at the end of the route
//     and becomes the root; a node that finds itself the root while it
//     still has a parent leaves that parent (the route no longer goes
//     through it).
//   - Root handover (§2.3–2.4: the root is whichever node is numerically
//     closest to the groupId now). A node that joins the overlay closer
//     to a groupId than the group's root enters the root's leaf set; the
//     root, finding that the route toward the groupId no longer ends at
//     itself, routes a JOIN to the newcomer and becomes its child, its
//     subtree with it; the newcomer, at the end of that route, becomes
//     the root. A multicast that reaches the newcomer before that JOIN
//     (its sender learnt of the newcomer first) is held and sent down
//     the tree once the newcomer is the root; one that reaches the old
//     root after the handover is routed on to the new. Either way each
//     is sent down from one root once.
//
// A node accepts data from its parent only; data from another (a parent
// it has left) is answered with a prune. The hops of JOINs and multicasts
// toward the root are acknowledged, as Pastry's lookups are (repair.go):
// an unacknowledged hop presumes the next node failed and goes around it.
//
// Cost: a JOIN takes at most ⌈log₁₆ N⌉ hops, fewer when it meets the
// tree; a multicast takes the route to the root plus one message per
// tree edge. Assumes reliable links and crash-stop nodes, and that a
// multicast taken at the end of its route for a group the node does not
// know is for a group being handed over to it (it is held until then).
type scribe struct {
	groups  map[GUID]*group
	keys    []GUID            // the groups' ids, sorted, once sortedGroups has run
	stale   bool              // a group has come or gone since keys was sorted
	held    map[GUID][]uint64 // multicasts taken before the group's handover
	ticking bool
	beats   []beat // a heartbeat round's (child, group) pairs, reused
}

// beat is a child to send a heartbeat for a group.
type beat struct {
	child proc.ID
	group GUID
}

// group is a node's state for one Scribe group.
type group struct {
	member   bool
	root     bool
	parent   proc.ID // proc.None: none (the root, or not in the tree)
	children []proc.ID
	heard    time.Duration // when the parent was last heard from
}

// inTree reports whether the node is on the group's tree.
func (g *group) inTree() bool {
	return g.member || g.root || g.parent != proc.None || len(g.children) > 0
}

// ScribeHeartbeat is the period of a parent's heartbeats to its
// children; ScribeSuspect how long a child waits without one before it
// presumes its parent failed.
const (
	ScribeHeartbeat = 500 * time.Millisecond
	ScribeSuspect   = 3 * ScribeHeartbeat
)

// ScribeRepairBound is how long after a failure every member is back on
// the tree: the failure noticed within ScribeSuspect and a heartbeat
// period, the JOIN routed again in a few hops, each around a failed node
// at most one hop timeout later.
const ScribeRepairBound = ScribeSuspect + ScribeHeartbeat + 3*time.Second

// ScribeDeliveryBound is how long a multicast takes to reach every member
// of an intact tree: a route to the root and down the tree, a few hops
// each way, with room for wide-area latencies of up to 200 ms a hop.
const ScribeDeliveryBound = 2 * time.Second

// ScribeJoinBound is how long a member's JOIN takes to reach the tree
// when no node on its route has failed.
const ScribeJoinBound = time.Second

// ---- inputs and outputs ----

// CreateGroup asks the node to create Group: a CREATE is routed to its
// root, which outputs GroupRoot.
type CreateGroup struct {
	Group GUID `json:"group"`
}

// Kind implements proc.Input.
func (CreateGroup) Kind() string { return "create-group" }

// JoinGroup makes the node a member of Group.
type JoinGroup struct {
	Group GUID `json:"group"`
}

// Kind implements proc.Input.
func (JoinGroup) Kind() string { return "join-group" }

// LeaveGroup makes the node leave Group.
type LeaveGroup struct {
	Group GUID `json:"group"`
}

// Kind implements proc.Input.
func (LeaveGroup) Kind() string { return "leave-group" }

// Multicast asks the node to send message ID to Group's members (IDs are
// the workload's, one per multicast).
type Multicast struct {
	Group GUID   `json:"group"`
	ID    uint64 `json:"id"`
}

// Kind implements proc.Input.
func (Multicast) Kind() string { return "multicast" }

// Received: a member took delivery of multicast ID of Group, Depth tree
// edges below the root.
type Received struct {
	Group GUID   `json:"group"`
	ID    uint64 `json:"id"`
	Depth int    `json:"depth"`
}

// Kind implements proc.Output.
func (Received) Kind() string { return "received" }

// GroupRoot: the node is Group's root (it received the CREATE, or became
// the root when the JOINs of a failed root's children reached it).
type GroupRoot struct {
	Group GUID `json:"group"`
}

// Kind implements proc.Output.
func (GroupRoot) Kind() string { return "group-root" }

// ---- messages ----

// Subscribe is Scribe's JOIN, one hop: the sender asks to be the
// receiver's child in Group's tree. Create: a CREATE, routed to the root
// the same way, recording nothing.
type Subscribe struct {
	Group  GUID
	Create bool
	Seq    uint64 // the hop's number, for its Ack
}

// Kind implements proc.Message.
func (Subscribe) Kind() string { return "subscribe" }

func (m Subscribe) String() string {
	if m.Create {
		return fmt.Sprintf("CREATE(%s)", m.Group)
	}
	return fmt.Sprintf("SUBSCRIBE(%s)", m.Group)
}

// Publish carries a multicast one hop toward the group's root.
type Publish struct {
	Group GUID
	ID    uint64
	Hops  int
	Seq   uint64 // the hop's number, for its Ack
}

// Kind implements proc.Message.
func (Publish) Kind() string { return "publish" }

func (m Publish) String() string { return fmt.Sprintf("PUBLISH(%s,#%d,h=%d)", m.Group, m.ID, m.Hops) }

// Data carries a multicast from a parent to a child; Depth is the
// child's depth below the root.
type Data struct {
	Group GUID
	ID    uint64
	Depth int
}

// Kind implements proc.Message.
func (Data) Kind() string { return "data" }

func (m Data) String() string { return fmt.Sprintf("DATA(%s,#%d,d=%d)", m.Group, m.ID, m.Depth) }

// Heartbeat: a parent to its child, the trees of Groups (those in which
// the receiver is the sender's child) are alive above it.
type Heartbeat struct{ Groups []GUID }

// Kind implements proc.Message.
func (Heartbeat) Kind() string { return "heartbeat" }

func (m Heartbeat) String() string {
	if len(m.Groups) == 1 {
		return fmt.Sprintf("HEARTBEAT(%s)", m.Groups[0])
	}
	return fmt.Sprintf("HEARTBEAT(%d groups)", len(m.Groups))
}

// Prune: the sender is no longer the receiver's child in Group's tree.
type Prune struct{ Group GUID }

// Kind implements proc.Message.
func (Prune) Kind() string { return "prune" }

func (m Prune) String() string { return fmt.Sprintf("PRUNE(%s)", m.Group) }

// scribeTick is the heartbeat timer's tag.
type scribeTick struct{}

// ---- the algorithm ----

func init() {
	register(proc.Algorithm{
		Name:    "scribe",
		Summary: "Scribe: multicast trees on Pastry, rooted at the node closest to the groupId, repaired by rejoining",
		Source:  "Castro, Druschel, Kermarrec & Rowstron 2002; Coulouris et al. §10.5",
		Assumes: proc.Assumptions{Reliable: true, Failures: "crash-stop", Topology: "full", Joins: true},
		New:     func(id proc.ID, _ int) proc.Process { return NewScribe(id, Repairing) },
		Checks:  []string{"scribe-delivery", "overlay-lookup", "dht-get"}, // a Scribe node is a Pastry node, with its lookups and DHT
		Theory: func(n int) map[string]float64 {
			return map[string]float64{"depth_max": math.Ceil(Log16(n)) + 1}
		},
		Notes: map[string]string{
			"depth_max": "⌈log₁₆ N⌉ + 1: a member's JOIN takes at most a Pastry route to the root, its prefix hops and one inside the leaf set",
		},
	})
}

// NewScribe is a Pastry node with Scribe at address id. Its repair
// needs Pastry's failure detector and acknowledged hops (cfg.KeepAlive >
// 0, as in Repairing); without them (FailureFree: no failures) it sends
// no heartbeats either, and a tree whose node fails stays broken.
func NewScribe(id proc.ID, cfg Config) proc.Process { return newPastryNode(id, cfg) }

func (n *node) group(g GUID) *group {
	if n.groups == nil {
		n.groups = map[GUID]*group{}
	}
	s, ok := n.groups[g]
	if !ok {
		s = &group{parent: proc.None}
		n.groups[g] = s
		n.stale = true
	}
	return s
}

// sortedGroups is the groups' ids in order: the order in which a node
// acts on them (a map's order would make runs differ).
func (n *node) sortedGroups() []GUID {
	if n.stale || len(n.keys) != len(n.groups) {
		n.keys = slices.SortedFunc(maps.Keys(n.groups), Cmp) // (afresh: a caller may be iterating the old)
		n.stale = false
	}
	return n.keys
}

// tick starts the heartbeats (a node without keep-alives sends none).
func (n *node) tick(env proc.Env) {
	if !n.ticking && n.repairing() {
		n.ticking = true
		env.SetTimer(ScribeHeartbeat, scribeTick{})
	}
}

// scribeInput handles Scribe's inputs; it reports whether in was one.
func (n *node) scribeInput(env proc.Env, in proc.Input) bool {
	switch in := in.(type) {
	case CreateGroup:
		n.onSubscribe(env, n.id, Subscribe{Group: in.Group, Create: true})
	case JoinGroup:
		n.tick(env)
		g := n.group(in.Group)
		on := g.inTree()
		g.member = true
		if !on {
			n.subscribeOnward(env, in.Group, g)
		}
	case LeaveGroup:
		if g, ok := n.groups[in.Group]; ok && g.member {
			g.member = false
			n.maybePrune(env, in.Group, g)
		}
	case Multicast:
		n.onPublish(env, Publish{Group: in.Group, ID: in.ID})
	default:
		return false
	}
	return true
}

// receiveScribe handles Scribe's messages; it reports whether m was one.
func (n *node) receiveScribe(env proc.Env, from proc.ID, m proc.Message) bool {
	switch m := m.(type) {
	case Subscribe:
		n.ack(env, from, m.Seq)
		n.onSubscribe(env, from, m)
	case Publish:
		n.ack(env, from, m.Seq)
		n.onPublish(env, m)
	case Data:
		n.onData(env, from, m)
	case Heartbeat:
		for _, key := range m.Groups {
			if g, ok := n.groups[key]; ok && g.parent == from {
				g.heard = env.Now()
			} else {
				env.Send(from, Prune{key})
			}
		}
	case Prune:
		if g, ok := n.groups[m.Group]; ok {
			g.children = slices.DeleteFunc(g.children, func(c proc.ID) bool { return c == from })
			n.maybePrune(env, m.Group, g)
		}
	default:
		return false
	}
	return true
}

// onSubscribe: child asks to join the tree here (child is the node
// itself for a CREATE asked here). At the end of the route, this node is
// the root; on the tree already, the JOIN stops here; otherwise this node
// becomes a forwarder and the JOIN goes on.
func (n *node) onSubscribe(env proc.Env, child proc.ID, m Subscribe) {
	next := n.next(m.Group, 0)
	if m.Create {
		if next == n.id {
			n.tick(env)
			n.becomeRoot(env, m.Group, n.group(m.Group))
			return
		}
		n.forward(env, next, m)
		return
	}
	n.tick(env)
	g := n.group(m.Group)
	on := g.inTree()
	if i, found := slices.BinarySearch(g.children, child); !found {
		g.children = slices.Insert(g.children, i, child)
	}
	if next == n.id {
		n.becomeRoot(env, m.Group, g)
		return
	}
	if !on {
		n.subscribeOnward(env, m.Group, g)
	}
}

// becomeRoot: the route toward the groupId ends here. A parent this node
// had (the old root failed, or the route moved) is left.
func (n *node) becomeRoot(env proc.Env, key GUID, g *group) {
	if g.parent != proc.None {
		env.Send(g.parent, Prune{key})
		g.parent = proc.None
	}
	if !g.root {
		g.root = true
		env.Output(GroupRoot{Group: key})
	}
	if ids, ok := n.held[key]; ok {
		delete(n.held, key)
		for _, id := range ids {
			n.disseminate(env, key, g, id, 0)
		}
	}
}

// handOver: this node has learnt of a node that enters its leaf set. For
// each group it roots whose route toward the groupId no longer ends here
// (the newcomer is closer to it), it routes a JOIN on: the newcomer
// becomes the root, this node its child.
func (n *node) handOver(env proc.Env) {
	if n.flaw == scribeNoHandover {
		return
	}
	var moved []GUID
	for _, key := range n.sortedGroups() {
		if g := n.groups[key]; g.root && n.next(key, 0) != n.id {
			moved = append(moved, key)
		}
	}
	for _, key := range moved { // (subscribeOnward may change the groups)
		g := n.groups[key]
		g.root = false
		n.subscribeOnward(env, key, g)
	}
}

// subscribeOnward routes this node's JOIN one hop toward the groupId: the
// next hop is its parent (the root, if the route ends here).
func (n *node) subscribeOnward(env proc.Env, key GUID, g *group) {
	next := n.next(key, 0)
	if next == n.id {
		n.becomeRoot(env, key, g)
		return
	}
	g.root = false
	g.parent, g.heard = next, env.Now()
	n.forward(env, next, Subscribe{Group: key})
}

// MaxHeld bounds the multicasts a node holds for one group it is to be
// the root of, and the groups it holds them for.
const MaxHeld = 1024

// onPublish routes a multicast toward the root; the root sends it down.
func (n *node) onPublish(env proc.Env, m Publish) {
	next := n.next(m.Group, m.Hops)
	if next != n.id {
		m.Hops++
		n.forward(env, next, m)
		return
	}
	g, ok := n.groups[m.Group]
	if !ok || !g.inTree() {
		// The group's root has not handed it over yet: held until then —
		// at most MaxHeld per group, for a group that does not exist at
		// all would be held for ever; past it the multicast is dropped.
		if n.held == nil {
			n.held = map[GUID][]uint64{}
		}
		if len(n.held[m.Group]) < MaxHeld && (len(n.held) < MaxHeld || n.held[m.Group] != nil) {
			n.held[m.Group] = append(n.held[m.Group], m.ID)
		}
		return
	}
	n.becomeRoot(env, m.Group, g)
	n.disseminate(env, m.Group, g, m.ID, 0)
}

// onData: a multicast from the parent is delivered (at a member) and
// passed to the children; from another node it is refused.
func (n *node) onData(env proc.Env, from proc.ID, m Data) {
	g, ok := n.groups[m.Group]
	if !ok || g.parent != from {
		env.Send(from, Prune{m.Group})
		return
	}
	g.heard = env.Now()
	n.disseminate(env, m.Group, g, m.ID, m.Depth)
}

func (n *node) disseminate(env proc.Env, key GUID, g *group, id uint64, depth int) {
	if g.member {
		env.Output(Received{Group: key, ID: id, Depth: depth})
	}
	for _, c := range g.children {
		env.Send(c, Data{Group: key, ID: id, Depth: depth + 1})
		if n.flaw == scribeTwice && len(g.children) > 1 {
			env.Send(c, Data{Group: key, ID: id, Depth: depth + 1})
		}
	}
}

// maybePrune: a node that is neither a member nor the root and has no
// children leaves the tree.
func (n *node) maybePrune(env proc.Env, key GUID, g *group) {
	if g.member || g.root || len(g.children) > 0 {
		return
	}
	if g.parent != proc.None {
		env.Send(g.parent, Prune{key})
	}
	delete(n.groups, key)
	n.stale = true
}

// onTick: heartbeats to the children, one per child node for all its
// groups; a parent not heard from for ScribeSuspect is presumed failed,
// and the JOIN routed again around it.
func (n *node) onTick(env proc.Env) {
	n.beats = n.beats[:0]
	for _, key := range n.sortedGroups() {
		g := n.groups[key]
		g.children = slices.DeleteFunc(g.children, func(c proc.ID) bool { return n.presumedDead(c) })
		for _, c := range g.children {
			n.beats = append(n.beats, beat{c, key})
		}
		if g.parent != proc.None && env.Now()-g.heard > ScribeSuspect && n.flaw != scribeNoRepair {
			if n.repairing() {
				n.failed(env, g.parent)
			}
			g.parent = proc.None
			n.subscribeOnward(env, key, g)
		}
	}
	// By child, each child's groups in order (the sort is stable).
	slices.SortStableFunc(n.beats, func(a, b beat) int { return cmp.Compare(a.child, b.child) })
	for i := 0; i < len(n.beats); {
		j := i
		for j < len(n.beats) && n.beats[j].child == n.beats[i].child {
			j++
		}
		groups := make([]GUID, j-i)
		for k := range groups {
			groups[k] = n.beats[i+k].group
		}
		env.Send(n.beats[i].child, Heartbeat{groups})
		i = j
	}
	env.SetTimer(ScribeHeartbeat, scribeTick{})
}

// resubscribe: a JOIN's hop was not acknowledged; its next node is
// presumed failed (done by the caller), and the JOIN routed again.
func (n *node) resubscribe(env proc.Env, m Subscribe) {
	if m.Create {
		n.onSubscribe(env, n.id, m)
		return
	}
	if g, ok := n.groups[m.Group]; ok && g.parent != proc.None && n.presumedDead(g.parent) {
		g.parent = proc.None
		n.subscribeOnward(env, m.Group, g)
	}
}
