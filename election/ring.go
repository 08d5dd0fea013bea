package election

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Chang–Roberts (Chang & Roberts 1979; Coulouris et al., a ring-based
// election algorithm): the processes form a unidirectional ring, pᵢ sending
// only to p₍ᵢ₊₁₎ mod N. Every process is a non-participant at first.
//
//	To elect:              mark participant; send ELECTION(self) on.
//	On ELECTION(id):       id > self: forward it, mark participant;
//	                       id < self and non-participant: send ELECTION(self)
//	                       on, mark participant;
//	                       id < self and participant: drop it;
//	                       id = self: this is the coordinator: mark
//	                       non-participant, elected := self, send ELECTED(self).
//	On ELECTED(id):        mark non-participant, elected := id; forward it
//	                       unless id = self.
//
// The participant marking is what extinguishes concurrent elections: of two
// ELECTION messages circulating at once, the one carrying the smaller id
// meets a participant that has seen the larger and goes no further (Chang
// & Roberts 1979).
//
// Assumptions: reliable channels, no failures during an election (a crashed
// process breaks the ring); asynchronous is fine. Topology: ring.
//
// Cost: the worst case is a starter whose anticlockwise neighbour holds the
// largest id: N−1 messages to reach it, N for its id to go round, N for the
// ELECTED message: 3N−1 messages, which is also the turnaround.
type changRoberts struct {
	participant bool
	elected     proc.ID
}

// crElection carries the largest id seen so far.
// Describe implements proc.Describer: participant or not, and the
// coordinator elected (none yet).
func (c *changRoberts) Describe() any {
	return struct {
		Participant bool   `json:"participant"`
		Elected     string `json:"elected"`
	}{c.participant, c.elected.String()}
}

type crElection struct {
	ID proc.ID `json:"id"`
}

// crElected announces the coordinator; it goes round the ring once.
type crElected struct {
	ID proc.ID `json:"id"`
}

func (crElection) Kind() string     { return "election" }
func (m crElection) String() string { return "ELECTION(" + m.ID.String() + ")" }
func (crElected) Kind() string      { return "elected" }
func (m crElected) String() string  { return "ELECTED(" + m.ID.String() + ")" }

func ringNext(self proc.ID, n int) proc.ID { return proc.ID((int(self) + 1) % n) }

func (c *changRoberts) Start(proc.Env)        {}
func (c *changRoberts) Timeout(proc.Env, any) {}

func (c *changRoberts) Input(env proc.Env, in proc.Input) {
	if _, ok := in.(Elect); ok && !c.participant {
		c.participant = true
		env.Send(ringNext(env.Self(), env.N()), crElection{ID: env.Self()})
	}
}

func (c *changRoberts) Receive(env proc.Env, _ proc.ID, m proc.Message) {
	switch m := m.(type) {
	case crElection:
		c.onElection(env, m.ID)
	case crElected:
		c.onElected(env, m.ID)
	}
}

func (c *changRoberts) onElection(env proc.Env, id proc.ID) {
	self, next := env.Self(), ringNext(env.Self(), env.N())
	switch {
	case id > self:
		c.participant = true
		env.Send(next, crElection{ID: id})
	case id < self && !c.participant:
		c.participant = true
		env.Send(next, crElection{ID: self})
	case id < self:
		// a participant has already sent an id at least as large: drop it
	default: // our own id came round: no one is larger
		c.participant = false
		c.setElected(env, self)
		env.Send(next, crElected{ID: self})
	}
}

func (c *changRoberts) onElected(env proc.Env, id proc.ID) {
	c.participant = false
	c.setElected(env, id)
	if id != env.Self() {
		env.Send(ringNext(env.Self(), env.N()), crElected{ID: id})
	}
}

func (c *changRoberts) setElected(env proc.Env, leader proc.ID) {
	if c.elected != leader {
		c.elected = leader
		env.Output(Elected{Leader: leader})
	}
}

// The ring algorithm of Tanenbaum & van Steen §6.5: the ELECTION message
// carries the list of live processes. Each process appends its id and
// passes the message to its successor; if the successor has crashed (no
// acknowledgement within the ack timeout) it tries the one after, and so on
// round the ring. When the message comes back to a process already in the
// list (the initiator, or the first to see it again if the initiator has
// crashed), the part of the list from that process on is one full turn of
// the live ring: the process elects its largest id and sends a COORDINATOR
// message with the leader and the list once round the ring, with the same
// skipping. Concurrent elections each complete and elect the same process
// when no process crashes meanwhile.
//
// A process holding the message may crash before passing it on; the
// initiator therefore restarts its election if neither its list nor any
// COORDINATOR has come back within 2N+1 ack timeouts.
//
// Assumptions: reliable channels, synchronous (the ack timeout bounds a
// round trip), failures crash-stop. Every process knows the ring order of
// all ids so that it can skip crashed successors. Topology: ring.
//
// Cost: with c crashed processes and no concurrency, 2(N−c) ELECTION and
// COORDINATOR messages, as many ACKs, and one lost message for each crashed
// successor passed over (2c), so 4(N−c) + 2c messages.
type ringList struct {
	ackTimeout time.Duration

	elected proc.ID
	seq     uint64
	pending map[uint64]*rlSend
	seen    map[rlRound]bool // coordinator rounds already passed on
	rounds  uint64
	retry   proc.TimerID // while an election this process started is out
}

// rlRetry is the tag of the timer of an election this process started: if
// neither its list nor a COORDINATOR comes back in time, a process holding
// the message crashed, and the election starts again.
type rlRetry struct{}

// rlSend is a message waiting for its acknowledgement.
type rlSend struct {
	to    proc.ID
	msg   rlMessage
	timer proc.TimerID
}

// rlMessage is a ring message that is acknowledged hop by hop.
type rlMessage interface {
	proc.Message
	withSeq(uint64) rlMessage
}

type rlRound struct {
	Origin proc.ID
	Round  uint64
}

// rlElection carries the ids of the live processes it has passed.
type rlElection struct {
	Seq  uint64    `json:"seq"`
	List []proc.ID `json:"list"`
}

// rlCoordinator announces Leader, elected from List by Origin.
type rlCoordinator struct {
	Seq    uint64    `json:"seq"`
	Origin proc.ID   `json:"origin"`
	Round  uint64    `json:"round"`
	Leader proc.ID   `json:"leader"`
	List   []proc.ID `json:"list"`
}

// rlAck acknowledges the receipt of message Seq of its receiver.
type rlAck struct {
	Seq uint64 `json:"seq"`
}

func (rlElection) Kind() string { return "election" }
func (m rlElection) String() string {
	return "ELECTION[" + idList(m.List) + "]"
}
func (rlCoordinator) Kind() string { return "coordinator" }
func (m rlCoordinator) String() string {
	return fmt.Sprintf("COORDINATOR(%s)[%s]", m.Leader, idList(m.List))
}
func (rlAck) Kind() string     { return "ack" }
func (m rlAck) String() string { return fmt.Sprintf("ACK(%d)", m.Seq) }

func (m rlElection) withSeq(s uint64) rlMessage    { m.Seq = s; return m }
func (m rlCoordinator) withSeq(s uint64) rlMessage { m.Seq = s; return m }

func idList(ids []proc.ID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = id.String()
	}
	return strings.Join(s, " ")
}

