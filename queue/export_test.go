package queue

import "github.com/cohort-go/cohort/consensus"

// RaceEnabled: the race detector is on (the heavy tests shrink).
const RaceEnabled = raceEnabled

// LoseRuns makes r lose the first proposal of the stream runs lose picks.
func LoseRuns(r *Replicated, lose func(consensus.QueuePutRun) bool) { r.lose = lose }
