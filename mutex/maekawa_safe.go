package mutex

import (
	"slices"

	"github.com/cohort-go/cohort/proc"
)

// Maekawa's algorithm made deadlock-free (Maekawa 1985, as presented by
// Sanders 1987), the remedy Coulouris et al. name: if processes queue
// outstanding requests in happened-before order, ME2 holds. Voting sets are
// GridQuorums'; requests carry Lamport timestamps ⟨C, p⟩ (a Stamp); every
// message carries the sender's clock.
//
// The voter pⱼ holds one vote, LOCKED for one request at a time, and a queue
// of the other requests, smallest timestamp first:
//
//	request r:   if unlocked: lock for r, send VOTE.
//	             else queue r; if r precedes the locked request and every
//	             queued one: send INQUIRE to the holder (unless one is
//	             outstanding), and FAILED to the request that r pushed
//	             from the head of the queue; otherwise send FAILED to r.
//	RELINQUISH:  queue the holder's request again; lock for the head of the
//	             queue, send it VOTE.
//	RELEASE:     lock for the head of the queue, if any, send it VOTE;
//	             else unlock.
//
// So every queued request but one has been told FAILED, and that one — the
// head — precedes the locked request and has caused an INQUIRE.
//
// The requester pᵢ multicasts REQUEST to Vᵢ and enters with every vote:
//
//	VOTE from j:    count it; j no longer makes pᵢ fail. All K: enter.
//	FAILED from j:  pᵢ cannot win at j for now; relinquish every vote whose
//	                INQUIRE it deferred.
//	INQUIRE from j: in the critical section: ignore (the release answers).
//	                Else, if pᵢ knows it cannot win (a FAILED not yet
//	                followed by a VOTE from that voter, or a vote it already
//	                relinquished): RELINQUISH j's vote. Else defer it.
//	leave:          multicast RELEASE to Vᵢ.
//
// ME1: a requester enters only holding every vote of its set, and a voter's
// vote is with one request at a time. ME2: the request R with the smallest
// timestamp among those waiting is, at each voter of its set, either voted
// for or at the head of the queue with an INQUIRE out to the holder H > R;
// H is in the critical section (and will release), or waits for a voter
// where it has been told FAILED or has an INQUIRE out to a later request
// still — a chain of ever later requests that ends in one that enters or
// relinquishes, and the votes flow back to R. This needs FIFO channels: a
// FAILED overtaken by a later VOTE from the same voter would make the
// requester think it cannot win when it can, and an INQUIRE must not
// overtake the VOTE it is about.
//
// ME3 is not guaranteed, whatever Coulouris et al. say of sorting the
// queues: a request that happened before another can reach a shared voter
// later, on a slower link, after the later one has collected all its votes
// and left (TestMaekawaSafeOutOfOrder builds such a run; seed sweeps whose
// processes tell each other of their requests find them too), hence
// Breaks.
//
// A process's messages to itself go through a local FIFO, without the
// network (see maekawa). Wait-for graph: as maekawa's.
//
// Cost, with K = |Vᵢ|: 3(K−1) messages per entry without contention
// (REQUEST, VOTE, RELEASE); under contention nearly every request also
// draws a FAILED, and each conflict an INQUIRE, a RELINQUISH and a second
// VOTE: the sweeps measure 4(K−1) and a little more (16 per entry for
// N = 9, 24 for N = 16). Client and synchronization delay: one round
// trip, as in maekawa.
type maekawaSafe struct {
	voters []proc.ID
	clock  uint64 // Lamport clock

	// The requester.
	state    mkState
	req      Stamp            // the current request, while WANTED or HELD
	got      map[proc.ID]bool // votes held
	failed   map[proc.ID]bool // voters where it cannot win for now
	inquired map[proc.ID]bool // INQUIREs deferred

	// The voter.
	locked   bool
	lockedBy Stamp // the request holding the vote
	asked    bool  // an INQUIRE is out for lockedBy
	queue    []mksEntry

	local []mksLocal // messages to oneself not yet handled
}

// mksEntry is a queued request; told records that FAILED was sent to it
// (or that its requester knows it lost, having relinquished).
type mksEntry struct {
	req  Stamp
	told bool
}

type mksLocal struct{ m proc.Message }

// mksRequest asks for a vote for request Req.
type mksRequest struct {
	Req Stamp `json:"req"`
}

// mksVote is the voter's vote for request Req.
type mksVote struct {
	Req Stamp  `json:"req"`
	C   uint64 `json:"c"`
}

// mksFailed tells the requester of Req that the voter's vote is with, or
// promised to, an earlier request.
type mksFailed struct {
	Req Stamp  `json:"req"`
	C   uint64 `json:"c"`
}

// mksInquire asks the holder of the vote, request Req, whether it can give
// the vote back: an earlier request wants it.
type mksInquire struct {
	Req Stamp  `json:"req"`
	C   uint64 `json:"c"`
}

