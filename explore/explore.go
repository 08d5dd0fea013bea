package explore

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/trace"
)

// Timing is the explorer's abstraction of time.
type Timing uint8

const (
	// Async: any pending event may happen next; a timer may fire before a
	// message due earlier (timeouts are unreliable, as in an asynchronous
	// system).
	Async Timing = iota
	// Sync: a message may arrive at any time up to one latency after it
	// was sent, in any order with other messages, but a timer fires only
	// when no message or input is due before it and no timer is due
	// earlier — the bounded delays a synchronous algorithm assumes.
	Sync
)

func (t Timing) String() string {
	if t == Sync {
		return "sync"
	}
	return "async"
}

// ParseTiming reads "sync" or "async".
func ParseTiming(s string) (Timing, error) {
	switch s {
	case "sync":
		return Sync, nil
	case "async":
		return Async, nil
	}
	return 0, fmt.Errorf("timing %q: want sync or async", s)
}

// Strategy is the order of the search.
type Strategy uint8

const (
	// BFS explores states by distance from the start: the first violation
	// found has a shortest schedule.
	BFS Strategy = iota
	// DFS explores depth first, with sleep sets if Config.POR.
	DFS
)

func (s Strategy) String() string {
	if s == DFS {
		return "dfs"
	}
	return "bfs"
}

// Config is one exploration. The zero value of an optional field is off.
type Config struct {
	Family string
	Algo   proc.Algorithm
	Nodes  int
	// Inputs are the application's inputs (see Workload).
	Inputs []Input
	// Gate and Answer: see Workload.
	Gate   string
	Answer func(o proc.Output) proc.Input
	Timing Timing
	// FIFO delivers the messages of each channel in the order sent.
	FIFO bool
	// SetNetwork makes the network a set of messages that only grows: a
	// message, once sent, may be received any number of times, and
	// sending it again changes nothing (the network of the TLA+
	// specifications, two-phase commit's among them).
	SetNetwork bool
	// Crashes, Losses and Dups bound the faults the explorer may choose
	// on each path: crash a process (crash-stop), lose a message,
	// deliver one twice.
	Crashes, Losses, Dups int
	Strategy              Strategy
	// POR prunes, with sleep sets, the orders of steps at different
	// processes that lead to the same state (DFS only).
	POR bool
	// MaxStates bounds the unique states (0: 1,000,000); MaxDepth the
	// steps of a path (0: 200). A search cut off by either is not
	// exhausted.
	MaxStates int
	MaxDepth  int
	// Checks are the properties checked; Safety are those among them also
	// checked on every state as it is found (the others are judged at
	// terminal states, where nothing is enabled; a state cut off by the depth
	// bound is counted, not judged).
	Checks []string
	Safety []string
	// Symmetry merges states that differ by a renaming of the
	// interchangeable processes Symmetric (Setup fills it in for the
	// families that have them: two-phase commit's resource managers): a
	// state is fingerprinted as its representative (see run.canon).
	Symmetry  bool
	Symmetric []proc.ID
	// Cycles judges liveness in cycles too (mutual exclusion only): once
	// the state graph is exhausted, a reachable cycle, fair under weak
	// fairness, along which a process that requested never enters breaks
	// ME2 (see lasso.go). It keeps the graph: breadth first, no POR.
	Cycles bool
	// Replay explores statelessly: a state is reached by replaying its
	// path from the start, never by forking a run (the engine of old,
	// kept to compare with).
	Replay bool

	watchers []watcher // of Safety, set by Explore
	// noLabels: the runs record no labels (sim.Config.NoLabels), as no
	// checker reads them; set by Explore. A counterexample is recorded
	// again with them.
	noLabels bool
	// atEnd are the checkers judged at terminal states: Checks less
	// Safety, which were judged on every state as it was found (a
	// terminal state among them), set by Explore.
	atEnd []string
	// traceOnly, if not zero, is the kinds of events the runs record
	// (sim.Config.TraceOnly): those the watchers read, when every safety
	// checker is watched and none is judged at the end (partialTrace).
	// A trace judged is then recorded again, in full, by replaying the
	// state's path. Set by Explore.
	traceOnly uint64
	// values copies the inputs and outputs the runs record whose Data
	// is encoded later (recorder); set by Explore, nil: encoded at once.
	values *copier
}

// labelFree are the checkers known to read no event's Label (their
// verdicts and details are the same on a trace without labels): the
// explorer's runs need record none for them.
var labelFree = []string{
	"ME1", "ME2", "ME3", "integrity", "no-duplicates", "commit-consistency", "E1", "E2", "agreement",
	"mc-validity", "mc-agreement", "mc-integrity", "fifo-order", "causal-order", "total-order",
}

// unlabelled reports whether every checker named is label-free.
func unlabelled(names []string) bool {
	for _, name := range names {
		if !slices.Contains(labelFree, name) {
			return false
		}
	}
	return true
}

