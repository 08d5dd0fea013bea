package consensus_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/proc"
)

// recorder is an Env that records what a server sends and how often it
// syncs, and fires nothing by itself: the test calls the handlers.
type recorder struct {
	syncs int
	sent  []sentMsg
	outs  []proc.Output
	timer []any
	store *proc.MemStorage
	self  proc.ID
	now   time.Duration // Now is a second past it
}

type sentMsg struct {
	to    proc.ID
	m     proc.Message
	syncs int // syncs done when it was sent
}

type countingStorage struct {
	*proc.MemStorage
	r *recorder
}

func (c countingStorage) Sync() { c.r.syncs++ }

func (e *recorder) Self() proc.ID            { return e.self }
func (e *recorder) N() int                   { return 3 }
func (e *recorder) Neighbors() []proc.ID     { return nil }
func (e *recorder) Now() time.Duration       { return time.Second + e.now }
func (e *recorder) Rand() *rand.Rand         { return rand.New(rand.NewPCG(1, 2)) }
func (e *recorder) Output(o proc.Output)     { e.outs = append(e.outs, o) }
func (e *recorder) CancelTimer(proc.TimerID) {}
func (e *recorder) Storage() proc.Storage    { return countingStorage{e.store, e} }
func (e *recorder) Send(to proc.ID, m proc.Message) {
	e.sent = append(e.sent, sentMsg{to, m, e.syncs})
}
func (e *recorder) SetTimer(_ time.Duration, tag any) proc.TimerID {
	e.timer = append(e.timer, tag)
	return proc.TimerID(len(e.timer))
}

func (e *recorder) replies() []consensus.AppendReply {
	var rs []consensus.AppendReply
	for _, s := range e.sent {
		if r, ok := s.m.(consensus.AppendReply); ok {
			rs = append(rs, r)
		}
	}
	return rs
}

// forwarded returns the Forwards sent so far, with their destinations.
func (e *recorder) forwarded() (fws []consensus.Forward, to []proc.ID) {
	for _, s := range e.sent {
		if f, ok := s.m.(consensus.Forward); ok {
			fws, to = append(fws, f), append(to, s.to)
		}
	}
	return fws, to
}

// forwardingFollower is server 1 of 3 with Config.Forward, started.
func forwardingFollower() (*recorder, *consensus.Raft) {
	env := &recorder{store: proc.NewMemStorage(nil), self: 1}
	cfg := consensus.DefaultConfig
	cfg.Forward = true
	r := consensus.New(1, 3, cfg, consensus.NewKV())
	r.Start(env)
	return env, r
}

// TestFollowerGroupCommit: AppendEntries that arrive before the follower's
// flush share one sync, and none is acknowledged before it; an answer
// counting entries a new leader's AppendEntries then replaced is never
// sent.
func TestFollowerGroupCommit(t *testing.T) {
	env := &recorder{store: proc.NewMemStorage(nil), self: 1}
	r := consensus.New(1, 3, consensus.DefaultConfig, consensus.NewKV())
	r.Start(env)
	entry := func(term uint64) consensus.Entry { return consensus.Entry{Term: term, Data: []byte("x")} }
	r.Receive(env, 0, consensus.AppendEntries{Term: 1, Prev: 0, Entries: []consensus.Entry{entry(1)}, Round: 1})
	r.Receive(env, 0, consensus.AppendEntries{Term: 1, Prev: 1, PrevTerm: 1, Entries: []consensus.Entry{entry(1), entry(1)}, Round: 2})
	if rs := env.replies(); len(rs) != 0 {
		t.Fatalf("acknowledged before the sync: %+v", rs)
	}
	before := env.syncs
	r.Timeout(env, consensus.FlushTag)
	if env.syncs != before+1 {
		t.Fatalf("%d syncs for two AppendEntries, want 1", env.syncs-before)
	}
	rs := env.replies()
	if len(rs) != 2 || !rs[0].Success || rs[0].Match != 1 || rs[1].Match != 3 {
		t.Fatalf("replies %+v, want successes matching 1 and 3", rs)
	}
	for _, s := range env.sent {
		if _, ok := s.m.(consensus.AppendReply); ok && s.syncs != before+1 {
			t.Fatalf("a reply was sent before the sync")
		}
	}

	// Entry 4 of term 1 waits for its sync; then the leader of term 2
	// replaces it. The answer for it must not go out.
	r.Receive(env, 0, consensus.AppendEntries{Term: 1, Prev: 3, PrevTerm: 1, Entries: []consensus.Entry{entry(1)}, Round: 3})
	r.Receive(env, 2, consensus.AppendEntries{Term: 2, Prev: 3, PrevTerm: 1, Entries: []consensus.Entry{entry(2)}, Round: 1})
	env.sent = nil
	r.Timeout(env, consensus.FlushTag)
	rs = env.replies()
	if len(rs) != 1 || rs[0].Term != 2 || rs[0].Match != 4 {
		t.Fatalf("after the new leader's AppendEntries: replies %+v, want one, of term 2, matching 4", rs)
	}
	for _, s := range env.sent {
		if s.to == 0 {
			t.Errorf("answered the deposed leader: %+v", s.m)
		}
	}
}