// mksRelinquish gives back the vote held by request Req before entering.
type mksRelinquish struct {
	Req Stamp  `json:"req"`
	C   uint64 `json:"c"`
}

// mksRelease gives back the vote held by request Req after leaving.
type mksRelease struct {
	Req Stamp  `json:"req"`
	C   uint64 `json:"c"`
}

func (mksRequest) Kind() string        { return "request" }
func (m mksRequest) String() string    { return "REQ(" + m.Req.String() + ")" }
func (mksVote) Kind() string           { return "vote" }
func (m mksVote) String() string       { return "VOTE(" + m.Req.String() + ")" }
func (mksFailed) Kind() string         { return "failed" }
func (m mksFailed) String() string     { return "FAILED(" + m.Req.String() + ")" }
func (mksInquire) Kind() string        { return "inquire" }
func (m mksInquire) String() string    { return "INQUIRE(" + m.Req.String() + ")" }
func (mksRelinquish) Kind() string     { return "relinquish" }
func (m mksRelinquish) String() string { return "RELINQUISH(" + m.Req.String() + ")" }
func (mksRelease) Kind() string        { return "release" }
func (m mksRelease) String() string    { return "REL(" + m.Req.String() + ")" }

func init() {
	register(proc.Algorithm{
		Name:    "maekawa-safe",
		Summary: "Maekawa with timestamped requests and inquire/relinquish/failed: deadlock-free",
		Source:  "Maekawa 1985, Sanders 1987; Coulouris et al.",
		Assumes: proc.Assumptions{Reliable: true, FIFO: true},
		Theory:  maekawaTheory,
		Notes: map[string]string{
			"messages_per_entry": "3(K−1) without contention; inquire, relinquish and failed messages add to it under contention",
		},
		New:    newMaekawaSafe,
		Breaks: []string{"ME3"},
		Messages: []proc.Message{
			mksRequest{}, mksVote{}, mksFailed{}, mksInquire{}, mksRelinquish{}, mksRelease{},
		},
	})
}

func newMaekawaSafe(id proc.ID, n int) proc.Process {
	return &maekawaSafe{voters: gridQuorum(n, gridColumns(n), id)}
}

func (p *maekawaSafe) Start(proc.Env) {}

func (p *maekawaSafe) Timeout(proc.Env, any) {}

func (p *maekawaSafe) Input(env proc.Env, in proc.Input) {
	switch in.(type) {
	case Acquire:
		p.acquire(env)
	case Release:
		p.release(env)
	}
	p.drain(env)
}

func (p *maekawaSafe) Receive(env proc.Env, from proc.ID, m proc.Message) {
	p.handle(env, from, m)
	p.drain(env)
}

func (p *maekawaSafe) handle(env proc.Env, from proc.ID, m proc.Message) {
	switch m := m.(type) {
	case mksRequest:
		p.witness(m.Req.C)
		p.onRequest(env, m.Req)
	case mksVote:
		p.witness(m.C)
		p.onVote(env, from, m.Req)
	case mksFailed:
		p.witness(m.C)
		p.onFailed(env, from, m.Req)
	case mksInquire:
		p.witness(m.C)
		p.onInquire(env, from, m.Req)
	case mksRelinquish:
		p.witness(m.C)
		p.onRelinquish(env, from, m.Req)
	case mksRelease:
		p.witness(m.C)
		p.onRelease(env, from, m.Req)
	}
}

// witness applies Lamport's rule to a received clock reading.
func (p *maekawaSafe) witness(c uint64) { p.clock = max(p.clock, c) + 1 }

// send sends m, to oneself through the local FIFO.
func (p *maekawaSafe) send(env proc.Env, to proc.ID, m proc.Message) {
	if to == env.Self() {
		p.local = append(p.local, mksLocal{m})
		return
	}
	env.Send(to, m)
}

func (p *maekawaSafe) drain(env proc.Env) {
	for len(p.local) > 0 {
		m := p.local[0].m
		p.local = p.local[1:]
		p.handle(env, env.Self(), m)
	}
}

// acquire: state := WANTED; stamp the request; multicast it to Vᵢ.
func (p *maekawaSafe) acquire(env proc.Env) {
	if p.state != mkReleased {
		return // a second Acquire breaks the contract; ignore it
	}
	p.state = mkWanted
	p.clock++
	p.req = Stamp{C: p.clock, P: env.Self()}
	p.got, p.failed, p.inquired = map[proc.ID]bool{}, map[proc.ID]bool{}, map[proc.ID]bool{}
	env.Output(Waiting{For: slices.Clone(p.voters)})
	for _, v := range p.voters {
		p.send(env, v, mksRequest{Req: p.req})
	}
}

