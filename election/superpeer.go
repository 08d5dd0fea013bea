package election

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Super-peer selection (Tanenbaum & van Steen §6.5, elections in
// large-scale systems): a large system elects many coordinators, not one.
// Tanenbaum & van Steen ask that normal nodes reach a super-peer with low
// latency, that super-peers be spread evenly over the overlay, that there
// be a predefined proportion of them, and that none serve more than a fixed
// number of nodes. They give two ways; each is an entry here. Neither
// elects a single leader, so they keep neither E1 nor agreement: each
// process outputs one SuperPeer naming the super-peer it belongs to.

// SuperPeer reports the super-peer of the process's group: itself (Self)
// or another process (Of). ID is the process's m-bit identifier when the
// algorithm draws one; Hops is the distance to Of when the algorithm
// measures it.
type SuperPeer struct {
	Self bool    `json:"self"`
	Of   proc.ID `json:"of"`
	ID   uint64  `json:"id,omitempty"`
	Hops int     `json:"hops,omitempty"`
}

func (SuperPeer) Kind() string { return "superpeer" }
func (s SuperPeer) String() string {
	if s.Self {
		return "super-peer itself"
	}
	return "super-peer " + s.Of.String() + " (" + strconv.Itoa(s.Hops) + " hops)"
}

// Prefix (Tanenbaum & van Steen §6.5, super-peers in a DHT): every node
// draws a random, uniformly distributed m-bit identifier; the leftmost k
// bits name its group, and the super-peer of group g is the node
// responsible for the key g·2^(m−k) — the first identifier at or after the
// key on the identifier ring, as a DHT such as Chord routes a lookup. The
// textbook's example: m = 8, k = 3, and the super-peer of a node is found
// by looking up ID ∧ 11100000. There are at most 2^k super-peers, and a
// group's super-peer is one of its own members (the node's own identifier
// is at or after the key, so the successor is no larger than it).
//
//	Start:               draw ID uniformly from [0, 2^m)
//	Elect, or first ID:  send ID to every other process
//	All N IDs known:     output the successor of (ID >> (m−k)) << (m−k)
//
// Knowing everyone's identifier stands in for the DHT: a real deployment
// would look the key up in O(log N) hops instead of exchanging N(N−1)
// messages. Equal identifiers (unlikely with m = 32) are ordered by
// process id.
//
// Assumptions: reliable channels, no failures, every process can address
// every other. FIFO is not needed.
//
// Cost: N(N−1) ID messages; time: two message latencies (the wake-up, then
// the answers).
type prefix struct {
	m, k      int
	id        uint64
	ids       map[proc.ID]uint64
	announced bool
	done      bool
}

// spID announces the sender's identifier.
type spID struct {
	ID uint64 `json:"id"`
}

func (spID) Kind() string     { return "id" }
func (m spID) String() string { return "ID(" + strconv.FormatUint(m.ID, 10) + ")" }

// newPrefix builds prefix processes with m-bit identifiers and k-bit group
// prefixes (0 < k <= m <= 64).
func newPrefix(m, k int) func(proc.ID, int) proc.Process {
	if m < 1 || m > 64 || k < 1 || k > m {
		panic(fmt.Sprintf("superpeer-prefix: need 0 < k <= m <= 64, got m=%d k=%d", m, k))
	}
	return func(proc.ID, int) proc.Process { return &prefix{m: m, k: k, ids: map[proc.ID]uint64{}} }
}

// mask keeps the low m bits.
func mask(m int) uint64 {
	if m >= 64 {
		return ^uint64(0)
	}
	return 1<<m - 1
}

// successor is the process responsible for key: the one with the smallest
// identifier at or after key, wrapping around to the smallest of all.
func successor(ids map[proc.ID]uint64, key uint64) proc.ID {
	best, first := proc.None, proc.None
	less := func(a, b proc.ID) bool { return ids[a] < ids[b] || (ids[a] == ids[b] && a < b) }
	for p, id := range ids {
		if first == proc.None || less(p, first) {
			first = p
		}
		if id >= key && (best == proc.None || less(p, best)) {
			best = p
		}
	}
	if best == proc.None {
		return first
	}
	return best
}

func init() {
	register(proc.Algorithm{
		Name:    "superpeer-prefix",
		Summary: "random m-bit ids; the super-peer of a group is the successor of its k-bit prefix followed by zeros (N(N−1) messages)",
		Source:  "Tanenbaum & van Steen §6.5",
		Assumes: proc.Assumptions{Reliable: true, Topology: "full"},
		New:     newPrefix(32, 3),
		Checks:  []string{"integrity", "no-duplicates"},
		Messages: []proc.Message{
			spID{},
		},
		Scenario: "nodes: 16\ninputs:\n  - at 0ms node 0 elect\n",
	})
	register(proc.Algorithm{
		Name:    "superpeer-tokens",
		Summary: "max(1, N/8) tokens placed at random repel each other by gossip for N rounds; their holders become super-peers",
		Source:  "Tanenbaum & van Steen §6.5",
		Assumes: proc.Assumptions{Reliable: true, Synchronous: true, Topology: "graph"},
		New:     newTokens(0, 0, 0),
		Checks:  []string{"integrity", "no-duplicates"},
		Messages: []proc.Message{
			spStart{}, spReport{}, spToken{}, spAnnounce{},
		},
		Scenario: "nodes: 16\ntopology: grid\ninputs:\n  - at 0ms node 0 elect\n",
	})
}

func (p *prefix) Start(env proc.Env) {
	p.id = env.Rand().Uint64() & mask(p.m)
	p.ids[env.Self()] = p.id
	p.maybeDecide(env)
}

func (p *prefix) Timeout(proc.Env, any) {}

func (p *prefix) Input(env proc.Env, in proc.Input) {
	if _, ok := in.(Elect); ok {
		p.announce(env)
	}
}

func (p *prefix) Receive(env proc.Env, from proc.ID, m proc.Message) {
	if m, ok := m.(spID); ok {
		p.onID(env, from, m)
	}
}

// announce sends the identifier to everyone, once.
func (p *prefix) announce(env proc.Env) {
	if p.announced {
		return
	}
	p.announced = true
	for q := proc.ID(0); int(q) < env.N(); q++ {
		if q != env.Self() {
			env.Send(q, spID{ID: p.id})
		}
	}
}

// onID records a peer's identifier; the first one wakes the process.
func (p *prefix) onID(env proc.Env, from proc.ID, m spID) {
	p.ids[from] = m.ID
	p.announce(env)
	p.maybeDecide(env)
}

// maybeDecide outputs the group's super-peer once every identifier is known.
func (p *prefix) maybeDecide(env proc.Env) {
	if p.done || len(p.ids) < env.N() {
		return
	}
	p.done = true
	shift := uint(p.m - p.k)
	sp := successor(p.ids, p.id>>shift<<shift)
	env.Output(SuperPeer{Self: sp == env.Self(), Of: sp, ID: p.id})
}

// Tokens (Tanenbaum & van Steen §6.5, super-peers in an overlay space): T
// tokens are placed at random nodes; each token repels the others, the
// force being spread by gossip, and a token moves in the direction the
// forces push it. A node that has held a token for long enough promotes
// itself to super-peer. Cohort measures the force as the hop distance to
// the nearest other token and moves a token to the neighbour where that
// distance is largest, if it is larger than where the token is — a token
// climbs away from its nearest rival, so the tokens spread over the graph.
//
// Rounds are driven by timers, as in flooding, and the source of the Elect
// input draws the placement (T distinct nodes) and floods it with the
// wake-up; neighbours' rounds are then less than one latency apart.
//
//	Each round:          send the two nearest tokens known (id, distance)
//	                     to every neighbour, if they changed: one's own
//	                     tokens at distance 0, the neighbours' latest
//	                     reports plus one
//	End of every third   for each token held, move it to the neighbour
//	round before R:      whose nearest other token is farthest, if farther
//	                     than here (one token per neighbour)
//	End of round R:      a holder outputs SuperPeer{Self} and announces
//	                     itself to its neighbours at distance 0
//	Then each round:     a node that heard announcements outputs the
//	                     nearest (fewest hops, then smallest id) and passes
//	                     it on one hop further, once
//
// Moving only every third round keeps tokens from meeting: a moved token
// reaches its new node within the next round, shows in that node's report
// the round after, and in its neighbours' reports the one after that, so
// when a holder decides, each neighbour's report tells exactly whether a
// token sits at or next to it. Two tokens could only land on the same node
// u from two of u's neighbours, but then u's nearest other token is at
// distance 1, no farther than the holders' own nearest (2, through u), and
// neither moves; a token never moves onto a node that holds one (distance
// 0). So tokens are never lost, duplicated or merged, and exactly T nodes
// become super-peers. Hill climbing stops at a local optimum; R (N by
// default, more than any diameter) bounds the rounds.
//
// Assumptions: synchronous (latency under half the period), reliable
// channels, no failures, a connected graph, one Elect per run.
//
// Cost: the wake-up 2|E| − (N−1); reports at most 2|E|·R, far fewer in
// practice, since a node reports only when its view changed and views
// settle with the tokens; at most T·R/3 token moves; the announcements
// 2|E|. Time: R periods plus one per hop from the farthest
// node to its super-peer.
type tokens struct {
	period time.Duration
	rounds int // R
	count  int // T; 0 means max(1, N/8)

	round   int
	held    []int                // the tokens here, sorted
	pending []spToken            // tokens received during their move round, held from the next
	last    map[proc.ID]spReport // each neighbour's latest report of this round or before
	early   map[proc.ID]spReport // reports of the next round, received early
	sent    []spEntry            // the last report sent
	derived []spEntry            // the neighbours' reports of the last round, one hop further
	offers  []spAnnounce
	done    bool
}

// spEntry is a token and its distance in hops.
type spEntry struct {
	Token int `json:"token"`
	Dist  int `json:"dist"`
}

// spStart wakes a process and tells it where the tokens start: token i at
// Tokens[i].
type spStart struct {
	Tokens []proc.ID `json:"tokens"`
}

// spReport is a round's gossip: the two nearest tokens the sender knows.
type spReport struct {
	Round int       `json:"round"`
	Near  []spEntry `json:"near"`
}

// spToken hands a token over at the end of move round Round.
type spToken struct {
	Round int `json:"round"`
	Token int `json:"token"`
}

// spAnnounce offers super-peer Of, Hops hops from the sender, in round Round.
type spAnnounce struct {
	Round int     `json:"round"`
	Of    proc.ID `json:"of"`
	Hops  int     `json:"hops"`
}

func (spStart) Kind() string { return "start" }
func (m spStart) String() string {
	b := []byte("START(")
	for i, p := range m.Tokens {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, p.String()...)
	}
	return string(append(b, ')'))
}
func (spReport) Kind() string { return "report" }
func (m spReport) String() string {
	b := append([]byte("REPORT(round "), strconv.Itoa(m.Round)...)
	for _, e := range m.Near {
		b = append(b, ", t"...)
		b = strconv.AppendInt(b, int64(e.Token), 10)
		b = append(b, '@')
		b = strconv.AppendInt(b, int64(e.Dist), 10)
	}
	return string(append(b, ')'))
}
func (spToken) Kind() string { return "token" }
func (m spToken) String() string {
	return "TOKEN(t" + strconv.Itoa(m.Token) + ", round " + strconv.Itoa(m.Round) + ")"
}
func (spAnnounce) Kind() string { return "announce" }
func (m spAnnounce) String() string {
	return "SUPERPEER(" + m.Of.String() + ", " + strconv.Itoa(m.Hops) + " hops, round " + strconv.Itoa(m.Round) + ")"
}

