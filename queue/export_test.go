package queue

import (
	"time"

	"github.com/cohort-go/cohort/consensus"
)

// RaceEnabled: the race detector is on (the heavy tests shrink).
const RaceEnabled = raceEnabled

// LoseRuns makes r lose the first proposal of the stream runs lose picks.
func LoseRuns(r *Replicated, lose func(consensus.QueuePutRun) bool) { r.lose = lose }

// SetStreamStart sets how long a Publisher waits for a stream's reply to
// start; it returns the old value.
func SetStreamStart(d time.Duration) time.Duration {
	old := streamStart
	streamStart = d
	return old
}
