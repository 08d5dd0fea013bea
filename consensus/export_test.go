package consensus

import (
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
)

// Internals for the external tests (package consensus_test, which can
// import the lab and its workloads).

const RecState = recState

func (r *Raft) IsLeader() bool           { return r.role == leader }
func (r *Raft) LastIndex() uint64        { return r.lastIndex() }
func (r *Raft) Self() int                { return int(r.self) }
func (r *Raft) LastAck() []time.Duration { return r.lastAck }
func (r *Raft) Cfg() Config              { return r.cfg }

// DumpRaft logs every server's state, for a failed liveness check.
func DumpRaft(t *testing.T, s *sim.Sim, n int) {
	for id := range proc.ID(n) {
		r, ok := s.Process(id).(*Raft)
		if !ok {
			continue
		}
		t.Logf("p%d up=%v role=%v term=%d vote=%d leader=%d members=%v conf@%d last=%d/%d commit=%d heard=%v quiet=%v", id, s.Up(id), r.role, r.term, r.vote, r.leader, r.members, r.confIndex, r.lastIndex(), r.lastTerm(), r.commit, r.heard, r.quiet)
	}
}