// tokenPeriod is the length of a round, as for flooding.
const tokenPeriod = floodPeriod

// tokenMoveEvery is the number of rounds between moves (see the type).
const tokenMoveEvery = 3

// far stands for "no other token known".
const far = 1 << 30

// newTokens builds token processes with the given period (0: tokenPeriod),
// number of rounds R (0: N) and number of tokens T (0: max(1, N/8)).
func newTokens(period time.Duration, rounds, count int) func(proc.ID, int) proc.Process {
	if period <= 0 {
		period = tokenPeriod
	}
	return func(_ proc.ID, n int) proc.Process {
		r, c := rounds, count
		if r <= 0 {
			r = max(n, tokenMoveEvery)
		}
		if c <= 0 {
			c = max(1, n/8)
		}
		return &tokens{period: period, rounds: r, count: min(c, n)}
	}
}

func (t *tokens) Start(proc.Env) {}

func (t *tokens) Input(env proc.Env, in proc.Input) {
	if _, ok := in.(Elect); ok && t.round == 0 {
		perm := env.Rand().Perm(env.N())
		place := make([]proc.ID, t.count)
		for i := range place {
			place[i] = proc.ID(perm[i])
		}
		t.wake(env, spStart{Tokens: place}, env.Self())
	}
}

func (t *tokens) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m := m.(type) {
	case spStart:
		if t.round == 0 {
			t.wake(env, m, from)
		}
	case spReport:
		t.onReport(from, m)
	case spToken:
		t.onToken(m)
	case spAnnounce:
		t.offers = append(t.offers, m)
	}
}

