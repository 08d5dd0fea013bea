package deadlock

import (
	"fmt"
	"maps"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Chandy, Misra and Haas's diffusing computation for the OR model
// (Chandy, Misra & Haas, ACM TOCS 1983, "communication deadlock";
// Kshemkalyani & Singhal §10.7). A blocked process waits for any one of
// its dependent set DS (the OR model, communication.go); it is deadlocked
// when every process it can reach in the wait-for graph is blocked — a
// cycle through it is not enough. Its detection, a diffusing computation
// (Dijkstra & Scholten 1980) over the graph, as Kshemkalyani & Singhal
// give it:
//
//	Initiate a diffusion computation for a blocked process Pi:
//	  send query(i, i, j) to all processes Pj in the dependent set DSi of Pi;
//	  numi(i) := |DSi|; waiti(i) := true;
//
//	When a blocked process Pk receives a query(i, j, k):
//	  if this is the engaging query for process Pi then
//	    send query(i, k, m) to all Pm in its dependent set DSk;
//	    numk(i) := |DSk|; waitk(i) := true
//	  else if waitk(i) then send a reply(i, k, j) to Pj.
//
//	When a process Pk receives a reply(i, j, k):
//	  if waitk(i) then
//	    numk(i) := numk(i) − 1;
//	    if numk(i) = 0 then
//	      if i = k then declare a deadlock
//	      else send reply(i, k, m) to the process Pm
//	           which sent the engaging query.
//
// An active process discards every query, and waitk(i) turns false when
// Pk becomes active: a process replies only while it has been blocked
// since its engaging query. So a reply says "I and everything I wait for
// were blocked", and the initiator, replied to by all its dependent set,
// is deadlocked (the paper's theorem; deadlock is stable). Conversely, if
// Pi is deadlocked, every process it reaches is blocked for ever, every
// query is answered, and Pi declares.
//
// Computations. A process blocks before the rest of a deadlock forms, so a
// blocked process begins a computation Wait after it blocks and again
// while it stays blocked (backing off, below). Each is numbered (Comp). A computation
// takes longer than Wait when the graph is deep, and queries of a newer one
// may overtake an older one's, so the paper's latest(i) — the last
// computation of Pi seen, the older ones discarded — would let each cut the
// one before short. Instead a process remembers which of Pi's last 64
// computations it has seen (a query of one not seen is its engaging query;
// of one older than those, discarded), and keeps numk(i) and waitk(i) for
// each it takes part in. Seen stays seen: a process that became active and
// blocked again must not engage a second time in a computation it has
// answered for (with a new engager, a reply could vouch for a part of the
// graph that has since woken up).

// Backoff, as in the AND model (cmh.go): the waits between a blocked
// process's computations double from Wait up to MaxWait, the detector's
// promise; and a blocked process that discards a lower initiator's query
// by the priority rule, if it has backed off, begins its next
// computation Wait from now and backs off from Wait again.
//
// Resolution: one victim per knot. A blocked process discards the queries
// of initiators below it (a priority rule, as the AND model's cmh applies
// to its probes), so Pi declares only if it is the highest of all it
// reaches. In a knot — a strongly connected set with no edge out, where
// every deadlock ends — that is the knot's highest process; it declares,
// gives its wait up and answers the asks it kept, and the answers unblock
// the knot and every process deadlocked on it. A process outside a knot,
// higher than all it reaches, declares too: it is deadlocked as well.
//
// Assumes: reliable FIFO channels (an answer is never lost; a reply comes
// after the queries it answers on the same channel), no failures.
//
// Cost: a computation sends one query along every edge of the wait-for
// graph reachable from its initiator and one reply back, 2e messages for
// e edges, each of constant size; the declaring one does so exactly. A
// deadlock is declared within MaxWait plus twice the time a message takes
// along the longest path from the initiator in the graph. State: per
// initiator a window of 64 bits, and while blocked at most 64 engagements
// per initiator.
type CMHOR struct {
	ORSite
	// Wait is the time a process stays blocked before it begins a
	// computation, and between its first two computations.
	Wait time.Duration
	// MaxWait bounds the wait between computations, which doubles from
	// Wait after each; MaxWait ≤ Wait queries every Wait (no backoff).
	MaxWait time.Duration

	began int                        // computations this process initiated
	seen  map[proc.ID]window         // per initiator, the computations seen
	state map[computation]engagement // those it takes part in, since it blocked: waitk(i)
	timer proc.TimerID
	next  backoff

	// Broken variants, for the tests: onCycle declares as soon as one of
	// its own queries comes back (a cycle through it, the AND model's
	// proof, not the OR model's); deaf never declares.
	onCycle, deaf bool
}

// window is the computations of one initiator a process has seen: bit d
// of Mask is computation Latest−d.
type window struct {
	Latest int
	Mask   uint64
}

// see records computation c; it reports whether c is new (the query is
// engaging). One older than the window counts as seen.
func (w *window) see(c int) bool {
	if c > w.Latest {
		if d := c - w.Latest; d < 64 {
			w.Mask <<= d
		} else {
			w.Mask = 0
		}
		w.Latest, w.Mask = c, w.Mask|1
		return true
	}
	d := w.Latest - c
	if d >= 64 || w.Mask&(1<<d) != 0 {
		return false
	}
	w.Mask |= 1 << d
	return true
}

// computation names one: Pi's Comp-th.
type computation struct {
	Init proc.ID
	Comp int
}

// engagement is Pk's part in a computation: numk(i), and the engager to
// reply to. Kept means waitk(i): blocked since the engaging query.
type engagement struct {
	num     int     // replies still awaited
	engager proc.ID // who sent the engaging query
}

// Query is query(Init, from, to) of Init's computation Comp.
type Query struct {
	Init proc.ID `json:"init"`
	Comp int     `json:"comp"`
}

func (Query) Kind() string     { return "query" }
func (m Query) String() string { return fmt.Sprintf("query(%s#%d)", m.Init, m.Comp) }

// Reply is reply(Init, from, to) of Init's computation Comp.
type Reply struct {
	Init proc.ID `json:"init"`
	Comp int     `json:"comp"`
}

func (Reply) Kind() string     { return "reply" }
func (m Reply) String() string { return fmt.Sprintf("reply(%s#%d)", m.Init, m.Comp) }

// queryTimer is the timer of a blocked wait's next computation.
type queryTimer struct{ seq int }

// NewCMHOR returns a process that begins computations after wait,
// backing off to DefaultBackoff times wait.
func NewCMHOR(wait time.Duration) *CMHOR {
	return &CMHOR{Wait: wait, MaxWait: DefaultBackoff * wait}
}

// Describe implements proc.Describer.
func (p *CMHOR) Describe() any {
	return struct {
		ORSiteState
		Computations int `json:"computations"`
	}{p.ORSite.State(), p.began}
}

// Clone is an independent deep copy of the process (the explorer copies
// processes where its search branches).
func (p *CMHOR) Clone() proc.Process {
	c := *p
	c.ORSite = p.ORSite.clone()
	c.seen, c.state = maps.Clone(p.seen), maps.Clone(p.state)
	return &c
}

func (p *CMHOR) Start(env proc.Env) {
	p.seen, p.state = map[proc.ID]window{}, map[computation]engagement{}
	env.Output(Detector{Wait: max(p.Wait, p.MaxWait)})
}

func (p *CMHOR) Input(env proc.Env, in proc.Input) {
	if in, ok := in.(Await); ok && p.await(env, in) {
		p.timer = p.next.start(env, p.Wait, queryTimer{p.wait.Seq})
	}
}

func (p *CMHOR) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m := m.(type) {
	case Query:
		p.onQuery(env, from, m)
	case Reply:
		p.onReply(env, m)
	default:
		if _, resumed := p.receiveOR(env, from, m); resumed {
			p.becameActive(env)
		}
	}
}

