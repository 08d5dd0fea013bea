package lock

import (
	"time"

	"github.com/cohort-go/cohort/consensus"
)

// WaitingForGrant is how many calls on this node wait for a grant.
func (r *Replicated) WaitingForGrant() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.grants)
}

// SetAvoidFor sets how long a client passes over a failed endpoint, and
// returns a function that restores it.
func SetAvoidFor(d time.Duration) (restore func()) {
	old := avoidFor
	avoidFor = d
	return func() { avoidFor = old }
}

// Proposals is how many operations r gave its log, copies included.
func (r *Replicated) Proposals() uint64 { return r.proposals.Load() }

// Retry is how long r first waits for an operation's answer before it
// proposes it again.
func Retry(r *Replicated) time.Duration { return r.retry }

// Halt hands r the output of a server that halted (consensus.Halted), as
// its copy of the table would at an entry it cannot apply.
func Halt(r *Replicated, h consensus.Halted) { r.output(h) }

// Resume hands r the output of a halted server that restored the
// leader's snapshot (consensus.Resumed).
func Resume(r *Replicated, m consensus.Resumed) { r.output(m) }