// onRequest is the voter receiving request r.
func (p *maekawaSafe) onRequest(env proc.Env, r Stamp) {
	if !p.locked {
		p.lock(env, r)
		return
	}
	i, _ := slices.BinarySearchFunc(p.queue, r, func(e mksEntry, r Stamp) int { return mksCompare(e.req, r) })
	p.queue = slices.Insert(p.queue, i, mksEntry{req: r})
	if i > 0 || p.lockedBy.Less(r) {
		// Preceded by a queued request or by the one holding the vote.
		p.fail(env, i)
		return
	}
	// r is the new head and precedes the holder: the old head, which had
	// caused the INQUIRE, is now preceded too.
	if len(p.queue) > 1 && !p.queue[1].told {
		p.fail(env, 1)
	}
	if !p.asked {
		p.asked = true
		p.send(env, p.lockedBy.P, mksInquire{Req: p.lockedBy, C: p.clock})
	}
}

// fail sends FAILED to the queued request at index i.
func (p *maekawaSafe) fail(env proc.Env, i int) {
	p.queue[i].told = true
	p.send(env, p.queue[i].req.P, mksFailed{Req: p.queue[i].req, C: p.clock})
}

// lock gives the vote to request r.
func (p *maekawaSafe) lock(env proc.Env, r Stamp) {
	p.locked, p.lockedBy, p.asked = true, r, false
	env.Output(Lent{To: r.P})
	p.send(env, r.P, mksVote{Req: r, C: p.clock})
}

// next gives the vote to the head of the queue, or frees it.
func (p *maekawaSafe) next(env proc.Env) {
	if len(p.queue) == 0 {
		p.locked, p.lockedBy, p.asked = false, Stamp{}, false
		env.Output(Lent{To: proc.None})
		return
	}
	head := p.queue[0].req
	p.queue = p.queue[1:]
	p.lock(env, head)
}

// onRelinquish: the holder gives the vote back before entering; its
// request waits again (it knows it lost) and the head of the queue gets
// the vote.
func (p *maekawaSafe) onRelinquish(env proc.Env, from proc.ID, r Stamp) {
	if !p.locked || p.lockedBy != r || r.P != from {
		return // not the holder: cannot happen on FIFO channels; drop it
	}
	i, _ := slices.BinarySearchFunc(p.queue, r, func(e mksEntry, r Stamp) int { return mksCompare(e.req, r) })
	p.queue = slices.Insert(p.queue, i, mksEntry{req: r, told: true})
	p.next(env)
}

// onRelease: the holder left the critical section.
func (p *maekawaSafe) onRelease(env proc.Env, from proc.ID, r Stamp) {
	if !p.locked || p.lockedBy != r || r.P != from {
		return // not the holder: cannot happen; drop it
	}
	p.next(env)
}

// onVote is the requester receiving voter from's vote.
func (p *maekawaSafe) onVote(env proc.Env, from proc.ID, r Stamp) {
	if p.state != mkWanted || r != p.req || p.got[from] {
		return // for another request: cannot happen on FIFO channels
	}
	p.got[from] = true
	delete(p.failed, from)
	env.Output(Waiting{For: waitingFor(p.voters, p.got)})
	if len(p.got) == len(p.voters) {
		p.state = mkHeld
		p.inquired = map[proc.ID]bool{} // the release answers them
		env.Output(Enter{})
	}
}

// onFailed: the requester cannot win at voter from for now; it gives back
// every vote it was asked for.
func (p *maekawaSafe) onFailed(env proc.Env, from proc.ID, r Stamp) {
	if p.state != mkWanted || r != p.req {
		return
	}
	p.failed[from] = true
	p.relinquishAsked(env)
}

// onInquire: voter from asks for its vote back.
func (p *maekawaSafe) onInquire(env proc.Env, from proc.ID, r Stamp) {
	if p.state != mkWanted || r != p.req || !p.got[from] {
		return // in the critical section (the release answers) or stale
	}
	p.inquired[from] = true
	if len(p.failed) > 0 {
		p.relinquishAsked(env)
	}
}

// relinquishAsked gives back, in id order, every vote an INQUIRE asked for.
func (p *maekawaSafe) relinquishAsked(env proc.Env) {
	if len(p.inquired) == 0 {
		return
	}
	for _, v := range p.voters { // id order, not map order
		if !p.inquired[v] {
			continue
		}
		delete(p.inquired, v)
		delete(p.got, v)
		p.failed[v] = true
		p.send(env, v, mksRelinquish{Req: p.req, C: p.clock})
	}
	env.Output(Waiting{For: waitingFor(p.voters, p.got)})
}

// release: state := RELEASED; multicast RELEASE to Vᵢ.
func (p *maekawaSafe) release(env proc.Env) {
	if p.state != mkHeld {
		return // Release without Enter breaks the contract; ignore it
	}
	p.state = mkReleased
	p.got, p.failed, p.inquired = nil, nil, nil
	env.Output(Exit{})
	p.clock++
	for _, v := range p.voters {
		p.send(env, v, mksRelease{Req: p.req, C: p.clock})
	}
}

// mksCompare orders stamps for the sorted queues.
func mksCompare(a, b Stamp) int {
	switch {
	case a.Less(b):
		return -1
	case b.Less(a):
		return 1
	}
	return 0
}
