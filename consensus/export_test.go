package consensus

import (
	"slices"
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

// Planted bugs for the lock checker's hunts.

// RenewAnyway renews session id as touch does, minus the lease check.
func (l *Locks) RenewAnyway(env proc.Env, id uint64) bool {
	s, ok := l.sessions[id]
	if !l.raft.IsLeader() || !ok {
		return false
	}
	l.leases.renewAt(env.Now(), id, s.TTL)
	return true
}

// ForgetDeadlines makes every session due now, as a leader that took over
// without extending them would.
func (l *Locks) ForgetDeadlines(env proc.Env) {
	for id := range l.leases.deadline {
		l.leases.deadline[id] = env.Now()
	}
}

func (l *Locks) Leading() bool { return l.leases.leading }

// ForgetOrigins drops what the group service knows of its senders, as a
// server without duplicate suppression would.
func (g *Groups) ForgetOrigins() { g.origins = newOrigins() }

var (
	DecodeSends   = decodeSends
	EncodeSends   = encodeSends
	DecodeQueueOp = decodeQueueOp
)

// FlushTag is the tag of the flush timer; HeartbeatTag, of the
// heartbeat timer.
const (
	FlushTag     = tagFlush
	HeartbeatTag = tagHeartbeat
)

// Planted bugs for the queue checker's hunts.

// NewQueuesApplying is NewQueues with its entries applied by apply(q, …)
// instead of q.Apply.
func NewQueuesApplying(id proc.ID, n int, cfg Config, limits QueueLimits, apply func(q *Queues, env proc.Env, index uint64, data []byte) error) *Queues {
	cfg.Forward = true
	q := &Queues{cfg: cfg, limits: limits}
	q.reset()
	q.raft = New(id, n, cfg, appliedBy{q, apply})
	return q
}

type appliedBy struct {
	*Queues
	apply func(q *Queues, env proc.Env, index uint64, data []byte) error
}

func (a appliedBy) Apply(env proc.Env, index uint64, data []byte) error {
	return a.apply(a.Queues, env, index, data)
}

// ReverseReady puts every queue's ready messages newest first (a stack).
func (q *Queues) ReverseReady() {
	for _, rq := range q.queues {
		slices.Reverse(rq.ready)
	}
}

// ForgetLeaseDeadlines makes every lease due now, as a leader that took
// over without extending them would.
func (q *Queues) ForgetLeaseDeadlines(env proc.Env) {
	for k := range q.leases.deadline {
		q.leases.deadline[k] = env.Now()
	}
}

func (q *Queues) Leading() bool { return q.leases.leading }

// Above is the duplicate table's seqs above the origins' Done, as
// counted and as held.
func (q *Queues) Above() (counted, held int) {
	for _, o := range q.origins.byID {
		held += len(o.Above)
	}
	return q.origins.above, held
}

// GatherTag is the tag of the group service's timer that proposes the
// sends it gathered; MaxEntryBytes bounds what one entry gathers.
var GatherTag any = gatherTimer{}

// StallTag is the tag of the group service's timer that gives up on its
// entries under way.
var StallTag any = stallTimer{}

const MaxEntryBytes = maxEntryBytes

// DigestStep is the Log's digest after applying data at index, from prev.
func DigestStep(prev, index uint64, data []byte) uint64 {
	l := Log{index: index - 1, digest: prev}
	l.step(index, data)
	return l.digest
}

// First is the index of the first entry the log holds (1 + the
// snapshot's).
func (r *Raft) First() uint64 { return r.first }

// ElectionTag is the tag of the election timer.
const ElectionTag = tagElection
