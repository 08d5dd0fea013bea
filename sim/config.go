package sim

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/trace"
)

// Config describes one simulated run. The zero value of every optional
// field means "off" or "the default" as its comment says; Validate reports
// the first bad field by name.
type Config struct {
	// Nodes is the number of processes (at least 1).
	Nodes int
	// Seed seeds every random choice of the run: the network's and each
	// process's. Same Config and Seed, same trace.
	Seed uint64
	// New builds process id; also called on recovery, for a fresh state,
	// and, for a run of more than 10,000 processes, a few times at small
	// sizes before the run to measure what a process costs (CheckMemory):
	// it should have no side effects beyond the process it returns.
	New func(id proc.ID, n int) proc.Process
	// Topology for Env.Neighbors; nil is the complete graph.
	Topology Topology
	// Network is the model of every link.
	Network Network
	// Faults are scheduled crashes, recoveries, pauses, slow spells, joins
	// and leaves.
	Faults []Fault
	// Initial, if above 0, is how many processes are present at the start:
	// 0 .. Initial-1. The others are absent until a Join brings them in.
	// 0 means all of them (less those whose first fault is a Join).
	Initial int
	// Churn adds seeded random joins, failures and leaves (see Churn).
	Churn []Churn
	// Clocks gives each process a hardware clock; nil means perfect clocks
	// (local time = true time).
	Clocks ClockModel
	// Workload feeds the processes application inputs; nil means none.
	Workload Workload
	// Observe, if set, is called with every output as it happens.
	Observe func(at time.Duration, node proc.ID, o proc.Output)
	// Sent, if set, is called with every message a process sends, as it
	// sends it (before the network may lose or duplicate it): a meter of
	// the traffic that, unlike a wrapper around each process, leaves the
	// processes' state where the simulator prefetches it.
	Sent func(from, to proc.ID, m proc.Message)
	// Trace receives every event; nil records nothing (the fast path).
	Trace trace.Sink
	// VectorClocks adds vector timestamps to trace events (N words per
	// event and per message: for small runs only).
	VectorClocks bool
	// States records each process's own description of its state
	// (proc.Describer) after every step it takes, in the step's last
	// event (trace.Event.State). Off, Describe is never called and the
	// trace is byte for byte what it was without it.
	States bool
	// NoLabels leaves trace.Event.Label empty: messages, inputs and
	// outputs are not formatted (their String) as they are recorded, and
	// the rest of each event is as with labels. For a caller that makes
	// many runs and shows few (the explorer, whose checkers read no
	// labels): it records again, with labels, the runs it shows.
	NoLabels bool
	// TraceOnly, if not zero, limits the trace to the events of the
	// kinds it has (a bit 1<<Kind each): the others are neither built
	// nor handed to Trace, and the events handed are indexed among
	// themselves. For a caller that watches a few kinds of events as a
	// run goes and records a run again, in full, when it needs its
	// whole trace (the explorer). Zero: every event.
	TraceOnly uint64
	// Queue chooses which pending event fires next; nil orders by time,
	// then by the order events were scheduled.
	Queue Queue
	// Deadline stops the run at this virtual time; 0 runs until quiescence.
	Deadline time.Duration
	// MaxEvents stops the run after this many events; 0 is unlimited.
	MaxEvents int64
	// Until, if set, is checked after every event; the run stops when it
	// returns true.
	Until func(s *Sim) bool
	// MemoryBudget bounds the live heap during Run, in bytes: beyond it
	// the run ends with an error wrapping ErrTooBig instead of exhausting
	// the machine. 0: half the memory available when the run starts;
	// negative: none.
	MemoryBudget int64
	// NoGarbage says that the processes make no garbage, so that the heap
	// is the simulator's tables and the events in flight, all live. Run
	// then collects only as the heap nears MemoryBudget (the collector
	// off under the runtime's memory limit), not each time the heap
	// doubles: as a large run starts, those collections scan gigabytes of
	// pending events and free nothing (at 10⁷ processes × 10 messages,
	// six of them, the last over 5 GB). For benchmarks; it changes no
	// result. Ignored when Run sets no memory limit (no budget, or
	// GOMEMLIMIT set), when GOGC is set, or when the program has changed
	// the collector's setting from its default.
	NoGarbage bool
	// GCPercent is the collector's target during Run (as GOGC: the heap
	// may grow by GCPercent% of what the last collection left live
	// before the next), for a run whose live state grows large while its
	// processes make garbage too (an overlay built by joins: each join's
	// messages are garbage once delivered, the tables they fill stay
	// live). Each collection marks the whole live state, so the
	// collector's work is about the garbage made over GCPercent/100
	// times; a higher target does less of it for a heap up to
	// 1 + GCPercent/100 times the live one, still under MemoryBudget
	// (the runtime's memory limit collects harder as it nears it). 0
	// keeps the program's (100 by default). Ignored, as NoGarbage is,
	// when Run sets no memory limit, when GOGC is set, or when the
	// program has changed the collector's setting from its default.
	GCPercent int
}

