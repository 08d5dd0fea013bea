package mutex

import (
	"fmt"
	"slices"
	"time"

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
// Restarts (beyond the textbooks). A process restarted from its stable
// storage (a live node's data directory) rejoins instead of leaving the
// lock stuck or granting it twice:
//
//	Coordinator:  a grant is on record (synced) before it leaves, so a
//	              restarted coordinator knows who may hold the permission.
//	              It multicasts HELLO; each client answers STATE (holding?
//	              requesting, and which request?), which rebuilds the queue
//	              and frees the permission if its holder no longer holds it.
//	              Until the holder on record answers, nobody else is granted.
//	Client:       a restarted client sends HELLO; the coordinator drops its
//	              dead request and takes the permission back if it held it —
//	              after a crash inside the section for a remote holder
//	              (Acquire.Hold), only once that hold has passed.
//
// Requests are numbered, above every number of an earlier incarnation, and
// a grant names the request it answers, so a grant meant for a crashed
// incarnation is never taken by the next.
//
// Waiting and Lent: a client waits for the coordinator (Waiting{p0}); the
// coordinator's own request waits for whoever holds the permission. The
// coordinator outputs Lent{To: p} when it grants to p and Lent{To: None}
// when the permission comes back.
type central struct {
	self, coord proc.ID

	// The client side.
	requesting bool   // asked, not yet granted
	inCS       bool   //
	req        uint64 // the number of the current request
	hold       time.Duration
	rejoining  bool     // restarted from inside the section: waiting out its hold
	wants      *Acquire // an Acquire made meanwhile

	// The server side (at the coordinator only).
	holder  proc.ID            // who holds the permission; None when free
	holderN uint64             // the number of the request it was granted for
	queue   []cenWaiter        // waiting requests, in arrival order
	floor   map[proc.ID]uint64 // restarted clients: their requests numbered below are dead
	granted uint64             // grants so far: the next grant's fencing token is one more
	durable durableCounter     // a bound on granted (at a client: on its request numbers), the holder, kept across restarts
}

// Describe implements proc.Describer: at the coordinator, who holds the
// permission and who waits for it; at a client, whether it asked or holds.
func (c *central) Describe() any {
	type client struct {
		State string `json:"state"`
	}
	st := "released"
	switch {
	case c.inCS:
		st = "in CS"
	case c.requesting:
		st = "requesting"
	}
	if c.self != c.coord {
		return client{st}
	}
	q := make([]string, 0, len(c.queue))
	for _, w := range c.queue {
		q = append(q, w.P.String())
	}
	return struct {
		State   string   `json:"state"`
		Holder  string   `json:"holder"`
		Queue   []string `json:"queue"`
		Granted uint64   `json:"granted"`
	}{st, c.holder.String(), q, c.granted}
}

// cenWaiter is a queued request: its process and number.
type cenWaiter struct {
	P proc.ID
	N uint64
}

// cenRequest asks the coordinator for the permission.
type cenRequest struct {
	Epoch uint64 `json:"epoch,omitempty"` // central-failover: the sender's coordinator epoch
	N     uint64 `json:"n,omitempty"`     // central: the request's number
	// central-failover: the request's Acquire.Hold, which a coordinator
	// waits out before it takes the permission back from a silent holder.
	Hold time.Duration `json:"hold,omitempty"`
}

// cenGrant hands the permission to a client.
type cenGrant struct {
	Epoch uint64 `json:"epoch,omitempty"`
	// Seq numbers the coordinator's grants: with the epoch, the fencing
	// token (epoch<<32 | seq) that rises with every grant, across
	// coordinators too, since each new one starts a larger epoch.
	Seq uint64 `json:"seq,omitempty"`
	For uint64 `json:"for,omitempty"` // central: the number of the request granted
}

// cenHello announces a restart of its sender. A client's Floor is above
// every number its earlier incarnations gave a request.
type cenHello struct {
	Floor uint64 `json:"floor,omitempty"`
}

// cenState answers a restarted coordinator's HELLO.
type cenState struct {
	Holding    bool   `json:"holding,omitempty"`
	Requesting bool   `json:"requesting,omitempty"`
	N          uint64 `json:"n,omitempty"` // the request's number
}

// cenRejoin is the timer that ends a restarted holder's hold.
type cenRejoin struct{}

func (cenHello) Kind() string    { return "hello" }
func (cenHello) String() string  { return "HELLO" }
func (cenState) Kind() string    { return "state" }
func (cenRejoin) String() string { return "rejoin" }

func (m cenState) String() string {
	switch {
	case m.Holding:
		return "STATE(holding)"
	case m.Requesting:
		return fmt.Sprintf("STATE(requesting #%d)", m.N)
	}
	return "STATE(idle)"
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
			cenRequest{}, cenGrant{}, cenRelease{}, cenHello{}, cenState{},
		},
	})
}

