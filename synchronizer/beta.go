package synchronizer

import "github.com/cohort-go/cohort/proc"

// Beta is Awerbuch's synchronizer β (Awerbuch 1985; Lynch 1996
// ch. 16) around a synchronous algorithm whose messages are of type M,
// on a BFS spanning tree rooted at p0. As pseudocode, at process i in
// round r:
//
//	send the round's messages, each tagged r; acknowledge each one received
//	when i is safe and every child has sent SAFE(r):
//	    the root:  send PULSE(r+1) to its children and begin round r+1
//	    others:    send SAFE(r) to the parent
//	on PULSE(r+1): send it to the children and begin round r+1
//
// Why it is safe: SAFE(r) reaches the root only when every process is
// safe, so no message of round r is in flight when any process hears
// PULSE(r+1).
//
// The tree: each process first learns the whole graph (see the package
// doc) and computes the same BFS tree from p0; it begins round 1 then.
//
// Assumptions: reliable channels, no failures, a connected graph; no bound
// on delays, no FIFO. Cost per round: 2(N−1) messages (SAFE up each tree
// edge, PULSE down) besides one ACK per message of the algorithm;
// 2 + 2·depth delays (message and ACK, the convergecast, the broadcast).
// Once: about 2|E|·N TOPO messages to learn the graph.
type Beta[M proc.Message] struct {
	core[M]
	learn    learner
	tree     *layout     // nil until the graph is known
	safeFrom map[int]int // by round: the children whose subtrees are safe
	reported bool        // SAFE(round) has gone to the parent
}

// NewBeta wraps app in synchronizer β.
func NewBeta[M proc.Message](app proc.Rounds) *Beta[M] {
	return &Beta[M]{core: core[M]{app: app}, safeFrom: map[int]int{}}
}

func (b *Beta[M]) Start(env proc.Env) {
	if b.learn.start(env) {
		b.initialized(env)
	}
}

func (b *Beta[M]) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m := m.(type) {
	case Topo:
		if b.learn.onTopo(env, from, m) {
			b.initialized(env)
		}
	case Payload[M]:
		b.onPayload(env, from, m)
	case Ack:
		if b.onAck(m) {
			b.maybeSafe(env)
		}
	case Safe:
		b.safeFrom[m.Round]++
		b.maybeSafe(env)
	case Pulse:
		b.onPulse(env, m)
	}
}

func (b *Beta[M]) Timeout(proc.Env, any)      {}
func (b *Beta[M]) Input(proc.Env, proc.Input) {}

// initialized: the graph is known; compute the tree and begin round 1.
func (b *Beta[M]) initialized(env proc.Env) {
	b.tree = partition(b.learn.adj, 0)
	b.learn.adj = nil
	b.tree.output(env)
	b.beginRound(env, 1)
}

func (b *Beta[M]) beginRound(env proc.Env, r int) {
	b.reported = false
	if b.begin(env, r) {
		b.maybeSafe(env)
	}
}

// maybeSafe: once the process and its whole subtree are safe, SAFE goes
// up — or, at the root, the next round begins.
func (b *Beta[M]) maybeSafe(env proc.Env) {
	if b.tree == nil || !b.safe || b.done || b.reported {
		return
	}
	self := env.Self()
	if b.safeFrom[b.round] < len(b.tree.children[self]) {
		return
	}
	delete(b.safeFrom, b.round)
	b.reported = true
	if p := b.tree.parent[self]; p != proc.None {
		env.Send(p, Safe{Round: b.round})
		return
	}
	b.onPulse(env, Pulse{Round: b.round + 1})
}

// onPulse passes the pulse down the tree and begins its round.
func (b *Beta[M]) onPulse(env proc.Env, m Pulse) {
	if b.tree == nil || m.Round != b.round+1 || b.done {
		return
	}
	for _, c := range b.tree.children[env.Self()] {
		env.Send(c, m)
	}
	b.beginRound(env, m.Round)
}