// TestFollowerForwardsInBatches: proposals a follower's clients make
// before its flush reach the leader in one Forward.
func TestFollowerForwardsInBatches(t *testing.T) {
	env, r := forwardingFollower()
	r.Receive(env, 0, consensus.AppendEntries{Term: 1, Round: 1}) // leader 0
	r.Input(env, consensus.Propose{Data: []byte("a")})
	r.Input(env, consensus.Propose{Data: []byte("b")})
	var fws []consensus.Forward
	collect := func() {
		var to []proc.ID
		fws, to = env.forwarded()
		for _, p := range to {
			if p != 0 {
				t.Fatalf("forwarded to %d, not the leader", p)
			}
		}
	}
	if collect(); len(fws) != 0 {
		t.Fatalf("forwarded before the flush: %+v", fws)
	}
	r.Timeout(env, consensus.FlushTag)
	if collect(); len(fws) != 1 || len(fws[0].Data) != 2 || string(fws[0].Data[1]) != "b" {
		t.Fatalf("forwards %+v, want one carrying a and b", fws)
	}
}

// TestForwardToAFormerLeaderIsPassedOn: proposals forwarded to a server
// that has since followed a newer leader go on to that leader, not back to
// the sender, and are dropped by a server that knows no leader.
func TestForwardToAFormerLeaderIsPassedOn(t *testing.T) {
	env, r := forwardingFollower()
	fw := consensus.Forward{Data: [][]byte{[]byte("a"), []byte("b")}}
	forwards := func() []proc.ID {
		fws, to := env.forwarded()
		for _, f := range fws {
			if len(f.Data) != 2 || string(f.Data[1]) != "b" {
				t.Fatalf("passed on %+v, want a and b", f)
			}
		}
		env.sent = nil
		return to
	}
	r.Receive(env, 0, fw) // no leader known yet
	if to := forwards(); len(to) != 0 {
		t.Fatalf("knowing no leader, passed proposals on to %v", to)
	}
	r.Receive(env, 2, consensus.AppendEntries{Term: 2, Round: 1}) // leader 2
	r.Receive(env, 0, fw)
	if to := forwards(); len(to) != 1 || to[0] != 2 {
		t.Fatalf("proposals forwarded to a follower of 2 went to %v, want [2]", to)
	}
	r.Receive(env, 2, fw) // the leader itself took us for the leader
	if to := forwards(); len(to) != 0 {
		t.Fatalf("passed the leader's own forward back to %v", to)
	}
}

