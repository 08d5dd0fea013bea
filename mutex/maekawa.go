package mutex

import (
	"slices"

	"github.com/cohort-go/cohort/proc"
)

// Maekawa's voting algorithm (Maekawa 1985), in the basic form of Coulouris
// et al.
//
// Each process pᵢ has a voting set Vᵢ with pᵢ ∈ Vᵢ, and every two voting
// sets intersect (GridQuorums builds them). Every process has one vote:
//
//	init:         state := RELEASED; voted := FALSE
//	pᵢ enters:    state := WANTED; multicast(Vᵢ, reqᵢ), itself included;
//	              wait for K replies; state := HELD
//	pⱼ gets reqᵢ: if state = HELD or voted: queue reqᵢ, do not answer
//	              else: send reply to pᵢ; voted := TRUE
//	pᵢ leaves:    state := RELEASED; multicast(Vᵢ, releaseᵢ)
//	pⱼ gets releaseᵢ: if the queue is not empty: remove its head, send a
//	              reply to it, voted := TRUE; else voted := FALSE
//
// A requester holds every vote of its set while in the critical section,
// and any two sets share a voter whose one vote cannot be in both, so ME1
// holds. ME2 does not: votes go first come, first served, so requesters
// that start together can split a set between them and wait for each other
// for ever (it satisfies ME1 but not ME2, and is deadlock-prone, as
// Coulouris et al. say). With N = 4 (V₀ = {0,1,2}, V₁ = {0,1,3},
// V₂ = {0,2,3}) and p0, p1, p2 requesting at once, each first votes for
// itself; p3 votes for p1; now p0 waits for p1's vote, which p1 keeps, and
// p1 waits for p0's. Nor is ME3 kept: a request that happened before
// another can reach a shared voter after it (TestMaekawaOutOfOrder builds
// such a run). In random runs the deadlocks come first: nearly every
// contended run deadlocks. See "maekawa-safe" for the deadlock-free form.
//
// A process's request to itself, its vote for itself and its release to
// itself are handled locally, without a message, but in the order they
// would travel: they go through a local FIFO that is drained after the
// event that produced them, so a handler never runs inside another.
//
// Wait-for graph: a requester outputs Waiting with the voters whose vote it
// lacks; a voter outputs Lent{To: p} when its vote goes to p (itself
// included) and Lent{To: None} when the vote comes back and nobody is
// queued.
//
// Assumptions: reliable channels, no failures; FIFO is not needed (a voter
// hears from a requester only a request and then, after its vote, a
// release).
//
// Cost, with K = |Vᵢ| (2√N − 1 on the √N×√N grid): K−1 requests, K−1 votes
// and K−1 releases, 3(K−1) messages per entry; Coulouris et al. count 2√N
// to enter and √N to leave. Client delay and synchronization delay: one
// round trip (2 message times).
type maekawa struct {
	voters []proc.ID // Vᵢ

	// The requester.
	state mkState
	got   map[proc.ID]bool // votes received for the current request

	// The voter.
	voted    bool
	votedFor proc.ID
	queue    []proc.ID // requests waiting for the vote, first come first

	local []mkLocal // messages to oneself not yet handled
}

type mkState uint8

const (
	mkReleased mkState = iota
	mkWanted
	mkHeld
)

// Describe implements proc.Describer: the requester's state and the
// votes it holds, and the voter's vote and queue.
func (p *maekawa) Describe() any {
	d := struct {
		State string   `json:"state"`
		Votes []string `json:"votes"`
		Voted string   `json:"voted_for"`
		Queue []string `json:"queue"`
	}{State: [...]string{"RELEASED", "WANTED", "HELD"}[p.state], Votes: members(p.got), Voted: "none", Queue: names(p.queue)}
	if p.voted {
		d.Voted = p.votedFor.String()
	}
	return d
}

// mkLocal is a message to oneself, waiting in the local FIFO.
type mkLocal struct{ m proc.Message }

// mkRequest asks for the receiver's vote: the textbook's reqᵢ.
type mkRequest struct{}