func (t *tokens) Timeout(env proc.Env, tag any) {
	if r, ok := tag.(tokenRound); ok && r.Round == t.round && !t.done {
		t.onRoundEnd(env)
	}
}

// tokenRound is the timer tag that ends a round.
type tokenRound struct{ Round int }

// wake joins round 1: takes the tokens placed here and passes the
// placement on.
func (t *tokens) wake(env proc.Env, m spStart, from proc.ID) {
	for i, p := range m.Tokens {
		if p == env.Self() {
			t.held = append(t.held, i)
		}
	}
	for _, p := range env.Neighbors() {
		if p != from {
			env.Send(p, m)
		}
	}
	t.beginRound(env, 1)
}

// onReport files a neighbour's report: it holds from its round on.
func (t *tokens) onReport(from proc.ID, m spReport) {
	if t.last == nil {
		t.last, t.early = map[proc.ID]spReport{}, map[proc.ID]spReport{}
	}
	if m.Round > t.round {
		t.early[from] = m
	} else if l, ok := t.last[from]; !ok || m.Round >= l.Round {
		t.last[from] = m
	}
}

// onToken takes a token over; one moved in a round this process has not
// finished is held from its next round on.
func (t *tokens) onToken(m spToken) {
	if m.Round < t.round {
		t.hold(m.Token)
		return
	}
	t.pending = append(t.pending, m)
}

