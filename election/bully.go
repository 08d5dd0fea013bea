package election

import (
	"fmt"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// The bully algorithm (Garcia-Molina 1982; Coulouris et al.; the example of
// Tanenbaum & van Steen §6.5: 7 crashes, 4 notices). Every process knows
// every identifier; a process that notices the coordinator is gone starts
// an election:
//
//	To elect:            send ELECTION to every process with a higher id;
//	                     wait T for an ANSWER. None: become coordinator and
//	                     send COORDINATOR to every process with a lower id.
//	                     An ANSWER: wait T' for COORDINATOR; none: elect again.
//	The highest id:      becomes coordinator at once, without asking.
//	On ELECTION from q:  send ANSWER to q; elect, unless already electing.
//	On COORDINATOR(c):   elected := c.
//
// The Elect input means the process suspects its coordinator. When that
// coordinator is the only process with a higher id, there is nobody left to
// ask, and the process elects itself at once: Coulouris et al.'s best case,
// the second-highest noticing the highest's failure. Otherwise it asks
// every higher process, the suspect included, as in Tanenbaum & van Steen's
// example (4 sends ELECTION to 5, 6 and 7). A process elects on Start too,
// so a process that recovers with a high id bullies its way back, and one
// that receives COORDINATOR from a process with a lower id (which thought
// it was gone) answers with an election of its own.
//
// Assumptions: reliable channels and a synchronous system (T bounds a round
// trip, T' the time to the new coordinator's message); failures crash-stop,
// or crash-recover where a recovered process rejoins by election.
// Coulouris et al. show both assumptions are needed for E1: a slow but live
// process (an unreliable timeout) and a crashed process replaced by one
// with the same id may each announce itself while another process does, and
// the receivers then disagree on who won. The tests show both.
//
// Cost: best case N−2 messages and one message of turnaround (the
// second-highest notices); worst case O(N²) (the lowest notices: every
// process holds an election of its own).
type bully struct {
	cfg BullyConfig

	elected proc.ID
	phase   bullyPhase
	suspect proc.ID // the coordinator the last Elect reported gone
	timer   proc.TimerID
}

// BullyConfig holds the bully algorithm's timeouts, in local-clock time.
type BullyConfig struct {
	// T is how long an electing process waits for an ANSWER (at least one
	// round trip plus handling). Default 4 ms, for a 1 ms network.
	T time.Duration
	// TPrime (T') is how long a process that got an ANSWER waits for the
	// COORDINATOR message before it elects again. Default 3T.
	TPrime time.Duration
}

// DefaultBully is the registered entry's configuration.
var DefaultBully = BullyConfig{T: 4 * time.Millisecond, TPrime: 12 * time.Millisecond}

// Describe implements proc.Describer: the coordinator this process
// knows, the phase of its election and the coordinator it suspects.
func (b *bully) Describe() any {
	return struct {
		Coordinator string `json:"coordinator"`
		Phase       string `json:"phase"`
		Suspect     string `json:"suspect"`
	}{b.elected.String(), b.phase.String(), b.suspect.String()}
}

type bullyPhase uint8

const (
	bullyIdle       bullyPhase = iota
	bullyWaitAnswer            // ELECTION sent, waiting T
	bullyWaitCoord             // ANSWER received, waiting T'
)

func (p bullyPhase) String() string {
	switch p {
	case bullyIdle:
		return "idle"
	case bullyWaitAnswer:
		return "wait-answer"
	case bullyWaitCoord:
		return "wait-coordinator"
	}
	return fmt.Sprintf("bullyPhase(%d)", uint8(p))
}

// bullyElection announces an election to a higher process.
type bullyElection struct{}

// bullyAnswer (OK) tells a lower process that a higher one is alive.
type bullyAnswer struct{}

// bullyCoordinator announces the sender as the new coordinator.
type bullyCoordinator struct{}

func (bullyElection) Kind() string      { return "election" }
func (bullyElection) String() string    { return "ELECTION" }
func (bullyAnswer) Kind() string        { return "answer" }
func (bullyAnswer) String() string      { return "OK" }
func (bullyCoordinator) Kind() string   { return "coordinator" }
func (bullyCoordinator) String() string { return "COORDINATOR" }

// bullyTimeout is the tag of the T and T' timers.
type bullyTimeout struct{ phase bullyPhase }

// NewBully builds bully processes with the given timeouts; zero fields take
// DefaultBully's.
func NewBully(cfg BullyConfig) func(proc.ID, int) proc.Process {
	if cfg.T <= 0 {
		cfg.T = DefaultBully.T
	}
	if cfg.TPrime <= 0 {
		cfg.TPrime = 3 * cfg.T
	}
	return func(proc.ID, int) proc.Process {
		return &bully{cfg: cfg, elected: proc.None, suspect: proc.None}
	}
}

func init() {
	register(proc.Algorithm{
		Name:    "bully",
		Summary: "ELECTION to higher ids, ANSWER, COORDINATOR to lower ids; timeouts T and T' (best N−2 messages, worst O(N²))",
		Source:  "Garcia-Molina 1982; Coulouris et al.; Tanenbaum & van Steen §6.5",
		Assumes: proc.Assumptions{Reliable: true, Synchronous: true, Failures: "crash-recover"},
		New:     NewBully(DefaultBully),
		Messages: []proc.Message{
			bullyElection{}, bullyAnswer{}, bullyCoordinator{},
		},
	})
}

// Start elects: a fresh or recovered process does not know the coordinator.
func (b *bully) Start(env proc.Env) { b.elect(env) }

func (b *bully) Input(env proc.Env, in proc.Input) {
	if _, ok := in.(Elect); ok {
		if b.elected != env.Self() {
			b.suspect = b.elected
		}
		b.elect(env)
	}
}

func (b *bully) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m.(type) {
	case bullyElection:
		b.onElection(env, from)
	case bullyAnswer:
		b.onAnswer(env)
	case bullyCoordinator:
		b.onCoordinator(env, from)
	}
}

