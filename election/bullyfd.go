package election

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// The bully algorithm driven by a heartbeat failure detector: the algorithm
// behind Cohort's live leader service. It is the textbook bully (ELECTION
// to higher ids, ANSWER, COORDINATOR) with the two things a running system
// needs that the textbooks leave to "a process notices the coordinator is
// gone":
//
//   - a failure detector. Every process sends a heartbeat to every other
//     every Heartbeat; any message counts as a sign of life. A process is
//     suspected once it has been silent for Timeout or, with phi-accrual,
//     once φ, the improbability of the silence given the heartbeat
//     intervals seen so far, passes a threshold (Hayashibara et al.).
//   - candidacy. Only candidates stand; the others (observers) only learn
//     the leader. Campaign makes a process a candidate, Resign withdraws it.
//     Heartbeats carry the sender's candidacy and the leader it believes in.
//
// The rules, checked at every heartbeat tick and on every message:
//
//	Leader suspected, or resigned:  elected := ⊥; a candidate elects.
//	To elect:        send ELECTION to every higher candidate not suspected;
//	                 none: become leader and send COORDINATOR to all.
//	                 Else wait T for an ANSWER, then T' for COORDINATOR.
//	On ELECTION:     a candidate answers a lower sender and elects.
//	On COORDINATOR(c): a candidate higher than c elects (bullies);
//	                 everyone else adopts c.
//	On a heartbeat from a candidate q that claims to lead:
//	                 adopt q if there is no leader or q is higher than it
//	                 (two leaders after a partition heals: the lower one
//	                 steps down); a higher candidate bullies q.
//	A candidate whose leader is lower than itself elects.
//
// Assumptions: crash-recover processes, reliable FIFO channels (TCP) and a
// partially synchronous network:
// E1 and agreement hold once no process is wrongly suspected — when
// heartbeats arrive within Timeout. A slow but live process (a long pause)
// is suspected and replaced, and bullies its way back when it resumes, as
// in the textbook algorithm. Cost: N(N−1) heartbeats per Heartbeat; a
// failover takes detection (Timeout after the last heartbeat, plus up to a
// tick) and one round of messages: N−1 COORDINATOR messages when the
// next-highest notices first.
type bullyFD struct {
	cfg LeaderConfig

	candidate bool
	elected   proc.ID
	term      uint64 // the term of the leader followed (or led)
	maxTerm   uint64 // the largest term heard of
	phase     bullyPhase
	timer     proc.TimerID
	started   time.Duration
	graceOver bool // every peer heard from, or Timeout passed since Start
	ticked    bool
	lastTick  time.Duration

	peers []fdPeer
}

// fdPeer is what a process knows of another.
type fdPeer struct {
	heard     bool
	last      time.Duration // when anything last arrived from it
	candidate bool
	claims    proc.ID // the leader its last heartbeat named
	suspected bool
	gaps      gapWindow // heartbeat inter-arrival times, for φ
}

// LeaderConfig configures bully-fd.
type LeaderConfig struct {
	// Heartbeat is the interval between a process's heartbeats, and the
	// failure detector's tick. Default 50 ms.
	Heartbeat time.Duration
	// Timeout is the silence after which a process is suspected. Default
	// 300 ms (six heartbeats). With Phi set it is only the grace period at
	// start.
	Timeout time.Duration
	// Phi, if positive, switches to the phi-accrual detector: a process is
	// suspected when φ exceeds Phi (8 is a common choice: a false
	// suspicion about once in 10⁸ silences of that length).
	Phi float64
	// MinStdDev is the floor of the heartbeat intervals' deviation in φ
	// (default Heartbeat/2), and Pause a silence φ tolerates on top of the
	// mean interval (default 2 Heartbeats): both keep a very regular
	// network from making φ jumpy. With the defaults and Phi 8, a steady
	// 50 ms heartbeat is suspected after about 290 ms of silence, as with
	// the plain timeout; jitter raises that.
	MinStdDev, Pause time.Duration
	// T is how long an electing process waits for an ANSWER, T' (TPrime)
	// for the COORDINATOR after one. Defaults Heartbeat and 3T.
	T, TPrime time.Duration
	// Candidate makes every process a candidate from the start (the
	// simulator's runs); the live service starts observers, which Campaign.
	Candidate bool
	// Quorum makes leadership need a majority: a candidate becomes leader
	// only while it hears from more than N/2 processes (itself included),
	// and a leader that has not heard from a majority for StepDown steps
	// down. With StepDown below Timeout, a leader cut off in a minority
	// steps down before the majority's candidates suspect it, so two
	// leaders never overlap (given a symmetric partition and clocks that
	// run at nearly the same rate); the price is no leader at all while no
	// majority is up.
	Quorum   bool
	StepDown time.Duration // default Timeout − 2·Heartbeat
}

