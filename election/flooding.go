package election

import (
	"strconv"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Flooding (election in arbitrary networks: Coulouris et al.; FloodMax in
// Lynch 1996): max-id flooding in synchronous rounds, on any connected
// graph. As pseudocode:
//
//	Initially:     ∀i: L(i) = i
//	Each round:    every node sends L(i) to all its neighbours; i sets
//	               L(i) := max({L(i)} ∪ the ids received) for the next round
//	After D rounds, where D is the diameter of the graph, L(i) is the leader.
//
// After r rounds L(i) is the largest id within r hops of i, so D rounds
// suffice. D must be known in advance: a process sees only its neighbours,
// so by default the algorithm uses the only bound it can be sure of, N−1
// (the diameter of a line); a deployment that knows a smaller bound on its
// diameter passes it to newFlooding and saves the difference.
//
// The algorithm is written once, for the synchronous model (FloodMax,
// a proc.Rounds); this process is its timer host. Rounds are driven by
// timers: a round lasts a fixed period, which must
// exceed twice the largest message latency (see below). A process starts
// its round 1 when it gets Elect, or when the first flood message reaches
// it, whichever comes first; a process woken by a message joins in the
// sender's round, sends at once, and keeps its own rounds from then on. So
// one Elect anywhere starts everyone within one network traversal, and two
// neighbours' rounds are never more than one latency apart: a message of
// round r is sent at most one latency after its receiver began round r, and
// takes at most one more to arrive, before the receiver's round r ends.
// After its last round a process outputs Elected{L(i)} and stops; flood
// messages that reach it later are ignored. One election per run: an Elect
// at a process that is running or has finished is ignored.
//
// Assumptions: synchronous (latency bounded by half the round period),
// reliable channels, no failures, a connected graph. FIFO is not needed.
//
// Cost: every process sends its L to each neighbour in each of the D
// rounds: 2|E|·D messages, at most N·δ·D, the textbook's O(δD) per process
// (δ the largest degree). Time: D round periods, plus the time the wake-up
// takes to cross the graph.
type flooding struct {
	period time.Duration // the length of a round
	rounds int           // D

	logic   proc.Rounds     // FloodMax's rounds: what is sent, when L(i) changes
	in      []proc.Received // received since the current round began
	round   int             // the current round, 1..D; 0 before the process joins
	elected bool            // the last round has ended
}

// FloodLeader is the round-r message: the sender's L at the start of the
// round.
type FloodLeader struct {
	Round  int     `json:"round"`
	Leader proc.ID `json:"leader"`
}

func (FloodLeader) Kind() string { return "leader" }
func (m FloodLeader) String() string {
	return "LEADER(" + m.Leader.String() + ", round " + strconv.Itoa(m.Round) + ")"
}

// floodMax is the algorithm itself, written for the synchronous model
// (proc.Rounds), the pseudocode above line by line: the timer host below
// runs it with a round period, a synchronizer (package synchronizer) on an
// asynchronous network.
type floodMax struct {
	rounds int     // D
	leader proc.ID // L(i)
}

// FloodMax returns flooding's rounds at process id of an n-process run,
// for D = rounds (0: N−1). In round r ≤ D a process takes the largest of
// L(i) and the ids received and sends it to every neighbour; in round D+1
// it takes the largest once more, outputs Elected{L(i)} and finishes. So
// every process outputs at the start of round D+1, after D rounds of
// messages.
func FloodMax(id proc.ID, n, rounds int) proc.Rounds {
	if rounds <= 0 {
		rounds = max(n-1, 1)
	}
	return &floodMax{rounds: rounds, leader: id}
}

// Round: L(i) := max({L(i)} ∪ the ids received); then send L(i), or after
// D rounds elect it.
func (f *floodMax) Round(env proc.Env, r int, in []proc.Received) bool {
	for _, m := range in {
		if m, ok := m.M.(FloodLeader); ok {
			f.leader = max(f.leader, m.Leader)
		}
	}
	if r > f.rounds {
		env.Output(Elected{Leader: f.leader})
		return false
	}
	for _, p := range env.Neighbors() {
		env.Send(p, FloodLeader{Round: r, Leader: f.leader})
	}
	return true
}

// floodRound is the timer tag that ends a round.
type floodRound struct{ Round int }

// floodPeriod is the default round: ten times the simulator's default
// latency of 1ms, well above twice any latency of the default scenarios.
const floodPeriod = 10 * time.Millisecond

// newFlooding builds flooding processes with the given round period
// (0: floodPeriod) and number of rounds D (0: N−1).
func newFlooding(period time.Duration, rounds int) func(proc.ID, int) proc.Process {
	if period <= 0 {
		period = floodPeriod
	}
	return func(id proc.ID, n int) proc.Process {
		d := rounds
		if d <= 0 {
			d = max(n-1, 1)
		}
		return &flooding{period: period, rounds: d, logic: FloodMax(id, n, d)}
	}
}

func init() {
	register(proc.Algorithm{
		Name:    "flooding",
		Summary: "max-id flooding in synchronous rounds for D = N−1 rounds on any connected graph (2|E|·D messages)",
		Source:  "Coulouris et al.; Lynch 1996 (FloodMax)",
		Assumes: proc.Assumptions{Reliable: true, Synchronous: true, Topology: "graph"},
		New:     newFlooding(0, 0),
		Messages: []proc.Message{
			FloodLeader{},
		},
		Scenario: "nodes: 9\ntopology: grid\ninputs:\n  - at 0ms node 0 elect\n",
	})
}

func (f *flooding) Start(proc.Env) {}

func (f *flooding) Input(env proc.Env, in proc.Input) {
	if _, ok := in.(Elect); ok && f.round == 0 {
		f.beginRound(env, 1)
	}
}

func (f *flooding) Receive(env proc.Env, from proc.ID, m proc.Message) {
	if m, ok := m.(FloodLeader); ok {
		f.onLeader(env, from, m)
	}
}

func (f *flooding) Timeout(env proc.Env, tag any) {
	if t, ok := tag.(floodRound); ok {
		f.onRoundEnd(env, t.Round)
	}
}

// onLeader keeps the id received for the next round (a message of a
// neighbour a little ahead is taken too: taking a maximum early changes
// nothing); the first message wakes a process that has not joined yet, in
// the sender's round.
func (f *flooding) onLeader(env proc.Env, from proc.ID, m FloodLeader) {
	if f.elected {
		return
	}
	f.in = append(f.in, proc.Received{From: from, M: m})
	if f.round == 0 {
		f.beginRound(env, min(max(m.Round, 1), f.rounds))
	}
}

// onRoundEnd ends round r: the next round begins, or after the last one the
// process outputs its leader (FloodMax's round D+1).
func (f *flooding) onRoundEnd(env proc.Env, r int) {
	if r != f.round || f.elected {
		return
	}
	if r >= f.rounds {
		f.elected = true
		f.logic.Round(env, r+1, f.take())
		return
	}
	f.beginRound(env, r+1)
}

// beginRound runs round r — L(i) sent to every neighbour — and sets the
// round's timer.
func (f *flooding) beginRound(env proc.Env, r int) {
	f.round = r
	f.logic.Round(env, r, f.take())
	env.SetTimer(f.period, floodRound{Round: r})
}

// take hands over what was received since the last round began.
func (f *flooding) take() []proc.Received {
	in := f.in
	f.in = nil
	return in
}
