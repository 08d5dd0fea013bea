package mutex

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// The decentralized voting algorithm (Lin et al. 2004, as presented by
// Tanenbaum & van Steen §6.3): the resource has N replicas, each guarded by
// its own coordinator; a process may use the resource once it has the votes
// of m > N/2 coordinators; a coordinator always answers at once.
// Coordinators may crash and recover quickly, forgetting the permissions
// they gave — which is how mutual exclusion can fail (see
// decentralized_theory.go for how likely that is).
//
// Here every process is both a client and one of the N coordinators:
//
//	client acquires:   stamp the request ⟨C, pᵢ⟩ (Lamport) and send REQUEST
//	                   to all N coordinators, its own included (through the
//	                   network like the others: the N coordinators are
//	                   symmetric, and a reset of one is a crash of its
//	                   process).
//	coordinator gets a request: GRANT if it has granted to nobody (or to
//	                   an earlier attempt of this same client, which is
//	                   over), else DENY and remember the request in a queue
//	                   ordered by timestamp, one entry per client.
//	client gets GRANT: keep it; with m grants, enter. A grant it cannot use
//	                   (it entered already, or gave up the attempt) goes
//	                   straight back with RELEASE: the holder keeps exactly
//	                   m grants.
//	client gets DENY:  once more than N−m coordinators have denied, m grants
//	                   are out of reach: RELEASE every grant of the attempt
//	                   and retry after a random backoff, uniform in
//	                   [0, 2ms·2^min(k−1,5)] after the k-th attempt. The
//	                   request keeps its timestamp across attempts.
//	client leaves:     RELEASE to its m granters, marked "left".
//	coordinator gets RELEASE from its grantee: it is free again; if the
//	                   client left the critical section, it sends a NOTICE
//	                   to the oldest request in its queue, whose client
//	                   retries at once if it is backing off.
//
// The NOTICE is this implementation's answer to starvation, which the
// textbook leaves open: a client that keeps losing is told as soon as a
// coordinator it lost at becomes free because the holder left, before newer
// clients whose backoff has not yet expired, so the oldest waiter tends to
// win the next round. It is a hint, not a reservation — the freed
// coordinator grants whoever asks first — so it shortens the long waits
// without excluding starvation. Grants returned unused (a lost attempt, a
// surplus) send no notice: they free a coordinator for a moment only, and
// notices for them set off rounds of simultaneous retries that lose again.
// The tests measure the trade: with notices the slowest 1% of entries wait
// 40–50% less; under saturation, entries take more attempts.
//
// Crashes. The textbook lets coordinators fail; here a crash takes a client
// down with its coordinator, and two more rules keep requests moving:
//
//   - A request or reply to a process that is down is lost, so an attempt
//     that has not been decided after 20 ms counts the missing replies as
//     denials (a grant that comes later goes straight back).
//   - A client that crashed holding grants has forgotten them. A
//     coordinator whose grant has been out for 50 ms while it denies others
//     sends its client an INQUIRE; a client that neither holds nor awaits
//     that grant answers RELINQUISH, which frees it (and sends a NOTICE);
//     one that does stays silent and releases later. Critical sections
//     shorter than 50 ms never cause an INQUIRE.
//
// Every message names the request and the attempt, ⟨C, pᵢ⟩#k, tagged with
// the client's incarnation, so a grant or release of an earlier attempt is
// recognised and never confused with a current one; FIFO is not needed.
//
// ME1: without resets, a coordinator's grant is with one attempt at a time,
// a client in the critical section holds m grants, and two sets of m > N/2
// coordinators share one. A coordinator that crashes and recovers forgets
// its grant: if f of the holder's m coordinators reset, a second client can
// collect the N−m free grants plus the f forgotten ones, and enters while
// the holder is inside when f ≥ 2m−N (the tests show it). ME2: with a
// random backoff, every request is eventually granted, with or without
// crash-recover failures (a process that never recovers keeps its grants:
// crash-stop is not tolerated). ME3: grants go first come, first served, so
// a request that happened before another can lose to it.
//
// Cost per entry, in messages, with k attempts: N requests and N replies
// per attempt, one RELEASE for every grant received (returned after a lost
// attempt, returned as surplus, or released on leaving), and the notices:
// 2Nk + G + notices, where m ≤ G ≤ Nk (INQUIRE and RELINQUISH only after
// crashes or very long critical sections). Uncontended (k = 1, all N
// grant): 3N. Tanenbaum & van Steen's table says 2mk + m: it counts m
// requests and m replies per attempt and the m releases on leaving — as if
// a client asked exactly m coordinators and returned nothing after a lost
// attempt; asking all N replaces m by N in the first term, and returning
// what a lost attempt collected adds the rest of G. Delay before entry: 2k
// message times plus the backoffs (the table: 2mk, counting messages sent
// one after another).
type decentralized struct {
	m       int    // grants needed
	inc     uint64 // this incarnation's random tag, for the tickets
	notices bool   // send NOTICEs (off only to measure what they buy)
	clock   uint64 // Lamport clock, for the requests' timestamps

	// The client.
	state   mkState
	req     Stamp        // the current request, while WANTED or HELD
	try     int          // attempts made for req
	asking  bool         // an attempt is under way
	denied  int          // denies in the current attempt
	waitFor proc.TimerID // the current attempt's reply timeout
	granted []proc.ID
	backoff proc.TimerID

	// The coordinator.
	grantee proc.ID       // None if free
	since   time.Duration // when the grant was given (local clock)
	asked   time.Duration // when the grantee was last asked about it; 0: not yet
	grant   decTicket     // the attempt the grant is with
	waiters []Stamp       // denied requests, oldest first, one per client
}