func (t *tokens) hold(tok int) {
	t.held = append(t.held, tok)
	slices.Sort(t.held)
}

// foldPending holds the pending tokens moved before round r.
func (t *tokens) foldPending(r int) {
	keep := t.pending[:0]
	for _, m := range t.pending {
		if m.Round < r {
			t.hold(m.Token)
		} else {
			keep = append(keep, m)
		}
	}
	t.pending = keep
}

// beginRound starts round r: report the two nearest tokens to every
// neighbour, if they changed since the last report.
func (t *tokens) beginRound(env proc.Env, r int) {
	t.round = r
	if t.last == nil {
		t.last, t.early = map[proc.ID]spReport{}, map[proc.ID]spReport{}
	}
	for _, p := range env.Neighbors() {
		if m, ok := t.early[p]; ok && m.Round <= r {
			t.last[p] = m
			delete(t.early, p)
		}
	}
	env.SetTimer(t.period, tokenRound{Round: r})
	if r > t.rounds {
		return // announcing: no more reports
	}
	t.foldPending(r)
	near := nearest(t.held, t.derived)
	if r > 1 && slices.Equal(near, t.sent) {
		return
	}
	t.sent = near
	for _, p := range env.Neighbors() {
		env.Send(p, spReport{Round: r, Near: near})
	}
}