// mkVote is the textbook's reply: the sender's vote.
type mkVote struct{}

// mkRelease gives the vote back: the textbook's releaseᵢ.
type mkRelease struct{}

func (mkRequest) Kind() string   { return "request" }
func (mkRequest) String() string { return "REQ" }
func (mkVote) Kind() string      { return "vote" }
func (mkVote) String() string    { return "VOTE" }
func (mkRelease) Kind() string   { return "release" }
func (mkRelease) String() string { return "REL" }

func init() {
	register(proc.Algorithm{
		Name:    "maekawa",
		Summary: "Maekawa's voting sets (√N×√N grid, row ∪ column), basic algorithm: first-come votes, can deadlock",
		Source:  "Maekawa 1985; Coulouris et al.",
		Assumes: proc.Assumptions{Reliable: true},
		Theory:  maekawaTheory,
		Notes: map[string]string{
			"messages_per_entry": "3(K−1) with voting sets of K = 2√N − 1 (the grid); more under contention",
		},
		New:    newMaekawa,
		Breaks: []string{"ME2", "ME3"},
		Messages: []proc.Message{
			mkRequest{}, mkVote{}, mkRelease{},
		},
	})
}

func newMaekawa(id proc.ID, n int) proc.Process {
	return &maekawa{voters: gridQuorum(n, gridColumns(n), id), votedFor: proc.None}
}

// GridQuorums returns a voting set for each of n processes (n ≥ 1; nil
// otherwise), each sorted by id: process i's set is its row and its column
// in a grid that holds the processes row by row.
//
// For a perfect square n the grid is the textbook's √N×√N one, and every
// set has K = 2√N − 1 members. Otherwise the grid has c columns and
// r = ⌈n/c⌉ rows, every row full but the last, and c is chosen to make the
// largest set, c + r − 1 members, as small as possible (min over c of
// c + ⌈n/c⌉ is ⌈2√n⌉, so K = ⌈2√n⌉ − 1, less than one above 2√n − 1); among
// such c the one that fills the last row best. The sets of the last row,
// and of the columns that stop short of it, are smaller than K.
//
// Every two sets intersect: two processes in one row share it; of two
// processes in different rows, at most one is in the partial last row, so
// the other, j, is in a full row, and that row has a cell in i's column —
// a process in both Vᵢ (column) and Vⱼ (row).
func GridQuorums(n int) [][]proc.ID {
	if n < 1 {
		return nil
	}
	cols := gridColumns(n)
	sets := make([][]proc.ID, n)
	for i := range sets {
		sets[i] = gridQuorum(n, cols, proc.ID(i))
	}
	return sets
}

// gridQuorum is process i's voting set in the grid of n processes in cols
// columns: its row, then the rest of its column, sorted.
func gridQuorum(n, cols int, i proc.ID) []proc.ID {
	row, col := int(i)/cols, int(i)%cols
	var v []proc.ID
	for j := row * cols; j < min((row+1)*cols, n); j++ {
		v = append(v, proc.ID(j))
	}
	for j := col; j < n; j += cols {
		if j/cols != row {
			v = append(v, proc.ID(j))
		}
	}
	slices.Sort(v)
	return v
}

// gridColumns chooses the number of columns of the grid for n processes:
// the fewest c + ⌈n/c⌉ − 1, then the fullest last row, then the fewest
// columns.
func gridColumns(n int) int {
	best, bestK, bestFill := 1, n, 0
	for c := 1; c <= n && c <= bestK; c++ { // c + r − 1 ≥ c: no wider grid can do better
		r := (n + c - 1) / c
		k := c + r - 1
		fill := n - (r-1)*c // processes in the last row
		if k < bestK || (k == bestK && fill*best > bestFill*c) {
			best, bestK, bestFill = c, k, fill
		}
	}
	return best
}

func (p *maekawa) Start(proc.Env) {}

func (p *maekawa) Timeout(proc.Env, any) {}

func (p *maekawa) Input(env proc.Env, in proc.Input) {
	switch in.(type) {
	case Acquire:
		p.acquire(env)
	case Release:
		p.release(env)
	}
	p.drain(env)
}