// DefaultLeader is the live service's configuration: 50 ms heartbeats, a
// 300 ms timeout, and a majority needed to lead.
var DefaultLeader = LeaderConfig{Heartbeat: 50 * time.Millisecond, Timeout: 300 * time.Millisecond, Quorum: true}

func (c LeaderConfig) withDefaults() LeaderConfig {
	if c.Heartbeat <= 0 {
		c.Heartbeat = DefaultLeader.Heartbeat
	}
	if c.Timeout <= 0 {
		c.Timeout = 6 * c.Heartbeat
	}
	if c.MinStdDev <= 0 {
		c.MinStdDev = c.Heartbeat / 2
	}
	if c.Pause <= 0 {
		c.Pause = 2 * c.Heartbeat
	}
	if c.T <= 0 {
		c.T = c.Heartbeat
	}
	if c.TPrime <= 0 {
		c.TPrime = 3 * c.T
	}
	if c.StepDown <= 0 {
		c.StepDown = max(c.Timeout-2*c.Heartbeat, c.Heartbeat)
	}
	return c
}

// NewBullyFD builds bully-fd processes; zero fields take defaults derived
// from Heartbeat.
func NewBullyFD(cfg LeaderConfig) func(proc.ID, int) proc.Process {
	cfg = cfg.withDefaults()
	return func(_ proc.ID, n int) proc.Process {
		return &bullyFD{cfg: cfg, candidate: cfg.Candidate, elected: proc.None, peers: make([]fdPeer, n)}
	}
}

// Campaign makes the process a candidate; Resign makes it an observer
// again (a leader that resigns steps down). Report asks the process to
// output its elected variable as it stands (a service that starts watching
// late learns the current leader).
type (
	Campaign struct{}
	Resign   struct{}
	Report   struct{}
)

func (Campaign) Kind() string { return "campaign" }
func (Resign) Kind() string   { return "resign" }
func (Report) Kind() string   { return "report" }

// fdBeat is a heartbeat: the sender's candidacy, the leader it follows
// and that leader's term.
type fdBeat struct {
	Candidate bool    `json:"candidate"`
	Leader    proc.ID `json:"leader"`
	Term      uint64  `json:"term"`
}

func (fdBeat) Kind() string { return "heartbeat" }

// fdCoordinator announces the sender as leader for Term.
type fdCoordinator struct {
	Term uint64 `json:"term"`
}

func (fdCoordinator) Kind() string     { return "coordinator" }
func (m fdCoordinator) String() string { return fmt.Sprintf("COORDINATOR(term %d)", m.Term) }

// fdTick is the heartbeat timer's tag.
type fdTick struct{}

func (fdTick) String() string { return "tick" }

// SimLeader is the simulator's configuration: every process a candidate,
// timeouts scaled to the simulator's millisecond network.
var SimLeader = LeaderConfig{Heartbeat: 10 * time.Millisecond, Timeout: 50 * time.Millisecond, Candidate: true}

func init() {
	register(proc.Algorithm{
		Name:    "bully-fd",
		Summary: "bully driven by a heartbeat failure detector (timeout or phi-accrual), with candidates and observers: the live leader service",
		Source:  "Garcia-Molina 1982; Coulouris et al.; Tanenbaum & van Steen §6.5 (bully); the failure detector is beyond the textbooks",
		Assumes: proc.Assumptions{Reliable: true, FIFO: true, Failures: "crash-recover"},
		New:     NewBullyFD(SimLeader),
		Inputs:  leaderInputs,
		Messages: []proc.Message{
			bullyElection{}, bullyAnswer{}, bullyCoordinator{}, fdBeat{}, fdCoordinator{},
		},
		Scenario: bullyFDScenario,
	})
}

// bullyFDScenario: three candidates; the leader crashes at 300 ms, comes
// back at 700 ms and bullies its way back. (A larger --nodes keeps the
// same faults, on a process that does not lead.)
const bullyFDScenario = `nodes: 3
stop:
  deadline: 1s
network:
  latency: uniform:1ms,3ms
  fifo: true
faults:
  - crash 2 at 300ms
  - recover 2 at 700ms
`

// leaderInputs builds campaign, resign and elect inputs for scenario files.
func leaderInputs(name string, args []string) (proc.Input, error) {
	if len(args) > 0 {
		return nil, fmt.Errorf("input %q takes no arguments, got %q", name, strings.Join(args, " "))
	}
	switch name {
	case "campaign":
		return Campaign{}, nil
	case "resign":
		return Resign{}, nil
	case "elect":
		return Elect{}, nil
	}
	return nil, fmt.Errorf("unknown input %q (want campaign, resign or elect)", name)
}

func (b *bullyFD) Start(env proc.Env) {
	now := env.Now()
	b.started = now
	for i := range b.peers {
		b.peers[i] = fdPeer{last: now, claims: proc.None}
	}
	b.tick(env)
}