func (c *Config) seed() uint64 { return 1 }

func (c *Config) header() trace.Header {
	return trace.Header{Nodes: c.Nodes, Family: c.Family, Algo: c.Algo.Name, Seed: c.seed()}
}

func (c *Config) workload() *Workload {
	w := &Workload{Inputs: make([][]proc.Input, c.Nodes), Gate: c.Gate, Answer: c.Answer}
	for _, in := range c.Inputs {
		w.Inputs[in.Node] = append(w.Inputs[in.Node], in.In)
	}
	return w
}

// Validate reports the first bad field.
func (c *Config) Validate() error {
	switch {
	case c.Algo.New == nil:
		return errors.New("no algorithm")
	case c.Nodes < 1:
		return fmt.Errorf("nodes %d: need at least 1", c.Nodes)
	case c.Crashes < 0 || c.Losses < 0 || c.Dups < 0:
		return errors.New("fault bounds must not be negative")
	case c.MaxStates < 0 || c.MaxDepth < 0:
		return errors.New("bounds must not be negative")
	case c.Cycles && (c.Strategy != BFS || c.Family != "mutex"):
		return fmt.Errorf("cycles: judged for mutual exclusion, breadth first (not %s/%s, %s)", c.Family, c.Algo.Name, c.Strategy)
	case c.Cycles && c.Nodes > 64:
		return fmt.Errorf("cycles: at most 64 processes, not %d", c.Nodes)
	case c.Symmetry && len(c.Symmetric) < 2:
		return fmt.Errorf("symmetry: %s/%s with %d nodes has no interchangeable processes", c.Family, c.Algo.Name, c.Nodes)
	}
	if c.Algo.Validate != nil {
		if err := c.Algo.Validate(c.Nodes); err != nil {
			return fmt.Errorf("%s with %d nodes: %w", c.Algo.Name, c.Nodes, err)
		}
	}
	for _, in := range c.Inputs {
		if in.Node < 0 || int(in.Node) >= c.Nodes {
			return fmt.Errorf("input %q for %s: no such process (nodes %d)", in.Text, in.Node, c.Nodes)
		}
	}
	for _, name := range append(slices.Clone(c.Checks), c.Safety...) {
		if _, ok := check.Lookup(name); !ok {
			return fmt.Errorf("%w: %q", check.ErrUnknownChecker, name)
		}
	}
	return nil
}

// Result is what an exploration found.
type Result struct {
	States      int64 // unique states reached (fingerprints)
	Transitions int64 // steps taken, each a replayed or a fresh one
	// Quiet counts the steps among Transitions known to lead back to the
	// state they leave, and so not taken (depth first, in a set network:
	// see quiet.go).
	Quiet int64
	// Foreseen counts the steps among Transitions known to lead to a
	// state visited already that would be pruned, and so not taken
	// (depth first with sleep sets: see foresee.go).
	Foreseen int64
	Terminal int64 // unique states where nothing was enabled
	CutOff   int64 // states at the depth bound, not expanded
	MaxDepth int   // the longest path explored
	// Exhausted: every reachable state within the fault bounds was
	// explored (no bound on states or depth was hit).
	Exhausted bool
	Elapsed   time.Duration
	// Violation is the first property broken (with BFS, on a shortest
	// path); nil if none.
	Violation *Violation
	// Unknown counts the states where a checker could not decide.
	Unknown int64
	// BytesPerState is the memory of the search per unique state: the
	// fingerprint set, and with BFS the path to every state.
	BytesPerState float64
	// Omission bounds the probability that two of the states reached
	// share a fingerprint, so that one of them (and what only it leads
	// to) went unexplored: States²/2⁶⁵ (see fpSet).
	Omission float64
	// Engine is how states were reached: "fork", or "replay" (asked
	// for, or because the model's runs cannot be forked, with why).
	Engine string
}

// Violation is a broken property and the schedule that breaks it.
type Violation struct {
	Check    check.Result
	Schedule *Schedule
	Trace    *trace.Trace
	Terminal bool // judged at a terminal state (liveness, or end-state properties)
	// Cycle, if not 0: the schedule's last Cycle steps are a cycle that
	// leads back to the state before them, to be repeated forever.
	Cycle int
}

// Counterexample renders the violation: the check's verdict, its events,
// then the schedule's steps.
func (v *Violation) Counterexample() string {
	var b strings.Builder
	b.WriteString(v.Check.Counterexample(v.Trace))
	fmt.Fprintf(&b, "\nschedule (%d steps):", len(v.Schedule.Steps))
	for i, s := range v.Schedule.Steps {
		if v.Cycle > 0 && i == len(v.Schedule.Steps)-v.Cycle {
			fmt.Fprintf(&b, "\n  then, forever:")
		}
		fmt.Fprintf(&b, "\n  %2d. %s", i+1, s.What)
	}
	return b.String()
}