// decTicket names one attempt of one request. Inc is drawn at random when
// the client starts, so that the tickets of a client that crashed and
// recovered (its clock starts again from 0) never equal its earlier ones.
type decTicket struct {
	Req Stamp  `json:"req"`
	Try int    `json:"try"`
	Inc uint64 `json:"inc"`
}

func (t decTicket) String() string { return fmt.Sprintf("%s#%d", t.Req, t.Try) }

// before orders two tickets of one incarnation: by request, then attempt.
func (t decTicket) before(o decTicket) bool {
	return t.Req.Less(o.Req) || (t.Req == o.Req && t.Try < o.Try)
}

// decRequest asks a coordinator for its grant.
type decRequest struct {
	T decTicket `json:"t"`
}

// decGrant is a coordinator's permission.
type decGrant struct {
	T decTicket `json:"t"`
}

// decDeny is a coordinator's refusal: it has granted to someone else.
type decDeny struct {
	T decTicket `json:"t"`
}

// decRelease gives a grant back; Left says the client used it and left
// the critical section (rather than returning it unused).
type decRelease struct {
	T    decTicket `json:"t"`
	Left bool      `json:"left,omitempty"`
}

// decNotice tells the client of request Req that a coordinator that denied
// it is free now.
type decNotice struct {
	Req Stamp `json:"req"`
}

func (decRequest) Kind() string     { return "request" }
func (m decRequest) String() string { return "REQ(" + m.T.String() + ")" }
func (decGrant) Kind() string       { return "grant" }
func (m decGrant) String() string   { return "GRANT(" + m.T.String() + ")" }
func (decDeny) Kind() string        { return "deny" }
func (m decDeny) String() string    { return "DENY(" + m.T.String() + ")" }
func (decRelease) Kind() string     { return "release" }
func (m decRelease) String() string {
	if m.Left {
		return "REL(" + m.T.String() + ")"
	}
	return "RET(" + m.T.String() + ")"
}

// decInquire asks a client whether it still uses the grant of attempt T.
type decInquire struct {
	T decTicket `json:"t"`
}

// decRelinquish answers an inquiry: the client does not hold or await the
// grant of attempt T (it crashed and forgot it).
type decRelinquish struct {
	T decTicket `json:"t"`
}

func (decNotice) Kind() string         { return "notice" }
func (m decNotice) String() string     { return "NOTICE(" + m.Req.String() + ")" }
func (decInquire) Kind() string        { return "inquire" }
func (m decInquire) String() string    { return "INQUIRE(" + m.T.String() + ")" }
func (decRelinquish) Kind() string     { return "relinquish" }
func (m decRelinquish) String() string { return "RELINQUISH(" + m.T.String() + ")" }