// Timeout: still blocked in the same wait, initiate a diffusion
// computation, and another after Wait.
func (p *CMHOR) Timeout(env proc.Env, tag any) {
	if t, ok := tag.(queryTimer); !ok || t.seq != p.wait.Seq || !p.Blocked() {
		return
	}
	p.began++
	i := env.Self()
	p.engaging(Query{Init: i, Comp: p.began})
	p.state[computation{i, p.began}] = engagement{num: len(p.from), engager: i}
	for _, j := range p.from {
		env.Send(j, Query{Init: i, Comp: p.began})
	}
	p.timer = p.next.next(env, p.Wait, p.MaxWait, queryTimer{p.wait.Seq})
}

// onQuery is the receipt of query(i, j, k) at Pk, j = from.
func (p *CMHOR) onQuery(env proc.Env, from proc.ID, q Query) {
	i, c := q.Init, computation{q.Init, q.Comp}
	if !p.Blocked() {
		return // an active process discards queries
	}
	if i < env.Self() {
		// The priority rule; but this process's own computation may
		// soon be due.
		p.timer = p.next.hurry(env, p.timer, p.Wait, queryTimer{p.wait.Seq})
		return
	}
	if p.engaging(q) {
		p.state[c] = engagement{num: len(p.from), engager: from}
		for _, m := range p.from {
			env.Send(m, Query{Init: i, Comp: q.Comp})
		}
		return
	}
	if _, waiting := p.state[c]; !waiting {
		return
	}
	if p.onCycle && i == env.Self() {
		p.declare(env, q.Comp) // the broken variant: a cycle, not a knot
		return
	}
	env.Send(from, Reply{Init: i, Comp: q.Comp})
}

// engaging reports whether q is the first query of its computation here,
// and records it.
func (p *CMHOR) engaging(q Query) bool {
	w := p.seen[q.Init]
	fresh := w.see(q.Comp)
	p.seen[q.Init] = w
	return fresh
}

// onReply is the receipt of reply(i, j, k) at Pk.
func (p *CMHOR) onReply(env proc.Env, r Reply) {
	c := computation{r.Init, r.Comp}
	s, waiting := p.state[c]
	if !waiting || s.num == 0 {
		return
	}
	s.num--
	p.state[c] = s
	if s.num > 0 {
		return
	}
	if r.Init == env.Self() {
		if !p.deaf {
			p.declare(env, r.Comp)
		}
		return
	}
	env.Send(s.engager, Reply{Init: r.Init, Comp: r.Comp})
}

// becameActive: waitk(i) := false for every i.
func (p *CMHOR) becameActive(env proc.Env) {
	env.CancelTimer(p.timer)
	clear(p.state)
}

// declare declares the wait deadlocked and gives it up: the victim is the
// declaring process, the highest of all it reaches.
func (p *CMHOR) declare(env proc.Env, comp int) {
	env.Output(Knot{Wait: p.wait, Comp: comp})
	p.giveUp(env, "deadlock")
	p.becameActive(env)
}