// TestFollowerAppliesBeforeItsSync: what the leader says is committed, a
// follower applies when the news arrives, before its own sync (a majority
// holds it already); its acknowledgement still waits for the sync.
func TestFollowerAppliesBeforeItsSync(t *testing.T) {
	env := &recorder{store: proc.NewMemStorage(nil), self: 1}
	r := consensus.New(1, 3, consensus.DefaultConfig, consensus.NewKV())
	r.Start(env)
	r.Receive(env, 0, consensus.AppendEntries{Term: 1, Round: 1}) // leader 0, term 1 (synced)
	r.Timeout(env, consensus.FlushTag)
	env.sent = nil
	before := env.syncs
	e := consensus.Entry{Term: 1, Data: []byte("x")}
	r.Receive(env, 0, consensus.AppendEntries{Term: 1, Prev: 0, Entries: []consensus.Entry{e, e, e}, Commit: 2, Round: 2})
	if env.syncs != before || r.Commit() != 2 {
		t.Fatalf("after %d syncs: commit %d, want 2 before the sync", env.syncs-before, r.Commit())
	}
	if rs := env.replies(); len(rs) != 0 {
		t.Fatalf("acknowledged before the sync: %+v", rs)
	}
	r.Timeout(env, consensus.FlushTag)
	if rs := env.replies(); env.syncs != before+1 || len(rs) != 1 || rs[0].Match != 3 {
		t.Fatalf("after the flush: %d syncs, replies %+v; want 1 sync, one reply matching 3", env.syncs-before, rs)
	}
}

// TestGroupSendsShareAnEntry: sends that reach a group server before its
// gather timer fires go to the log as one entry, in order (here a
// follower's, forwarded to the leader in one Forward carrying one
// entry); a send that would take the entry past its bound starts the
// next one.
func TestGroupSendsShareAnEntry(t *testing.T) {
	env := &recorder{store: proc.NewMemStorage(nil), self: 1}
	g := consensus.NewGroups(1, 3, consensus.DefaultConfig, 16)
	g.Start(env)
	g.Receive(env, 0, consensus.AppendEntries{Term: 1, Round: 1}) // leader 0
	send := func(group string, seq uint64, body []byte) {
		g.Input(env, consensus.Send{Group: group, Origin: 7, Seq: seq, Body: body})
	}
	send("g", 1, []byte("a"))
	send("h", 2, []byte("b"))
	g.Input(env, consensus.SendBatch{Sends: []consensus.Send{{Group: "g", Origin: 8, Seq: 1, Body: []byte("c")}}})
	forwards := func() []consensus.Forward {
		var fws []consensus.Forward
		for _, s := range env.sent {
			if f, ok := s.m.(consensus.Forward); ok {
				fws = append(fws, f)
			}
		}
		return fws
	}
	gathers := 0
	for _, tag := range env.timer {
		if tag == consensus.GatherTag {
			gathers++
		}
	}
	if gathers != 1 || len(forwards()) != 0 {
		t.Fatalf("%d gather timers and forwards %+v before the timer fired, want 1 and none", gathers, forwards())
	}
	// The entry leaves with the gather timer, not after a flush timer
	// of its own (on a live node, another turn of the event loop).
	g.Timeout(env, consensus.GatherTag)
	fws := forwards()
	if len(fws) != 1 || len(fws[0].Data) != 1 {
		t.Fatalf("forwards %+v once the gather timer fired, want one carrying one entry", fws)
	}
	via, ss, err := consensus.DecodeSends(fws[0].Data[0])
	if err != nil {
		t.Fatal(err)
	}
	if via != 1 {
		t.Fatalf("the entry names p%d as the server that took its sends, want p1", via)
	}
	var got []string
	for _, s := range ss {
		got = append(got, s.Group+":"+string(s.Body))
	}
	if len(got) != 3 || got[0] != "g:a" || got[1] != "h:b" || got[2] != "g:c" || ss[2].Origin != 8 {
		t.Fatalf("the entry holds %v, want g:a h:b g:c in that order", got)
	}

	// Two sends whose bodies together exceed the bound: two entries.
	env.sent = nil
	big := make([]byte, consensus.MaxEntryBytes/2+1)
	send("g", 3, big)
	send("g", 4, big)
	g.Timeout(env, consensus.GatherTag)
	g.Timeout(env, consensus.FlushTag)
	entries := 0
	for _, f := range forwards() {
		entries += len(f.Data)
	}
	if entries != 2 {
		t.Fatalf("%d entries forwarded, want two", entries)
	}
}

