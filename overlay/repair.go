package overlay

import (
	"maps"
	"slices"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Pastry under failures (Rowstron & Druschel 2001 §2.4, "Node departure";
// Coulouris et al. §10.5.1, "Host failure or departure"). Nodes fail
// silently; the others find out and mend their tables:
//
//   - Failure detection. Every KeepAlive period a node pings each node in
//     its leaf set and routing table; one that has not answered (with
//     anything) by the next period is presumed failed. A leaf's answer is
//     its leaf set, taken where it fits (as in MSPastry, Castro et al.
//     2004): leaf sets that missed a node — two joins at once — converge. A hop of a lookup
//     is acknowledged by the next node; a hop not acknowledged within
//     HopTimeout presumes that node failed too, and the lookup is routed
//     again from here, around it (by the routing rule, now without it).
//   - Leaf-set repair. A node that finds leaf D failed asks the live node
//     with the largest index on D's side of its leaf set for that node's
//     leaf set, and takes from it the node that fits in D's place. A side
//     still short at the next period asks again. If l adjacent nodes (half
//     the leaf set, |L|/2) fail at once, a side can lose every entry and
//     there is nobody left to ask: the paper guarantees delivery unless
//     that happens.
//   - Routing-table repair, on discovery. A node that finds R[p][d]
//     failed asks the other nodes of row p for their entry R[p][d] (any
//     of them has the same first p digits, so their R[p][d] fits), and
//     the nodes of row p+1 too, whose net is wider (the paper asks them
//     in turn; here all at once: one round).
//   - Periodic exchange of rows. Every period a node asks a random entry
//     of a random row for that row, and takes what fits: holes fill, and
//     better-known nodes spread.
//   - Graceful leave. A leaving node tells every node in its tables,
//     which treat it at once as failed.
//
// A node keeps the nodes it presumes failed, for a few periods, and does
// not take them back from another's table that still lists them; a
// message from one of them (it came back, with a fresh state, under the
// same address) clears it.

// ---- messages ----

// Ack acknowledges the hop numbered Seq of a Route or Join.
type Ack struct{ Seq uint64 }

// Kind implements proc.Message.
func (Ack) Kind() string { return "ack" }

// Ping is the keep-alive; the answer is Pong.
type Ping struct{}

// Kind implements proc.Message.
func (Ping) Kind() string { return "ping" }

// Pong answers a Ping.
type Pong struct{}

// Kind implements proc.Message.
func (Pong) Kind() string { return "pong" }

// LeafRequest asks a node for its leaf set (answered with an Offer).
type LeafRequest struct{}

// Kind implements proc.Message.
func (LeafRequest) Kind() string { return "leaf-request" }

// EntryRequest asks a node for its routing-table entry R[Row][Col]
// (answered with an Offer).
type EntryRequest struct{ Row, Col int }

// Kind implements proc.Message.
func (EntryRequest) Kind() string { return "entry-request" }

// RowRequest asks a node for row Row of its routing table, the periodic
// exchange (answered with an Offer).
type RowRequest struct{ Row int }

// Kind implements proc.Message.
func (RowRequest) Kind() string { return "row-request" }

// Offer carries nodes for the receiver to take into its tables where
// they fit. Missing: the answer to an Announce, nodes missing from the
// announcer's leaf set; those that enter it are told of the announcer in
// turn (they joined at the same moment, and may not know it).
type Offer struct {
	Nodes   []proc.ID
	Missing bool
}

// Kind implements proc.Message.
func (Offer) Kind() string { return "offer" }

// Leaving: the sender leaves the overlay.
type Leaving struct{}

// Kind implements proc.Message.
func (Leaving) Kind() string { return "leaving" }

// keepAlive and hopTimeout are the timers' tags.
type keepAlive struct{}

type hopTimeout struct{ Seq uint64 }

// ---- the state ----

// failures is a node's failure-handling state.
type failures struct {
	dead     map[proc.ID]time.Duration // presumed failed, since when
	awaiting map[proc.ID]time.Duration // pinged (when), not heard from since
	pending  map[uint64]pending        // hops not yet acknowledged
	seq      uint64
	now      time.Duration // the time of the event being handled
}

// flaw is a deliberate defect, for the tests to show the checkers
// catching it; every real node is sound.
type flaw uint8

const (
	sound             flaw = iota
	keepsDeadEntries       // routing-table repair never empties a dead entry
	noLeafRepair           // a failed leaf is dropped, never replaced
	deliversOnTimeout      // a hop not acknowledged ends the route here
	noReplicas             // a put is stored at its home alone
	scribeTwice            // Scribe sends each multicast to the children twice
	scribeNoRepair         // a Scribe child never rejoins when its parent fails
	picksDescendant        // an ESM node may take a descendant as its parent (and an orphan's subtree is not told it is cut off)
	scribeNoHandover       // a Scribe root keeps its groups when a closer node joins
	joinsBlind             // no leaf-set exchange on joining; a joining contact routes JOINs at once
	switchesBlind          // an ESM candidate adopts a switching node without a climb to the source
	rejoinsBlind           // ESM's rejoin as it was: a candidate adopts an orphan on the paths reported, without a climb; an orphan's subtree is not told it is cut off
	stalePaths             // an ESM node keeps the path its parent gave it on accepting, never the news of alive messages
	switchGivesUp          // ESM's switch as it was: refused, or unanswered within ESMProbe, the node keeps its parent until the next period
	orphansWait            // ESM's patience as it was: an orphan with children waits for a full-rate place as a newcomer does
	keepsPlaces            // ESM without displacement: a host keeps its place whatever a stronger one asking for it could forward
)

// pending is a hop sent and not yet acknowledged: to whom, and what.
type pending struct {
	to    proc.ID
	m     proc.Message // a Route, a Join, a Subscribe or a Publish
	timer proc.TimerID
}

func (n *node) repairing() bool { return n.cfg.KeepAlive > 0 }

func (n *node) startKeepAlive(env proc.Env) {
	if !n.repairing() {
		return
	}
	n.dead, n.awaiting, n.pending = map[proc.ID]time.Duration{}, map[proc.ID]time.Duration{}, map[uint64]pending{}
	// The first round at a random moment of the period: nodes do not all
	// ping at once.
	env.SetTimer(time.Duration(env.Rand().Int64N(int64(n.cfg.KeepAlive)))+1, keepAlive{})
}

// heard: a message from id shows it alive.
func (n *node) heard(id proc.ID) {
	if n.repairing() {
		delete(n.awaiting, id)
		delete(n.dead, id)
	}
}

// forward sends a hop of a Route or Join to next; a repairing node waits
// for its acknowledgement.
func (n *node) forward(env proc.Env, next proc.ID, m proc.Message) {
	if !n.repairing() {
		env.Send(next, m)
		return
	}
	n.seq++
	switch x := m.(type) {
	case Route:
		x.Seq = n.seq
		m = x
	case Join:
		x.Seq = n.seq
		m = x
	case Subscribe:
		x.Seq = n.seq
		m = x
	case Publish:
		x.Seq = n.seq
		m = x
	}
	n.pending[n.seq] = pending{next, m, env.SetTimer(n.cfg.HopTimeout, hopTimeout{n.seq})}
	env.Send(next, m)
}

func (n *node) ack(env proc.Env, from proc.ID, seq uint64) {
	if seq != 0 {
		env.Send(from, Ack{seq})
	}
}

func (n *node) Timeout(env proc.Env, tag any) {
	n.now = env.Now()
	switch t := tag.(type) {
	case keepAlive:
		n.keepAlive(env)
	case scribeTick:
		n.onTick(env)
	case fetchTimeout:
		n.fetchTimedOut(env, t.Key)
	case probeTimeout, seekTimeout:
		n.timeoutProximity(env, tag)
	case hopTimeout:
		p, ok := n.pending[t.Seq]
		if !ok {
			return
		}
		delete(n.pending, t.Seq)
		// The next node did not acknowledge: presume it failed, and route
		// the message again from here, around it.
		n.failed(env, p.to)
		switch m := p.m.(type) {
		case Route:
			m.Hops--
			if n.flaw == deliversOnTimeout {
				n.deliver(env, m)
				return
			}
			n.route(env, m)
		case Join:
			m.Hops--
			n.onJoin(env, m)
		case Subscribe:
			n.resubscribe(env, m)
		case Publish:
			m.Hops--
			n.onPublish(env, m)
		}
	}
}

// keepAlive is a period of the failure detector: the nodes pinged last
// period that have not answered are presumed failed; everyone in the
// tables is pinged again; a leaf-set side still short asks again; and a
// row is exchanged.
func (n *node) keepAlive(env proc.Env) {
	for _, id := range slices.Sorted(maps.Keys(n.awaiting)) {
		if n.silent(env, id) {
			n.failed(env, id)
		}
	}
	maps.DeleteFunc(n.dead, func(id proc.ID, _ time.Duration) bool { return !n.presumedDead(id) })
	for _, id := range n.known() {
		n.ping(env, id)
	}
	for _, side := range [2][]proc.ID{n.leaves.left, n.leaves.right} {
		if len(side) > 0 && len(side) < n.leaves.l && n.flaw != noLeafRepair {
			env.Send(side[len(side)-1], LeafRequest{})
		}
	}
	var rows []int
	for p := range Digits {
		if len(n.rt.row(nil, p)) > 0 {
			rows = append(rows, p)
		}
	}
	if len(rows) > 0 {
		p := rows[env.Rand().IntN(len(rows))]
		row := n.rt.row(nil, p)
		env.Send(row[env.Rand().IntN(len(row))], RowRequest{Row: p})
	}
	n.rereplicate(env)
	env.SetTimer(n.cfg.KeepAlive, keepAlive{})
}

// presumedDead reports whether id was presumed failed less than
// ForgetDead periods ago. After that it may be learnt again (and is
// pinged again): a failed node comes back under its address, and the
// stale tables that could bring it back have been purged by then.
func (n *node) presumedDead(id proc.ID) bool {
	if len(n.dead) == 0 {
		return false // (most nodes, most of the time: no lookup)
	}
	at, ok := n.dead[id]
	return ok && n.now-at < ForgetDead*n.cfg.KeepAlive
}

// ForgetDead is how many keep-alive periods a node remembers that
// another failed.
const ForgetDead = 3

// ping sends id a keep-alive: a leaf is asked for its leaf set (the
// answer carries it), another node just pinged.
func (n *node) ping(env proc.Env, id proc.ID) {
	if _, ok := n.awaiting[id]; !ok {
		n.awaiting[id] = env.Now()
	}
	if n.leaves.has(id) && n.flaw != noLeafRepair {
		env.Send(id, LeafRequest{})
	} else {
		env.Send(id, Ping{})
	}
}

// silent reports whether id was pinged more than a hop's timeout ago and
// has not answered.
func (n *node) silent(env proc.Env, id proc.ID) bool {
	at, ok := n.awaiting[id]
	return ok && env.Now()-at > n.cfg.HopTimeout
}

// silentOrDead reports whether a repairing node has pinged id in vain.
func (n *node) silentOrDead(env proc.Env, id proc.ID) bool {
	return n.repairing() && (n.silent(env, id) || n.presumedDead(id))
}

// vouched is the nodes of ids this node may offer another: not those it
// has pinged in vain — a failed node must not spread from stale tables.
func (n *node) vouched(env proc.Env, ids []proc.ID) []proc.ID {
	if !n.repairing() {
		return ids
	}
	return slices.DeleteFunc(slices.Clone(ids), func(x proc.ID) bool { return n.silent(env, x) })
}

// failed: node id is presumed failed (or has left). It leaves the
// tables, and what it held is repaired: its place in the leaf set from
// the farthest live leaf on its side, its routing-table entry from the
// other entries of its row and of the next.
func (n *node) failed(env proc.Env, id proc.ID) {
	if id == n.id || n.presumedDead(id) {
		return
	}
	n.dead[id] = n.now
	delete(n.awaiting, id)
	n.forgetNear(id)
	left, right := n.leaves.remove(id)
	if n.flaw == noLeafRepair {
		left, right = false, false
	}
	if left && len(n.leaves.left) > 0 {
		env.Send(n.leaves.left[len(n.leaves.left)-1], LeafRequest{})
	}
	if right && len(n.leaves.right) > 0 {
		env.Send(n.leaves.right[len(n.leaves.right)-1], LeafRequest{})
	}
	if n.flaw == keepsDeadEntries {
		return
	}
	p, d, held := n.rt.forget(n, id)
	if !held {
		return
	}
	for _, q := range []int{p, p + 1} {
		for _, x := range n.rt.row(nil, q) {
			env.Send(x, EntryRequest{Row: p, Col: d})
		}
	}
}

// receiveRepair handles the failure-handling messages; it reports
// whether m was one.
func (n *node) receiveRepair(env proc.Env, from proc.ID, m proc.Message) bool {
	switch m := m.(type) {
	case Ack:
		if p, ok := n.pending[m.Seq]; ok {
			env.CancelTimer(p.timer)
			delete(n.pending, m.Seq)
		}
	case Ping:
		env.Send(from, Pong{})
	case Pong:
	case LeafRequest:
		env.Send(from, Offer{Nodes: n.vouched(env, slices.Concat(n.leaves.left, n.leaves.right))})
	case EntryRequest:
		if x := n.rt.entry(m.Row, m.Col); x != proc.None && x != from && !n.silent(env, x) {
			env.Send(from, Offer{Nodes: []proc.ID{x}})
		}
	case RowRequest:
		// Answer with the row, and take the asker's offer of itself.
		n.learn(env, from)
		if row := n.vouched(env, n.rt.row(nil, m.Row)); len(row) > 0 {
			env.Send(from, Offer{Nodes: row})
		}
	case Offer:
		// What another offers is taken, and pinged at once: it may have
		// failed since the other last heard from it.
		for _, id := range m.Nodes {
			leaf, table := n.learnWhere(env, id)
			if leaf && m.Missing && n.joined {
				n.announce(env, id)
			}
			if (leaf || table) && n.repairing() {
				n.ping(env, id)
			}
		}
	case Leaving:
		n.failed(env, from)
	default:
		return false
	}
	return true
}

// leave: a node leaving gracefully tells everyone in its tables.
func (n *node) leave(env proc.Env) {
	for _, id := range n.known() {
		env.Send(id, Leaving{})
	}
}

// ---- the tables, for the checker ----

// ShowTables asks the node to output its tables (Tables): the
// overlay-tables checker compares them with the live nodes.
type ShowTables struct{}

// Kind implements proc.Input.
func (ShowTables) Kind() string { return "show-tables" }

// Tables is a node's leaf set (Left and Right, nearest first) and its
// routing table's entries.
type Tables struct {
	Leaves int       `json:"leaves"` // l
	Left   []proc.ID `json:"left"`
	Right  []proc.ID `json:"right"`
	Table  []Entry   `json:"table,omitempty"`
}

// Kind implements proc.Output.
func (Tables) Kind() string { return "tables" }

// Entry is R[Row][Col] = Node.
type Entry struct {
	Row  int     `json:"row"`
	Col  int     `json:"col"`
	Node proc.ID `json:"node"`
}

func (n *node) showTables(env proc.Env) {
	t := Tables{Leaves: n.leaves.l, Left: slices.Clone(n.leaves.left), Right: slices.Clone(n.leaves.right)}
	for p := range Digits {
		for d := range Radix {
			if x := n.rt.entry(p, d); x != proc.None {
				t.Table = append(t.Table, Entry{Row: p, Col: d, Node: x})
			}
		}
	}
	env.Output(t)
}
