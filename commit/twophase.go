package commit

import (
	"fmt"
	"slices"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Two-phase commit (Gray 1978; Coulouris et al. §17.3.1), as Gray and
// Lamport's TLA+ specification TwoPhase states it. Process 0 is the
// transaction manager (TM); processes 1..N−1 are the resource managers
// (RMs). Each RM may, on its own, prepare or choose to abort; the TM
// commits once every RM has prepared, and may abort at any time before:
//
//	RMPrepare(r):        rmState[r] = working → prepared; send Prepared(r)
//	RMChooseToAbort(r):  rmState[r] = working → aborted
//	TMRcvPrepared(r):    tmState = init, Prepared(r) received → tmPrepared ∪= {r}
//	TMCommit:            tmState = init, tmPrepared = all → committed; send Commit
//	TMAbort:             tmState = init → aborted; send Abort
//	RMRcvCommitMsg(r):   Commit received → rmState[r] := committed
//	RMRcvAbortMsg(r):    Abort received → rmState[r] := aborted
//
// The spontaneous actions (prepare, choose to abort, commit, abort) are
// timers the processes set and cancel, so an explorer that fires timers in
// any order chooses among them as the specification does.
//
// Assumptions: the specification's network, in which a message once sent
// may be received any number of times (a set of messages that only
// grows); no failures. Property: consistency — no RM commits while another
// aborts. Cost: 3(N−1) messages for a commit (Prepared, Commit to each RM).
type twoPhase struct {
	eager bool // one-phase: the TM may commit without the votes (broken)

	// TM
	tm          tmState
	prepared    []bool
	commitTimer proc.TimerID
	abortTimer  proc.TimerID

	// RM
	rm           rmState
	prepareTimer proc.TimerID
	chooseTimer  proc.TimerID
}

type tmState uint8
type rmState uint8

const (
	tmInit tmState = iota
	tmCommitted
	tmAborted
)

const (
	rmWorking rmState = iota
	rmPrepared
	rmCommitted
	rmAborted
)

// Prepared is an RM's vote to commit.
type Prepared struct{ RM proc.ID }

// Commit and Abort are the TM's decision.
type Commit struct{}
type Abort struct{}

func (Prepared) Kind() string     { return "prepared" }
func (Commit) Kind() string       { return "commit" }
func (Abort) Kind() string        { return "abort" }
func (p Prepared) String() string { return "PREPARED(" + p.RM.String() + ")" }
func (Commit) String() string     { return "COMMIT" }
func (Abort) String() string      { return "ABORT" }

// Committed and Aborted are an RM's outcome.
type Committed struct{}
type Aborted struct{}

func (Committed) Kind() string { return "committed" }
func (Aborted) Kind() string   { return "aborted" }

// The spontaneous actions, as timer tags.
type (
	rmPrepare       struct{}
	rmChooseToAbort struct{}
	tmCommit        struct{}
	tmAbort         struct{}
)

func (rmPrepare) Kind() string       { return "prepare" }
func (rmChooseToAbort) Kind() string { return "choose-abort" }
func (tmCommit) Kind() string        { return "commit" }
func (tmAbort) Kind() string         { return "abort" }

const tick = time.Millisecond

// Algorithms are the package's registered algorithms.
var Algorithms = []proc.Algorithm{
	{
		Family:  "commit",
		Name:    "two-phase-commit",
		Summary: "two-phase commit as TLA+ TwoPhase: RMs prepare or abort, the TM commits when all prepared",
		Source:  "Gray 1978; Gray & Lamport 2006 (TwoPhase); Coulouris et al. §17.3.1",
		Assumes: proc.Assumptions{Failures: "none"},
		New:     func(proc.ID, int) proc.Process { return &twoPhase{} },
		Validate: func(n int) error {
			if n < 2 {
				return fmt.Errorf("need a TM and at least one RM (nodes ≥ 2), got %d", n)
			}
			return nil
		},
		Checks:   []string{"commit-consistency"},
		Messages: []proc.Message{Prepared{}, Commit{}, Abort{}},
	},
	{
		Family:  "commit",
		Name:    "one-phase-commit",
		Summary: "a broken variant: the TM may commit before every RM has prepared",
		Source:  "a counterexample to two-phase commit's first phase",
		Assumes: proc.Assumptions{Failures: "none"},
		New:     func(proc.ID, int) proc.Process { return &twoPhase{eager: true} },
		Validate: func(n int) error {
			if n < 2 {
				return fmt.Errorf("need a TM and at least one RM (nodes ≥ 2), got %d", n)
			}
			return nil
		},
		Checks:   []string{"commit-consistency"},
		Breaks:   []string{"commit-consistency"},
		Messages: []proc.Message{Prepared{}, Commit{}, Abort{}},
	},
}

func (t *twoPhase) Start(env proc.Env) {
	if env.Self() == 0 {
		t.prepared = make([]bool, env.N())
		t.abortTimer = env.SetTimer(tick, tmAbort{})
		if t.eager {
			t.commitTimer = env.SetTimer(tick, tmCommit{})
		}
		return
	}
	t.prepareTimer = env.SetTimer(tick, rmPrepare{})
	t.chooseTimer = env.SetTimer(tick, rmChooseToAbort{})
}

func (t *twoPhase) Input(proc.Env, proc.Input) {}

func (t *twoPhase) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m := m.(type) {
	case Prepared:
		t.onPrepared(env, m.RM)
	case Commit:
		t.rmDecide(env, rmCommitted)
	case Abort:
		t.rmDecide(env, rmAborted)
	}
}

