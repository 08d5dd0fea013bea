package synchronizer

import "github.com/cohort-go/cohort/proc"

// Alpha is Awerbuch's synchronizer α (Awerbuch 1985; Lynch 1996
// ch. 16) around a synchronous algorithm whose messages are of type M.
// As pseudocode, at process i in round r:
//
//	send the round's messages, each tagged r; acknowledge each one received
//	when all of i's messages of round r are acknowledged:  i is safe
//	    send SAFE(r) to every neighbour
//	when i is safe and SAFE(r) has come from every neighbour:
//	    begin round r+1, handing the algorithm the messages of round r
//
// Why it is safe: a neighbour j that sent i a message of round r was
// safe only once i had acknowledged it, so i has it before j's SAFE(r),
// which i waits for before round r+1.
//
// Assumptions: reliable channels, no failures; no bound on delays, no
// FIFO. Cost per round: 2|E| SAFE messages (one per directed edge) besides
// one ACK per message of the algorithm; three delays (message, ACK, SAFE).
type Alpha[M proc.Message] struct {
	core[M]
	safeFrom map[int]int // by round: the neighbours that said SAFE
	hasty    bool        // broken on purpose: waits for all neighbours but one
}

// NewAlpha wraps app in synchronizer α.
func NewAlpha[M proc.Message](app proc.Rounds) *Alpha[M] {
	return &Alpha[M]{core: core[M]{app: app}, safeFrom: map[int]int{}}
}

// Start begins round 1: α needs nothing built first.
func (a *Alpha[M]) Start(env proc.Env) {
	env.Output(Layout{Degree: len(env.Neighbors())})
	a.beginRound(env, 1)
}

func (a *Alpha[M]) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m := m.(type) {
	case Payload[M]:
		a.onPayload(env, from, m)
	case Ack:
		if a.onAck(m) {
			a.becomeSafe(env)
		}
	case Safe:
		a.onSafe(env, m)
	}
}

func (a *Alpha[M]) Timeout(proc.Env, any)      {}
func (a *Alpha[M]) Input(proc.Env, proc.Input) {}

func (a *Alpha[M]) beginRound(env proc.Env, r int) {
	if a.begin(env, r) {
		a.becomeSafe(env)
	}
}

// becomeSafe: every message of this round is acknowledged; tell the
// neighbours.
func (a *Alpha[M]) becomeSafe(env proc.Env) {
	for _, q := range env.Neighbors() {
		env.Send(q, Safe{Round: a.round})
	}
	a.maybeNext(env)
}

// onSafe counts a neighbour safe for m.Round (the current round, or the
// next: a neighbour may be a round ahead).
func (a *Alpha[M]) onSafe(env proc.Env, m Safe) {
	a.safeFrom[m.Round]++
	a.maybeNext(env)
}

// maybeNext begins the next round once the process and all its
// neighbours are safe.
func (a *Alpha[M]) maybeNext(env proc.Env) {
	need := len(env.Neighbors())
	if a.hasty {
		need = max(need-1, 0)
	}
	if !a.safe || a.done || a.safeFrom[a.round] < need {
		return
	}
	delete(a.safeFrom, a.round)
	a.beginRound(env, a.round+1)
}
