package mutex

import (
	"slices"

	"github.com/cohort-go/cohort/proc"
)

// The majority variant of Ricart–Agrawala (after Coulouris et al.,
// following the JUST-RELEASED variant): "if each process votes only once —
// a vote given to one process cannot be given to another — it suffices to
// collect (N+1)/2 majority replies". The textbook says no more; this file
// makes it precise as follows.
//
//   - Every process has one vote. A reply is that vote: a process whose vote
//     is free gives it to the first request that reaches it (first come,
//     first served), and then queues every other request until the vote
//     comes back. When it comes back it goes to the queued request with the
//     smallest ⟨T, p⟩, the Ricart–Agrawala order.
//   - A requester multicasts ⟨T, pᵢ⟩ to the N−1 others and also asks its own
//     vote (locally, without a message): its own vote counts like any other
//     if it is free. It enters with a strict majority, ⌊N/2⌋+1 votes
//     (⌈(N+1)/2⌉: the textbook's (N+1)/2 for odd N; for even N, N/2 votes
//     would not be a majority and two requesters could both collect them).
//   - Leaving, it sends release ⟨T, pᵢ⟩ to all N−1 others: a voter whose
//     vote is with that request takes it back; one that queued the request
//     forgets it; one that has not seen the request yet (the release
//     overtook it on a non-FIFO channel) drops it when it comes. Votes that
//     reach the requester after it entered or left are not used: the
//     release it sent to everyone frees them.
//
// Any two majorities share a voter and a voter's vote is with one request
// at a time, so ME1 holds. ME2 does not: with first-come voting, requesters
// that start together can split the votes so that none has a majority, and
// since nobody gives back a vote it did not use, they wait for ever. Two
// processes (majority 2) that request at once each vote for themselves and
// deadlock at once; the sweep in the tests finds such cycles for N = 3, 5
// and 8 too. The textbook's sentence is incomplete: majority voting needs a
// deadlock-avoidance rule, such as Maekawa's inquire/relinquish (see
// "maekawa-safe"), where a voter asks for its vote back when an earlier
// request arrives. Nor does first-come voting respect happened-before
// (ME3): a voter grants whichever request reaches it first, and a request
// issued later can arrive earlier (a shorter path, a faster link). Both are
// in the entry's Breaks.
//
// Wait-for graph: a requester's Waiting lists every other process whose
// vote it lacks (it needs any ⌊N/2⌋+1 − got of them); a voter outputs
// Lent{To: p} when its vote goes to p (itself included) and Lent{To: None}
// when the vote is back and nobody is queued. A requester whose own vote is
// away does not list itself: its Lent already points at the holder.
//
// Assumptions: reliable channels, no failures; FIFO is not needed.
//
// Cost: N−1 requests, up to N−1 votes, and N−1 releases: at most 3(N−1)
// messages per entry (fewer votes when a voter learns of the release
// before it could vote); the sweep measures 20.8 for N = 8, against 14 for
// the base algorithm. The majority saves nothing on the network: what it
// buys is that a requester waits for any majority, not for everyone.
type raMajority struct {
	clock uint64 // Lamport clock, as in Ricart–Agrawala

	// The requester.
	state raState // RELEASED, WANTED or HELD
	req   Stamp   // the current request, while WANTED or HELD
	votes map[proc.ID]bool

	// The voter.
	voted     bool
	votedFor  Stamp   // the request that has the vote, if voted
	queue     []Stamp // requests waiting for the vote, smallest first
	withdrawn []Stamp // released requests not received yet (non-FIFO)
}

// majRequest asks for a vote.
type majRequest struct {
	T Stamp `json:"t"`
}

// majVote is the textbook's reply: the voter's one vote, for request Req.
// C is the voter's clock.
type majVote struct {
	Req Stamp  `json:"req"`
	C   uint64 `json:"c"`
}

// majRelease withdraws request Req: the vote for it, if given, is free.
type majRelease struct {
	Req Stamp  `json:"req"`
	C   uint64 `json:"c"`
}

func (majRequest) Kind() string     { return "request" }
func (m majRequest) String() string { return "REQ(" + m.T.String() + ")" }
func (majVote) Kind() string        { return "reply" }
func (m majVote) String() string    { return "VOTE(" + m.Req.String() + ")" }
func (majRelease) Kind() string     { return "release" }
func (m majRelease) String() string { return "REL(" + m.Req.String() + ")" }

func init() {
	register(proc.Algorithm{
		Name:    "ricart-agrawala-majority",
		Summary: "Ricart–Agrawala where each process votes once and a majority of votes suffices; can deadlock",
		Source:  "Coulouris et al. (majority variant)",
		Assumes: proc.Assumptions{Reliable: true},
		Theory: func(n int) map[string]float64 {
			return map[string]float64{
				"client_delay_msgs": 2,
				"sync_delay_msgs":   2,
			}
		},
		Notes: map[string]string{
			"messages_per_entry": "requests and releases still go to all N−1 others (any majority may answer); only the votes are fewer, so nothing is saved",
		},
		New:    func(proc.ID, int) proc.Process { return &raMajority{} },
		Breaks: []string{"ME2", "ME3"},
		Messages: []proc.Message{
			majRequest{}, majVote{}, majRelease{},
		},
	})
}

