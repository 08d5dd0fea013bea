package consensus_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/live/wal"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
)

// applyGroups applies one-message entries to g, the first at index *at
// (which it advances), and returns each entry's acknowledgement.
func applyGroups(g *consensus.Groups, at *uint64, sends ...consensus.Send) []consensus.Sent {
	var acks []consensus.Sent
	env := &outEnv{}
	for _, s := range sends {
		env.out = env.out[:0]
		g.Apply(env, *at, consensus.EncodeSends(0, []consensus.Send{s})) // taken by server 0, the env's Self
		*at++
		for _, o := range env.out {
			if a, ok := o.(consensus.Acked); ok {
				acks = append(acks, a.Sent...)
			}
		}
	}
	return acks
}

// A busy cluster of large messages: what the groups retain for members
// that catch up stays within RetainState, so a snapshot always fits one
// record of the live storage log. (Before the bound, 2,000 messages of
// 64 KiB to three groups made a 175 MB snapshot: the live host's
// compaction failed, and the group service stopped on every node.)
func TestGroupSnapshotFitsARecord(t *testing.T) {
	t.Parallel() // tens of thousands of entries applied: beside the others
	fillsToTheBounds(t)
	if consensus.GroupsSnapshotBound > wal.MaxRecord {
		t.Fatalf("GroupsSnapshotBound %d > a record's %d", consensus.GroupsSnapshotBound, wal.MaxRecord)
	}
	g := consensus.NewGroups(0, 1, consensus.DefaultConfig, consensus.DefaultRetain)
	at := uint64(1)
	body := bytes.Repeat([]byte{0xff}, 64<<10)
	var sends []consensus.Send
	for i := range 900 {
		sends = append(sends, consensus.Send{Group: fmt.Sprint("g", i%3), Origin: 7, Seq: uint64(i + 1), Body: body})
	}
	for _, a := range applyGroups(g, &at, sends...) {
		if a.Pos == 0 || a.Refused != "" {
			t.Fatalf("a message to a kept group: %+v", a)
		}
	}
	snap := g.Snapshot()
	if len(snap) > consensus.RetainState+1<<20 {
		t.Fatalf("snapshot of %d bytes, over the retained bound %d", len(snap), consensus.RetainState)
	}
	// Each group kept its newest messages, oldest first, and a restored
	// server serves the same ones.
	var s struct {
		Groups map[string]struct {
			Next   uint64
			Recent []consensus.GroupMessage
		}
	}
	if err := json.Unmarshal(snap, &s); err != nil {
		t.Fatal(err)
	}
	for name, gs := range s.Groups {
		if gs.Next != 300 || len(gs.Recent) == 0 || gs.Recent[len(gs.Recent)-1].Pos != 300 {
			t.Fatalf("group %s: next %d, %d kept: want the newest up to 300", name, gs.Next, len(gs.Recent))
		}
		for i, m := range gs.Recent[1:] {
			if m.Pos != gs.Recent[i].Pos+1 {
				t.Fatalf("group %s keeps a hole: %d then %d", name, gs.Recent[i].Pos, m.Pos)
			}
		}
	}
	r := consensus.NewGroups(1, 1, consensus.DefaultConfig, consensus.DefaultRetain)
	r.Restore(&outEnv{}, snap)
	if again := r.Snapshot(); !bytes.Equal(again, snap) {
		t.Fatalf("restored and snapshotted again: %d bytes, want the same %d", len(again), len(snap))
	}
	// The restored server counts what it retains: it keeps trimming.
	more := applyGroups(r, &at, consensus.Send{Group: "g0", Origin: 7, Seq: 901, Body: body})
	if len(more) != 1 || more[0].Pos != 301 {
		t.Fatalf("after the restore: %+v", more)
	}
	if n := len(r.Snapshot()); n > consensus.RetainState+1<<20 {
		t.Fatalf("after the restore a snapshot of %d bytes", n)
	}
}