func (t *twoPhase) Timeout(env proc.Env, tag any) {
	switch tag.(type) {
	case rmPrepare:
		if t.rm == rmWorking {
			t.rm = rmPrepared
			env.CancelTimer(t.chooseTimer)
			env.Send(0, Prepared{RM: env.Self()})
		}
	case rmChooseToAbort:
		if t.rm == rmWorking {
			t.rm = rmAborted
			env.CancelTimer(t.prepareTimer)
			env.Output(Aborted{})
		}
	case tmCommit:
		if t.tm == tmInit {
			t.tm = tmCommitted
			env.CancelTimer(t.abortTimer)
			t.decide(env, Commit{})
		}
	case tmAbort:
		if t.tm == tmInit {
			t.tm = tmAborted
			env.CancelTimer(t.commitTimer)
			t.decide(env, Abort{})
		}
	}
}

// onPrepared is TMRcvPrepared; once all have prepared, TMCommit is enabled.
func (t *twoPhase) onPrepared(env proc.Env, rm proc.ID) {
	if t.tm != tmInit || t.prepared[rm] {
		return
	}
	t.prepared[rm] = true
	for r := 1; r < env.N(); r++ {
		if !t.prepared[r] {
			return
		}
	}
	if !t.eager {
		t.commitTimer = env.SetTimer(tick, tmCommit{})
	}
}

func (t *twoPhase) decide(env proc.Env, m proc.Message) {
	for r := 1; r < env.N(); r++ {
		env.Send(proc.ID(r), m)
	}
}

// rmDecide is RMRcvCommitMsg or RMRcvAbortMsg.
func (t *twoPhase) rmDecide(env proc.Env, s rmState) {
	if t.rm == s {
		return
	}
	t.rm = s
	env.CancelTimer(t.prepareTimer)
	env.CancelTimer(t.chooseTimer)
	if s == rmCommitted {
		env.Output(Committed{})
	} else {
		env.Output(Aborted{})
	}
}

// PermuteIDs returns the state as it is with every process i renamed
// perm[i]: the TM's votes are indexed by RM. (An explorer's symmetry
// reduction renames the interchangeable RMs.)
func (t *twoPhase) PermuteIDs(perm []proc.ID) proc.Process {
	c := *t
	if t.prepared != nil {
		c.prepared = make([]bool, len(t.prepared))
		for i, v := range t.prepared {
			c.prepared[perm[i]] = v
		}
	}
	return &c
}

// Clone returns an independent copy of the state (a model checker's fast
// path: it forks runs instead of replaying them).
func (t *twoPhase) Clone() proc.Process {
	c := *t
	c.prepared = slices.Clone(t.prepared)
	return &c
}
