package queue

import (
	"bytes"
	"sync/atomic"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/proc"
)

// RaceEnabled: the race detector is on (the heavy tests shrink).
const RaceEnabled = raceEnabled

// LoseRuns makes r lose the first proposal of the stream runs lose picks.
func LoseRuns(r *Replicated, lose func(consensus.QueuePutRun) bool) {
	if lose == nil {
		r.lose.Store(nil)
		return
	}
	f := func(run consensus.QueuePutRun, n int, _ bool) bool { return n == 1 && lose(run) }
	r.lose.Store(&f)
}

// LoseProposals makes r lose the proposals of stream runs lose picks: n
// is 1 for a run's first proposal, 2 for the next, ….
func LoseProposals(r *Replicated, lose func(run consensus.QueuePutRun, n int) bool) {
	if lose == nil {
		r.lose.Store(nil)
		return
	}
	f := func(run consensus.QueuePutRun, n int, _ bool) bool { return lose(run, n) }
	r.lose.Store(&f)
}

// LoseProposalsWoken is LoseProposals, told also whether a proposal is
// made at once because the log moved after a quiet spell (woken) rather
// than at the end of a wait.
func LoseProposalsWoken(r *Replicated, lose func(run consensus.QueuePutRun, n int, woken bool) bool) {
	r.lose.Store(&lose)
}

// OnGot makes r call f with each lease it asked for as the answer comes,
// before the caller waiting for it sees it.
func OnGot(r *Replicated, f func(consensus.QueueGot)) { r.gotHook.Store(&f) }

// Early is how many answers to stream runs r took as early (a run that
// overtook the one before it), to propose the run again.
func Early(r *Replicated) uint64 { return r.stats.early.Load() }

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

// NewReplicatedDamaging is NewReplicated on a replica that, once damage
// is called with a mark, receives every entry holding the mark damaged
// (a byte put before it), as a node of another version reads an entry it
// does not know: it cannot apply it. The other nodes hold the entry
// whole.
func NewReplicatedDamaging(n *live.Node, c ReplicatedConfig) (r *Replicated, damage func(mark []byte), err error) {
	var marked atomic.Pointer[[]byte]
	r, err = newReplicated(n, c, func(c ReplicatedConfig) proc.Algorithm {
		a := ReplicatedAlgorithm(c)
		mk := a.New
		a.New = func(id proc.ID, n int) proc.Process { return damaging{mk(id, n).(*consensus.Queues), &marked} }
		return a
	})
	return r, func(mark []byte) { marked.Store(&mark) }, err
}

type damaging struct {
	*consensus.Queues
	mark *atomic.Pointer[[]byte]
}

func (d damaging) Receive(env proc.Env, from proc.ID, m proc.Message) {
	ae, ok := m.(consensus.AppendEntries)
	if mark := d.mark.Load(); ok && mark != nil {
		for i, e := range ae.Entries {
			if bytes.Contains(e.Data, *mark) {
				ae.Entries[i].Data = append([]byte{'?'}, e.Data...)
			}
		}
		m = ae
	}
	d.Queues.Receive(env, from, m)
}

// Waiting is how many operations wait for their answer at r.
func Waiting(r *Replicated) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, ws := range r.waits {
		n += len(ws)
	}
	return n
}