// nearest is the two nearest distinct tokens of the held ones (distance 0)
// and of entries.
func nearest(held []int, entries []spEntry) []spEntry {
	var all []spEntry
	for _, h := range held {
		all = append(all, spEntry{Token: h})
	}
	all = append(all, entries...)
	slices.SortFunc(all, func(a, b spEntry) int {
		if a.Dist != b.Dist {
			return a.Dist - b.Dist
		}
		return a.Token - b.Token
	})
	var out []spEntry
	for _, e := range all {
		if len(out) == 2 {
			break
		}
		if !slices.ContainsFunc(out, func(o spEntry) bool { return o.Token == e.Token }) {
			out = append(out, e)
		}
	}
	return out
}

// otherThan is the distance of the nearest token other than tok in a
// report, far if there is none.
func otherThan(near []spEntry, tok int) int {
	for _, e := range near {
		if e.Token != tok {
			return e.Dist
		}
	}
	return far
}

// onRoundEnd ends the current round: move tokens, promote, or pass on the
// nearest super-peer.
func (t *tokens) onRoundEnd(env proc.Env) {
	r := t.round
	if r > t.rounds {
		t.onAnnounceRound(env, r)
		return
	}
	t.derived = t.derived[:0]
	for _, p := range env.Neighbors() {
		for _, e := range t.last[p].Near {
			t.derived = append(t.derived, spEntry{Token: e.Token, Dist: e.Dist + 1})
		}
	}
	if r%tokenMoveEvery == 0 && r+tokenMoveEvery <= t.rounds {
		t.move(env, r)
	}
	if r == t.rounds {
		t.foldPending(r + 1)
		if len(t.held) > 0 {
			t.done = true
			env.Output(SuperPeer{Self: true, Of: env.Self()})
			for _, p := range env.Neighbors() {
				env.Send(p, spAnnounce{Round: r + 1, Of: env.Self(), Hops: 0})
			}
			return
		}
	}
	t.beginRound(env, r+1)
}

// move sends each token held to the neighbour whose nearest other token is
// farthest, when that is farther than here; one token per neighbour.
func (t *tokens) move(env proc.Env, r int) {
	used := map[proc.ID]bool{}
	var stay []int
	for _, tok := range t.held {
		here := far
		if len(t.held) > 1 {
			here = 0
		}
		for _, p := range env.Neighbors() {
			if d := otherThan(t.last[p].Near, tok); d < far {
				here = min(here, d+1)
			}
		}
		to, best := proc.None, here
		for _, p := range env.Neighbors() {
			rep, ok := t.last[p]
			if !ok || used[p] {
				continue
			}
			if d := otherThan(rep.Near, tok); d > best {
				to, best = p, d
			}
		}
		if to == proc.None {
			stay = append(stay, tok)
			continue
		}
		used[to] = true
		env.Send(to, spToken{Round: r, Token: tok})
	}
	t.held = stay
}

// onAnnounceRound ends a round of the announcement: the nearest super-peer
// offered so far is this process's, and goes one hop further.
func (t *tokens) onAnnounceRound(env proc.Env, r int) {
	var best *spAnnounce
	for i, o := range t.offers {
		if o.Round <= r && (best == nil || o.Hops < best.Hops || (o.Hops == best.Hops && o.Of < best.Of)) {
			best = &t.offers[i]
		}
	}
	if best == nil {
		t.beginRound(env, r+1)
		return
	}
	t.done = true
	hops := best.Hops + 1
	env.Output(SuperPeer{Of: best.Of, Hops: hops})
	for _, p := range env.Neighbors() {
		env.Send(p, spAnnounce{Round: r + 1, Of: best.Of, Hops: hops})
	}
}