// decRetry is the backoff timer's tag.
type decRetry struct{}

func (decRetry) Kind() string { return "retry" }

// decGiveUp is the tag of the timer that ends attempt T if some replies
// never come.
type decGiveUp struct{ T decTicket }

func (decGiveUp) Kind() string { return "give-up" }

const (
	// decBackoff is the first backoff's upper bound; it doubles with every
	// lost attempt, up to 32 times.
	decBackoff = 2 * time.Millisecond
	// decReplyWait is how long an attempt waits for its replies before it
	// counts the missing ones as denials. Coordinators answer at once, so
	// only a crash loses a reply; a reply later than this is a grant of an
	// attempt given up, which goes straight back.
	decReplyWait = 20 * time.Millisecond
	// decInquireAfter is how long a grant may stay out, while others are
	// denied, before the coordinator asks its client whether it still uses
	// it; and how long it waits before asking again.
	decInquireAfter = 50 * time.Millisecond
)

func init() {
	register(proc.Algorithm{
		Name:    "decentralized",
		Summary: "decentralized voting: m > N/2 of N coordinators grant; coordinators that reset forget their grants",
		Source:  "Lin et al. 2004; Tanenbaum & van Steen §6.3",
		Assumes: proc.Assumptions{Reliable: true, Failures: "crash-recover"},
		Theory: func(n int) map[string]float64 {
			N := float64(n)
			return map[string]float64{
				"messages_per_entry": 3 * (math.Floor(N/2) + 1),
				"client_delay_msgs":  2 * (math.Floor(N/2) + 1),
			}
		},
		Notes: map[string]string{
			"messages_per_entry": "2mk + m with k attempts; k = 1 without contention, more when coordinators split their votes",
			"client_delay_msgs":  "Tanenbaum & van Steen's 2mk counts the m requests as sent one after another; sent in parallel, one round trip per attempt",
		},
		New:    NewDecentralized(0),
		Breaks: []string{"ME1", "ME3"},
		Messages: []proc.Message{
			decRequest{}, decGrant{}, decDeny{}, decRelease{}, decNotice{}, decInquire{}, decRelinquish{},
		},
	})
}

// Decentralized is the registered "decentralized" entry (m = ⌊N/2⌋+1 for
// every N) with clients that need m grants instead; m ≤ 0 returns the
// registered entry itself. A fixed m is valid for N/2 < m ≤ N, which the
// entry's Validate checks.
func Decentralized(m int) proc.Algorithm {
	i := slices.IndexFunc(Algorithms, func(a proc.Algorithm) bool { return a.Name == "decentralized" })
	a := Algorithms[i] // registered by init, with the family's defaults
	if m <= 0 {
		return a
	}
	a.Summary = fmt.Sprintf("decentralized voting with m = %d grants; coordinators that reset forget their grants", m)
	a.Validate = func(n int) error {
		if 2*m <= n || m > n {
			return fmt.Errorf("m = %d grants with %d coordinators: need N/2 < m ≤ N", m, n)
		}
		return nil
	}
	a.New = NewDecentralized(m)
	return a
}

// NewDecentralized returns the constructor of decentralized processes that
// need m grants to enter; m ≤ 0 means ⌊N/2⌋+1. An m outside (N/2, N] —
// which Decentralized(m).Validate rejects — is brought into it.
func NewDecentralized(m int) func(id proc.ID, n int) proc.Process {
	return newDecentralized(m, true)
}

func newDecentralized(m int, notices bool) func(id proc.ID, n int) proc.Process {
	return func(_ proc.ID, n int) proc.Process {
		need := m
		if need <= 0 || 2*need <= n {
			need = n/2 + 1
		}
		return &decentralized{m: min(need, n), notices: notices, grantee: proc.None}
	}
}

func (p *decentralized) Start(env proc.Env) { p.inc = env.Rand().Uint64() }