func (b *bullyFD) Input(env proc.Env, in proc.Input) {
	switch in.(type) {
	case Campaign:
		if !b.candidate {
			b.candidate = true
			b.beat(env)
		}
	case Resign:
		if b.candidate {
			b.candidate = false
			b.stop(env)
			if b.elected == env.Self() {
				b.setElected(env, proc.None, 0)
			}
			b.beat(env)
		}
	case Elect:
		if b.elected != env.Self() {
			b.setElected(env, proc.None, 0)
		}
	case Report:
		env.Output(Elected{Leader: b.elected, Term: b.term})
		return
	}
	b.review(env)
}

func (b *bullyFD) Receive(env proc.Env, from proc.ID, m proc.Message) {
	p := &b.peers[from]
	b.heard(env, from)
	switch m := m.(type) {
	case fdBeat:
		p.candidate, p.claims = m.Candidate, m.Leader
		b.maxTerm = max(b.maxTerm, m.Term)
		switch {
		case from == b.elected && (!m.Candidate || m.Leader != from):
			b.setElected(env, proc.None, 0) // our leader resigned or follows another
		case m.Candidate && m.Leader == from && (b.elected == proc.None || from > b.elected):
			if !(b.candidate && env.Self() > from) {
				b.stop(env)
				b.setElected(env, from, m.Term)
			}
		case from == b.elected && m.Term > b.term:
			b.setElected(env, from, m.Term) // our leader took a new term
		}
	case bullyElection:
		p.candidate = true
		if b.candidate && from < env.Self() {
			env.Send(from, bullyAnswer{})
			b.elect(env)
		}
	case bullyAnswer:
		if b.phase == bullyWaitAnswer {
			b.wait(env, bullyWaitCoord, b.cfg.TPrime)
		}
	case bullyCoordinator:
		b.onCoordinator(env, from, 0)
	case fdCoordinator:
		b.maxTerm = max(b.maxTerm, m.Term)
		b.onCoordinator(env, from, m.Term)
	}
	if b.elected == env.Self() && b.maxTerm > b.term {
		b.becomeLeader(env) // a term above ours exists: lead under a newer one
	}
	b.review(env)
}

// onCoordinator adopts a new leader, or bullies a lower one.
func (b *bullyFD) onCoordinator(env proc.Env, from proc.ID, term uint64) {
	p := &b.peers[from]
	p.candidate, p.claims = true, from
	if b.candidate && from < env.Self() {
		b.elect(env)
		return
	}
	b.stop(env)
	b.setElected(env, from, term)
}

func (b *bullyFD) Timeout(env proc.Env, tag any) {
	switch t := tag.(type) {
	case fdTick:
		b.tick(env)
	case bullyTimeout:
		if t.phase != b.phase {
			return
		}
		b.timer = 0
		switch b.phase {
		case bullyWaitAnswer: // nobody higher answered within T
			b.becomeLeader(env)
		case bullyWaitCoord: // the answerer did not announce itself
			b.phase = bullyIdle
			b.elect(env)
		}
	}
}

// tick sends the heartbeats, updates suspicions and reviews the leader.
//
// A tick that comes much later than due means this process itself was
// stalled (descheduled on a busy machine, paused by a debugger): the
// heartbeats that arrived meanwhile may still wait behind the tick, so the
// silence it sees is its own. Such a tick suspects nobody; the next one,
// after the backlog, decides.
func (b *bullyFD) tick(env proc.Env) {
	b.beat(env)
	now := env.Now()
	stalled := b.ticked && now-b.lastTick > 2*b.cfg.Heartbeat
	b.ticked, b.lastTick = true, now
	all := true
	for q := range b.peers {
		if proc.ID(q) == env.Self() {
			continue
		}
		p := &b.peers[q]
		all = all && p.heard
		if !stalled && !p.suspected && b.silentTooLong(p, now) {
			p.suspected = true
			if b.elected == proc.ID(q) {
				b.setElected(env, proc.None, 0)
			}
		}
	}
	if all || now-b.started >= b.cfg.Timeout {
		b.graceOver = true
	}
	if b.cfg.Quorum && b.elected == env.Self() && !stalled && !b.majority(now, b.cfg.StepDown) {
		b.setElected(env, proc.None, 0) // cut off from a majority: step down
		b.beat(env)
	}
	b.review(env)
	env.SetTimer(b.cfg.Heartbeat, fdTick{})
}

func (b *bullyFD) beat(env proc.Env) {
	for q := range b.peers {
		if proc.ID(q) != env.Self() {
			env.Send(proc.ID(q), fdBeat{Candidate: b.candidate, Leader: b.elected, Term: b.term})
		}
	}
}

