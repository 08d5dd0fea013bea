package synchronizer

import (
	"strconv"

	"github.com/cohort-go/cohort/proc"
)

// Gamma is Awerbuch's synchronizer γ (Awerbuch 1985; Lynch 1996
// ch. 16) around a synchronous algorithm whose messages are of type M:
// β inside clusters, α between them. The graph is partitioned into
// clusters, each with a BFS tree rooted at its leader, and one preferred
// edge joins each pair of neighbouring clusters (see partition). As
// pseudocode, at process i in round r:
//
//	send the round's messages, each tagged r; acknowledge each one received
//	when i is safe and every child has sent SAFE(r):         (β: convergecast)
//	    the leader: the cluster is safe — CLUSTER-SAFE(r) to itself
//	    others:     SAFE(r) to the parent
//	on CLUSTER-SAFE(r) from the parent (or as the leader):   (β: broadcast)
//	    send it to the children and over each preferred edge
//	when i knows its cluster safe, has CLUSTER-SAFE(r) from the far end of
//	each of its preferred edges, and READY(r) from every child:
//	    the leader: PULSE(r+1) to its children, begin round r+1
//	    others:     READY(r) to the parent                   (α between clusters)
//	on PULSE(r+1): send it to the children and begin round r+1
//
// Why it is safe: a leader pulses only when its cluster and every
// neighbouring cluster are safe, so no message of round r is in flight to
// any of its processes (a process's neighbours are all in its cluster or
// a neighbouring one).
//
// Assumptions: reliable channels, no failures, a connected graph; no bound
// on delays, no FIFO. Cost per round, with c clusters, p preferred edges
// and cluster trees of height ≤ h: 4(N − c) + 2p messages (SAFE, CLUSTER-
// SAFE, READY and PULSE on every tree edge, CLUSTER-SAFE both ways on each
// preferred edge) — p ≤ k·N, so O(k·N) — besides one ACK per message of
// the algorithm; at most 3 + 4h delays, h ≤ log_k N. Once: about 2|E|·N
// TOPO messages to learn the graph.
type Gamma[M proc.Message] struct {
	core[M]
	k     int
	learn learner
	lay   *layout // nil until the graph is known

	safeFrom  map[int]int  // by round: children whose subtrees are safe
	clusterOK map[int]bool // by round: the own cluster is known safe
	farSafe   map[int]int  // by round: preferred neighbours whose clusters are safe
	readyFrom map[int]int  // by round: children whose subtrees are ready
	reported  bool         // SAFE(round) has gone up
	readied   bool         // READY(round) has gone up (or the pulse out)
}

// ClusterSafe says: the sender's cluster is safe for round Round. It goes
// down the cluster tree, then across the preferred edges.
type ClusterSafe struct {
	Round int `json:"round"`
}

func (ClusterSafe) Kind() string     { return "cluster-safe" }
func (c ClusterSafe) String() string { return "CLUSTER-SAFE(r" + strconv.Itoa(c.Round) + ")" }

// Ready says: the sender's subtree knows every cluster next to it safe
// for round Round.
type Ready struct {
	Round int `json:"round"`
}

func (Ready) Kind() string     { return "ready" }
func (r Ready) String() string { return "READY(r" + strconv.Itoa(r.Round) + ")" }

// DefaultK is γ's partition parameter when none is given.
const DefaultK = 2

// NewGamma wraps app in synchronizer γ with partition parameter k ≥ 2
// (smaller: DefaultK).
func NewGamma[M proc.Message](app proc.Rounds, k int) *Gamma[M] {
	if k < 2 {
		k = DefaultK
	}
	return &Gamma[M]{core: core[M]{app: app}, k: k,
		safeFrom: map[int]int{}, clusterOK: map[int]bool{}, farSafe: map[int]int{}, readyFrom: map[int]int{}}
}

func (g *Gamma[M]) Start(env proc.Env) {
	if g.learn.start(env) {
		g.initialized(env)
	}
}

