package overlay

import (
	"cmp"
	"slices"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Pastry's locality (Rowstron & Druschel 2001 §2.5; Castro, Druschel, Hu
// & Rowstron, "Exploiting network proximity in peer-to-peer overlay
// networks", 2002): with Config.Proximity a node measures the distance to
// the nodes it hears of — the round trip of a probe of its own, RTTProbe,
// answered at once — and uses it in three places.
//
//   - Neighbourhood set M: the Neighbourhood nodes nearest to this one
//     among those measured. It is not used for routing; a joining node
//     starts from it.
//   - Proximity neighbour selection: of the candidates for a routing-table
//     entry R[p][d] (every node whose nodeId has this node's first p
//     digits and d next fits), the entry holds the nearest measured. A
//     node learnt of — in a join's states, an announcement, a repair's
//     offer, the periodic exchange of rows — is probed; when its answer
//     comes it replaces the entry if it is nearer. (An entry not yet
//     measured counts as farthest: every candidate is compared with the
//     holder when its own answer comes, so the nearest wins.)
//   - The join. X first finds a node near it: it asks its contact for the
//     contact's neighbourhood set, probes those nodes and the contact, and
//     asks the nearest for its set in turn while that brings one nearer
//     (at most NearbyRounds rounds; Castro et al. 2002's nearby-node
//     discovery, here within the neighbourhood sets). That node A routes
//     the JOIN; X's neighbourhood set comes from the sets it measured. Row
//     i of X's table comes from the i-th node of the route, as before: A
//     is near X, and the i-th node is near A in proportion to its row, so
//     the entries are near X too. Once joined, X refines its table (the
//     join's second stage): it asks each node of each row p of its table
//     for that node's row p, and probes what comes.
//
// A probe not answered within ProbeTimeout leaves its node unmeasured
// (a join in its first stage goes on without it). Leaf sets are not
// chosen by proximity: they hold the numerically nearest nodes, and the
// routes' correctness rests on them alone. Cost: a probe and its answer
// per node heard of; the join's first stage a few rounds of
// Neighbourhood probes; its second stage one request per routing-table
// entry and their probes.
type proximity struct {
	rtt     map[proc.ID]time.Duration // measured round trips
	probing map[proc.ID]bool          // probes sent, not yet answered
	near    []proc.ID                 // the neighbourhood set M, nearest first
	// The join's first stage: the node asked for its neighbourhood set,
	// the candidates probed and not yet answered, the round.
	seeking    bool
	nearAsked  proc.ID
	unmeasured int
	round      int
	seekTag    int
}

// Neighbourhood is M, the size of the neighbourhood set (Rowstron &
// Druschel: |M| = 2^b with b = 4 is typical).
const Neighbourhood = 16

// NearbyRounds bounds the rounds of a joining node's search for a node
// near it.
const NearbyRounds = 4

// ProbeTimeout is how long a probe's node has to answer.
const ProbeTimeout = time.Second

// RTTProbe asks the receiver to echo Sent, the sender's clock when it
// sent the probe: the sender's round-trip measurement.
type RTTProbe struct{ Sent time.Duration }

// Kind implements proc.Message.
func (RTTProbe) Kind() string { return "rtt-probe" }

// RTTEcho answers an RTTProbe with its Sent.
type RTTEcho struct{ Sent time.Duration }

// Kind implements proc.Message.
func (RTTEcho) Kind() string { return "rtt-echo" }

// NeighbourRequest asks a node for its neighbourhood set (a joining
// node's search for a node near it).
type NeighbourRequest struct{}

// Kind implements proc.Message.
func (NeighbourRequest) Kind() string { return "neighbour-request" }

// Neighbours answers a NeighbourRequest: the sender's neighbourhood set.
type Neighbours struct{ Nodes []proc.ID }

// Kind implements proc.Message.
func (Neighbours) Kind() string { return "neighbours" }

// seekTimeout ends a round of the join's first stage whose probes have
// not all been answered.
type seekTimeout struct{ Tag int }

// probeTimeout gives up on a probe's answer.
type probeTimeout struct{ ID proc.ID }

// measure probes id unless it is measured or being probed.
func (n *node) measure(env proc.Env, id proc.ID) {
	if !n.cfg.Proximity || id == n.id || id == proc.None {
		return
	}
	if n.proximity == nil {
		n.proximity = &proximity{}
	}
	if _, ok := n.rtt[id]; ok || n.probing[id] {
		return
	}
	if n.rtt == nil {
		n.rtt, n.probing = map[proc.ID]time.Duration{}, map[proc.ID]bool{}
	}
	n.probing[id] = true
	env.Send(id, RTTProbe{Sent: env.Now()})
	env.SetTimer(ProbeTimeout, probeTimeout{id})
}

// distance is the measured round trip to id; unmeasured nodes are
// farthest.
func (n *node) distance(id proc.ID) time.Duration {
	if n.proximity == nil {
		return 1<<62 - 1
	}
	if d, ok := n.rtt[id]; ok {
		return d
	}
	return 1<<62 - 1
}

// nearer reports whether a is measured nearer than b (the routing
// table's choice between two candidates for one entry).
func (n *node) nearer(a, b proc.ID) bool {
	return n.cfg.Proximity && n.distance(a) < n.distance(b)
}

// measured: id's answer has come. It enters the neighbourhood set where
// it fits and is offered to the tables again, now with its distance.
func (n *node) measured(env proc.Env, id proc.ID, rtt time.Duration) {
	delete(n.probing, id)
	n.rtt[id] = rtt
	if !n.presumedDead(id) {
		i, _ := slices.BinarySearchFunc(n.near, rtt, func(x proc.ID, d time.Duration) int { return cmp.Compare(n.rtt[x], d) })
		if !slices.Contains(n.near, id) && i < Neighbourhood {
			n.near = slices.Insert(n.near, i, id)
			n.near = n.near[:min(len(n.near), Neighbourhood)]
		}
	}
	if n.seeking {
		n.unmeasured--
		if n.unmeasured <= 0 {
			n.seekNext(env)
		}
		return
	}
	n.learn(env, id)
}

// receiveProximity handles the proximity messages; it reports whether m
// was one.
func (n *node) receiveProximity(env proc.Env, from proc.ID, m proc.Message) bool {
	switch m := m.(type) {
	case RTTProbe:
		env.Send(from, RTTEcho(m))
		return true
	case RTTEcho, NeighbourRequest, Neighbours:
		if n.proximity == nil {
			n.proximity = &proximity{} // (a node without proximity has measured nothing: its set is empty)
		}
	}
	switch m := m.(type) {
	case RTTEcho:
		if n.probing[from] {
			n.measured(env, from, env.Now()-m.Sent)
		}
	case NeighbourRequest:
		env.Send(from, Neighbours{Nodes: slices.Clone(n.near)})
	case Neighbours:
		if !n.seeking || from != n.nearAsked {
			return true
		}
		n.round++
		n.unmeasured = 0
		for _, id := range append([]proc.ID{from}, m.Nodes...) {
			if id == n.id {
				continue
			}
			if _, ok := n.rtt[id]; !ok && !n.probing[id] {
				n.unmeasured++
				n.measure(env, id)
			}
		}
		if n.unmeasured == 0 {
			n.seekNext(env)
			return true
		}
		n.seekTag++
		env.SetTimer(ProbeTimeout, seekTimeout{n.seekTag})
	default:
		return false
	}
	return true
}

// timeoutProximity handles the proximity timers; it reports whether tag
// was one.
func (n *node) timeoutProximity(env proc.Env, tag any) bool {
	if n.proximity == nil {
		_, probe := tag.(probeTimeout)
		_, seek := tag.(seekTimeout)
		return probe || seek
	}
	switch t := tag.(type) {
	case probeTimeout:
		delete(n.probing, t.ID)
	case seekTimeout:
		if n.seeking && t.Tag == n.seekTag {
			n.seekNext(env)
		}
	default:
		return false
	}
	return true
}

// seek begins the join's first stage: contact is asked for its
// neighbourhood set.
func (n *node) seek(env proc.Env, contact proc.ID) {
	if n.proximity == nil {
		n.proximity = &proximity{}
	}
	n.seeking, n.nearAsked, n.round = true, contact, 0
	env.Send(contact, NeighbourRequest{})
}

// seekNext ends a round of the first stage: the nearest node measured, if
// nearer than the one last asked, is asked in turn; otherwise (or after
// NearbyRounds rounds) the nearest routes the JOIN.
func (n *node) seekNext(env proc.Env) {
	n.unmeasured = 0
	n.seekTag++
	best := n.nearAsked
	if len(n.near) > 0 && n.distance(n.near[0]) < n.distance(best) {
		best = n.near[0]
	}
	if best != n.nearAsked && n.round < NearbyRounds {
		n.nearAsked = best
		env.Send(best, NeighbourRequest{})
		return
	}
	n.seeking = false
	env.Send(best, Join{X: n.id})
}

// refine is the join's second stage: every node of row p of the table is
// asked for its row p; what comes is probed, and kept where nearer.
func (n *node) refine(env proc.Env) {
	if !n.cfg.Proximity {
		return
	}
	for p := range Digits {
		for _, id := range n.rt.row(nil, p) {
			env.Send(id, RowRequest{Row: p})
		}
	}
}

// forgetNear drops a failed node from the neighbourhood set.
func (n *node) forgetNear(id proc.ID) {
	if n.proximity == nil {
		return
	}
	if i := slices.Index(n.near, id); i >= 0 {
		n.near = slices.Delete(n.near, i, i+1)
	}
}