// Groups are never forgotten (positions never go back), so their number
// is bounded: a message to a new group past MaxGroups is refused, with a
// reason, and the groups kept go on. The snapshot with every group, the
// longest names and the duplicate table full stays under the bound.
func TestGroupsPastTheLimitAreRefused(t *testing.T) {
	g := consensus.NewGroups(0, 1, consensus.DefaultConfig, consensus.DefaultRetain)
	at := uint64(1)
	name := func(i int) string { return fmt.Sprintf("%0128d", i) }
	var sends []consensus.Send
	for i := range consensus.MaxGroups {
		sends = append(sends, consensus.Send{Group: name(i), Origin: 1, Seq: uint64(i + 1), Body: []byte("x")})
	}
	for _, a := range applyGroups(g, &at, sends...) {
		if a.Pos != 1 || a.Refused != "" {
			t.Fatalf("a group under the limit: %+v", a)
		}
	}
	acks := applyGroups(g, &at,
		consensus.Send{Group: "one-more", Origin: 1, Seq: uint64(consensus.MaxGroups + 1), Body: []byte("x")},
		consensus.Send{Group: name(5), Origin: 1, Seq: uint64(consensus.MaxGroups + 2), Body: []byte("y")})
	if len(acks) != 2 || acks[0].Pos != 0 || !strings.Contains(acks[0].Refused, fmt.Sprint(consensus.MaxGroups)) {
		t.Fatalf("a new group past the limit: %+v, want refused naming the limit", acks)
	}
	if acks[1].Pos != 2 || acks[1].Refused != "" {
		t.Fatalf("a kept group after a refusal: %+v", acks[1])
	}
	// Fill the duplicate table: many origins, each with gaps.
	var gaps []consensus.Send
	for o := range uint64(consensus.MaxOrigins + 10) {
		for s := range uint64(20) {
			gaps = append(gaps, consensus.Send{Group: name(0), Origin: math.MaxUint64 - o, Seq: math.MaxUint64 - 2*s})
		}
	}
	applyGroups(g, &at, gaps...)
	if n := len(g.Snapshot()); n > consensus.GroupsSnapshotBound {
		t.Fatalf("a snapshot of %d bytes, over GroupsSnapshotBound %d", n, consensus.GroupsSnapshotBound)
	}
}

var _ proc.Env = (*outEnv)(nil)

// A log of large entries is compacted by its bytes (CompactBytes), not
// only every CompactEvery entries: here CompactEvery is never reached,
// and every server still compacts, with the checkers green.
func TestCompactionByBytes(t *testing.T) {
	cfg := consensus.DefaultConfig
	cfg.CompactEvery, cfg.CompactBytes = 1<<30, 2<<10
	mk := func(id proc.ID, n int) proc.Process { return consensus.NewGroups(id, n, cfg, 16) }
	r := simtest.Run(t, "consensus", sim.Config{Nodes: 3, Seed: 1, New: mk,
		Workload: senders(time.Second), Deadline: 1500 * time.Millisecond})
	r.Hold(t, groupChecks...)
	for id := range proc.ID(3) {
		g := r.Sim.Process(id).(*consensus.Groups)
		if g.Raft().First() <= 1 {
			t.Errorf("p%d never compacted its log (%d entries)", id, g.Raft().LastIndex())
		}
	}
	cfg.CompactBytes = 0 // by count only: the same run keeps the whole log
	r = simtest.Run(t, "consensus", sim.Config{Nodes: 3, Seed: 1, New: mk,
		Workload: senders(time.Second), Deadline: 1500 * time.Millisecond})
	if g := r.Sim.Process(0).(*consensus.Groups); g.Raft().First() != 1 {
		t.Errorf("without CompactBytes the log was compacted at %d", g.Raft().First())
	}
}