// Network models every link. Links override it per directed pair.
type Network struct {
	// Latency is the one-way delay; nil is Constant(1ms).
	Latency Dist
	// FIFO makes every channel deliver in send order (a message never
	// overtakes an earlier one on the same directed link).
	FIFO bool
	// Loss is the probability that a message is lost.
	Loss float64
	// Duplicate is the probability that a message is delivered twice.
	Duplicate float64
	// Reorder is the probability that a message is held back by an extra
	// delay drawn from Latency and exempted from FIFO: it may be overtaken.
	Reorder float64
	// Pairwise, if set, replaces Latency with a latency for each directed
	// pair of processes (a physical topology's: the sum of the link
	// latencies on the path between them). Links still override it.
	Pairwise PairLatency
	// Links override Latency and Loss for single directed links (asymmetric
	// delay, one bad link).
	Links []Link
	// Partitions cut the network into groups for a span of time.
	Partitions []Partition
}

// PairLatency is a latency for every directed pair of processes, fixed
// for the run. String describes it.
type PairLatency interface {
	Latency(from, to proc.ID) time.Duration
	String() string
}

// Link overrides the network model on the directed link From → To.
type Link struct {
	From, To proc.ID
	Latency  Dist     // nil keeps the network's
	Loss     *float64 // nil keeps the network's
}

// Partition splits the processes into Groups from From until To (To = 0:
// for ever). Messages between different groups sent while the partition
// holds are lost. Processes named in no group form one more group together.
type Partition struct {
	Groups   [][]proc.ID
	From, To time.Duration
}

// FaultKind names a fault.
type FaultKind uint8

const (
	// Crash stops a process: it loses its state, its timers and every
	// message that arrives while it is down (crash-stop, or crash-recover
	// when a Recover follows).
	Crash FaultKind = iota + 1
	// Recover restarts a crashed process with fresh state: New, then Start.
	Recover
	// Pause freezes a process from At until Until: messages, timers and
	// inputs wait and are handled, in order, when it resumes.
	Pause
	// Slow makes every event a process handles from At until Until take
	// Delay of virtual time; events arriving while it is busy wait.
	Slow
	// Join brings a process into the running system with fresh state: New,
	// then Join(env, contact) if it is a proc.Joiner (contact: a present
	// member drawn at random with the run's seed), else Start. A process
	// whose first join, leave or crash is a Join
	// is absent until then. A Join of a present process does nothing.
	Join
	// Leave makes a process leave gracefully: it gets the proc.Leave input,
	// and is gone once it has handled it.
	Leave
	// CrashInSync crashes a process during its first Sync of stable
	// storage at or after At — the worst moment for its disk: a random
	// prefix of the writes that Sync was making durable survives, and
	// nothing the process would have done after the Sync happens. If it
	// is down at At, or never syncs, nothing happens.
	CrashInSync
)

func (k FaultKind) String() string {
	switch k {
	case Crash:
		return "crash"
	case Recover:
		return "recover"
	case Pause:
		return "pause"
	case Slow:
		return "slow"
	case Join:
		return "join"
	case CrashInSync:
		return "crash-in-sync"
	case Leave:
		return "leave"
	}
	return fmt.Sprintf("fault(%d)", uint8(k))
}

// Fault is one scheduled fault.
type Fault struct {
	Kind  FaultKind
	Node  proc.ID
	At    time.Duration
	Until time.Duration // Pause, Slow: the end (must be after At)
	Delay time.Duration // Slow: processing time per event
}

// ClockModel gives process id its hardware clock. Skew(i, n, seed) is a
// ready-made model with random offsets and drifts.
type ClockModel func(id proc.ID) HWClock

// HWClock is a hardware clock: it reads Offset + (1+Drift)·t at true time t.
// Drift is the rate error ρ (1e-5 = 10 ppm fast; must be > -1).
type HWClock struct {
	Offset time.Duration
	Drift  float64
}

