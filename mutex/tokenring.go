package mutex

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Token ring (Coulouris et al., the ring-based algorithm;
// Tanenbaum & van Steen §6.3, a token ring algorithm): the processes form a
// ring, p_i → p_(i+1) mod N (in id order, whatever the run's topology), and
// one token circulates on it. Whoever holds the token may enter.
//
//	On the token:   if this process wants the critical section: enter,
//	                keeping the token
//	                else pass the token to the next process at once
//	To exit:        pass the token to the next process
//
// Process 0 holds the token at the start. An idle ring passes the token on
// for ever, consuming network bandwidth continuously, as Coulouris et al.
// note: a run of it ends at its deadline, not by quiescence. IdleHold, if
// set, makes a process that does not want the token keep it that long
// before passing it, which slows the idle circulation down without changing
// the algorithm.
//
// Cost (Coulouris et al.; Tanenbaum & van Steen's table, §6.3): 1 to ∞
// messages per entry (1 under saturation, when every process wants the
// token as it arrives; an idle ring sends messages with no entry at all); a
// requester waits 0 message times (the token is just arriving) to N (it has
// just passed the token on; Tanenbaum & van Steen's table says N−1,
// counting from the next hop); exit costs 1 message; the synchronisation
// delay is 1 message time (the next process wants it) to N (only the
// process that just left wants it again). ME1 and ME2 hold; ME3 does not
// (Coulouris et al.): p1 asks and then tells p3, p3 asks, and the token,
// now at p2, reaches p3 first. The tests build that counterexample.
//
// Beyond the textbooks: Coulouris et al. name the faults of the ring, a
// crashed process and a lost token message, and this implementation
// handles them for crash-stop processes.
//
// Skipping crashed successors. Every token (and every claim, below) a
// process sends is acknowledged by its receiver. With no ACK within
// AckTimeout the sender sends it again, once; with no ACK again it takes
// the successor for crashed, skips it for good, and sends to the next
// process of the ring. The token carries a sequence number, one more at
// every pass, and a process drops a token whose number is not above the
// highest it has held (a resend whose ACK was slow), so a resend never
// makes a second token.
//
// Regenerating a lost token. A token dies with the process that holds it.
// A process that has not held the token for LostAfter (longer than a full
// circulation in which every hop skips a crashed process) starts a
// regeneration round: CLAIM(p, s) goes around the ring, where s is the
// highest sequence number p has held. A process kills the claim (drops
// it) if it holds the token, or has passed it and not yet had the ACK, or
// has held a token numbered above s, or is itself claiming with a larger
// (s, id); otherwise it forwards it. A claim that comes back to p while p
// still has seen nothing newer makes p regenerate the token, numbered s+1.
//
// Why this makes no second token when messages are only delayed (and the
// delays stay within the timeouts, so that no live process is skipped):
// the token moves away from p along the ring, and the claim follows it
// along the same ring. Once p passed the token (numbered s+1) and got the
// ACK, its successor has held s+1; every process the token reached since
// holds or has held a number above s. So the claim, before it can get
// around, meets either the holder (which kills it), a sender still
// waiting for its ACK (which kills it: the token is in flight there), or
// a process that has held a newer number (which kills it). It gets around
// only if no live process holds, sends or has held the token since s —
// that is, only if the token died in a crash. Among several claims only the
// largest (s, id) can get around. A claim whose origin crashed dies after N
// hops.
//
// When it can make two: if the timeouts are shorter than the real delays.
// A successor that is only slow gets skipped while it holds the token (a
// resend and a skip make a second copy), or a process that is only slow
// to acknowledge is taken for crashed. The two copies merge as soon as one
// reaches a process that has held a newer number, but meanwhile two
// processes may be in the critical section: the tests show ME1 violated
// with an AckTimeout far below the network's delay. The failure detector
// needs a synchronous network, as every timeout-based one does.
//
// Waiting and Lent: a requester cannot know where the token is, so the
// ring reports no wait-for edges.
type tokenRing struct {
	cfg  RingConfig
	self proc.ID
	n    int
	dead []bool // processes this one took for crashed (its successors only)

	seen    uint64 // the highest token number this process has held
	holding bool   // the token is here
	wanting bool   // asked, not yet entered
	inCS    bool
	idleT   proc.TimerID // IdleHold, before passing an unwanted token

	sent uint64      // number of the last token or claim sent, for ACKs
	out  []*ringSend // sent and not yet acknowledged

	lostT    proc.TimerID // LostAfter, while this process does not hold the token
	claiming bool         // a claim of this process is going around
	claimSeq uint64       // its number
}

// ringSend is a token or a claim on its way, waiting for its ACK.
type ringSend struct {
	num   uint64
	to    proc.ID
	m     proc.Message // trToken or trClaim
	tries int
	timer proc.TimerID
}

// RingConfig holds the token ring's timeouts, on the local clock in the
// run's virtual time. A zero field takes its default.
type RingConfig struct {
	// AckTimeout is how long a process waits for the successor's ACK
	// before it resends, and then before it skips the successor as
	// crashed. It must exceed the round trip. Default 10ms.
	AckTimeout time.Duration
	// LostAfter is how long a process goes without the token before it
	// claims that the token is lost. It must exceed a circulation of the
	// token in which every hop skips a process; a shorter one costs claims
	// that the holder kills, not safety. Default 3·N·AckTimeout.
	LostAfter time.Duration
	// IdleHold is how long a process that does not want the token keeps
	// it before passing it on. Default 0: at once, as in the textbook
	// algorithm.
	IdleHold time.Duration
}

// Validate reports a negative duration.
func (c RingConfig) Validate() error {
	if c.AckTimeout < 0 || c.LostAfter < 0 || c.IdleHold < 0 {
		return errors.New("token-ring: durations must not be negative")
	}
	return nil
}

// NewTokenRing returns the constructor of token-ring processes with the
// given timeouts.
func NewTokenRing(cfg RingConfig) (func(proc.ID, int) proc.Process, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return func(id proc.ID, n int) proc.Process {
		c := cfg
		if c.AckTimeout == 0 {
			c.AckTimeout = 10 * time.Millisecond
		}
		if c.LostAfter == 0 {
			c.LostAfter = 3 * time.Duration(n) * c.AckTimeout
		}
		return &tokenRing{cfg: c, self: id, n: n, dead: make([]bool, n)}
	}, nil
}

func newTokenRingDefault(id proc.ID, n int) proc.Process {
	mk, _ := NewTokenRing(RingConfig{})
	return mk(id, n)
}

// trToken is the token, with its sequence number.
type trToken struct {
	Seq uint64 `json:"seq"`
	Num uint64 `json:"num"` // the sender's number for the ACK
}

// trAck acknowledges the token or claim the sender numbered Num.
type trAck struct {
	Num uint64 `json:"num"`
}

// trClaim says that Origin has not seen a token numbered above Seq for
// LostAfter; it has travelled Hops hops.
type trClaim struct {
	Origin proc.ID `json:"origin"`
	Seq    uint64  `json:"seq"`
	Hops   int     `json:"hops"`
	Num    uint64  `json:"num"`
}

func (trToken) Kind() string     { return "token" }
func (m trToken) String() string { return fmt.Sprintf("TOKEN(%d)", m.Seq) }
func (trAck) Kind() string       { return "ack" }
func (m trAck) String() string   { return fmt.Sprintf("ACK(%d)", m.Num) }
func (trClaim) Kind() string     { return "claim" }
func (m trClaim) String() string { return fmt.Sprintf("CLAIM(%s,%d)", m.Origin, m.Seq) }

// The ring's timer tags.
type trTimer uint8

const (
	trLost trTimer = iota + 1
	trIdle
)

func (t trTimer) String() string { return [...]string{"", "token-lost", "idle-hold"}[t] }

// trAckWait is the tag of the timer waiting for the ACK of send num.
type trAckWait struct{ num uint64 }

func (trAckWait) Kind() string { return "ack-timeout" }

func init() {
	register(proc.Algorithm{
		Name:    "token-ring",
		Summary: "token ring: enter with the token, pass it on; acknowledged passes skip crashed successors, claims regenerate a lost token",
		Source:  "Coulouris et al.; Tanenbaum & van Steen §6.3; fault handling beyond the textbooks",
		Assumes: proc.Assumptions{Reliable: true, Synchronous: true, Failures: "crash-stop", Topology: "ring"},
		Notes: map[string]string{
			"messages_per_entry": "the textbook range 1..∞: under saturation about one pass per entry; an idle ring spends passes on nobody",
			"client_delay_msgs":  "the textbook range 0..N−1: the wait for the token to come round, N/2 passes on average",
			"sync_delay_msgs":    "the textbook range 1..N−1: with every process waiting, the next one is the neighbour",
		},
		New:    newTokenRingDefault,
		Breaks: []string{"ME3"},
		Messages: []proc.Message{
			trToken{}, trAck{}, trClaim{},
		},
		Scenario: `nodes: 5
topology: ring
network:
  latency: uniform:500us,2ms
stop:
  deadline: 1s
`,
	})
}

func (r *tokenRing) Start(env proc.Env) {
	if r.self == 0 {
		r.holding = true
		r.onHold(env)
		return
	}
	r.lostT = env.SetTimer(r.cfg.LostAfter, trLost)
}

func (r *tokenRing) Input(env proc.Env, in proc.Input) {
	switch in.(type) {
	case Acquire:
		r.acquire(env)
	case Release:
		r.release(env)
	}
}

func (r *tokenRing) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m := m.(type) {
	case trToken:
		env.Send(from, trAck{Num: m.Num})
		r.onToken(env, m)
	case trClaim:
		env.Send(from, trAck{Num: m.Num})
		r.onClaim(env, m)
	case trAck:
		r.onAck(env, m)
	}
}

