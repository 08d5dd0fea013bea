package consensus

import "time"

// Internals for the external tests (package consensus_test, which can
// import the lab and its workloads).

const RecState = recState

func (r *Raft) IsLeader() bool           { return r.role == leader }
func (r *Raft) LastIndex() uint64        { return r.lastIndex() }
func (r *Raft) Self() int                { return int(r.self) }
func (r *Raft) LastAck() []time.Duration { return r.lastAck }
func (r *Raft) Cfg() Config              { return r.cfg }