func newCentral(id proc.ID, _ int) proc.Process {
	return &central{self: id, coord: 0, holder: proc.None}
}

// Start begins an incarnation. The first puts a record on stable storage,
// so that a restart knows it is one; a restart rejoins (see Restarts).
func (c *central) Start(env proc.Env) {
	n := c.durable.start(env)
	if c.self == c.coord { // its tokens keep rising across its restarts
		c.granted = max(c.granted, n)
	} else {
		c.req = max(c.req, n)
	}
	if !c.durable.restarted {
		return
	}
	if c.self != c.coord {
		if hold := c.durable.held(); hold > 0 {
			c.rejoining = true
			env.SetTimer(hold, cenRejoin{})
			return
		}
		c.durable.mark(env, 0, false)
		env.Send(c.coord, cenHello{Floor: c.req + 1})
		return
	}
	// The coordinator: the holder on record may still hold the permission.
	c.holder, c.holderN = c.durable.holder()
	if c.holder == c.self {
		if hold := c.durable.held(); hold > 0 {
			c.rejoining = true
			env.SetTimer(hold, cenRejoin{})
		} else {
			c.holder = proc.None // its holder died with it
		}
	}
	for p := range proc.ID(env.N()) {
		if p != c.self {
			env.Send(p, cenHello{})
		}
	}
}

// Timeout ends a restarted holder's hold: it gives the permission back
// (a client says HELLO; the coordinator frees it), then makes the Acquire
// asked for meanwhile.
func (c *central) Timeout(env proc.Env, tag any) {
	if _, ok := tag.(cenRejoin); !ok || !c.rejoining {
		return
	}
	c.rejoining = false
	c.durable.mark(env, 0, false)
	if c.self == c.coord {
		c.onRelease(env, c.self)
	} else {
		env.Send(c.coord, cenHello{Floor: c.req + 1})
	}
	if a := c.wants; a != nil {
		c.wants = nil
		c.acquire(env, *a)
	}
}

func (c *central) Input(env proc.Env, in proc.Input) {
	switch in := in.(type) {
	case Acquire:
		c.acquire(env, in)
	case Release:
		c.release(env)
	}
}

func (c *central) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m := m.(type) {
	case cenRequest:
		c.onRequest(env, cenWaiter{from, m.N})
	case cenGrant:
		c.onGrant(env, m)
	case cenRelease:
		c.onRelease(env, from)
	case cenHello:
		c.onHello(env, from, m)
	case cenState:
		c.onState(env, from, m)
	}
}

// acquire is "to enter": ask the server.
func (c *central) acquire(env proc.Env, a Acquire) {
	if c.requesting || c.inCS {
		return // a second Acquire breaks the contract; ignore it
	}
	if c.rejoining {
		c.wants = &a
		return
	}
	c.requesting, c.hold = true, a.Hold
	if c.self == c.coord {
		c.onRequest(env, cenWaiter{c.self, 0})
		return
	}
	c.req++
	c.durable.send(env, c.req)
	env.Output(Waiting{For: []proc.ID{c.coord}})
	env.Send(c.coord, cenRequest{N: c.req})
}