func (r *tokenRing) Timeout(env proc.Env, tag any) {
	switch tag := tag.(type) {
	case trTimer:
		switch tag {
		case trLost:
			r.lostT = 0
			r.onLost(env)
		case trIdle:
			r.idleT = 0
			r.pass(env)
		}
	case trAckWait:
		r.onAckTimeout(env, tag.num)
	}
}

// acquire: enter at once with the token, or wait for it.
func (r *tokenRing) acquire(env proc.Env) {
	if r.wanting || r.inCS {
		return // a second Acquire breaks the contract; ignore it
	}
	r.wanting = true
	if r.holding {
		r.cancel(env, &r.idleT)
		r.enter(env)
	}
}

func (r *tokenRing) enter(env proc.Env) {
	r.wanting, r.inCS = false, true
	env.Output(Enter{})
}

// release is "to exit": pass the token to the next process.
func (r *tokenRing) release(env proc.Env) {
	if !r.inCS {
		return // Release without Enter breaks the contract; ignore it
	}
	r.inCS = false
	env.Output(Exit{})
	r.pass(env)
}

// onToken is "on the token". A token numbered no higher than one held
// before is a resend whose ACK was late: it is dropped (and was ACKed).
func (r *tokenRing) onToken(env proc.Env, m trToken) {
	if m.Seq <= r.seen {
		return
	}
	r.seen = m.Seq
	r.claiming = false
	if r.holding {
		return // a second copy (timeouts too short): the two merge here
	}
	r.holding = true
	r.onHold(env)
}