// TestGroupEntriesUnderWayAreBounded: a group server proposes at once
// while fewer than two of its entries are under way; past that, its sends
// wait and go together in one entry once one of them is applied. Entries
// that make no progress for an election timeout are given up (a leader
// lost them), and the sends that waited go.
func TestGroupEntriesUnderWayAreBounded(t *testing.T) {
	env := &recorder{store: proc.NewMemStorage(nil), self: 1}
	g := consensus.NewGroups(1, 3, consensus.DefaultConfig, 16)
	g.Start(env)
	g.Receive(env, 0, consensus.AppendEntries{Term: 1, Round: 1}) // leader 0
	// The entries forwarded to the leader, in order.
	var entries [][]byte
	sendAll := func(seqs ...uint64) {
		for _, seq := range seqs {
			g.Input(env, consensus.Send{Group: "g", Origin: 7, Seq: seq, Body: []byte{byte(seq)}})
		}
	}
	fire := func(want any) bool { // fires the timers set with tag want, then the flush
		fired := false
		timers := env.timer
		env.timer = nil
		for _, tag := range timers {
			if tag == want {
				g.Timeout(env, tag)
				fired = true
			} else if tag != consensus.FlushTag {
				env.timer = append(env.timer, tag) // still set
			}
		}
		g.Timeout(env, consensus.FlushTag)
		for _, s := range env.sent {
			if f, ok := s.m.(consensus.Forward); ok {
				entries = append(entries, f.Data...)
			}
		}
		env.sent = nil
		return fired
	}
	seqsOf := func(e []byte) []uint64 {
		_, ss, err := consensus.DecodeSends(e)
		if err != nil {
			t.Fatal(err)
		}
		var seqs []uint64
		for _, s := range ss {
			seqs = append(seqs, s.Seq)
		}
		return seqs
	}
	sendAll(1)
	fire(consensus.GatherTag)
	sendAll(2)
	fire(consensus.GatherTag)
	sendAll(3, 4)
	if fire(consensus.GatherTag) || len(entries) != 2 {
		t.Fatalf("with two entries under way: %d entries forwarded and a gather timer %v, want 2 and none", len(entries), fire(consensus.GatherTag))
	}
	g.Apply(env, 1, entries[0]) // the first is applied: the waiting sends go, in one entry
	if !fire(consensus.GatherTag) || len(entries) != 3 || fmt.Sprint(seqsOf(entries[2])) != "[3 4]" {
		t.Fatalf("after an entry applied: entries %d, the last with %v, want 3, the last with [3 4]", len(entries), seqsOf(entries[len(entries)-1]))
	}

	// Two under way again; one more send waits. The stall timer that
	// finds progress since it was set waits again; the next gives up.
	sendAll(5)
	if !fire(consensus.StallTag) {
		t.Fatal("no stall timer set while entries are under way")
	}
	if fire(consensus.GatherTag) || len(entries) != 3 {
		t.Fatalf("gave up on entries under way that made progress: %d entries forwarded, want 3", len(entries))
	}
	fire(consensus.StallTag) // no progress since: given up
	if !fire(consensus.GatherTag) || len(entries) != 4 || fmt.Sprint(seqsOf(entries[3])) != "[5]" {
		t.Fatalf("after a stall: %d entries, want 4, the last with [5]", len(entries))
	}
}

