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

// A follower halted at an entry it cannot apply tells the leader so in
// its answers (AppendReply.Halted: the least snapshot that may end the
// halt), and leaves the halt only by restoring, without error, a
// snapshot that covers that entry: one that ends before it changes
// nothing, one it cannot restore leaves it halted (with no second
// Halted, and wanting a later snapshot), and a good one resumes it
// (Resumed) and it applies the committed entries after it. Before, a
// halted server took no snapshot of the entries it held, and stayed
// halted until a restart.
func TestHaltedFollowerResumesFromASnapshotThatCoversTheEntry(t *testing.T) {
	env := &recorder{store: proc.NewMemStorage(nil), self: 1}
	kv := consensus.NewKV()
	r := consensus.New(1, 3, consensus.DefaultConfig, kv)
	r.Start(env)
	put := func(seq uint64, k string) []byte {
		return consensus.KVOp{Client: 1, Seq: seq, Op: "put", Key: k, Value: "v"}.Encode()
	}
	entries := []consensus.Entry{{Term: 1, Data: put(1, "a")}, {Term: 1, Data: []byte("\x00not an entry")}, {Term: 1, Data: put(3, "c")}, {Term: 1, Data: put(4, "d")}}
	r.Receive(env, 0, consensus.AppendEntries{Term: 1, Entries: entries, Commit: 4, Round: 1})
	r.Timeout(env, consensus.FlushTag)
	if r.Halted() == nil {
		t.Fatal("not halted at entry 2")
	}
	lastReply := func() consensus.AppendReply {
		rs := env.replies()
		return rs[len(rs)-1]
	}
	if h := lastReply().Halted; h != 2 {
		t.Fatalf("the answer says Halted %d, want 2: the entry it could not apply", h)
	}
	// The leader's state after entry 4 (it applied entry 2 as a put).
	leader := consensus.NewKV()
	for i, d := range [][]byte{put(1, "a"), put(2, "b"), put(3, "c"), put(4, "d")} {
		if err := leader.Apply(&outEnv{}, uint64(i+1), d); err != nil {
			t.Fatal(err)
		}
	}
	snap := func(index uint64, data []byte, round uint64) {
		r.Receive(env, 0, consensus.InstallSnapshot{Term: 1, Index: index, Last: 1, Members: []proc.ID{0, 1, 2}, Data: data, Done: true, Round: round})
	}
	snap(1, []byte(`{}`), 2) // ends before the entry
	snap(3, []byte("{damaged"), 3)
	if r.Halted() == nil {
		t.Fatal("resumed from a snapshot that ends before the entry, or that it could not restore")
	}
	if h := lastReply().Halted; h != 4 {
		t.Fatalf("after a snapshot at 3 it could not restore, Halted %d, want 4", h)
	}
	snap(4, leader.Snapshot(), 4)
	if r.Halted() != nil {
		t.Fatalf("still halted after a good snapshot past the entry: %v", r.Halted())
	}
	if _, ok := kv.Get("b"); !ok {
		t.Fatal("the state after it resumed lacks the key the entry it could not apply put: not the snapshot's")
	}
	if h := lastReply().Halted; h != 0 {
		t.Fatalf("the answer after it resumed says Halted %d, want 0", h)
	}
	r.Receive(env, 0, consensus.AppendEntries{Term: 1, Prev: 4, PrevTerm: 1, Entries: []consensus.Entry{{Term: 1, Data: put(5, "e")}}, Commit: 5, Round: 5})
	var halted, resumed, results int
	for _, o := range env.outs {
		switch o := o.(type) {
		case consensus.Halted:
			halted++
		case consensus.Resumed:
			resumed++
			if o.Index != 4 {
				t.Errorf("Resumed at %d, want 4: the snapshot's last entry", o.Index)
			}
		case consensus.KVResult:
			results++
		}
	}
	if halted != 1 || resumed != 1 || results != 2 {
		t.Fatalf("%d Halted, %d Resumed, %d results; want 1, 1 and 2 (entry 1, then entry 5 after the snapshot)", halted, resumed, results)
	}
}