// onHold: the token is here; use it or pass it on.
func (r *tokenRing) onHold(env proc.Env) {
	r.cancel(env, &r.lostT)
	switch {
	case r.wanting:
		r.enter(env)
	case r.cfg.IdleHold > 0:
		r.idleT = env.SetTimer(r.cfg.IdleHold, trIdle)
	default:
		r.pass(env)
	}
}

// pass sends the token, numbered one more, to the next live process.
func (r *tokenRing) pass(env proc.Env) {
	if !r.holding || r.inCS {
		return
	}
	if r.successor() == r.self {
		return // alone on the ring: keep it
	}
	r.holding = false
	r.forward(env, trToken{Seq: r.seen + 1})
	r.lostT = env.SetTimer(r.cfg.LostAfter, trLost)
}

// successor is the next process of the ring not taken for crashed; the
// process itself if there is none.
func (r *tokenRing) successor() proc.ID {
	for k := 1; k < r.n; k++ {
		if p := proc.ID((int(r.self) + k) % r.n); !r.dead[p] {
			return p
		}
	}
	return r.self
}

// forward sends a token or a claim to the successor and waits for the
// ACK; with no live successor, the message comes back to this process.
func (r *tokenRing) forward(env proc.Env, m proc.Message) {
	to := r.successor()
	if to == r.self {
		r.takeBack(env, m)
		return
	}
	r.sent++
	switch mm := m.(type) {
	case trToken:
		mm.Num = r.sent
		m = mm
	case trClaim:
		mm.Num = r.sent
		m = mm
	}
	s := &ringSend{num: r.sent, to: to, m: m, tries: 1}
	s.timer = env.SetTimer(r.cfg.AckTimeout, trAckWait{s.num})
	r.out = append(r.out, s)
	env.Send(to, m)
}

