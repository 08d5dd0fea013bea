package group

import (
	"time"

	"github.com/cohort-go/cohort/consensus"
)

// Proposals is how many multicasts r gave its log, copies included.
func (r *Replicated) Proposals() uint64 { return r.proposals.Load() }

// Retry is how long r first waits for a multicast's acknowledgement
// before it proposes it again.
func Retry(r *Replicated) time.Duration { return r.retry }

// Halt hands r the output of a server that halted (consensus.Halted), as
// its copy of the groups would at an entry it cannot apply.
func Halt(r *Replicated, h consensus.Halted) { r.output(h) }

// Resume hands r the output of a halted server that restored the
// leader's snapshot (consensus.Resumed).
func Resume(r *Replicated, m consensus.Resumed) { r.output(m) }