// rlAckTimeout is the timer tag of a send waiting for its ack.
type rlAckTimeout struct{ seq uint64 }

// DefaultRingListAck is the registered ring-list's ack timeout: a round trip
// of a 1 ms network with margin.
const DefaultRingListAck = 4 * time.Millisecond

// NewRingList builds ring-list processes with the given ack timeout (0: the
// default).
func NewRingList(ack time.Duration) func(proc.ID, int) proc.Process {
	if ack <= 0 {
		ack = DefaultRingListAck
	}
	return func(proc.ID, int) proc.Process {
		return &ringList{ackTimeout: ack, elected: proc.None,
			pending: map[uint64]*rlSend{}, seen: map[rlRound]bool{}}
	}
}

func init() {
	register(proc.Algorithm{
		Name:    "ring",
		Summary: "Chang–Roberts: the largest id circulates, participants drop smaller ones, ELECTED goes round once (worst 3N−1 messages)",
		Source:  "Chang & Roberts 1979; Coulouris et al.",
		Assumes: proc.Assumptions{Reliable: true, Topology: "ring"},
		New:     func(proc.ID, int) proc.Process { return &changRoberts{elected: proc.None} },
		Messages: []proc.Message{
			crElection{}, crElected{},
		},
	}, proc.Algorithm{
		Name:    "ring-list",
		Summary: "the list of live ids circulates, crashed successors skipped by ack timeout; the initiator elects the largest and circulates COORDINATOR",
		Source:  "Tanenbaum & van Steen §6.5",
		Assumes: proc.Assumptions{Reliable: true, Synchronous: true, Failures: "crash-stop", Topology: "ring"},
		New:     NewRingList(DefaultRingListAck),
		Messages: []proc.Message{
			rlElection{}, rlCoordinator{}, rlAck{},
		},
	})
}