// takeBack handles a message that found no live process to go to.
func (r *tokenRing) takeBack(env proc.Env, m proc.Message) {
	switch m := m.(type) {
	case trToken:
		r.seen = max(r.seen, m.Seq)
		if !r.holding {
			r.holding = true
			r.onHold(env)
		}
	case trClaim:
		r.onClaim(env, m)
	}
}

func (r *tokenRing) onAck(env proc.Env, m trAck) {
	i := slices.IndexFunc(r.out, func(s *ringSend) bool { return s.num == m.Num })
	if i < 0 {
		return // a late ACK of a send already given up on
	}
	env.CancelTimer(r.out[i].timer)
	r.out = slices.Delete(r.out, i, i+1)
}

// onAckTimeout resends once, then skips the successor as crashed.
func (r *tokenRing) onAckTimeout(env proc.Env, num uint64) {
	i := slices.IndexFunc(r.out, func(s *ringSend) bool { return s.num == num })
	if i < 0 {
		return
	}
	s := r.out[i]
	if s.tries < 2 && !r.dead[s.to] {
		s.tries++
		s.timer = env.SetTimer(r.cfg.AckTimeout, trAckWait{s.num})
		env.Send(s.to, s.m)
		return
	}
	r.dead[s.to] = true
	r.out = slices.Delete(r.out, i, i+1)
	r.forward(env, s.m)
}

// tokenOut reports whether a token this process sent is not yet ACKed.
func (r *tokenRing) tokenOut() bool {
	return slices.ContainsFunc(r.out, func(s *ringSend) bool { _, ok := s.m.(trToken); return ok })
}

// onLost: no token for LostAfter; claim it, unless it is here or in flight.
func (r *tokenRing) onLost(env proc.Env) {
	if r.holding || r.tokenOut() {
		return // the lost timer is re-armed when the token leaves again
	}
	r.lostT = env.SetTimer(r.cfg.LostAfter, trLost)
	r.claiming, r.claimSeq = true, r.seen
	r.forward(env, trClaim{Origin: r.self, Seq: r.seen, Hops: 1})
}

// onClaim kills or forwards a claim; its own claim, back untouched,
// regenerates the token.
func (r *tokenRing) onClaim(env proc.Env, m trClaim) {
	if m.Origin == r.self {
		if r.claiming && m.Seq == r.claimSeq && r.seen == m.Seq && !r.holding && !r.tokenOut() {
			r.claiming = false
			r.seen = m.Seq + 1
			r.holding = true
			r.onHold(env)
		}
		return
	}
	mine := r.claiming && (r.claimSeq > m.Seq || (r.claimSeq == m.Seq && r.self > m.Origin))
	if r.holding || r.tokenOut() || r.seen > m.Seq || mine || m.Hops >= r.n {
		return // killed
	}
	m.Hops++
	if r.successor() == r.self {
		return // everyone else, the origin too, is gone
	}
	r.forward(env, m)
}

func (r *tokenRing) cancel(env proc.Env, t *proc.TimerID) {
	if *t != 0 {
		env.CancelTimer(*t)
		*t = 0
	}
}
