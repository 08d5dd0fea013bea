package mutex

import (
	"fmt"
	"slices"

	"github.com/cohort-go/cohort/proc"
)

// Central server (Coulouris et al., the central server algorithm; Tanenbaum
// & van Steen §6.3, a centralized algorithm): one process, the coordinator,
// hands out the permission to enter. Here the coordinator is process 0.
//
//	To enter (client):     send REQUEST to the server; wait for GRANT
//	On REQUEST from p:     if nobody holds the permission: send GRANT to p
//	                       else append p to the queue
//	To exit (client):      send RELEASE to the server
//	On RELEASE:            if the queue is not empty: remove its head q
//	                       and send GRANT to q
//
// The coordinator is also a client: its own requests go through the same
// server logic as a local call, with no message to itself.
//
// Assumptions (Coulouris et al.): asynchronous, reliable channels (every
// message arrives exactly once), no failures. FIFO is not needed: a
// client's next REQUEST may overtake its RELEASE, and then the server just
// queues the holder's new request behind the section it is still in.
//
// Cost (Tanenbaum & van Steen's table, §6.3): 3 messages per entry and exit
// of a client (2 to enter: REQUEST and GRANT; 1 to exit: RELEASE), 0 for
// the coordinator's own entries. A client waits 2 message times before it
// enters (the round trip) and none to exit; the synchronisation delay, from
// one exit to the next entry, is 2 message times (RELEASE to the server,
// GRANT to the next). The server is a bottleneck and a single point of
// failure: when it crashes, the queued requests are never granted (see
// central-failover below).
//
// ME1 and ME2 hold when nothing fails. ME3 does not (Coulouris et al.): A
// requests and then tells B something; B, having heard, requests too; B's
// request can reach the server before A's, and B is served first. The tests
// build that counterexample.
//
// Waiting and Lent: a client waits for the coordinator (Waiting{p0}); the
// coordinator's own request waits for whoever holds the permission. The
// coordinator outputs Lent{To: p} when it grants to p and Lent{To: None}
// when the permission comes back.
type central struct {
	self, coord proc.ID

	// The client side.
	requesting bool // asked, not yet granted
	inCS       bool

	// The server side (at the coordinator only).
	holder  proc.ID        // who holds the permission; None when free
	queue   []proc.ID      // waiting requesters, in arrival order
	granted uint64         // grants so far: the next grant's fencing token is one more
	durable durableCounter // a bound on granted, kept across restarts
}

// cenRequest asks the coordinator for the permission.
type cenRequest struct {
	Epoch uint64 `json:"epoch,omitempty"` // central-failover: the sender's coordinator epoch
}

// cenGrant hands the permission to a client.
type cenGrant struct {
	Epoch uint64 `json:"epoch,omitempty"`
	// Seq numbers the coordinator's grants: with the epoch, the fencing
	// token (epoch<<32 | seq) that rises with every grant, across
	// coordinators too, since each new one starts a larger epoch.
	Seq uint64 `json:"seq,omitempty"`
}

func (g cenGrant) token() uint64 { return g.Epoch<<32 | g.Seq }

// cenRelease gives the permission back.
type cenRelease struct {
	Epoch uint64 `json:"epoch,omitempty"`
}

func (cenRequest) Kind() string     { return "request" }
func (m cenRequest) String() string { return "REQ" + epochSuffix(m.Epoch) }
func (cenGrant) Kind() string       { return "grant" }
func (m cenGrant) String() string   { return "GRANT" + epochSuffix(m.Epoch) }
func (cenRelease) Kind() string     { return "release" }
func (m cenRelease) String() string { return "REL" + epochSuffix(m.Epoch) }

// epochSuffix labels messages of central-failover with the coordinator's
// epoch: "GRANT(e2)". The textbook algorithm runs in epoch 0, unlabelled.
func epochSuffix(e uint64) string {
	if e == 0 {
		return ""
	}
	return fmt.Sprintf("(e%d)", e)
}