// The lock table is bounded whatever its clients ask: with every session
// open and the most references to locks, each under the longest name,
// a snapshot stays under LocksSnapshotBound, which fits one record of
// the storage log; one reference more is refused, naming the limit, and
// so is a name too long. (Before the bounds, 65,536 sessions of 64 locks
// each could make a snapshot of about a gigabyte.)
func TestLockTableIsBounded(t *testing.T) {
	t.Parallel() // tens of thousands of entries applied: beside the others
	fillsToTheBounds(t)
	if consensus.LocksSnapshotBound > wal.MaxRecord {
		t.Fatalf("LocksSnapshotBound %d > a record's %d", consensus.LocksSnapshotBound, wal.MaxRecord)
	}
	l := consensus.NewLocks(0, 1, consensus.DefaultConfig)
	env := &outEnv{}
	index := uint64(0)
	apply := func(op consensus.LockOp) proc.Output {
		index++
		env.out = env.out[:0]
		b, _ := json.Marshal(op)
		l.Apply(env, index, b)
		if len(env.out) == 0 {
			return nil
		}
		return env.out[len(env.out)-1]
	}
	var sessions []uint64
	for range consensus.MaxSessions {
		apply(consensus.LockOp{Op: "open", TTL: time.Hour})
		sessions = append(sessions, index)
	}
	name := func(i int) string { return fmt.Sprintf("%0*d", consensus.MaxLockName-2, i) }
	per := consensus.MaxLocksPerSession
	for i := range consensus.MaxLockRefs {
		s := sessions[i/per]
		if o, ok := apply(consensus.LockOp{Op: "acquire", Session: s, Seq: uint64(i%per + 1), Lock: name(i)}).(consensus.Granted); !ok || o.Lock != name(i) {
			t.Fatalf("acquire %d under the limits: %+v", i, o)
		}
	}
	for _, s := range sessions { // every session renewed through the log too
		apply(consensus.LockOp{Op: "renew", Session: s, Seq: 1})
	}
	last := sessions[len(sessions)-1]
	o := apply(consensus.LockOp{Op: "acquire", Session: last, Seq: 1, Lock: "one-more"})
	if r, ok := o.(consensus.LockRefused); !ok || !strings.Contains(r.Reason, fmt.Sprint(consensus.MaxLockRefs)) {
		t.Fatalf("a reference past the limit: %+v, want refused naming %d", o, consensus.MaxLockRefs)
	}
	snap := l.Snapshot()
	if len(snap) > consensus.LocksSnapshotBound {
		t.Fatalf("a snapshot of %d bytes, over LocksSnapshotBound %d", len(snap), consensus.LocksSnapshotBound)
	}
	t.Logf("snapshot %d bytes, bound %d", len(snap), consensus.LocksSnapshotBound)
	// A restored table counts the references: still at the limit. Closing
	// a session frees its references.
	r := consensus.NewLocks(1, 1, consensus.DefaultConfig)
	r.Restore(&outEnv{}, snap)
	l = r
	if o := apply(consensus.LockOp{Op: "acquire", Session: last, Seq: 2, Lock: "one-more"}); o == nil {
		t.Fatal("no answer after the restore")
	} else if _, ok := o.(consensus.LockRefused); !ok {
		t.Fatalf("a restored table at the limit granted a reference more: %+v", o)
	}
	apply(consensus.LockOp{Op: "close", Session: sessions[0], Seq: uint64(per + 1)})
	if o := apply(consensus.LockOp{Op: "acquire", Session: last, Seq: 3, Lock: "one-more"}); o == nil {
		t.Fatal("no answer to an acquire after a close freed references")
	} else if g, ok := o.(consensus.Granted); !ok || g.Lock != "one-more" {
		t.Fatalf("an acquire after a close freed references: %+v", o)
	}
	long := strings.Repeat("<", consensus.MaxLockName/6+1) // short, but each byte escaped to six
	if o := apply(consensus.LockOp{Op: "acquire", Session: sessions[len(sessions)-2], Seq: 1, Lock: long}); o == nil {
		t.Fatal("no answer to a long name")
	} else if r, ok := o.(consensus.LockRefused); !ok || !strings.Contains(r.Reason, "name") {
		t.Fatalf("a name longer than the limit as stored: %+v", o)
	}
}

// fillsToTheBounds skips, under the race detector, a test that fills the
// replicated state to its bounds: a minute of single-threaded applying
// there, where the race detector finds nothing to look at. CI runs it
// without -race, in its sweeps step, as it does the long sweeps.
func fillsToTheBounds(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("fills the replicated state to its bounds, single-threaded: it runs without -race (CI runs it so)")
	}
}
