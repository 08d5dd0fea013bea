package consensus

import "github.com/cohort-go/cohort/proc"

// Stage is a point on an entry's way through the log: where a benchmark
// looks to see which step its latency goes to (Config.Probe). The stages
// follow the steps of replication (Ongaro & Ousterhout 2014, §5.3): the
// leader appends, sends and syncs; a follower accepts, syncs and
// acknowledges; the leader commits and tells the followers; every server
// applies.
type Stage uint8

const (
	StageAppended    Stage = iota + 1 // the leader appended the entry
	StageSent                         // the leader sent it to Peer
	StageAccepted                     // a follower accepted it (not yet synced)
	StageSynced                       // the server's log holds it durably
	StageMatched                      // the leader heard that Peer holds it durably
	StageCommitted                    // the leader committed it
	StageCommitKnown                  // a follower learned that it is committed
	StageApplied                      // the server applied it
)

func (s Stage) String() string {
	names := [...]string{"", "appended", "sent", "accepted", "synced", "matched", "committed", "commit-known", "applied"}
	if int(s) < len(names) {
		return names[s]
	}
	return "stage?"
}

// ProbePoint says that server Server's entries up to index Upto reached
// stage Stage (those before it did too, or did earlier). Peer is the
// follower concerned by StageSent and StageMatched, else Server.
type ProbePoint struct {
	Server, Peer proc.ID
	Stage        Stage
	Upto         uint64
}

// probe tells Config.Probe, if set, that the entries up to upto reached
// stage s (peer: see ProbePoint).
func (r *Raft) probe(s Stage, peer proc.ID, upto uint64) {
	if r.cfg.Probe != nil {
		r.cfg.Probe(ProbePoint{Server: r.self, Peer: peer, Stage: s, Upto: upto})
	}
}