func init() {
	register(proc.Algorithm{
		Name:    "central",
		Summary: "central server: request, grant, release through coordinator p0, FIFO queue (3 messages per entry)",
		Source:  "Coulouris et al.; Tanenbaum & van Steen §6.3",
		Assumes: proc.Assumptions{Reliable: true},
		Theory:  centralTheory,
		Notes: map[string]string{
			"messages_per_entry": "request, grant, release; entries of the coordinator itself cost none, so the average over all processes is 3(N−1)/N",
			"client_delay_msgs":  "request and grant: one round trip; the coordinator itself enters at once",
			"sync_delay_msgs":    "the release reaches the coordinator, then the grant reaches the next process",
		},
		New:    newCentral,
		Breaks: []string{"ME3"},
		Messages: []proc.Message{
			cenRequest{}, cenGrant{}, cenRelease{},
		},
	})
}

func newCentral(id proc.ID, _ int) proc.Process {
	return &central{self: id, coord: 0, holder: proc.None}
}

func (c *central) Start(env proc.Env) {
	if c.self == c.coord { // its tokens keep rising across its restarts
		c.granted = max(c.granted, c.durable.start(env))
	}
}
func (c *central) Timeout(proc.Env, any) {}

func (c *central) Input(env proc.Env, in proc.Input) {
	switch in.(type) {
	case Acquire:
		c.acquire(env)
	case Release:
		c.release(env)
	}
}

func (c *central) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m := m.(type) {
	case cenRequest:
		c.onRequest(env, from)
	case cenGrant:
		c.onGrant(env, m)
	case cenRelease:
		c.onRelease(env, from)
	}
}

// acquire is "to enter": ask the server.
func (c *central) acquire(env proc.Env) {
	if c.requesting || c.inCS {
		return // a second Acquire breaks the contract; ignore it
	}
	c.requesting = true
	if c.self == c.coord {
		c.onRequest(env, c.self)
		return
	}
	env.Output(Waiting{For: []proc.ID{c.coord}})
	env.Send(c.coord, cenRequest{})
}

// onRequest is the server's "on REQUEST from p".
func (c *central) onRequest(env proc.Env, from proc.ID) {
	if c.self != c.coord {
		return // not the server: drop it
	}
	if c.holder == proc.None {
		c.grant(env, from)
		return
	}
	c.queue = append(c.queue, from)
	if from == c.self {
		env.Output(Waiting{For: []proc.ID{c.holder}})
	}
}

// grant hands the permission to p.
func (c *central) grant(env proc.Env, p proc.ID) {
	c.holder = p
	c.granted++
	c.durable.send(env, c.granted)
	g := cenGrant{Seq: c.granted}
	env.Output(Lent{To: p})
	if p == c.self {
		c.onGrant(env, g)
		return
	}
	if slices.Contains(c.queue, c.self) {
		env.Output(Waiting{For: []proc.ID{p}}) // the coordinator's own request now waits for p
	}
	env.Send(p, g)
}

// onGrant is the client's "on GRANT": enter.
func (c *central) onGrant(env proc.Env, g cenGrant) {
	if !c.requesting {
		return // no request outstanding: outside the assumptions
	}
	c.requesting, c.inCS = false, true
	env.Output(Enter{Token: g.token()})
}

// release is "to exit": give the permission back.
func (c *central) release(env proc.Env) {
	if !c.inCS {
		return // Release without Enter breaks the contract; ignore it
	}
	c.inCS = false
	env.Output(Exit{})
	if c.self == c.coord {
		c.onRelease(env, c.self)
		return
	}
	env.Send(c.coord, cenRelease{})
}

// onRelease is the server's "on RELEASE": grant to the head of the queue.
func (c *central) onRelease(env proc.Env, from proc.ID) {
	if c.self != c.coord || from != c.holder {
		return // a release by a process that does not hold the permission
	}
	c.holder = proc.None
	env.Output(Lent{To: proc.None})
	if len(c.queue) > 0 {
		next := c.queue[0]
		c.queue = c.queue[1:]
		c.grant(env, next)
	}
}

// centralTheory is the textbook cost of the central server: request, grant
// and release; a round trip before entry, two messages between entries.
func centralTheory(int) map[string]float64 {
	return map[string]float64{"messages_per_entry": 3, "client_delay_msgs": 2, "sync_delay_msgs": 2}
}