func (b *bully) Timeout(env proc.Env, tag any) {
	t, ok := tag.(bullyTimeout)
	if !ok || t.phase != b.phase {
		return
	}
	b.timer = 0
	switch b.phase {
	case bullyWaitAnswer: // nobody higher answered within T
		b.becomeCoordinator(env)
	case bullyWaitCoord: // the answerer did not announce itself within T'
		b.phase = bullyIdle
		b.elect(env)
	}
}

// elect starts an election unless one is under way.
func (b *bully) elect(env proc.Env) {
	if b.phase != bullyIdle {
		return
	}
	self, top := env.Self(), proc.ID(env.N()-1)
	if self == top || (self == top-1 && b.suspect == top) {
		b.becomeCoordinator(env)
		return
	}
	for p := self + 1; p <= top; p++ {
		env.Send(p, bullyElection{})
	}
	b.wait(env, bullyWaitAnswer, b.cfg.T)
}

// onElection answers a lower process and holds an election of its own.
func (b *bully) onElection(env proc.Env, from proc.ID) {
	if from < env.Self() {
		env.Send(from, bullyAnswer{})
	}
	b.elect(env)
}

// onAnswer: a higher process is alive; wait T' for its COORDINATOR.
func (b *bully) onAnswer(env proc.Env) {
	if b.phase != bullyWaitAnswer {
		return
	}
	b.wait(env, bullyWaitCoord, b.cfg.TPrime)
}

// onCoordinator adopts the new coordinator, or bullies a lower one.
func (b *bully) onCoordinator(env proc.Env, from proc.ID) {
	if from < env.Self() {
		b.elect(env)
		return
	}
	b.stop(env)
	b.suspect = proc.None
	b.setElected(env, from)
}

func (b *bully) becomeCoordinator(env proc.Env) {
	b.stop(env)
	b.suspect = proc.None
	b.setElected(env, env.Self())
	for p := proc.ID(0); p < env.Self(); p++ {
		env.Send(p, bullyCoordinator{})
	}
}

func (b *bully) wait(env proc.Env, phase bullyPhase, d time.Duration) {
	b.stop(env)
	b.phase = phase
	b.timer = env.SetTimer(d, bullyTimeout{phase})
}

func (b *bully) stop(env proc.Env) {
	if b.timer != 0 {
		env.CancelTimer(b.timer)
		b.timer = 0
	}
	b.phase = bullyIdle
}

func (b *bully) setElected(env proc.Env, leader proc.ID) {
	if b.elected != leader {
		b.elected = leader
		env.Output(Elected{Leader: leader})
	}
}
