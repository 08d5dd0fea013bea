package election

import (
	"strconv"

	"github.com/cohort-go/cohort/proc"
)

// Echo (Tanenbaum & van Steen §6.5, elections in wireless environments: the
// tree election of mobile ad hoc networks): the source floods an ELECTION
// message and builds a spanning tree as it goes; the best node is collected
// back up the tree in the acknowledgements (the echo) and announced by the
// source.
//
//	Source (gets Elect):  send ELECTION to every neighbour
//	On first ELECTION:    parent := sender; send ELECTION to every other
//	                      neighbour (a leaf has none and acks at once)
//	On ELECTION again:    answer at once with an ack that carries nothing
//	On ack:               once every neighbour sent to has answered, send
//	                      ACK(best) to the parent, best being the best
//	                      (capacity, id) of oneself and of the subtrees
//	                      reported; the source instead announces best
//	COORDINATOR(best):    sent down the tree from the source
//
// The empty ack is not sent as a message of its own: a process that gets
// ELECTION again has always sent ELECTION to that neighbour itself (it did
// so to every neighbour but its parent when it joined, and its parent sends
// it ELECTION only once), so the two ELECTIONs cross on the edge and each
// end takes the other's as its empty ack. That saves the textbook's two
// empty acks on every edge off the tree.
//
// Capacity is what the election maximises; ties are broken by id. A real
// deployment would use battery level, bandwidth or uptime; Cohort derives
// it from the id (capacity = id), so the best node is the largest id and
// requirement E1 holds as Coulouris et al. state it.
//
// Several sources may start elections at once, or one after another. Each
// election is named by (seq, source), where seq is one more than the
// largest seq the source has seen; a process takes part in the largest
// election it has heard of, drops its state for a smaller one when a larger
// one reaches it, and ignores the messages of smaller ones. The largest
// election floods the whole graph, so it completes and the others die out
// (a process may output Elected for a smaller election that finished before
// the larger one reached it; both name the same best node, since each
// visits every process).
//
// Assumptions: reliable channels, no failures, a connected graph; FIFO is
// not needed. A crash during an election blocks its echo (the textbook's
// MANET version uses timeouts for that: not modelled here).
//
// Cost of one election: ELECTION crosses every tree edge once and every
// other edge twice, 2|E| − (N−1); one ACK per tree edge, N−1; one
// COORDINATOR per tree edge, N−1: 2|E| + N − 1 messages in all. Time: twice
// the tree's depth for the echo, plus its depth for the announcement.
type echo struct {
	cur     echoRun          // the election taken part in; zero before any
	parent  proc.ID          // the sender of the first ELECTION; None at the source
	waiting map[proc.ID]bool // neighbours sent ELECTION that have not answered
	kids    []proc.ID        // neighbours that acked with their subtree
	best    echoBest         // the best of oneself and the subtrees reported
	seq     uint64           // the largest seq seen
	leader  proc.ID          // the leader output last; None before
}

// echoRun names an election: the larger (Seq, Source) wins.
type echoRun struct {
	Seq    uint64  `json:"seq"`
	Source proc.ID `json:"source"`
}

func (r echoRun) less(o echoRun) bool {
	return r.Seq < o.Seq || (r.Seq == o.Seq && r.Source < o.Source)
}

func (r echoRun) String() string {
	return strconv.FormatUint(r.Seq, 10) + "/" + r.Source.String()
}

// echoBest is a candidate: its capacity, then its id, decide.
type echoBest struct {
	Capacity int64   `json:"capacity"`
	ID       proc.ID `json:"id"`
}

func (b echoBest) better(o echoBest) bool {
	return b.Capacity > o.Capacity || (b.Capacity == o.Capacity && b.ID > o.ID)
}

func (b echoBest) String() string {
	return b.ID.String() + "@" + strconv.FormatInt(b.Capacity, 10)
}

// capacity is the capacity of process id: its id (see the type's comment).
func capacity(id proc.ID) int64 { return int64(id) }

// echoElection is the flooded ELECTION message.
type echoElection struct {
	Run echoRun `json:"run"`
}

// echoAck reports the best node of the sender's subtree to its parent.
type echoAck struct {
	Run  echoRun  `json:"run"`
	Best echoBest `json:"best"`
}

// echoCoordinator announces the best node down the tree.
type echoCoordinator struct {
	Run  echoRun  `json:"run"`
	Best echoBest `json:"best"`
}