// onRequest is the server's "on REQUEST from p".
func (c *central) onRequest(env proc.Env, w cenWaiter) {
	if c.self != c.coord {
		return // not the server: drop it
	}
	if w.P != c.self && (w.N < c.floor[w.P] || (c.holder == w.P && c.holderN == w.N) || slices.Contains(c.queue, w)) {
		return // from a crashed incarnation, or a request known already
	}
	if c.holder == proc.None {
		c.grant(env, w)
		return
	}
	c.queue = append(c.queue, w)
	if w.P == c.self {
		env.Output(Waiting{For: []proc.ID{c.holder}})
	}
}

// grant hands the permission to w's process; the grant is on record
// before it leaves.
func (c *central) grant(env proc.Env, w cenWaiter) {
	p := w.P
	c.holder, c.holderN = p, w.N
	c.granted++
	c.durable.send(env, c.granted)
	c.durable.setHolder(env, p, w.N, true)
	g := cenGrant{Seq: c.granted, For: w.N}
	env.Output(Lent{To: p})
	if p == c.self {
		c.onGrant(env, g)
		return
	}
	if slices.ContainsFunc(c.queue, func(q cenWaiter) bool { return q.P == c.self }) {
		env.Output(Waiting{For: []proc.ID{p}}) // the coordinator's own request now waits for p
	}
	env.Send(p, g)
}

// onGrant is the client's "on GRANT": enter.
func (c *central) onGrant(env proc.Env, g cenGrant) {
	if !c.requesting || (c.self != c.coord && g.For != c.req) {
		return // not for the request outstanding: an earlier incarnation's, or outside the assumptions
	}
	c.requesting, c.inCS = false, true
	c.durable.mark(env, c.hold, c.hold > 0)
	env.Output(Enter{Token: g.token()})
}

// release is "to exit": give the permission back.
func (c *central) release(env proc.Env) {
	if !c.inCS {
		return // Release without Enter breaks the contract; ignore it
	}
	c.inCS = false
	c.durable.mark(env, 0, false)
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
	c.durable.setHolder(env, proc.None, 0, false)
	env.Output(Lent{To: proc.None})
	if len(c.queue) > 0 {
		next := c.queue[0]
		c.queue = c.queue[1:]
		c.grant(env, next)
	}
}

// onHello: from restarted. At a client, from the coordinator: tell it
// what this client holds or asks for. At the coordinator, from a client:
// its request died with it, and so did its hold on the permission (it
// says HELLO only once its own hold has passed).
func (c *central) onHello(env proc.Env, from proc.ID, m cenHello) {
	if c.self != c.coord {
		if from == c.coord {
			env.Send(from, cenState{Holding: c.inCS, Requesting: c.requesting, N: c.req})
		}
		return
	}
	if c.floor == nil {
		c.floor = map[proc.ID]uint64{}
	}
	c.floor[from] = max(c.floor[from], m.Floor)
	c.queue = slices.DeleteFunc(c.queue, func(w cenWaiter) bool { return w.P == from })
	c.onRelease(env, from)
}

// onState rebuilds a restarted coordinator's view from a client's answer.
func (c *central) onState(env proc.Env, from proc.ID, m cenState) {
	if c.self != c.coord {
		return
	}
	switch {
	case m.Holding || c.holder != from:
	case m.Requesting && m.N == c.holderN:
		// Granted before the restart, and the grant has not arrived: it
		// may be lost. Grant again; the client takes whichever comes first.
		c.grant(env, cenWaiter{from, m.N})
		return
	default:
		c.onRelease(env, from) // its release was lost with the coordinator
	}
	if m.Requesting {
		c.onRequest(env, cenWaiter{from, m.N})
	}
}

// centralTheory is the textbook cost of the central server: request, grant
// and release; a round trip before entry, two messages between entries.
func centralTheory(int) map[string]float64 {
	return map[string]float64{"messages_per_entry": 3, "client_delay_msgs": 2, "sync_delay_msgs": 2}
}

// Rejoins: a restarted process rejoins (see Restarts above).
func (*central) Rejoins() {}