func (p *decentralized) Input(env proc.Env, in proc.Input) {
	switch in.(type) {
	case Acquire:
		p.acquire(env)
	case Release:
		p.release(env)
	}
}

func (p *decentralized) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m := m.(type) {
	case decRequest:
		p.clock = max(p.clock, m.T.Req.C) + 1
		p.onRequest(env, from, m.T)
	case decGrant:
		p.onGrant(env, from, m.T)
	case decDeny:
		p.onDeny(env, m.T)
	case decRelease:
		p.onRelease(env, from, m)
	case decNotice:
		p.onNotice(env, m.Req)
	case decInquire:
		p.onInquire(env, from, m.T)
	case decRelinquish:
		p.onRelinquish(env, from, m.T)
	}
}

func (p *decentralized) Timeout(env proc.Env, tag any) {
	switch tag := tag.(type) {
	case decRetry:
		if p.state == mkWanted && !p.asking {
			p.attempt(env)
		}
	case decGiveUp:
		// A coordinator that crashed lost the request or its answer.
		if p.state == mkWanted && p.asking && tag.T == p.ticket() {
			p.lose(env)
		}
	}
}

func (p *decentralized) ticket() decTicket { return decTicket{Req: p.req, Try: p.try, Inc: p.inc} }

// acquire stamps a new request and makes the first attempt.
func (p *decentralized) acquire(env proc.Env) {
	if p.state != mkReleased {
		return // a second Acquire breaks the contract; ignore it
	}
	p.state = mkWanted
	p.clock++
	p.req = Stamp{C: p.clock, P: env.Self()}
	p.try = 0
	p.attempt(env)
}

// attempt asks all N coordinators.
func (p *decentralized) attempt(env proc.Env) {
	p.try++
	p.asking, p.denied, p.granted = true, 0, nil
	p.waiting(env)
	for c := range env.N() {
		env.Send(proc.ID(c), decRequest{T: p.ticket()})
	}
	p.waitFor = env.SetTimer(decReplyWait, decGiveUp{T: p.ticket()})
}

// waiting reports the coordinators that have not granted the current (or
// the lost) attempt.
func (p *decentralized) waiting(env proc.Env) {
	w := make([]proc.ID, 0, env.N())
	for c := range env.N() {
		if !slices.Contains(p.granted, proc.ID(c)) {
			w = append(w, proc.ID(c))
		}
	}
	env.Output(Waiting{For: w})
}

// onGrant keeps a grant of the current attempt, up to m; any other goes
// back at once.
func (p *decentralized) onGrant(env proc.Env, from proc.ID, t decTicket) {
	if p.state != mkWanted || !p.asking || t != p.ticket() || len(p.granted) >= p.m {
		env.Send(from, decRelease{T: t})
		return
	}
	p.granted = append(p.granted, from)
	p.waiting(env)
	if len(p.granted) == p.m {
		p.state, p.asking = mkHeld, false
		env.CancelTimer(p.waitFor)
		env.Output(Enter{})
	}
}

// onDeny counts a refusal; when m grants are out of reach, the attempt is
// lost: give back what it got and back off.
func (p *decentralized) onDeny(env proc.Env, t decTicket) {
	if p.state != mkWanted || !p.asking || t != p.ticket() {
		return // of an attempt already decided
	}
	p.denied++
	if p.denied > env.N()-p.m {
		env.CancelTimer(p.waitFor)
		p.lose(env)
	}
}

// lose ends the current attempt without the critical section: it gives
// back the grants it got and backs off.
func (p *decentralized) lose(env proc.Env) {
	p.asking = false
	if len(p.granted) > 0 {
		p.waiting(env)
	}
	for _, c := range p.granted {
		env.Send(c, decRelease{T: p.ticket()})
	}
	p.granted = nil
	limit := int64(decBackoff) << min(p.try-1, 5)
	p.backoff = env.SetTimer(time.Duration(env.Rand().Int64N(limit+1)), decRetry{})
}

