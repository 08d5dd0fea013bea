package proc

import (
	"math/rand/v2"
	"strconv"
	"time"
)

// ID names a process in a run: 0 .. N-1.
type ID int32

// None is the ID of no process (no sender, no leader yet).
const None ID = -1

// String returns "p3" for process 3 and "none" for None.
func (id ID) String() string {
	if id == None {
		return "none"
	}
	return "p" + strconv.Itoa(int(id))
}

// TimerID identifies a timer set by SetTimer. Zero is never a valid TimerID.
type TimerID uint64

// Kinded is implemented by every message, input and output: Kind is a short,
// stable, lower-case name ("request", "reply", "enter") used for message
// accounting, traces and the wire.
type Kinded interface {
	Kind() string
}

// Message is a value sent between processes.
type Message = Kinded

// Lossy is implemented by messages whose loss, duplication or reordering
// the algorithm tolerates by its own means (SWIM's probes: a lost ping is
// a failed probe, which indirect probes and suspicion absorb). A live host
// may send them on an unreliable, unordered channel (authenticated UDP
// datagrams) instead of the reliable FIFO one the other messages take;
// the simulator treats them as any message. The marker says what the
// algorithm assumes, not how to send.
type Lossy interface {
	Message
	Lossy()
}

// Urgent is implemented by messages whose worth decays with their wait
// (SWIM's pings and acks: an ack handled after its probe's timeout is a
// failed probe, however soon it arrived). A live host handles them ahead
// of the events already waiting for the process, so they must tolerate
// reordering (Lossy); the simulator, which makes no process wait behind
// others, treats them as any message.
type Urgent interface {
	Lossy
	Urgent()
}

// Input is a request from the application or workload to a process.
type Input = Kinded

// Output is an observable act of a process (entered the critical section,
// elected a leader, delivered a message).
type Output = Kinded

// Env is what a host offers a process during one call.
type Env interface {
	// Self is this process's ID.
	Self() ID
	// N is the size of the run's ID space: every process that is, was or
	// may become a member has an ID in 0 .. N-1. Without churn every one of
	// them is present from the start; with it, some join later and some
	// leave (see Joiner and Leave).
	N() int
	// Neighbors are the processes this one may send to directly in the
	// run's topology (all others for a full mesh). The slice must not be
	// modified.
	Neighbors() []ID
	// Now reads this process's local clock: time since the run began as the
	// process's hardware clock measures it (it may be offset and drift).
	Now() time.Duration
	// Send sends m to process to. Sending to oneself is allowed and goes
	// through the network like any other message.
	Send(to ID, m Message)
	// SetTimer arranges for Timeout(env, tag) to be called after d has
	// passed on the local clock. d <= 0 fires as soon as possible.
	SetTimer(d time.Duration, tag any) TimerID
	// CancelTimer cancels a timer; cancelling a fired or unknown timer is a
	// no-op.
	CancelTimer(id TimerID)
	// Rand is this process's random source, seeded by the host.
	Rand() *rand.Rand
	// Output reports an observable act.
	Output(o Output)
	// Storage is this process's stable storage (see Storage), or nil if
	// the host has none.
	Storage() Storage
}

// Process is an algorithm's state machine at one process.
type Process interface {
	Start(env Env)
	Receive(env Env, from ID, m Message)
	Timeout(env Env, tag any)
	Input(env Env, in Input)
}

// Stamp is an output by which a process reports the logical timestamp it
// assigned to the event it just performed (the last send or receive of the
// call that outputs it). Checkers use stamps to verify that an algorithm's
// own clock respects happened-before.
type Stamp struct {
	C uint64 `json:"c"`
}

// Kind implements Output.
func (Stamp) Kind() string { return "stamp" }

func (s Stamp) String() string { return "C=" + strconv.FormatUint(s.C, 10) }

// Describer is implemented by a process that can say what state it is in,
// for a person reading its run: the variables its pseudocode names (Ricart
// and Agrawala's state, deferred queue and replies awaited; a Maekawa
// voter's vote; a sequencer's next number). Hosts call Describe only when
// asked to record states (cohort sim --states), after each step of the
// process, and store the JSON encoding of its result in the trace beside
// the step's last event; otherwise it is never called.
//
// Describe returns a JSON-encodable value (a small struct with json tags,
// whose fields keep their order) and must not change the process. Maps
// are encoded with sorted keys, so the trace stays deterministic.
type Describer interface {
	Describe() any
}
