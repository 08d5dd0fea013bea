package queue

import (
	"time"

	"github.com/cohort-go/cohort/consensus"
)

// RaceEnabled: the race detector is on (the heavy tests shrink).
const RaceEnabled = raceEnabled

// LoseRuns makes r lose the first proposal of the stream runs lose picks.
func LoseRuns(r *Replicated, lose func(consensus.QueuePutRun) bool) {
	if lose == nil {
		r.lose.Store(nil)
		return
	}
	f := func(run consensus.QueuePutRun, n int) bool { return n == 1 && lose(run) }
	r.lose.Store(&f)
}

// LoseProposals makes r lose the proposals of stream runs lose picks: n
// is 1 for a run's first proposal, 2 for the next, ….
func LoseProposals(r *Replicated, lose func(run consensus.QueuePutRun, n int) bool) {
	r.lose.Store(&lose)
}

// Retry is how long r first waits for an operation's answer before it
// proposes it again.
func Retry(r *Replicated) time.Duration { return r.retry }

// SetStreamStart sets how long a Publisher waits for a stream's reply to
// start; it returns the old value.
func SetStreamStart(d time.Duration) time.Duration {
	old := streamStart
	streamStart = d
	return old
}
