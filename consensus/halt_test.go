package consensus_test

import (
	"testing"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/proc"
)

// Every replicated state machine refuses, with an error, an entry or a
// snapshot it cannot decode — the server then halts — where each used to
// skip the entry, or start from an empty state, and go on from a state
// the other servers do not hold. A leader's no-op (no data) and an empty
// snapshot (the initial state) are no error.
func TestStateMachinesRefuseWhatTheyCannotDecode(t *testing.T) {
	cfg := consensus.DefaultConfig
	for name, sm := range map[string]consensus.StateMachine{
		"queues": consensus.NewQueues(0, 3, cfg, consensus.QueueLimits{}),
		"locks":  consensus.NewLocks(0, 3, cfg),
		"groups": consensus.NewGroups(0, 3, cfg, 0),
		"kv":     consensus.NewKV(),
	} {
		env := &outEnv{}
		if err := sm.Apply(env, 1, nil); err != nil {
			t.Errorf("%s: a no-op: %v", name, err)
		}
		if err := sm.Apply(env, 2, []byte("\x00not an entry")); err == nil {
			t.Errorf("%s: an entry it cannot decode applied without an error", name)
		}
		if err := sm.Restore(env, nil); err != nil {
			t.Errorf("%s: the initial state: %v", name, err)
		}
		if err := sm.Restore(env, []byte("{not a snapshot")); err == nil {
			t.Errorf("%s: a snapshot it cannot decode restored without an error", name)
		}
		if err := sm.Restore(env, []byte(`{"log":"AAAA"}`)); err == nil {
			t.Errorf("%s: a snapshot whose digest is cut short restored without an error", name)
		}
	}
}

// A follower sent a snapshot it cannot restore halts: it outputs Halted
// once, at the snapshot's last entry, and applies nothing after it —
// before, it restored an empty state and applied the next entries to it.
func TestFollowerHaltsOnASnapshotItCannotRestore(t *testing.T) {
	env := &recorder{store: proc.NewMemStorage(nil), self: 1}
	kv := consensus.NewKV()
	r := consensus.New(1, 3, consensus.DefaultConfig, kv)
	r.Start(env)
	r.Receive(env, 0, consensus.InstallSnapshot{Term: 1, Index: 5, Last: 1, Members: []proc.ID{0, 1, 2}, Data: []byte("{damaged"), Done: true, Round: 1})
	put := consensus.KVOp{Client: 1, Seq: 1, Op: "put", Key: "k", Value: "v"}
	r.Receive(env, 0, consensus.AppendEntries{Term: 1, Prev: 5, PrevTerm: 1, Entries: []consensus.Entry{{Term: 1, Data: put.Encode()}}, Commit: 6, Round: 2})
	r.Timeout(env, consensus.FlushTag)
	var halted []consensus.Halted
	for _, o := range env.outs {
		switch o := o.(type) {
		case consensus.Halted:
			halted = append(halted, o)
		case consensus.KVResult, consensus.Applied:
			t.Errorf("output %v after the snapshot it could not restore", o)
		}
	}
	if len(halted) != 1 || halted[0].Index != 5 || r.Halted() == nil {
		t.Fatalf("halted %+v (%v), want once, at entry 5", halted, r.Halted())
	}
}
