package group

import "time"

// Proposals is how many multicasts r gave its log, copies included.
func (r *Replicated) Proposals() uint64 { return r.proposals.Load() }

// Retry is how long r first waits for a multicast's acknowledgement
// before it proposes it again.
func Retry(r *Replicated) time.Duration { return r.retry }