func (r *ringList) Start(proc.Env) {}

func (r *ringList) Input(env proc.Env, in proc.Input) {
	if _, ok := in.(Elect); ok {
		r.start(env)
	}
}

// start sends a new ELECTION round the ring and waits for it: each of the
// two turns passes at most N processes, each taking at most an ack timeout.
func (r *ringList) start(env proc.Env) {
	r.stopRetry(env)
	r.retry = env.SetTimer(time.Duration(2*env.N()+1)*r.ackTimeout, rlRetry{})
	r.pass(env, env.Self(), rlElection{List: []proc.ID{env.Self()}})
}

func (r *ringList) stopRetry(env proc.Env) {
	if r.retry != 0 {
		env.CancelTimer(r.retry)
		r.retry = 0
	}
}

func (r *ringList) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m := m.(type) {
	case rlElection:
		env.Send(from, rlAck{Seq: m.Seq})
		r.onElection(env, m)
	case rlCoordinator:
		env.Send(from, rlAck{Seq: m.Seq})
		r.onCoordinator(env, m)
	case rlAck:
		if s, ok := r.pending[m.Seq]; ok {
			env.CancelTimer(s.timer)
			delete(r.pending, m.Seq)
		}
	}
}

// Timeout: the successor tried did not acknowledge: try the next one.
func (r *ringList) Timeout(env proc.Env, tag any) {
	if _, ok := tag.(rlRetry); ok {
		r.retry = 0
		r.start(env)
		return
	}
	t, ok := tag.(rlAckTimeout)
	if !ok {
		return
	}
	s, ok := r.pending[t.seq]
	if !ok {
		return
	}
	delete(r.pending, t.seq)
	r.pass(env, s.to, s.msg)
}

func (r *ringList) onElection(env proc.Env, m rlElection) {
	self := env.Self()
	if k := slices.Index(m.List, self); k >= 0 {
		// One full turn of the live ring: m.List[k:].
		live := slices.Clone(m.List[k:])
		r.rounds++
		c := rlCoordinator{Origin: self, Round: r.rounds, Leader: slices.Max(live), List: live}
		r.seen[rlRound{c.Origin, c.Round}] = true
		r.stopRetry(env)
		r.setElected(env, c.Leader)
		r.pass(env, self, c)
		return
	}
	list := append(slices.Clone(m.List), self)
	r.pass(env, self, rlElection{List: list})
}

func (r *ringList) onCoordinator(env proc.Env, m rlCoordinator) {
	key := rlRound{m.Origin, m.Round}
	if r.seen[key] {
		return // it has been round once
	}
	r.seen[key] = true
	r.stopRetry(env)
	r.setElected(env, m.Leader)
	r.pass(env, env.Self(), m)
}

// pass sends m to the first process after `after` in ring order, waiting for
// its ack. If every other process has been tried, the message comes back to
// this one, which handles it itself.
func (r *ringList) pass(env proc.Env, after proc.ID, m rlMessage) {
	to := ringNext(after, env.N())
	if to == env.Self() {
		switch m := m.(type) {
		case rlElection:
			r.onElection(env, m)
		case rlCoordinator:
			r.onCoordinator(env, m)
		}
		return
	}
	r.seq++
	m = m.withSeq(r.seq)
	env.Send(to, m)
	r.pending[r.seq] = &rlSend{to: to, msg: m,
		timer: env.SetTimer(r.ackTimeout, rlAckTimeout{r.seq})}
}

func (r *ringList) setElected(env proc.Env, leader proc.ID) {
	if r.elected != leader {
		r.elected = leader
		env.Output(Elected{Leader: leader})
	}
}