// majNeed is the number of votes a requester needs among n processes.
func majNeed(n int) int { return n/2 + 1 }

func (r *raMajority) Start(proc.Env) {}

// The application's messages share the Lamport clock (see clocked).
func (r *raMajority) appSend() uint64   { r.clock++; return r.clock }
func (r *raMajority) appRecv(ts uint64) { r.clock = max(r.clock, ts) + 1 }

func (r *raMajority) Timeout(proc.Env, any) {}

func (r *raMajority) Input(env proc.Env, in proc.Input) {
	switch in.(type) {
	case Acquire:
		r.acquire(env)
	case Release:
		r.release(env)
	}
}

func (r *raMajority) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m := m.(type) {
	case majRequest:
		r.clock = max(r.clock, m.T.C) + 1
		r.onRequest(env, m.T)
	case majVote:
		r.clock = max(r.clock, m.C) + 1
		r.onVote(env, from, m.Req)
	case majRelease:
		r.clock = max(r.clock, m.C) + 1
		r.onRelease(env, m.Req)
	}
}

// acquire: state := WANTED; multicast the request; ask one's own vote.
func (r *raMajority) acquire(env proc.Env) {
	if r.state != raReleased {
		return // a second Acquire breaks the contract; ignore it
	}
	r.state = raWanted
	r.clock++
	r.req = Stamp{C: r.clock, P: env.Self()}
	r.votes = map[proc.ID]bool{}
	for _, p := range others(env.Self(), env.N()) {
		env.Send(p, majRequest{T: r.req})
	}
	r.onRequest(env, r.req)
	if !r.votes[env.Self()] {
		r.waiting(env) // its own vote is away too
	}
}

// onRequest is the voter receiving request t (its own included).
func (r *raMajority) onRequest(env proc.Env, t Stamp) {
	if i := slices.Index(r.withdrawn, t); i >= 0 {
		r.withdrawn = slices.Delete(r.withdrawn, i, i+1)
		return // released before it got here
	}
	if r.voted {
		i, _ := slices.BinarySearchFunc(r.queue, t, majCompare)
		r.queue = slices.Insert(r.queue, i, t)
		return
	}
	r.vote(env, t)
}

// vote gives this process's vote to request t.
func (r *raMajority) vote(env proc.Env, t Stamp) {
	r.voted, r.votedFor = true, t
	env.Output(Lent{To: t.P})
	if t.P == env.Self() {
		r.onVote(env, t.P, t)
		return
	}
	r.clock++
	env.Send(t.P, majVote{Req: t, C: r.clock})
}

// onVote is the requester receiving a vote for request t.
func (r *raMajority) onVote(env proc.Env, from proc.ID, t Stamp) {
	if t != r.req || r.state == raReleased {
		return // for a request already released; the release frees it
	}
	r.votes[from] = true
	if r.state != raWanted {
		return // entered already; kept until the release
	}
	if len(r.votes) < majNeed(env.N()) {
		r.waiting(env)
		return
	}
	r.state = raHeld
	env.Output(Enter{})
}

// waiting reports the other processes whose vote the requester lacks.
func (r *raMajority) waiting(env proc.Env) {
	env.Output(Waiting{For: waitingFor(others(env.Self(), env.N()), r.votes)})
}

// release: state := RELEASED; release the request everywhere, here too.
func (r *raMajority) release(env proc.Env) {
	if r.state != raHeld {
		return // Release without Enter breaks the contract; ignore it
	}
	r.state = raReleased
	r.votes = nil
	env.Output(Exit{})
	r.clock++
	for _, p := range others(env.Self(), env.N()) {
		env.Send(p, majRelease{Req: r.req, C: r.clock})
	}
	r.onRelease(env, r.req)
}

// onRelease is the voter learning that request t is over.
func (r *raMajority) onRelease(env proc.Env, t Stamp) {
	switch {
	case r.voted && r.votedFor == t:
		r.voted = false
		if len(r.queue) == 0 {
			env.Output(Lent{To: proc.None})
			return
		}
		next := r.queue[0]
		r.queue = r.queue[1:]
		r.vote(env, next)
	case slices.Contains(r.queue, t):
		r.queue = slices.DeleteFunc(r.queue, func(q Stamp) bool { return q == t })
	default:
		r.withdrawn = append(r.withdrawn, t)
	}
}

func majCompare(a, b Stamp) int {
	switch {
	case a.Less(b):
		return -1
	case b.Less(a):
		return 1
	}
	return 0
}