// A server lets a third entry go once the oldest of its two under way is
// late — past its smoothed round plus four deviations (TCP's
// retransmission timeout), and at least twice its round — one more for
// each timeout it waits, up to a bound; and no sooner: sends that wait
// behind a stalled entry reach the leader as soon as it works again.
func TestGroupWindowOpensWhileTheOldestEntryIsLate(t *testing.T) {
	env := &recorder{store: proc.NewMemStorage(nil), self: 1}
	g := consensus.NewGroups(1, 3, consensus.DefaultConfig, 16)
	g.Start(env)
	g.Receive(env, 0, consensus.AppendEntries{Term: 1, Round: 1}) // leader 0
	var entries [][]byte                                          // forwarded to the leader, in order
	seq := uint64(0)
	send := func() {
		seq++
		g.Input(env, consensus.Send{Group: "g", Origin: 7, Seq: seq, Body: []byte{byte(seq)}})
		// The group's timers and the log's flush fire, due or not (one
		// that fires early finds the window as it was), but not the stall
		// timer, which gives up on the entries after an election timeout,
		// nor the log's election and heartbeat timers.
		for range 10 {
			timers := env.timer
			env.timer = nil
			for _, tag := range timers {
				if s := fmt.Sprint(tag); tag != consensus.StallTag && s != "election" && s != "heartbeat" {
					g.Timeout(env, tag)
				}
			}
			if len(env.timer) == 0 || slices.Equal(env.timer, timers) {
				break
			}
		}
		for _, s := range env.sent {
			if f, ok := s.m.(consensus.Forward); ok {
				entries = append(entries, f.Data...)
			}
		}
		env.sent = nil
	}
	// Eight rounds of 10 ms each: an entry is late after 20 ms.
	for i := range 8 {
		send()
		if len(entries) != i+1 {
			t.Fatalf("round %d: %d entries forwarded, want %d", i+1, len(entries), i+1)
		}
		env.now += 10 * time.Millisecond
		g.Apply(env, uint64(i+1), entries[i])
	}
	send()
	send()
	send() // two under way: waits
	if len(entries) != 10 {
		t.Fatalf("%d entries forwarded, want 10: two under way", len(entries))
	}
	env.now += 10 * time.Millisecond // the usual round: not late
	send()
	if len(entries) != 10 {
		t.Fatalf("the oldest entry under way waited its usual round, and a third went (%d entries, want 10)", len(entries))
	}
	env.now += 5 * time.Millisecond // 15 ms: later than the mean, not stalled
	send()
	if len(entries) != 10 {
		t.Fatalf("the oldest entry under way waited 1.5 times its round, and a third went (%d entries, want 10)", len(entries))
	}
	env.now += 15 * time.Millisecond // three times the usual round: late
	send()
	if len(entries) != 11 {
		t.Fatalf("the oldest of two entries under way waited three times its usual round of 10 ms, and no third entry went (%d forwarded, want 11)", len(entries))
	}
	if _, ss, _ := consensus.DecodeSends(entries[10]); len(ss) != 4 {
		t.Fatalf("the third entry carries %d sends, want the 4 that waited", len(ss))
	}
	env.now += time.Second // long stalled: the window opens to its bound
	for range 20 {
		send()
	}
	if len(entries) != 8+8 {
		t.Fatalf("after a stall of a second, %d entries under way, want the bound of 8", len(entries)-8)
	}
	for i := 8; i < len(entries); i++ { // all applied at last: one entry takes what waits
		g.Apply(env, uint64(i+1), entries[i])
	}
	send()
	if len(entries) != 17 {
		t.Fatalf("%d entries forwarded once the stalled ones were applied, want 17", len(entries))
	}
	if _, ss, _ := consensus.DecodeSends(entries[16]); len(ss) != 20-(8-3)+1 {
		t.Fatalf("the entry after the stall carries %d sends, want %d", len(ss), 20-(8-3)+1)
	}
}

// nopMachine applies anything and keeps nothing.
type nopMachine struct{}

func (nopMachine) Apply(proc.Env, uint64, []byte) error { return nil }
func (nopMachine) Snapshot() []byte                     { return nil }
func (nopMachine) Restore(proc.Env, []byte) error       { return nil }

