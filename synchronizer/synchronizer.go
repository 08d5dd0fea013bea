package synchronizer

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/cohort-go/cohort/proc"
)

// Payload is a message of the wrapped algorithm, tagged with the round it
// was sent in. Its kind is the algorithm message's; its label is
// "[r3] " and the message's own.
type Payload[M proc.Message] struct {
	Round int `json:"round"`
	M     M   `json:"m"`
}

func (p Payload[M]) Kind() string { return p.M.Kind() }

func (p Payload[M]) String() string {
	s := "[r" + strconv.Itoa(p.Round) + "] "
	if l, ok := any(p.M).(fmt.Stringer); ok {
		return s + l.String()
	}
	return s + p.M.Kind()
}

// Ack acknowledges a Payload of round Round to its sender.
type Ack struct {
	Round int `json:"round"`
}

func (Ack) Kind() string     { return "ack" }
func (a Ack) String() string { return "ACK(r" + strconv.Itoa(a.Round) + ")" }

// Safe says: the sender is safe for round Round (α: the sender itself;
// β and γ: the whole subtree below it, in its tree).
type Safe struct {
	Round int `json:"round"`
}

func (Safe) Kind() string     { return "safe" }
func (s Safe) String() string { return "SAFE(r" + strconv.Itoa(s.Round) + ")" }

// Pulse tells a process of a tree to begin round Round.
type Pulse struct {
	Round int `json:"round"`
}

func (Pulse) Kind() string     { return "pulse" }
func (p Pulse) String() string { return "PULSE(r" + strconv.Itoa(p.Round) + ")" }

// Topo is a process's neighbour list, flooded while the processes learn
// the graph (β and γ).
type Topo struct {
	Origin    proc.ID   `json:"origin"`
	Neighbors []proc.ID `json:"neighbors"`
}

func (Topo) Kind() string { return "topo" }
func (t Topo) String() string {
	return "TOPO(" + t.Origin.String() + ", " + strconv.Itoa(len(t.Neighbors)) + " neighbours)"
}

// Round is output when the process begins round Round.
type Round struct {
	Round int `json:"round"`
}

func (Round) Kind() string     { return "round" }
func (r Round) String() string { return "round " + strconv.Itoa(r.Round) }

// Layout is output when the process has its structure, before round 1:
// its degree, and for β and γ what every process computed alike — the
// graph's edges, the clusters (β: one), the height of the tallest cluster
// tree, and the preferred edges between clusters.
type Layout struct {
	Degree    int `json:"degree"`
	Edges     int `json:"edges,omitempty"`
	Clusters  int `json:"clusters,omitempty"`
	Height    int `json:"height,omitempty"`
	Preferred int `json:"preferred,omitempty"`
}

func (Layout) Kind() string { return "layout" }
func (l Layout) String() string {
	return fmt.Sprintf("degree %d, %d clusters of height ≤ %d, %d preferred edges", l.Degree, l.Clusters, l.Height, l.Preferred)
}

// core is what every synchronizer does for the algorithm it runs: it
// numbers the rounds and tags the messages of each, acknowledges every
// message it receives and keeps it for the round after the one it was
// sent in, and tells when the process is safe — when all it sent in the
// current round has been acknowledged.
type core[M proc.Message] struct {
	app     proc.Rounds
	round   int                     // the current round; 0 before round 1
	done    bool                    // the algorithm has finished
	unacked int                     // messages of this round not yet acknowledged
	safe    bool                    // unacked reached 0 in this round
	early   map[int][]proc.Received // received messages, by the round they were sent in
}

// begin begins round r: the messages of round r−1 go to the algorithm,
// which sends round r's. It reports whether the process is safe at once
// (it sent nothing).
func (c *core[M]) begin(env proc.Env, r int) bool {
	c.round, c.unacked, c.safe = r, 0, false
	env.Output(Round{Round: r})
	in := c.early[r-1]
	delete(c.early, r-1)
	slices.SortStableFunc(in, func(a, b proc.Received) int { return cmp.Compare(a.From, b.From) })
	if !c.app.Round(appEnv{env, func(to proc.ID, m proc.Message) { c.send(env, to, m) }}, r, in) {
		c.done = true
		return false
	}
	c.safe = c.unacked == 0
	return c.safe
}

// send tags a message of the algorithm with the round.
func (c *core[M]) send(env proc.Env, to proc.ID, m proc.Message) {
	mm, ok := m.(M)
	if !ok {
		var want M
		panic(fmt.Sprintf("synchronizer at %s, round %d: the algorithm sent a %T; this synchronizer carries %T", env.Self(), c.round, m, want))
	}
	c.unacked++
	env.Send(to, Payload[M]{Round: c.round, M: mm})
}

// onPayload acknowledges a message and keeps it for round m.Round+1. (A
// message that comes after that round has begun — a broken synchronizer —
// is never handed over; sync-safe finds its receipt in the trace.)
func (c *core[M]) onPayload(env proc.Env, from proc.ID, m Payload[M]) {
	env.Send(from, Ack{Round: m.Round})
	if m.Round < c.round {
		return
	}
	if c.early == nil {
		c.early = map[int][]proc.Received{}
	}
	c.early[m.Round] = append(c.early[m.Round], proc.Received{From: from, M: m.M})
}

// onAck counts an acknowledgement; it reports whether the process has
// just become safe.
func (c *core[M]) onAck(a Ack) bool {
	if a.Round != c.round || c.unacked == 0 || c.done {
		return false
	}
	c.unacked--
	c.safe = c.unacked == 0
	return c.safe
}

// appEnv is the Env the algorithm sees: its sends go through send.
type appEnv struct {
	proc.Env
	send func(to proc.ID, m proc.Message)
}

func (e appEnv) Send(to proc.ID, m proc.Message) { e.send(to, m) }
