package consensus_test

import (
	"testing"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/proc"
)

// TestLeaderDefersAcquiresOfHeldLocks: an Acquire of a lock that another
// session holds is not appended at once by the leader; it goes to the
// log just before the next entry — in the same flush as the Release that
// grants the lock, ahead of it — or at the next heartbeat. An Acquire of
// a free lock is appended at once.
func TestLeaderDefersAcquiresOfHeldLocks(t *testing.T) {
	env := &recorder{store: proc.NewMemStorage(nil), self: 0}
	l := consensus.NewLocks(0, 1, consensus.DefaultConfig) // a group of one: it leads alone
	l.Start(env)
	env.now += time.Second
	l.Timeout(env, consensus.ElectionTag)
	l.Timeout(env, consensus.FlushTag)
	if !l.Raft().Ready() {
		t.Fatal("the lone server does not lead")
	}
	// step hands the server an input and flushes, as the host does once
	// the input is handled; it returns the outputs and how many syncs
	// (flushes with entries) it took.
	step := func(in proc.Input) ([]proc.Output, int) {
		env.outs = nil
		syncs := env.syncs
		l.Input(env, in)
		l.Timeout(env, consensus.FlushTag)
		return env.outs, env.syncs - syncs
	}
	var sessions []uint64
	for tag := uint64(1); tag <= 3; tag++ {
		outs, _ := step(consensus.OpenSession{Tag: tag, TTL: time.Minute})
		for _, o := range outs {
			if op, ok := o.(consensus.Opened); ok {
				sessions = append(sessions, op.Session)
			}
		}
	}
	if len(sessions) != 3 {
		t.Fatalf("opened %v, want 3 sessions", sessions)
	}
	s1, s2, s3 := sessions[0], sessions[1], sessions[2]
	granted := func(outs []proc.Output) (g consensus.Granted) {
		for _, o := range outs {
			if x, ok := o.(consensus.Granted); ok {
				g = x
			}
		}
		return g
	}
	if outs, _ := step(consensus.Acquire{Session: s1, Seq: 1, Lock: "x"}); granted(outs).Session != s1 {
		t.Fatalf("acquiring a free lock: outputs %v, want session %d granted at once", outs, s1)
	}
	last := l.Raft().Commit()
	step(consensus.Acquire{Session: s2, Seq: 1, Lock: "x"})
	step(consensus.Acquire{Session: s3, Seq: 1, Lock: "x"})
	step(consensus.Acquire{Session: s3, Seq: 1, Lock: "x"}) // a retry
	if c := l.Raft().Commit(); c != last {
		t.Fatalf("Acquires of a held lock went to the log at once: commit %d, was %d", c, last)
	}
	outs, syncs := step(consensus.Release{Session: s1, Seq: 2, Lock: "x"})
	// The two Acquires, then the Release, in one flush: the Release
	// grants s2, the first in line, by its own entry.
	if c := l.Raft().Commit(); c != last+3 || syncs != 1 {
		t.Fatalf("after the Release: commit %d (was %d), %d syncs; want the two Acquires and the Release in one flush", c, last, syncs)
	}
	if g := granted(outs); g.Session != s2 || g.Token != last+3 {
		t.Fatalf("after the Release: granted %+v, want session %d with token %d", g, s2, last+3)
	}
	if h, _ := l.Holder("x"); h != s2 {
		t.Fatalf("holder %d, want %d", h, s2)
	}
	// Deferred with no entry after it: the next heartbeat takes it to the log.
	step(consensus.Acquire{Session: s1, Seq: 3, Lock: "x"})
	if c := l.Raft().Commit(); c != last+3 {
		t.Fatalf("an Acquire of a held lock went to the log at once: commit %d, want %d", c, last+3)
	}
	env.now += consensus.DefaultConfig.Heartbeat
	l.Timeout(env, consensus.HeartbeatTag)
	l.Timeout(env, consensus.FlushTag)
	if c := l.Raft().Commit(); c != last+4 {
		t.Fatalf("after a heartbeat: commit %d, want %d (the deferred Acquire)", c, last+4)
	}
}