// onNotice: a coordinator that denied request r is free; retry now if
// backing off.
func (p *decentralized) onNotice(env proc.Env, r Stamp) {
	if p.state != mkWanted || p.asking || r != p.req {
		return // stale: entered, left, or already asking again
	}
	env.CancelTimer(p.backoff)
	p.attempt(env)
}

// release leaves: RELEASE to the m granters.
func (p *decentralized) release(env proc.Env) {
	if p.state != mkHeld {
		return // Release without Enter breaks the contract; ignore it
	}
	p.state = mkReleased
	env.Output(Exit{})
	for _, c := range p.granted {
		env.Send(c, decRelease{T: p.ticket(), Left: true})
	}
	p.granted = nil
}

// onRequest is the coordinator answering at once.
func (p *decentralized) onRequest(env proc.Env, from proc.ID, t decTicket) {
	switch {
	case p.grantee == proc.None:
		p.give(env, from, t)
		return
	case p.grantee == from && t.Inc == p.grant.Inc && p.grant.before(t):
		// The client has moved past the attempt that holds the grant (its
		// release is on the way, or lost): the grant goes to the new one.
		p.give(env, from, t)
		return
	case p.grantee == from && t.Inc == p.grant.Inc:
		// An attempt older than the grant's, overtaken on the way: it is
		// over, and must not take the grant from the newer one.
		env.Send(from, decDeny{T: t})
		return
	}
	p.dropWaiter(from)
	i, _ := slices.BinarySearchFunc(p.waiters, t.Req, mksCompare)
	p.waiters = slices.Insert(p.waiters, i, t.Req)
	env.Send(from, decDeny{T: t})
	if p.grantee == from {
		// Another incarnation of the grantee: one of the two forgot the
		// grant, and only the client can tell which.
		p.inquire(env)
		return
	}
	p.maybeInquire(env)
}

// give grants to attempt t of client to.
func (p *decentralized) give(env proc.Env, to proc.ID, t decTicket) {
	p.dropWaiter(to)
	if p.grantee != to {
		env.Output(Lent{To: to})
	}
	p.grantee, p.grant, p.since, p.asked = to, t, env.Now(), 0
	env.Send(to, decGrant{T: t})
}

// maybeInquire asks the grantee whether it still uses the grant, if the
// grant has been out for decInquireAfter and nobody asked in that time: a
// client that crashed and recovered has forgotten it and would keep it
// from everyone for ever.
func (p *decentralized) maybeInquire(env proc.Env) {
	now := env.Now()
	if now-p.since < decInquireAfter || (p.asked != 0 && now-p.asked < decInquireAfter) {
		return
	}
	p.inquire(env)
}

func (p *decentralized) inquire(env proc.Env) {
	p.asked = max(env.Now(), 1)
	env.Send(p.grantee, decInquire{T: p.grant})
}

// onInquire is the client asked about the grant of attempt t: it answers
// only if it neither holds nor awaits it. A client that does will release
// it; its silence costs nothing.
func (p *decentralized) onInquire(env proc.Env, from proc.ID, t decTicket) {
	if p.state != mkReleased && t == p.ticket() && (p.asking || p.state == mkHeld) {
		return
	}
	env.Send(from, decRelinquish{T: t})
}

// onRelinquish frees a grant its client forgot.
func (p *decentralized) onRelinquish(env proc.Env, from proc.ID, t decTicket) {
	p.onRelease(env, from, decRelease{T: t, Left: true})
}

func (p *decentralized) dropWaiter(client proc.ID) {
	p.waiters = slices.DeleteFunc(p.waiters, func(s Stamp) bool { return s.P == client })
}

// onRelease frees the coordinator if the grant is back, and notifies the
// oldest request it denied.
func (p *decentralized) onRelease(env proc.Env, from proc.ID, m decRelease) {
	if p.grantee != from || p.grant != m.T {
		return // a grant this coordinator no longer has (reset, or superseded)
	}
	p.grantee, p.grant = proc.None, decTicket{}
	env.Output(Lent{To: proc.None})
	if len(p.waiters) > 0 && m.Left && p.notices {
		oldest := p.waiters[0]
		p.waiters = p.waiters[1:]
		env.Send(oldest.P, decNotice{Req: oldest})
	}
}