func (g *Gamma[M]) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m := m.(type) {
	case Topo:
		if g.learn.onTopo(env, from, m) {
			g.initialized(env)
		}
	case Payload[M]:
		g.onPayload(env, from, m)
	case Ack:
		if g.onAck(m) {
			g.maybeSafe(env)
		}
	case Safe:
		g.safeFrom[m.Round]++
		g.maybeSafe(env)
	case ClusterSafe:
		g.onClusterSafe(env, from, m)
	case Ready:
		g.readyFrom[m.Round]++
		g.maybeReady(env)
	case Pulse:
		g.onPulse(env, m)
	}
}

func (g *Gamma[M]) Timeout(proc.Env, any)      {}
func (g *Gamma[M]) Input(proc.Env, proc.Input) {}

// initialized: the graph is known; compute the partition and begin round 1.
func (g *Gamma[M]) initialized(env proc.Env) {
	g.lay = partition(g.learn.adj, g.k)
	g.learn.adj = nil
	g.lay.output(env)
	g.beginRound(env, 1)
}

func (g *Gamma[M]) beginRound(env proc.Env, r int) {
	g.reported, g.readied = false, false
	if g.begin(env, r) {
		g.maybeSafe(env)
	}
	g.maybeReady(env) // CLUSTER-SAFE(r) from next door may be here already
}

// maybeSafe: the convergecast of SAFE in the cluster tree.
func (g *Gamma[M]) maybeSafe(env proc.Env) {
	if g.lay == nil || !g.safe || g.done || g.reported {
		return
	}
	self := env.Self()
	if g.safeFrom[g.round] < len(g.lay.children[self]) {
		return
	}
	delete(g.safeFrom, g.round)
	g.reported = true
	if p := g.lay.parent[self]; p != proc.None {
		env.Send(p, Safe{Round: g.round})
		return
	}
	g.clusterSafe(env, g.round)
}

// onClusterSafe: from the parent, the own cluster is safe; from the far
// end of a preferred edge, that cluster is.
func (g *Gamma[M]) onClusterSafe(env proc.Env, from proc.ID, m ClusterSafe) {
	if g.lay != nil && from == g.lay.parent[env.Self()] {
		g.clusterSafe(env, m.Round)
		return
	}
	g.farSafe[m.Round]++
	g.maybeReady(env)
}

// clusterSafe passes the news down the tree and across the preferred edges.
func (g *Gamma[M]) clusterSafe(env proc.Env, r int) {
	self := env.Self()
	g.clusterOK[r] = true
	for _, c := range g.lay.children[self] {
		env.Send(c, ClusterSafe{Round: r})
	}
	for _, q := range g.lay.preferred[self] {
		env.Send(q, ClusterSafe{Round: r})
	}
	g.maybeReady(env)
}

// maybeReady: the convergecast of READY; at the leader, the pulse.
func (g *Gamma[M]) maybeReady(env proc.Env) {
	if g.lay == nil || g.done || g.readied {
		return
	}
	self, r := env.Self(), g.round
	if !g.clusterOK[r] || g.farSafe[r] < len(g.lay.preferred[self]) || g.readyFrom[r] < len(g.lay.children[self]) {
		return
	}
	delete(g.clusterOK, r)
	delete(g.farSafe, r)
	delete(g.readyFrom, r)
	g.readied = true
	if p := g.lay.parent[self]; p != proc.None {
		env.Send(p, Ready{Round: r})
		return
	}
	g.onPulse(env, Pulse{Round: r + 1})
}

// onPulse passes the pulse down the cluster tree and begins its round.
func (g *Gamma[M]) onPulse(env proc.Env, m Pulse) {
	if g.lay == nil || m.Round != g.round+1 || g.done {
		return
	}
	for _, c := range g.lay.children[env.Self()] {
		env.Send(c, m)
	}
	g.beginRound(env, m.Round)
}