func (echoElection) Kind() string     { return "election" }
func (m echoElection) String() string { return "ELECTION(" + m.Run.String() + ")" }
func (echoAck) Kind() string          { return "ack" }
func (m echoAck) String() string      { return "ACK(" + m.Run.String() + ", " + m.Best.String() + ")" }
func (echoCoordinator) Kind() string  { return "coordinator" }
func (m echoCoordinator) String() string {
	return "COORDINATOR(" + m.Run.String() + ", " + m.Best.String() + ")"
}

func newEcho(proc.ID, int) proc.Process { return &echo{parent: proc.None, leader: proc.None} }

func init() {
	register(proc.Algorithm{
		Name:    "echo",
		Summary: "the source floods ELECTION building a tree; acks carry the best capacity up; the source announces it (2|E| + N − 1 messages)",
		Source:  "Tanenbaum & van Steen §6.5",
		Assumes: proc.Assumptions{Reliable: true, Topology: "graph"},
		New:     newEcho,
		Messages: []proc.Message{
			echoElection{}, echoAck{}, echoCoordinator{},
		},
		Scenario: "nodes: 9\ntopology: grid\ninputs:\n  - at 0ms node 0 elect\n",
	})
}

func (e *echo) Start(proc.Env)        {}
func (e *echo) Timeout(proc.Env, any) {}

func (e *echo) Input(env proc.Env, in proc.Input) {
	if _, ok := in.(Elect); ok {
		e.elect(env)
	}
}

func (e *echo) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m := m.(type) {
	case echoElection:
		e.onElection(env, from, m)
	case echoAck:
		e.onAck(env, from, m)
	case echoCoordinator:
		e.onCoordinator(env, m)
	}
}

// elect starts a new election with this process as its source.
func (e *echo) elect(env proc.Env) {
	e.seq++
	e.join(env, echoRun{Seq: e.seq, Source: env.Self()}, proc.None)
}

// join takes part in election r, reached through parent (None at the
// source): ELECTION to every other neighbour, then wait for their answers.
func (e *echo) join(env proc.Env, r echoRun, parent proc.ID) {
	e.cur = r
	e.seq = max(e.seq, r.Seq)
	e.parent = parent
	e.kids = nil
	e.best = echoBest{Capacity: capacity(env.Self()), ID: env.Self()}
	e.waiting = map[proc.ID]bool{}
	for _, p := range env.Neighbors() {
		if p != parent && p != env.Self() {
			e.waiting[p] = true
			env.Send(p, echoElection{Run: r})
		}
	}
	e.maybeEcho(env)
}

// onElection joins a larger election; a second ELECTION of the current one
// is the empty ack of a neighbour that joined through someone else.
func (e *echo) onElection(env proc.Env, from proc.ID, m echoElection) {
	switch {
	case e.cur.less(m.Run):
		e.join(env, m.Run, from)
	case m.Run == e.cur && e.waiting[from]:
		delete(e.waiting, from)
		e.maybeEcho(env)
	}
}

// onAck takes a child's subtree best.
func (e *echo) onAck(env proc.Env, from proc.ID, m echoAck) {
	if m.Run != e.cur || !e.waiting[from] {
		return
	}
	delete(e.waiting, from)
	e.kids = append(e.kids, from)
	if m.Best.better(e.best) {
		e.best = m.Best
	}
	e.maybeEcho(env)
}

// maybeEcho acks the parent once every neighbour has answered; at the
// source it announces the winner.
func (e *echo) maybeEcho(env proc.Env) {
	if len(e.waiting) > 0 || e.waiting == nil {
		return
	}
	e.waiting = nil // answered: nothing more to wait for in this election
	if e.parent == proc.None {
		e.announce(env, e.best)
		return
	}
	env.Send(e.parent, echoAck{Run: e.cur, Best: e.best})
}

// onCoordinator learns the winner from the parent.
func (e *echo) onCoordinator(env proc.Env, m echoCoordinator) {
	if m.Run != e.cur {
		return
	}
	e.announce(env, m.Best)
}

// announce outputs the leader and passes it on to the children.
func (e *echo) announce(env proc.Env, best echoBest) {
	for _, k := range e.kids {
		env.Send(k, echoCoordinator{Run: e.cur, Best: best})
	}
	if e.leader != best.ID {
		e.leader = best.ID
		env.Output(Elected{Leader: best.ID})
	}
}