// A leader compacts every CompactEvery entries while its followers are
// live and have been sent all it applied, even if the slowest has not
// acknowledged the last of them yet — under a steady load one always
// lags so, and before the leader kept four times CompactEvery entries
// (and their bytes) through every run.
func TestLeaderCompactsBehindEntriesInFlight(t *testing.T) {
	env := &recorder{store: proc.NewMemStorage(nil), self: 0}
	cfg := consensus.DefaultConfig
	cfg.CompactEvery = 8
	r := consensus.New(0, 3, cfg, nopMachine{})
	r.Start(env)
	env.now = time.Minute // past any election deadline
	r.Timeout(env, consensus.ElectionTag)
	r.Receive(env, 1, consensus.Vote{Term: 1, Granted: true, Pre: true})
	r.Receive(env, 1, consensus.Vote{Term: 1, Granted: true})
	if !r.IsLeader() {
		t.Fatal("not elected")
	}
	// Follower 1 acknowledges everything at once; follower 2 one
	// AppendEntries late, so it always lacks the last entries sent.
	var late *consensus.AppendEntries
	for i := range 20 {
		r.Input(env, consensus.Propose{Data: []byte{byte(i)}})
		r.Timeout(env, consensus.FlushTag)
		sent := env.sent
		env.sent = nil
		env.now += time.Millisecond
		for _, s := range sent {
			ae, ok := s.m.(consensus.AppendEntries)
			if !ok {
				continue
			}
			switch s.to {
			case 1:
				r.Receive(env, 1, consensus.AppendReply{Term: 1, Success: true, Match: ae.Prev + uint64(len(ae.Entries)), Round: ae.Round})
			case 2:
				if late != nil {
					r.Receive(env, 2, consensus.AppendReply{Term: 1, Success: true, Match: late.Prev + uint64(len(late.Entries)), Round: late.Round})
				}
				late = &ae
			}
		}
	}
	// 21 entries (the no-op and 20) are applied: compacted at 8 and 16.
	if r.First() < 17 {
		t.Fatalf("after 21 entries applied with every follower live and sent all of them, the log starts at %d: not compacted at 16 (CompactEvery 8)", r.First())
	}
}

// TestFollowerAnswersARoundOnce: the news of a commit (an AppendEntries
// without entries) in a heartbeat round the follower has answered gets
// no answer; a new round's does, and so do entries and rejections, in
// any round. The commit is applied all the same.
func TestFollowerAnswersARoundOnce(t *testing.T) {
	env := &recorder{store: proc.NewMemStorage(nil), self: 1}
	r := consensus.New(1, 3, consensus.DefaultConfig, consensus.NewKV())
	r.Start(env)
	e := consensus.Entry{Term: 1, Data: []byte("x")}
	step := func(m consensus.AppendEntries) []consensus.AppendReply {
		env.sent = nil
		r.Receive(env, 0, m)
		r.Timeout(env, consensus.FlushTag)
		return env.replies()
	}
	if rs := step(consensus.AppendEntries{Term: 1, Entries: []consensus.Entry{e}, Round: 1}); len(rs) != 1 || !rs[0].Success {
		t.Fatalf("entries in round 1: replies %+v, want one success", rs)
	}
	if rs := step(consensus.AppendEntries{Term: 1, Prev: 1, PrevTerm: 1, Commit: 1, Round: 1}); len(rs) != 0 || r.Commit() != 1 {
		t.Fatalf("the news of a commit in round 1, answered already: replies %+v, commit %d; want none, and commit 1", rs, r.Commit())
	}
	if rs := step(consensus.AppendEntries{Term: 1, Prev: 1, PrevTerm: 1, Entries: []consensus.Entry{e}, Commit: 1, Round: 1}); len(rs) != 1 || rs[0].Match != 2 {
		t.Fatalf("entries in round 1 again: replies %+v, want one matching 2", rs)
	}
	if rs := step(consensus.AppendEntries{Term: 1, Prev: 2, PrevTerm: 1, Commit: 2, Round: 2}); len(rs) != 1 || rs[0].Round != 2 {
		t.Fatalf("the heartbeat of round 2: replies %+v, want one, of round 2", rs)
	}
	if rs := step(consensus.AppendEntries{Term: 1, Prev: 9, PrevTerm: 1, Commit: 2, Round: 2}); len(rs) != 1 || rs[0].Success {
		t.Fatalf("an AppendEntries past our log in round 2: replies %+v, want one rejection", rs)
	}
	// A new leader's rounds count from its own start.
	if rs := step(consensus.AppendEntries{Term: 2, Prev: 2, PrevTerm: 1, Commit: 2, Round: 1}); len(rs) != 1 || rs[0].Term != 2 {
		t.Fatalf("the first heartbeat of the leader of term 2: replies %+v, want one", rs)
	}
}