func (p *maekawa) Receive(env proc.Env, from proc.ID, m proc.Message) {
	p.handle(env, from, m)
	p.drain(env)
}

func (p *maekawa) handle(env proc.Env, from proc.ID, m proc.Message) {
	switch m.(type) {
	case mkRequest:
		p.onRequest(env, from)
	case mkVote:
		p.onVote(env, from)
	case mkRelease:
		p.onRelease(env, from)
	}
}

// send sends m to a member of the voting set; to oneself it goes through
// the local FIFO.
func (p *maekawa) send(env proc.Env, to proc.ID, m proc.Message) {
	if to == env.Self() {
		p.local = append(p.local, mkLocal{m})
		return
	}
	env.Send(to, m)
}

// drain handles the messages to oneself, in order, until none is left.
func (p *maekawa) drain(env proc.Env) {
	for len(p.local) > 0 {
		m := p.local[0].m
		p.local = p.local[1:]
		p.handle(env, env.Self(), m)
	}
}

// acquire: state := WANTED; multicast(Vᵢ, reqᵢ).
func (p *maekawa) acquire(env proc.Env) {
	if p.state != mkReleased {
		return // a second Acquire breaks the contract; ignore it
	}
	p.state = mkWanted
	p.got = map[proc.ID]bool{}
	env.Output(Waiting{For: slices.Clone(p.voters)})
	for _, v := range p.voters {
		p.send(env, v, mkRequest{})
	}
}

// onRequest: if state = HELD or voted, queue the request; else vote.
func (p *maekawa) onRequest(env proc.Env, from proc.ID) {
	if p.state == mkHeld || p.voted {
		p.queue = append(p.queue, from)
		return
	}
	p.vote(env, from)
}

// vote sends this process's vote to requester to: voted := TRUE.
func (p *maekawa) vote(env proc.Env, to proc.ID) {
	p.voted, p.votedFor = true, to
	env.Output(Lent{To: to})
	p.send(env, to, mkVote{})
}

// onVote counts a vote; with all K of them, state := HELD.
func (p *maekawa) onVote(env proc.Env, from proc.ID) {
	if p.state != mkWanted || p.got[from] {
		return // cannot happen on reliable channels; drop it
	}
	p.got[from] = true
	env.Output(Waiting{For: waitingFor(p.voters, p.got)})
	if len(p.got) == len(p.voters) {
		p.state = mkHeld
		env.Output(Enter{})
	}
}

// release: state := RELEASED; multicast(Vᵢ, releaseᵢ).
func (p *maekawa) release(env proc.Env) {
	if p.state != mkHeld {
		return // Release without Enter breaks the contract; ignore it
	}
	p.state = mkReleased
	p.got = nil
	env.Output(Exit{})
	for _, v := range p.voters {
		p.send(env, v, mkRelease{})
	}
}

// onRelease: the vote is back; it goes to the head of the queue, if any.
func (p *maekawa) onRelease(env proc.Env, from proc.ID) {
	if !p.voted || p.votedFor != from {
		return // not the holder of the vote: cannot happen; drop it
	}
	if len(p.queue) == 0 {
		p.voted, p.votedFor = false, proc.None
		env.Output(Lent{To: proc.None})
		return
	}
	next := p.queue[0]
	p.queue = p.queue[1:]
	p.vote(env, next)
}

// maekawaK is the size K of the largest voting set for n processes: the
// cost 3(K−1) of an entry is counted with it.
func maekawaK(n int) int {
	k := 0
	for _, q := range GridQuorums(n) {
		k = max(k, len(q))
	}
	return k
}

// maekawaTheory is the textbook cost of an entry with voting sets of K:
// request, vote and release to each of the K − 1 others; two message
// times before entry and between entries.
func maekawaTheory(n int) map[string]float64 {
	return map[string]float64{"messages_per_entry": 3 * float64(maekawaK(n)-1), "client_delay_msgs": 2, "sync_delay_msgs": 2}
}