// heard notes a sign of life from q.
func (b *bullyFD) heard(env proc.Env, q proc.ID) {
	p := &b.peers[q]
	now := env.Now()
	if p.heard && !p.suspected {
		p.gaps.add(now - p.last)
	} else {
		p.gaps = gapWindow{} // a fresh start: old intervals say nothing
	}
	p.heard, p.last, p.suspected = true, now, false
}

// silentTooLong is the failure detector's verdict on a peer.
func (b *bullyFD) silentTooLong(p *fdPeer, now time.Duration) bool {
	silence := now - p.last
	if b.cfg.Phi <= 0 || !p.heard || p.gaps.n < 2 {
		return silence >= b.cfg.Timeout
	}
	return Phi(silence, p.gaps.mean(), max(p.gaps.stddev(), float64(b.cfg.MinStdDev)), b.cfg.Pause) > b.cfg.Phi
}

// review starts an election when this candidate has no leader it accepts.
func (b *bullyFD) review(env proc.Env) {
	if !b.candidate || !b.graceOver || b.phase != bullyIdle {
		return
	}
	if b.elected == proc.None || b.elected < env.Self() {
		b.elect(env)
	}
}

// elect starts an election among the higher candidates not suspected.
func (b *bullyFD) elect(env proc.Env) {
	if b.phase != bullyIdle || !b.candidate {
		return
	}
	asked := false
	for q := env.Self() + 1; int(q) < len(b.peers); q++ {
		if p := &b.peers[q]; p.candidate && !p.suspected {
			env.Send(q, bullyElection{})
			asked = true
		}
	}
	if !asked {
		b.becomeLeader(env)
		return
	}
	b.wait(env, bullyWaitAnswer, b.cfg.T)
}

// becomeLeader takes a term above every term heard of (or keeps its own,
// if it leads already and no higher term exists) and announces it, unless
// leadership needs a majority this process does not hear.
func (b *bullyFD) becomeLeader(env proc.Env) {
	b.stop(env)
	if b.cfg.Quorum && !b.majority(env.Now(), b.cfg.StepDown) {
		if b.elected == env.Self() {
			b.setElected(env, proc.None, 0)
		}
		return // review tries again at the next tick
	}
	if b.elected != env.Self() || b.maxTerm > b.term {
		b.maxTerm++ // a new leadership: a term above every one heard of
		b.setElected(env, env.Self(), b.maxTerm)
	}
	for q := range b.peers {
		if proc.ID(q) != env.Self() {
			env.Send(proc.ID(q), fdCoordinator{Term: b.term})
		}
	}
}

// majority reports whether this process heard from more than half of the
// processes, itself included, within the last d.
func (b *bullyFD) majority(now, d time.Duration) bool {
	n := 1
	for q := range b.peers {
		if p := &b.peers[q]; p.heard && !p.suspected && now-p.last < d {
			n++
		}
	}
	return 2*n > len(b.peers)
}

func (b *bullyFD) wait(env proc.Env, phase bullyPhase, d time.Duration) {
	b.stop(env)
	b.phase = phase
	b.timer = env.SetTimer(d, bullyTimeout{phase})
}

func (b *bullyFD) stop(env proc.Env) {
	if b.timer != 0 {
		env.CancelTimer(b.timer)
		b.timer = 0
	}
	b.phase = bullyIdle
}

func (b *bullyFD) setElected(env proc.Env, leader proc.ID, term uint64) {
	if b.elected != leader || b.term != term {
		b.elected, b.term = leader, term
		env.Output(Elected{Leader: leader, Term: term})
	}
}

// Phi is the phi-accrual suspicion level of a silence: −log10 of the
// probability that a heartbeat arrives later still, with the intervals
// normal of the given mean and standard deviation (in nanoseconds), the
// mean lengthened by an acceptable pause.
func Phi(silence time.Duration, mean, stddev float64, pause time.Duration) float64 {
	z := (float64(silence) - mean - float64(pause)) / stddev
	later := 0.5 * math.Erfc(z/math.Sqrt2)
	if later <= 0 {
		return math.Inf(1)
	}
	return -math.Log10(later)
}

// gapWindow keeps the last heartbeat intervals of a peer.
type gapWindow struct {
	gaps [32]time.Duration
	n    int // how many are filled
	next int
}

func (w *gapWindow) add(d time.Duration) {
	w.gaps[w.next] = d
	w.next = (w.next + 1) % len(w.gaps)
	w.n = min(w.n+1, len(w.gaps))
}

func (w *gapWindow) mean() float64 {
	var s float64
	for _, g := range w.gaps[:w.n] {
		s += float64(g)
	}
	return s / float64(w.n)
}

func (w *gapWindow) stddev() float64 {
	m := w.mean()
	var s float64
	for _, g := range w.gaps[:w.n] {
		s += (float64(g) - m) * (float64(g) - m)
	}
	return math.Sqrt(s / float64(w.n))
}