// Read returns the clock's reading at true time t.
func (c HWClock) Read(t time.Duration) time.Duration {
	return c.Offset + t + time.Duration(c.Drift*float64(t))
}

// Validate reports the first invalid field of c.
func (c *Config) Validate() error {
	if c.Nodes < 1 {
		return fmt.Errorf("nodes = %d: need at least 1", c.Nodes)
	}
	if c.GCPercent < 0 {
		return fmt.Errorf("GCPercent = %d: want a percentage, or 0 for the program's", c.GCPercent)
	}
	if c.Nodes > math.MaxInt32 {
		return fmt.Errorf("nodes = %d: at most %d", c.Nodes, math.MaxInt32)
	}
	if c.New == nil {
		return errors.New("no process constructor (Config.New is nil)")
	}
	if c.Deadline < 0 {
		return fmt.Errorf("deadline = %v: must not be negative", c.Deadline)
	}
	if err := c.Network.validate(c.Nodes); err != nil {
		return err
	}
	inRange := func(what string, id proc.ID) error {
		if id < 0 || int(id) >= c.Nodes {
			return fmt.Errorf("%s: node %d out of range 0..%d", what, id, c.Nodes-1)
		}
		return nil
	}
	for i, f := range c.Faults {
		what := fmt.Sprintf("fault %d (%s)", i+1, f.Kind)
		if f.Kind < Crash || f.Kind > CrashInSync {
			return fmt.Errorf("fault %d: unknown kind %d", i+1, f.Kind)
		}
		if err := inRange(what, f.Node); err != nil {
			return err
		}
		if f.At < 0 {
			return fmt.Errorf("%s: negative time %v", what, f.At)
		}
		if (f.Kind == Pause || f.Kind == Slow) && f.Until <= f.At {
			return fmt.Errorf("%s: ends at %v, not after it starts at %v", what, f.Until, f.At)
		}
		if f.Kind == Slow && f.Delay <= 0 {
			return fmt.Errorf("%s: delay %v must be positive", what, f.Delay)
		}
	}
	if c.Initial < 0 || c.Initial > c.Nodes {
		return fmt.Errorf("initial = %d: must be in 0..%d (nodes)", c.Initial, c.Nodes)
	}
	for i := range c.Churn {
		if err := c.Churn[i].validate(); err != nil {
			return fmt.Errorf("churn %d: %w", i+1, err)
		}
	}
	if c.Clocks != nil {
		for i := 0; i < c.Nodes && i < 1<<16; i++ {
			if d := c.Clocks(proc.ID(i)).Drift; d <= -1 || math.IsNaN(d) || math.IsInf(d, 0) {
				return fmt.Errorf("clock of node %d: drift %v must be a number above -1", i, d)
			}
		}
	}
	return nil
}

func (n *Network) validate(nodes int) error {
	prob := func(name string, p float64) error {
		if !(p >= 0 && p <= 1) {
			return fmt.Errorf("network %s = %v: must be a probability in [0,1]", name, p)
		}
		return nil
	}
	if err := prob("loss", n.Loss); err != nil {
		return err
	}
	if err := prob("duplicate", n.Duplicate); err != nil {
		return err
	}
	if err := prob("reorder", n.Reorder); err != nil {
		return err
	}
	for i, l := range n.Links {
		if l.From < 0 || int(l.From) >= nodes || l.To < 0 || int(l.To) >= nodes {
			return fmt.Errorf("link %d (%d→%d): node out of range 0..%d", i+1, l.From, l.To, nodes-1)
		}
		if l.Loss != nil {
			if err := prob(fmt.Sprintf("link %d→%d loss", l.From, l.To), *l.Loss); err != nil {
				return err
			}
		}
	}
	for i, p := range n.Partitions {
		if p.To != 0 && p.To <= p.From {
			return fmt.Errorf("partition %d: ends at %v, not after it starts at %v", i+1, p.To, p.From)
		}
		seen := map[proc.ID]bool{}
		for _, g := range p.Groups {
			for _, id := range g {
				if id < 0 || int(id) >= nodes {
					return fmt.Errorf("partition %d: node %d out of range 0..%d", i+1, id, nodes-1)
				}
				if seen[id] {
					return fmt.Errorf("partition %d: node %d is in two groups", i+1, id)
				}
				seen[id] = true
			}
		}
	}
	return nil
}
