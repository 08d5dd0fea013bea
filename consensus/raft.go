package consensus

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Raft (Ongaro and Ousterhout, "In search of an understandable consensus
// algorithm", USENIX ATC 2014; Ongaro's thesis, 2014, for PreVote,
// CheckQuorum and leases): a replicated log that stays consistent while a
// minority of servers crash, restart, pause or are cut off.
//
// Each server is a follower, a candidate or the leader of a term. In
// outline (§5 of the paper; the handlers below carry the same names):
//
//	on election timeout:         prevote — ask a majority whether they would vote,
//	                             without changing anyone's term (thesis §9.6);
//	                             if they would, campaign: term++, vote for self,
//	                             persist, RequestVote to all
//	on RequestVote(term, last):  grant if term ≥ ours, we have not voted for
//	                             another in it, the candidate's log is at least as
//	                             up to date as ours, and we have not heard from a
//	                             live leader within the election timeout
//	on a majority of votes:      become leader; append a no-op of the new term
//	on Propose (leader):         append to the log, persist, AppendEntries to all
//	on Propose (follower):       with Config.Forward, forward it to the leader we
//	                             know; a Forward that finds us no longer leading
//	                             goes on to the leader we follow (else dropped)
//	on AppendEntries(prev, es):  reject unless our log has prev with its term;
//	                             else drop a conflicting suffix, append es,
//	                             persist, then acknowledge (soon: the
//	                             AppendEntries that wait meanwhile share
//	                             one sync) — once per heartbeat round for
//	                             those that carry only the commit index
//	on a majority's match ≥ i:   if entry i is of the current term, commit up to i
//	                             and apply in order
//	every heartbeat (leader):    AppendEntries to all; step down if a majority
//	                             has not answered within an election timeout
//	                             (CheckQuorum, thesis §6.2)
//	on Add/RemoveServer (leader): if the last change is committed, append a
//	                             configuration one server larger or smaller —
//	                             a newcomer only once it has caught up, as a
//	                             learner (§4.2.1); every server follows the
//	                             last one in its log (thesis §4.1; see
//	                             "Membership" below)
//
// Term, vote and log are written to the process's stable storage and
// synced before anything that depends on them is sent: a vote is never
// granted twice in a term, and an acknowledged entry survives a crash.
// The leader sends new entries before it syncs them, and counts itself
// towards their majority only after: its disk and its followers' work at
// once (thesis §10.2.1), and an entry it loses at a crash is one it never
// counted. A follower answers the AppendEntries that queued while it
// synced with one sync (group commit), and applies what the leader says
// is committed before that sync: a majority holds it already.
// The log is compacted into a snapshot of the state machine (§7).
//
// Assumptions: asynchronous, unreliable network (messages may be lost,
// duplicated, reordered); crash-recover processes with stable storage.
// Leases additionally assume clock rates bounded by Config.MaxDrift.
// Safety never depends on timing; liveness needs a majority that can talk
// for longer than an election timeout.
//
// Cost: an entry takes one round trip from the leader to a majority
// (2(n-1) messages, fewer when entries are batched); an election, 2(n-1)
// messages for the prevote and 2(n-1) for the vote.

// Config tunes a Raft server. Durations are on the server's local clock.
type Config struct {
	// Heartbeat is how often a leader sends AppendEntries to a follower
	// that has nothing else to receive.
	Heartbeat time.Duration
	// ElectionTimeout is the least time a follower waits without hearing
	// from a leader before it campaigns; each wait is drawn from
	// [ElectionTimeout, 2·ElectionTimeout). It must exceed Heartbeat.
	ElectionTimeout time.Duration
	// MaxBatch bounds the entries in one AppendEntries; MaxInflight, the
	// AppendEntries carrying entries a follower has not yet acknowledged
	// (pipelining).
	MaxBatch, MaxInflight int
	// MaxBatchBytes, if positive, also bounds the entries' data in one
	// AppendEntries (at least one entry goes): a host whose transport
	// bounds its frames keeps messages within them.
	MaxBatchBytes int
	// SnapshotChunk bounds the snapshot bytes in one InstallSnapshot: a
	// larger snapshot goes in chunks, each acknowledged before the next
	// (Ongaro & Ousterhout, Figure 13's offset and done), so that a host
	// whose transport bounds its frames can bring a follower up to date
	// whatever the state machine holds. 0: DefaultSnapshotChunk.
	SnapshotChunk int
	// CompactEvery: once this many entries were applied since the last
	// snapshot, take one and drop them from the log; 0 never compacts.
	CompactEvery int
	// CompactBytes: once the entries applied since the last snapshot hold
	// this many bytes of data, take one too (with CompactEvery set), so
	// that a log of large entries does not hold CompactEvery of them in
	// memory; 0: by count only.
	CompactBytes int
	// MaxDrift bounds the rate error of any clock (0.01: 1%); the leader's
	// lease is shortened by it.
	MaxDrift float64
	// Members is the initial configuration: the servers that vote until
	// the log says otherwise. nil: every process of the group. A process
	// outside it waits, silent, until a configuration adds it.
	Members []proc.ID
	// Forward: a follower that knows the leader forwards a Propose to it
	// (a Forward message, which the network may lose: clients retry)
	// instead of answering NotLeader.
	Forward bool
	// Probe, if not nil, is told as entries reach each stage of their way
	// through the log at this server (see Stage): a benchmark's look at
	// where the latency goes. It is called in the server's handlers, with
	// no clock (the caller reads its own), and must be quick and must not
	// call the server. nil in production.
	Probe func(ProbePoint)
}

// DefaultConfig suits a LAN, or the simulator's default network.
var DefaultConfig = Config{
	Heartbeat:       20 * time.Millisecond,
	ElectionTimeout: 150 * time.Millisecond,
	MaxBatch:        256,
	MaxBatchBytes:   512 << 10, // an AppendEntries fits the live transport's 1 MiB frames
	MaxInflight:     8,
	CompactEvery:    4096,
	CompactBytes:    64 << 20,
	MaxDrift:        0.01,
}

// Validate reports a Config that cannot work, naming the field.
func (c Config) Validate() error {
	switch {
	case c.Heartbeat <= 0:
		return fmt.Errorf("raft: Heartbeat = %v must be positive", c.Heartbeat)
	case c.ElectionTimeout <= c.Heartbeat:
		return fmt.Errorf("raft: ElectionTimeout = %v must exceed Heartbeat = %v", c.ElectionTimeout, c.Heartbeat)
	case c.MaxBatch < 1:
		return fmt.Errorf("raft: MaxBatch = %d must be at least 1", c.MaxBatch)
	case c.SnapshotChunk < 0:
		return fmt.Errorf("raft: SnapshotChunk = %d must not be negative", c.SnapshotChunk)
	case c.MaxBatchBytes < 0:
		return fmt.Errorf("raft: MaxBatchBytes = %d must not be negative", c.MaxBatchBytes)
	case c.MaxInflight < 1:
		return fmt.Errorf("raft: MaxInflight = %d must be at least 1", c.MaxInflight)
	case c.CompactEvery < 0:
		return fmt.Errorf("raft: CompactEvery = %d must not be negative", c.CompactEvery)
	case c.CompactBytes < 0:
		return fmt.Errorf("raft: CompactBytes = %d must not be negative", c.CompactBytes)
	case c.MaxDrift < 0 || c.MaxDrift >= 0.5:
		return fmt.Errorf("raft: MaxDrift = %v must be in [0, 0.5)", c.MaxDrift)
	case c.Members != nil && len(c.Members) == 0:
		return fmt.Errorf("raft: Members is empty")
	}
	return nil
}

// StateMachine is what the log drives. Apply is called for every committed
// entry, in index order, once per incarnation (a restarted server restores
// its last snapshot and applies the entries after it again).
type StateMachine interface {
	// Apply applies entry index. data is nil for the no-op a new leader
	// appends. env is the server's, for outputs. An error says that the
	// machine cannot apply the entry (it cannot decode it: written by a
	// newer version, or damaged) and changed nothing: the server then
	// halts (Halted) rather than skip an entry the others apply.
	Apply(env proc.Env, index uint64, data []byte) error
	// Snapshot encodes the state after every entry applied so far.
	Snapshot() []byte
	// Restore replaces the state by a snapshot's (nil: the initial
	// state), at a restart or when the leader sends one; env is the
	// server's, for outputs. An error says that it cannot read the
	// snapshot: the server halts (Halted) rather than go on from another
	// state than the others'.
	Restore(env proc.Env, data []byte) error
}

// Entry is one entry of the log: data for the state machine, a new
// leader's no-op, or a configuration.
type Entry struct {
	Term    uint64    `json:"term"`
	Data    []byte    `json:"data,omitempty"`    // nil: a no-op or a configuration
	Members []proc.ID `json:"members,omitempty"` // non-nil: the servers of a new configuration
}

type role uint8

const (
	follower role = iota
	precandidate
	candidate
	leader
)

func (r role) String() string {
	return [...]string{"follower", "pre-candidate", "candidate", "leader"}[r]
}

// Raft is one server.
type Raft struct {
	cfg  Config
	sm   StateMachine
	self proc.ID
	n    int

	// Persistent (storage.go): term, vote and the log after the snapshot.
	term     uint64
	vote     proc.ID
	log      []Entry   // log[i] is entry first+i
	first    uint64    // index of log[0]; the snapshot covers first-1 and before
	snapTerm uint64    // term of entry first-1
	snapshot []byte    // the state machine after entry first-1
	snapConf []proc.ID // the configuration at entry first-1

	// The configuration: that of the last configuration entry in the log,
	// committed or not (thesis §4.1), else the snapshot's, else the
	// initial one. confIndex is the entry that set it (0: none in the log).
	members   []proc.ID
	member    []bool // by ID
	confIndex uint64

	// Volatile.
	role         role
	leader       proc.ID
	commit       uint64
	applied      uint64
	appliedBytes int    // data of the entries applied since the last snapshot
	halted       error  // the state machine could not apply entry applied+1 (Halted)
	haltNeed     uint64 // halted: a snapshot ending here or later may end the halt (Resumed)
	synced       uint64 // our log is durable up to here
	deadline     time.Duration
	timer        proc.TimerID  // the election timer; 0: none set
	hbTimer      proc.TimerID  // the leader's heartbeat timer
	heard        time.Duration // when we last heard from a current leader; -1: never
	quiet        time.Duration // we grant no vote before this (see Start)
	granted      []bool        // votes (or prevotes) received in this campaign
	transfer     bool          // a leader that left chose us to campaign next (TimeoutNow)
	resigned     uint64        // the term whose leader resigned (TimeoutNow)
	flushing     bool          // a flush timer is set ...
	flushTimer   proc.TimerID  // ... this one
	acks         []ack         // a follower's answers that wait for its next sync
	forwards     [][]byte      // a follower's proposals that wait for the flush
	forwardBytes int
	rec          []byte // scratch for the records persistEntries writes
	// A follower's snapshot being received in chunks: that at
	// incoming.Index, its bytes so far.
	incoming InstallSnapshot
	// A follower's latest answered heartbeat round (Round) of the leader
	// of term roundTerm: see onAppendEntries.
	roundTerm, roundAnswered uint64

	// Leader only.
	termStart   uint64 // the index of this term's no-op
	next, match []uint64
	inflight    []int
	// probing: a follower that rejected an AppendEntries, whose log we
	// are looking for the end of our common prefix in (the "probe"
	// state of etcd's raft): it gets one AppendEntries at a time, the
	// next at once only if its rejection moved the search, else at the
	// next heartbeat. Its first success ends the search.
	probing     []bool
	matchRound  []uint64 // per server: the round in which its match was last raised
	sentCommit  []uint64
	snapOffset  []uint64        // per server: the next chunk of the snapshot it is sent
	healAfter   []time.Duration // per halted server: when it may be sent the snapshot again
	round       uint64          // heartbeat rounds sent
	roundAt     []time.Duration // send time of recent rounds, by round % len
	acked       []uint64        // per server: the latest round it answered
	lastAck     []time.Duration // per server: when it last answered
	quorumCheck time.Duration   // when CheckQuorum last ran
	catching    catchUp         // a newcomer catching up before it is added
	// leaving is a server the last configuration removed, sent the log
	// until it holds that configuration, committed: it learns it votes no
	// more (else it would never hear, and go on believing it a voter).
	leaving      proc.ID
	leavingSince time.Duration
}

// catchUp follows a server being added while it catches up as a learner
// (thesis §4.2.1): it gets the log like a follower but counts for nothing;
// in rounds, each until it holds what the leader's log held when the round
// began, it is added once a round takes less than an election timeout.
type catchUp struct {
	id    proc.ID       // None: nobody
	from  proc.ID       // who asked for it: told if it is refused
	round int           // from 1
	end   uint64        // the round ends when the learner holds this index
	start time.Duration // when the round began
}

// Catch-up bounds: a learner is refused after this many rounds, or after
// this many election timeouts in one round (it is down or cut off).
const (
	catchUpRounds   = 10
	catchUpTimeouts = 10
)

// New returns server id of an n-server group driving sm.
func New(id proc.ID, n int, cfg Config, sm StateMachine) *Raft {
	r := &Raft{cfg: cfg, sm: sm, self: id, n: n, vote: proc.None, leader: proc.None, first: 1, heard: -1,
		catching: catchUp{id: proc.None}, leaving: proc.None}
	r.snapConf = cfg.Members
	if r.snapConf == nil {
		for p := range n {
			r.snapConf = append(r.snapConf, proc.ID(p))
		}
	}
	r.configure()
	return r
}

// Messages.

// RequestVote asks for a vote (Pre: a prevote, which changes nothing).
type RequestVote struct {
	Term      uint64 `json:"term"`
	LastIndex uint64 `json:"last_index"`
	LastTerm  uint64 `json:"last_term"`
	Pre       bool   `json:"pre,omitempty"`
}

// Vote answers a RequestVote.
type Vote struct {
	Term    uint64 `json:"term"`
	Granted bool   `json:"granted"`
	Pre     bool   `json:"pre,omitempty"`
}

// AppendEntries replicates entries after (Prev, PrevTerm) and tells the
// leader's commit index; without entries it is a heartbeat.
type AppendEntries struct {
	Term     uint64  `json:"term"`
	Prev     uint64  `json:"prev"`
	PrevTerm uint64  `json:"prev_term"`
	Entries  []Entry `json:"entries,omitempty"`
	Commit   uint64  `json:"commit"`
	Round    uint64  `json:"round"` // heartbeat round, echoed for leases and CheckQuorum
}

// AppendReply answers AppendEntries and InstallSnapshot. Match is the
// last index known to match the leader's log; on a rejection Hint is
// where the leader should retry from.
type AppendReply struct {
	Term    uint64 `json:"term"`
	Success bool   `json:"success"`
	Match   uint64 `json:"match"`
	Hint    uint64 `json:"hint,omitempty"`
	Round   uint64 `json:"round"`
	// SnapIndex and SnapNext answer a chunk of a snapshot that is not the
	// last: the follower holds the snapshot at SnapIndex up to byte
	// SnapNext, and wants the chunk from there.
	SnapIndex uint64 `json:"snap_index,omitempty"`
	SnapNext  uint64 `json:"snap_next,omitempty"`
	// Halted, from a halted follower (Halted), is the least last index
	// of a snapshot that may end its halt: the leader sends its snapshot
	// once it covers it.
	Halted uint64 `json:"halted,omitempty"`
}

// InstallSnapshot sends a follower that is behind the leader's snapshot,
// in chunks of at most Config.SnapshotChunk bytes: Data is the snapshot's
// bytes from Offset on, and Done marks the last chunk.
type InstallSnapshot struct {
	Term    uint64    `json:"term"`
	Index   uint64    `json:"index"`
	Last    uint64    `json:"last_term"`
	Members []proc.ID `json:"members"` // the configuration at Index
	Offset  uint64    `json:"offset,omitempty"`
	Data    []byte    `json:"data"`
	Done    bool      `json:"done"`
	Round   uint64    `json:"round"`
}

// DefaultSnapshotChunk is Config.SnapshotChunk's default: well within
// the live transport's 1 MiB frames.
const DefaultSnapshotChunk = 256 << 10

// Forward carries proposals from a follower to the leader: those its
// clients made while it handled one batch of events.
type Forward struct {
	Data [][]byte `json:"data"`
}

func (RequestVote) Kind() string     { return "request-vote" }
func (Forward) Kind() string         { return "forward" }
func (Vote) Kind() string            { return "vote" }
func (AppendEntries) Kind() string   { return "append" }
func (AppendReply) Kind() string     { return "append-reply" }
func (InstallSnapshot) Kind() string { return "snapshot" }

func (m RequestVote) String() string {
	if m.Pre {
		return fmt.Sprintf("PREVOTE?(t=%d,last=%d/%d)", m.Term, m.LastIndex, m.LastTerm)
	}
	return fmt.Sprintf("VOTE?(t=%d,last=%d/%d)", m.Term, m.LastIndex, m.LastTerm)
}
func (m Vote) String() string { return fmt.Sprintf("VOTE(t=%d,%v)", m.Term, m.Granted) }
func (m AppendEntries) String() string {
	return fmt.Sprintf("APPEND(t=%d,prev=%d/%d,n=%d,commit=%d)", m.Term, m.Prev, m.PrevTerm, len(m.Entries), m.Commit)
}
func (m AppendReply) String() string {
	return fmt.Sprintf("ACK(t=%d,%v,match=%d)", m.Term, m.Success, m.Match)
}
func (m InstallSnapshot) String() string {
	if m.Offset > 0 || !m.Done {
		return fmt.Sprintf("SNAPSHOT(t=%d,index=%d,bytes=%d+%d,done=%v)", m.Term, m.Index, m.Offset, len(m.Data), m.Done)
	}
	return fmt.Sprintf("SNAPSHOT(t=%d,index=%d)", m.Term, m.Index)
}

// Inputs and outputs.

// Propose asks the leader to append Data to the log. A server that is not
// the leader outputs NotLeader.
type Propose struct {
	Data []byte `json:"data"`
}

func (Propose) Kind() string { return "propose" }

// NotLeader answers a Propose given to a server that is not the leader:
// Leader is the one it knows (proc.None if none).
type NotLeader struct {
	Leader proc.ID `json:"leader"`
	Data   []byte  `json:"data"`
}

func (NotLeader) Kind() string { return "not-leader" }

// Elected is output by a server that becomes leader: its term and the last
// index of its log then (checkers use both).
type Elected struct {
	Term      uint64 `json:"term"`
	LastIndex uint64 `json:"last_index"`
}

// Halted is output once by a server whose state machine could not apply
// entry Index, or restore a snapshot that ends at Index (Reason: its
// error). Every server applies every committed entry, in order, so one
// that skipped an entry would hold another state than the others from
// then on, and answer its clients from it (a replicated state machine's
// safety rests on that: Schneider, 1990). It halts instead: it applies
// nothing more, so it answers nothing more; it compacts its log no more,
// campaigns no more and, if it leads, hands the lead over — but it still
// stores and acknowledges entries and votes, so that the others go on
// without it. A restart applies the entries again (after a repair, or on
// a version that reads the entry); so does a snapshot from the leader
// that covers Index (Resumed): a halted follower says where it halted in
// its answers (AppendReply.Halted), and the leader sends it its snapshot
// once that covers the entry. Only a snapshot restored without error
// ends the halt: the state is then the leader's, which applied the
// entry. One it cannot restore it keeps all the same (it is the
// leader's state, for a restart on a version that reads it), dropping
// the entries it covers, and it waits for a later one: so a halted
// follower's log is as long as the leader's, not unbounded. (A cap on
// the entries it accepts would not do: it would stop acknowledging, and
// the others would lose a member of their majority.)
type Halted struct {
	Index  uint64 `json:"index"`
	Reason string `json:"reason"`
}

func (Halted) Kind() string { return "halted" }

func (h Halted) String() string { return fmt.Sprintf("halted at entry %d: %s", h.Index, h.Reason) }

// Resumed is output by a halted server (Halted) that restored, without
// error, a snapshot the leader sent, which ends at entry Index, at or
// past the entry it halted at: its state is the leader's there, and it
// applies the entries after it again. It left the entry it could not
// apply to the snapshot, which holds its effect (the leader applied it).
type Resumed struct {
	Index uint64 `json:"index"`
}

func (Resumed) Kind() string     { return "resumed" }
func (r Resumed) String() string { return fmt.Sprintf("resumed at entry %d", r.Index) }

// LostState is output by a leader whose follower Server rejects an
// AppendEntries for lack of entry Hint or an earlier one, after it
// acknowledged every entry up to Acked (Hint ≤ Acked), in an earlier
// round: it lost what it had made durable. Raft assumes stable storage
// that keeps it (§5.2, Figure 2): such a server may have voted twice in
// a term, and the entries it acknowledged may have counted towards a
// commit that now rests on fewer copies than a majority. The leader
// cannot repair that; it reports it, and sends the server the log again
// from Hint (or its snapshot), as to a server that never had it. A host
// logs it as an error. Only a rejection of what the leader sent after the
// acknowledgement arrived counts (a rejection that a reordering network
// delays past a later acknowledgement is not one): it comes within two
// heartbeats of the follower's restart.
type LostState struct {
	Server proc.ID `json:"server"`
	Acked  uint64  `json:"acked"`
	Hint   uint64  `json:"hint"`
}

func (LostState) Kind() string { return "lost-state" }
func (l LostState) String() string {
	return fmt.Sprintf("p%d lost its log: it acknowledged entries up to %d, and now lacks entry %d", l.Server, l.Acked, l.Hint)
}

func (Elected) Kind() string     { return "leader" }
func (e Elected) String() string { return fmt.Sprintf("leader t=%d last=%d", e.Term, e.LastIndex) }

// Process.

func (r *Raft) Start(env proc.Env) {
	r.recover(env)
	// Before the crash we may have acknowledged a leader whose lease
	// counts on our refusing votes for an election timeout; we do not
	// remember when, so we refuse them for one election timeout now.
	r.quiet = env.Now() + r.cfg.ElectionTimeout
	r.resetElection(env)
}

func (r *Raft) Input(env proc.Env, in proc.Input) {
	switch in := in.(type) {
	case Propose:
		switch {
		case r.role == leader:
			r.appendLocal(env, Entry{Term: r.term, Data: in.Data})
		case r.cfg.Forward && r.leader != proc.None:
			if r.forwardBytes+len(in.Data) > maxForward {
				r.forward(env)
			}
			r.forwards = append(r.forwards, in.Data)
			r.forwardBytes += len(in.Data)
			r.flushSoon(env)
		default:
			env.Output(NotLeader{Leader: r.leader, Data: in.Data})
		}
	case AddServer:
		r.change(env, r.self, in.ID, true)
	case RemoveServer:
		r.change(env, r.self, in.ID, false)
	}
}

func (r *Raft) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m := m.(type) {
	case RequestVote:
		r.onRequestVote(env, from, m)
	case Vote:
		r.onVote(env, from, m)
	case AppendEntries:
		r.onAppendEntries(env, from, m)
	case AppendReply:
		r.onAppendReply(env, from, m)
	case InstallSnapshot:
		r.onInstallSnapshot(env, from, m)
	case Forward:
		switch {
		case r.role == leader:
			for _, d := range m.Data {
				r.appendLocal(env, Entry{Term: r.term, Data: d})
			}
		case r.cfg.Forward && r.leader != proc.None && r.leader != from && r.leader != r.self:
			// The sender took us for the leader, and we know a newer
			// one: pass its proposals on, as a network that delayed them
			// might have, rather than leave its clients to wait out a
			// retry. Not back to the sender (it would be passing them
			// to us), and no further than a leader we heard of in our
			// term, so the proposals cannot circle: each hop goes to a
			// server that led in a later term than the one before.
			env.Send(r.leader, m)
		}
		// Otherwise dropped: the client retries.
	case Reconfigure:
		if r.role == leader { // else dropped: the requester times out
			r.change(env, from, m.ID, m.Add)
		}
	case Refused:
		env.Output(m) // the leader's answer to a change we forwarded
	case TimeoutNow:
		if m.Term == r.term && from == r.leader && r.role == follower {
			// Our leader resigned: we owe it no stickiness for the
			// rest of its term (what it sent before may still come),
			// and its choice campaigns at once.
			r.leader, r.resigned = proc.None, m.Term
			if m.To == r.self && r.member[r.self] {
				// After a heartbeat's time, by which the others have
				// heard the news too, without a prevote.
				r.transfer = true
				env.CancelTimer(r.timer)
				r.timer = env.SetTimer(r.cfg.Heartbeat, tagElection)
			}
		}
	}
}

type timerTag uint8

const (
	tagElection timerTag = iota + 1
	tagHeartbeat
	tagFlush
)

func (t timerTag) String() string { return [...]string{"", "election", "heartbeat", "flush"}[t] }

func (r *Raft) Timeout(env proc.Env, tag any) {
	switch tag {
	case tagElection:
		r.timer = 0
		if r.role == leader {
			return
		}
		if r.halted != nil { // it could not serve as leader
			r.transfer = false
			r.resetElection(env)
			return
		}
		if r.transfer { // the leader that left chose us
			r.transfer = false
			if r.resigned == r.term && r.member[r.self] {
				r.campaign(env)
				return
			}
		}
		if now := env.Now(); now < r.deadline {
			r.timer = env.SetTimer(r.deadline-now, tagElection)
			return
		}
		if !r.member[r.self] && !slices.Contains(r.committedMembers(), r.self) {
			r.resetElection(env) // not a voter: wait to be added
			return
		}
		r.prevote(env)
	case tagHeartbeat:
		if r.role != leader {
			return
		}
		r.heartbeat(env)
		if r.role == leader { // CheckQuorum may have deposed it
			r.hbTimer = env.SetTimer(r.cfg.Heartbeat, tagHeartbeat)
		}
	case tagFlush:
		r.flushTimer = 0
		r.onFlush(env)
	}
}

// onFlush is the flush timer's work: a leader sends and syncs its new
// entries, a follower forwards its clients' proposals and acknowledges
// what it accepted.
func (r *Raft) onFlush(env proc.Env) {
	if r.role == leader {
		r.acks = r.acks[:0] // answers of a term that is over
		r.forward(env)      // proposals gathered as a follower
		r.flushing = false
		r.flush(env)
	} else {
		r.flushing = false
		r.forward(env)
		r.acknowledge(env)
	}
}

// flushNow does at once what the flush timer that is set would do, and
// cancels it. A state machine that proposes from a zero-delay timer of
// its own (Groups), which fired only once the events queued before it
// were handled, calls it after proposing: waiting for a second
// zero-delay timer would gather nothing more, and costs a live host
// another turn of its event loop (a goroutine hand-off) on every
// proposal's way to the followers.
func (r *Raft) flushNow(env proc.Env) {
	if !r.flushing {
		return
	}
	env.CancelTimer(r.flushTimer)
	r.flushTimer = 0
	r.onFlush(env)
}

// Elections.

func (r *Raft) majority() int { return len(r.members)/2 + 1 }

// resetElection waits a fresh random election timeout.
func (r *Raft) resetElection(env proc.Env) {
	d := r.cfg.ElectionTimeout + time.Duration(env.Rand().Int64N(int64(r.cfg.ElectionTimeout)))
	r.deadline = env.Now() + d
	if r.timer == 0 {
		r.timer = env.SetTimer(d, tagElection)
	}
}

// prevote asks whether a majority would vote for us in the next term,
// before disturbing anyone: a server cut off from the others does not
// come back with a higher term and depose a working leader.
func (r *Raft) prevote(env proc.Env) {
	r.role, r.leader = precandidate, proc.None
	r.askVotes(env, r.term+1)
}

// campaign starts an election for the next term.
func (r *Raft) campaign(env proc.Env) {
	r.role, r.leader = candidate, proc.None
	r.term++
	r.vote = r.self
	r.persistState(env)
	r.askVotes(env, r.term)
}

// askVotes counts our own vote and asks the other members for theirs in
// term (prevotes if we are a pre-candidate).
func (r *Raft) askVotes(env proc.Env, term uint64) {
	r.granted = make([]bool, r.n)
	r.granted[r.self] = true
	r.resetElection(env)
	if r.count(r.granted) >= r.majority() {
		r.won(env)
		return
	}
	li, lt := r.lastIndex(), r.lastTerm()
	for _, p := range r.members {
		if p != r.self {
			env.Send(p, RequestVote{Term: term, LastIndex: li, LastTerm: lt, Pre: r.role == precandidate})
		}
	}
}

// won moves on from a majority of votes: a pre-candidate campaigns, a
// candidate leads.
func (r *Raft) won(env proc.Env) {
	if r.halted != nil { // halted during the campaign
		r.stepDown(env, r.term, proc.None)
		return
	}
	if r.role == precandidate {
		r.campaign(env)
	} else {
		r.becomeLeader(env)
	}
}

func (r *Raft) onRequestVote(env proc.Env, from proc.ID, m RequestVote) {
	// Leader stickiness: while we hear from a leader, we vote for no one,
	// so that a server that merely lost touch cannot depose it.
	// (A refusal carries our term: a candidate behind us learns it.)
	now := env.Now()
	sticky := r.leader != proc.None && r.heard >= 0 && now-r.heard < r.cfg.ElectionTimeout && r.resigned != r.term
	if r.role == leader || now < r.quiet || sticky {
		env.Send(from, Vote{Term: r.term, Pre: m.Pre})
		if r.role == leader {
			r.tellRemoved(env, from)
		}
		return
	}
	upToDate := m.LastTerm > r.lastTerm() || m.LastTerm == r.lastTerm() && m.LastIndex >= r.lastIndex()
	if m.Pre {
		if m.Term > r.term && upToDate {
			env.Send(from, Vote{Term: m.Term, Granted: true, Pre: true})
		} else {
			env.Send(from, Vote{Term: r.term, Pre: true})
		}
		return
	}
	if m.Term > r.term {
		r.stepDown(env, m.Term, proc.None)
	}
	grant := m.Term == r.term && (r.vote == proc.None || r.vote == from) && upToDate
	if grant && r.vote != from {
		r.vote = from
		r.persistState(env) // before the vote leaves
		r.resetElection(env)
	}
	env.Send(from, Vote{Term: r.term, Granted: grant})
}

func (r *Raft) onVote(env proc.Env, from proc.ID, m Vote) {
	if m.Term > r.term && !m.Granted {
		r.stepDown(env, m.Term, proc.None)
		return
	}
	prevote := m.Pre && r.role == precandidate && m.Term == r.term+1
	vote := !m.Pre && r.role == candidate && m.Term == r.term
	if m.Granted && (prevote || vote) {
		r.granted[from] = true
		if r.count(r.granted) >= r.majority() {
			r.won(env)
		}
	}
}

// count counts the members whose entry in v is true.
func (r *Raft) count(v []bool) int {
	c := 0
	for _, p := range r.members {
		if v[p] {
			c++
		}
	}
	return c
}

// stepDown makes us a follower of term (of lead, if known).
func (r *Raft) stepDown(env proc.Env, term uint64, lead proc.ID) {
	if term > r.term {
		r.term, r.vote = term, proc.None
		r.persistState(env)
	}
	if r.role == leader {
		env.CancelTimer(r.hbTimer)
		r.catching.id, r.leaving = proc.None, proc.None
	}
	r.role, r.leader = follower, lead
	if r.timer == 0 {
		r.resetElection(env)
	}
}

func (r *Raft) becomeLeader(env proc.Env) {
	r.role, r.leader = leader, r.self
	r.next = make([]uint64, r.n)
	r.match = make([]uint64, r.n)
	r.inflight = make([]int, r.n)
	r.probing = make([]bool, r.n)
	r.matchRound = make([]uint64, r.n)
	r.sentCommit = make([]uint64, r.n)
	r.snapOffset = make([]uint64, r.n)
	r.healAfter = make([]time.Duration, r.n)
	r.acked = make([]uint64, r.n)
	r.lastAck = make([]time.Duration, r.n)
	r.roundAt = make([]time.Duration, 64)
	now := env.Now()
	for p := range r.next {
		r.next[p] = r.lastIndex() + 1
		r.lastAck[p] = now
	}
	r.quorumCheck = now
	env.Output(Elected{Term: r.term, LastIndex: r.lastIndex()})
	// A no-op of the new term commits, with it, every earlier entry
	// (§5.4.2: a leader commits only entries of its own term by counting).
	r.termStart = r.lastIndex() + 1
	r.appendLocal(env, Entry{Term: r.term})
	r.heartbeat(env)
	r.hbTimer = env.SetTimer(r.cfg.Heartbeat, tagHeartbeat)
}

// Replication.

// appendLocal appends e to the leader's log; a flush soon after persists
// and sends it with whatever else arrives meanwhile.
func (r *Raft) appendLocal(env proc.Env, e Entry) {
	r.log = append(r.log, e)
	if e.Members != nil {
		r.configure()
	}
	r.persistEntries(env, r.lastIndex(), r.log[len(r.log)-1:])
	r.probe(StageAppended, r.self, r.lastIndex())
	r.flushSoon(env)
}

// flushSoon sets the flush timer, unless it is set: a leader then sends
// and syncs its new entries, a follower syncs and acknowledges those it
// accepted — in one batch with whatever else arrives first.
func (r *Raft) flushSoon(env proc.Env) {
	if !r.flushing {
		r.flushing = true
		r.flushTimer = env.SetTimer(0, tagFlush)
	}
}

// flush sends the leader's new entries to every follower whose pipeline
// has room, then syncs them and counts them as matched here.
func (r *Raft) flush(env proc.Env) {
	for _, p := range r.members {
		if p != r.self {
			r.sendEntries(env, p)
		}
	}
	if l := r.catching.id; l != proc.None {
		r.sendEntries(env, l)
	}
	if l := r.leaving; l != proc.None {
		r.sendEntries(env, l)
	}
	r.sync(env)
	r.match[r.self] = r.synced
	r.maybeCommit(env)
}

// heartbeat starts a round: every follower gets AppendEntries, with
// entries if it lacks some and its pipeline has room. It also runs
// CheckQuorum.
func (r *Raft) heartbeat(env proc.Env) {
	now := env.Now()
	if now-r.quorumCheck >= r.cfg.ElectionTimeout {
		r.quorumCheck = now
		heard := 0
		for _, p := range r.members {
			if p == r.self || now-r.lastAck[p] < r.cfg.ElectionTimeout {
				heard++
			}
		}
		if heard < r.majority() {
			r.stepDown(env, r.term, proc.None) // cut off from a majority
			return
		}
	}
	r.round++
	r.roundAt[r.round%uint64(len(r.roundAt))] = now
	r.acked[r.self] = r.round
	for _, p := range r.members {
		if p == r.self {
			continue
		}
		if !r.sendEntries(env, p) {
			r.sendAppend(env, p, r.next[p], 0) // a heartbeat
		}
	}
	if c := &r.catching; c.id != proc.None {
		if now-c.start > catchUpTimeouts*r.cfg.ElectionTimeout {
			r.refuse(env, c.from, fmt.Sprintf("p%d did not catch up: round %d took over %d election timeouts (down, or cut off?)", c.id, c.round, catchUpTimeouts))
			c.id = proc.None
		} else if !r.sendEntries(env, c.id) {
			r.sendAppend(env, c.id, r.next[c.id], 0)
		}
	}
	if l := r.leaving; l != proc.None {
		if now-r.leavingSince > catchUpTimeouts*r.cfg.ElectionTimeout {
			r.leaving = proc.None // down or cut off: it may never know
		} else if !r.sendEntries(env, l) {
			r.sendAppend(env, l, r.next[l], 0)
		}
	}
}

// sendEntries sends follower p what it lacks, while its pipeline has room;
// it reports whether it sent anything.
func (r *Raft) sendEntries(env proc.Env, p proc.ID) bool {
	sent := false
	last := r.lastIndex()
	window := r.cfg.MaxInflight
	if r.probing[p] {
		window = 1
	}
	for r.inflight[p] < window && r.next[p] <= last {
		if r.next[p] < r.first {
			r.sendSnapshot(env, p)
			return true
		}
		k := r.batchFrom(r.next[p], min(uint64(r.cfg.MaxBatch), last-r.next[p]+1))
		r.sendAppend(env, p, r.next[p], k)
		r.inflight[p]++
		sent = true
		if r.probing[p] {
			break // next stays where the probe is: its answer moves it
		}
		r.next[p] += k
	}
	if !sent && r.sentCommit[p] < r.commit && r.inflight[p] < window {
		r.sendAppend(env, p, r.next[p], 0) // the news of a commit
		sent = true
	}
	return sent
}

// batchFrom is how many of the k entries from index from one
// AppendEntries carries: all of them, or as many as fit in MaxBatchBytes
// (at least one).
func (r *Raft) batchFrom(from, k uint64) uint64 {
	if r.cfg.MaxBatchBytes <= 0 {
		return k
	}
	size := 0
	for i := range k {
		size += len(r.log[from-r.first+i].Data)
		if i > 0 && size > r.cfg.MaxBatchBytes {
			return i
		}
	}
	return k
}

// sendAppend sends p the k entries from index from.
func (r *Raft) sendAppend(env proc.Env, p proc.ID, from, k uint64) {
	if from < r.first {
		r.sendSnapshot(env, p)
		return
	}
	prev := from - 1
	var es []Entry
	if k > 0 {
		es = r.log[from-r.first : from-r.first+k]
	}
	// A follower may commit only what it is known to hold: up to the
	// last entry of this message.
	commit := min(r.commit, prev+k)
	if k == 0 {
		commit = min(r.commit, max(prev, r.match[p]))
	}
	r.sentCommit[p] = max(r.sentCommit[p], commit)
	if k > 0 {
		r.probe(StageSent, p, prev+k)
	}
	env.Send(p, AppendEntries{Term: r.term, Prev: prev, PrevTerm: r.termAt(prev), Entries: es, Commit: commit, Round: r.round})
}

// sendSnapshot sends p the chunk of the snapshot it is due, and waits for
// its answer: to the last chunk, as to AppendEntries; to another, with
// the offset of the next.
func (r *Raft) sendSnapshot(env proc.Env, p proc.ID) {
	size := r.cfg.SnapshotChunk
	if size == 0 {
		size = DefaultSnapshotChunk
	}
	off := min(r.snapOffset[p], uint64(len(r.snapshot)))
	end := min(off+uint64(size), uint64(len(r.snapshot)))
	done := end == uint64(len(r.snapshot))
	env.Send(p, InstallSnapshot{Term: r.term, Index: r.first - 1, Last: r.snapTerm, Members: r.snapConf,
		Offset: off, Data: r.snapshot[off:end], Done: done, Round: r.round})
	if done {
		r.next[p] = r.first
		r.snapOffset[p] = 0
	}
	r.inflight[p] = r.cfg.MaxInflight // wait for its answer
}

func (r *Raft) onAppendEntries(env proc.Env, from proc.ID, m AppendEntries) {
	if m.Term < r.term {
		env.Send(from, AppendReply{Term: r.term, Round: m.Round})
		return
	}
	r.heardFrom(env, from, m.Term)
	reply := AppendReply{Term: r.term, Round: m.Round}
	switch {
	case m.Prev > r.lastIndex():
		reply.Hint = r.lastIndex() + 1
	case m.Prev+1 >= r.first && r.termAt(m.Prev) != m.PrevTerm:
		// Retry from the first entry of the conflicting term (§5.3's
		// optimization): one round trip per term instead of per entry.
		t, i := r.termAt(m.Prev), m.Prev
		for i > r.first && r.termAt(i-1) == t {
			i--
		}
		reply.Hint = max(i, r.commit+1)
	default:
		last := r.accept(env, m.Prev, m.Entries)
		if len(m.Entries) > 0 {
			r.probe(StageAccepted, r.self, last)
		}
		// What a majority holds is applied now, before our own copy is
		// synced: the sync makes our log count for the leader's next
		// commits, but these are durable already (and our log matches
		// the leader's up to last).
		if c := min(m.Commit, last); c > r.commit {
			r.commit = c
			r.probe(StageCommitKnown, r.self, c)
			r.apply(env)
		}
		reply.Success, reply.Match, reply.Halted = true, last, r.haltNeed
		if len(m.Entries) == 0 && m.Term == r.roundTerm && m.Round <= r.roundAnswered {
			// The news of a commit, in a round we have answered: another
			// answer would tell the leader nothing it needs (the round
			// counts once for its lease and CheckQuorum, and what we
			// hold it learns from our answers to the entries, or to the
			// next round's heartbeat), so none is sent — on a busy log,
			// a message each way fewer per commit and follower. Entries
			// and rejections are always answered.
			return
		}
		if m.Term != r.roundTerm {
			r.roundTerm, r.roundAnswered = m.Term, 0
		}
		r.roundAnswered = max(r.roundAnswered, m.Round)
		r.acks = append(r.acks, ack{to: from, reply: reply})
		r.flushSoon(env)
		return
	}
	reply.Halted = r.haltNeed
	env.Send(from, reply)
}

// maxForward bounds the proposals' bytes in one Forward message.
const maxForward = 256 << 10

// forward sends the leader the proposals gathered since the last flush;
// a follower that became leader meanwhile appends them itself, one that
// lost its leader says so for each.
func (r *Raft) forward(env proc.Env) {
	fs := r.forwards
	r.forwards, r.forwardBytes = nil, 0
	switch {
	case len(fs) == 0:
	case r.role == leader:
		for _, d := range fs {
			r.appendLocal(env, Entry{Term: r.term, Data: d})
		}
	case r.leader != proc.None:
		env.Send(r.leader, Forward{Data: fs})
	default:
		for _, d := range fs {
			env.Output(NotLeader{Data: d})
		}
	}
}

// An ack is a follower's answer to an AppendEntries it accepted, waiting
// for the sync that makes the entries durable. Answers wait together:
// AppendEntries that queued while the disk worked share one sync (group
// commit).
type ack struct {
	to    proc.ID
	reply AppendReply
}

// acknowledge syncs the entries accepted since the last sync, then
// answers. Answers of an earlier term, or for entries dropped since
// (truncate forgets them), are not sent; the leader asks again.
func (r *Raft) acknowledge(env proc.Env) {
	if len(r.acks) == 0 {
		return
	}
	r.sync(env)
	for _, a := range r.acks {
		if a.reply.Term == r.term && r.role == follower {
			env.Send(a.to, a.reply)
		}
	}
	r.acks = r.acks[:0]
}

// accept stores the entries following prev that we lack, dropping any
// conflicting suffix, and returns the index of the last one. They are
// durable after the next sync.
func (r *Raft) accept(env proc.Env, prev uint64, es []Entry) uint64 {
	last := prev + uint64(len(es))
	for i, e := range es {
		idx := prev + 1 + uint64(i)
		if idx < r.first {
			continue // covered by our snapshot: committed, so equal
		}
		if idx <= r.lastIndex() {
			if r.termAt(idx) == e.Term {
				continue
			}
			if idx <= r.commit {
				panic(fmt.Sprintf("p%d: asked to overwrite committed entry %d (term %d with %d)", r.self, idx, r.termAt(idx), e.Term))
			}
			r.truncate(env, idx)
		}
		r.log = append(r.log, es[i:]...)
		r.persistEntries(env, idx, es[i:])
		// The configuration is the last one in the log (thesis §4.1): it
		// changes only if one was dropped or appended here. (Looking for
		// it on every append would read the whole log back to the last
		// configuration or snapshot: thousands of entries.)
		if r.confIndex >= idx || slices.ContainsFunc(es[i:], func(e Entry) bool { return e.Members != nil }) {
			r.configure()
		}
		break
	}
	return last
}

// heardFrom notes a message from the leader of term.
func (r *Raft) heardFrom(env proc.Env, from proc.ID, term uint64) {
	if term > r.term || r.role != follower || r.leader != from {
		r.stepDown(env, term, from)
	}
	r.heard = env.Now()
	r.resetElection(env)
}

func (r *Raft) onInstallSnapshot(env proc.Env, from proc.ID, m InstallSnapshot) {
	if m.Term < r.term {
		env.Send(from, AppendReply{Term: r.term, Round: m.Round})
		return
	}
	r.heardFrom(env, from, m.Term)
	if !m.Done || m.Offset > 0 {
		// A chunk: kept until the last one, which installs the whole.
		in := &r.incoming
		switch {
		case m.Offset == 0:
			*in = m
			in.Data = slices.Clone(m.Data)
		case m.Index == in.Index && m.Last == in.Last && m.Offset == uint64(len(in.Data)):
			in.Data = append(in.Data, m.Data...)
		}
		if !m.Done || m.Index != in.Index || uint64(len(in.Data)) != m.Offset+uint64(len(m.Data)) {
			next := uint64(len(in.Data))
			if m.Index != in.Index {
				next = 0
			}
			env.Send(from, AppendReply{Term: r.term, Match: r.commit, Round: m.Round, SnapIndex: m.Index, SnapNext: next})
			return
		}
		m.Data, *in = in.Data, InstallSnapshot{}
	}
	// A halted server takes a snapshot that covers the entry it halted
	// at even if it holds the entries: restored, it ends the halt.
	heal := r.halted != nil && m.Index >= r.haltNeed
	if m.Index > r.commit || heal {
		r.acks = r.acks[:0] // the log they counted is replaced
		if m.Index < r.lastIndex() && m.Index >= r.first && r.termAt(m.Index) == m.Last {
			r.log = r.log[m.Index+1-r.first:] // we hold its entries: keep the rest
		} else {
			r.log = nil
		}
		// A halted server keeps the snapshot even if it cannot restore
		// it: the leader's state, which its log then need not hold.
		r.first, r.snapTerm, r.snapshot, r.snapConf = m.Index+1, m.Last, m.Data, m.Members
		r.commit, r.applied, r.appliedBytes = max(r.commit, m.Index), m.Index, 0
		err := r.sm.Restore(env, m.Data)
		switch {
		case err != nil && r.halted == nil:
			r.halt(env, m.Index, err)
		case err != nil:
			r.halted, r.haltNeed = err, m.Index+1 // a later snapshot may do
		case r.halted != nil:
			r.halted, r.haltNeed = nil, 0
			env.Output(Resumed{Index: m.Index})
		}
		r.configure()
		r.rewrite(env)
		if heal && r.halted == nil {
			r.apply(env) // the committed entries after the snapshot
		}
	}
	env.Send(from, AppendReply{Term: r.term, Success: true, Match: max(m.Index, r.commit), Round: m.Round, Halted: r.haltNeed})
}

func (r *Raft) onAppendReply(env proc.Env, from proc.ID, m AppendReply) {
	if m.Term > r.term {
		r.stepDown(env, m.Term, proc.None)
		return
	}
	if r.role != leader || m.Term < r.term {
		return
	}
	r.lastAck[from] = env.Now()
	r.acked[from] = max(r.acked[from], m.Round)
	r.inflight[from] = max(r.inflight[from]-1, 0)
	if m.SnapIndex > 0 && !m.Success {
		// A chunk of a snapshot arrived: on with the next, unless the
		// snapshot changed meanwhile (then from the start of the new one).
		r.inflight[from] = 0
		r.snapOffset[from] = 0
		if m.SnapIndex == r.first-1 {
			r.snapOffset[from] = m.SnapNext
		}
		r.sendEntries(env, from)
		return
	}
	resend := true
	if m.Success {
		if m.Match > r.match[from] {
			r.matchRound[from] = r.round
		}
		r.match[from] = max(r.match[from], m.Match)
		r.probe(StageMatched, from, r.match[from])
		r.next[from] = max(r.next[from], m.Match+1)
		r.probing[from] = false
		if r.next[from] == r.match[from]+1 {
			// Nothing is outstanding: whatever the count says was lost.
			r.inflight[from] = 0
		}
		r.maybeCommit(env)
		if r.role != leader {
			return // it committed its own removal
		}
		if from == r.catching.id {
			r.caughtUp(env)
		}
		if from == r.leaving && r.match[from] >= r.confIndex && r.sentCommit[from] >= r.confIndex {
			r.leaving = proc.None // it knows
		}
	} else if m.Hint > 0 {
		if m.Hint <= r.match[from] && m.Round > r.matchRound[from] {
			// It lacks an entry it had acknowledged when we sent what it
			// rejects (sent in a later round than the one in which its
			// acknowledgement arrived, so even a network that reorders
			// cannot have carried the rejection ahead of it): it lost
			// its log (a disk wiped or replaced, a restart from an old
			// copy). Nothing in the protocol can make up for that (it
			// may have voted twice too); we say so, and send it the log
			// again rather than the entry after the match it no longer
			// holds, for ever.
			env.Output(LostState{Server: from, Acked: r.match[from], Hint: m.Hint})
			r.match[from] = m.Hint - 1
		}
		next := max(r.match[from]+1, min(m.Hint, r.lastIndex()+1))
		// Probe: one AppendEntries at a time. Another at once only if
		// this answer moved the search (a stale rejection, or one that
		// repeats the last, waits for the heartbeat): a follower that
		// keeps rejecting is sent one a round, not one a round trip.
		resend = !r.probing[from] || next < r.next[from]
		r.next[from], r.probing[from] = next, true
		r.inflight[from] = 0 // what was in flight will be rejected too
	}
	if m.Halted > 0 && m.Halted < r.first && r.next[from] >= r.first && env.Now() >= r.healAfter[from] {
		// A halted follower, and our snapshot covers the entry it could
		// not apply: it restores it instead. Sent again after an election
		// timeout if it is lost (or the follower's answers to what we
		// sent before it arrive after it).
		r.healAfter[from] = env.Now() + r.cfg.ElectionTimeout
		r.next[from], r.snapOffset[from], r.inflight[from] = r.first-1, 0, 0
		resend = true
	}
	if resend {
		r.sendEntries(env, from)
	}
}

// caughtUp ends a learner's round once it holds the round's last entry:
// a round shorter than an election timeout adds it (its lag would not
// stall the cluster for longer than an election would); a longer one
// starts another, up to catchUpRounds.
func (r *Raft) caughtUp(env proc.Env) {
	c := &r.catching
	if r.match[c.id] < c.end || r.role != leader {
		return
	}
	now := env.Now()
	switch {
	case now-c.start <= r.cfg.ElectionTimeout:
		id := c.id
		c.id = proc.None
		r.appendConfig(env, id, true)
	case c.round >= catchUpRounds:
		r.refuse(env, c.from, fmt.Sprintf("p%d did not catch up in %d rounds: the log grows faster than it follows", c.id, catchUpRounds))
		c.id = proc.None
	default:
		c.round, c.end, c.start = c.round+1, r.lastIndex(), now
	}
}

// maybeCommit commits the highest entry of the current term that a
// majority holds.
func (r *Raft) maybeCommit(env proc.Env) {
	ms := make([]uint64, 0, len(r.members))
	for _, p := range r.members {
		ms = append(ms, r.match[p])
	}
	slices.Sort(ms)
	n := ms[len(ms)-r.majority()] // a majority holds everything up to n
	if n > r.commit && n >= r.first && r.termAt(n) == r.term {
		if r.confIndex > r.commit && r.confIndex <= n {
			env.Output(Configured{Index: r.confIndex, Members: r.members})
		}
		r.commit = n
		r.probe(StageCommitted, r.self, n)
		r.apply(env)
		if r.role != leader {
			return // it halted, and handed over
		}
		if !r.member[r.self] && r.commit >= r.confIndex {
			// A configuration without us is committed: our work is
			// done (thesis §4.2.2); we hand over.
			r.handOver(env)
			r.stepDown(env, r.term, proc.None)
			return
		}
		for _, p := range r.members {
			if p != r.self && r.inflight[p] == 0 {
				r.sendEntries(env, p)
			}
		}
	}
}

// apply hands the committed entries not yet applied to the state machine,
// then compacts if it is time.
func (r *Raft) apply(env proc.Env) {
	for r.applied < r.commit && r.halted == nil {
		r.applied++
		data := r.log[r.applied-r.first].Data
		if err := r.sm.Apply(env, r.applied, data); err != nil {
			r.applied--
			r.halt(env, r.applied+1, err)
			break
		}
		r.appliedBytes += len(data)
	}
	r.probe(StageApplied, r.self, r.applied)
	// A halted state machine is not snapshotted: it may not hold the
	// state its log says (a snapshot it could not restore).
	if r.halted == nil && r.compactDue(1) && r.mayCompact(env) {
		r.compact(env)
	}
}

// halt stops applying: the state machine could not apply entry index,
// or restore the snapshot that ends there (Halted). A leader hands over
// to the member that holds most of the log, as a removed leader does.
func (r *Raft) halt(env proc.Env, index uint64, err error) {
	r.halted, r.haltNeed = err, index
	if r.first > index {
		r.haltNeed = r.first // the snapshot it could not restore: a later one
	}
	env.Output(Halted{Index: index, Reason: err.Error()})
	if r.role != leader {
		return
	}
	to := proc.None
	for _, p := range r.members {
		if p != r.self && (to == proc.None || r.match[p] > r.match[to]) {
			to = p
		}
	}
	for _, p := range r.members {
		if p != r.self {
			env.Send(p, TimeoutNow{Term: r.term, To: to})
		}
	}
	r.stepDown(env, r.term, proc.None)
}

// Halted is why the server halted (Halted), or nil.
func (r *Raft) Halted() error { return r.halted }

// compactDue reports whether the entries applied since the last snapshot
// reach k times CompactEvery, or k times CompactBytes.
func (r *Raft) compactDue(k int) bool {
	if r.cfg.CompactEvery <= 0 {
		return false // never compacts
	}
	return r.applied+1-r.first >= uint64(k*r.cfg.CompactEvery) || r.cfg.CompactBytes > 0 && r.appliedBytes >= k*r.cfg.CompactBytes
}

// mayCompact: a leader keeps the entries it has still to send a live
// follower (one that answered within an election timeout), up to four
// times CompactEvery, rather than send it a whole snapshot — a slow
// follower catches up from the log, entry by entry. Entries sent and not
// yet acknowledged are not kept for it: under a steady load the slowest
// follower's acknowledgement always trails the commit, and waiting for
// it kept four times CompactEvery entries through every run; if they
// are lost, the follower's refusal sets its next back, to be kept again
// or sent a snapshot.
func (r *Raft) mayCompact(env proc.Env) bool {
	if r.role != leader || r.compactDue(4) {
		return true
	}
	now := env.Now()
	for _, p := range r.members {
		if p != r.self && now-r.lastAck[p] < r.cfg.ElectionTimeout && r.next[p] <= r.applied {
			return false
		}
	}
	return true
}

// compact replaces the applied prefix of the log by a snapshot.
func (r *Raft) compact(env proc.Env) {
	r.snapTerm = r.termAt(r.applied)
	r.snapshot = r.sm.Snapshot()
	for i := r.first; i <= r.applied; i++ {
		if m := r.log[i-r.first].Members; m != nil {
			r.snapConf = m
		}
	}
	r.log = slices.Clone(r.log[r.applied+1-r.first:])
	r.first = r.applied + 1
	r.appliedBytes = 0
	r.configure()
	r.rewrite(env)
}

// Membership (thesis §4.1): one server added or removed at a time, so
// that any majority of the old configuration and any majority of the new
// one intersect. A configuration takes effect on each server as soon as
// its entry is in the log; a leader starts a change only when the last
// one is committed and it has committed an entry of its own term (the
// no-op), which closes the hole Ongaro found in the thesis's first
// version (raft-dev, 2015). A removed leader steps down once the
// configuration without it is committed, and hands over (TimeoutNow); a removed follower is sent the
// log until it holds that configuration, committed, so that it knows it
// votes no more. With Config.Forward a follower passes a change to the
// leader (Reconfigure), and the leader's refusal back (Refused).

// AddServer asks the leader to add server ID to the configuration, and
// RemoveServer to remove it. The leader answers Refused when it cannot
// start the change now, or Configured once the new configuration is
// committed. Another server answers NotLeader — or, with Config.Forward and
// a leader it knows, forwards the change (Reconfigure) and outputs the
// leader's Refused if one comes back; that the change is done, it sees in
// its own log (Configuration).
type AddServer struct {
	ID proc.ID `json:"id"`
}

type RemoveServer struct {
	ID proc.ID `json:"id"`
}

func (AddServer) Kind() string    { return "add-server" }
func (RemoveServer) Kind() string { return "remove-server" }

// Reconfigure carries an AddServer (Add) or a RemoveServer from a
// follower to the leader.
type Reconfigure struct {
	ID  proc.ID `json:"id"`
	Add bool    `json:"add,omitempty"`
}

func (Reconfigure) Kind() string { return "reconfigure" }
func (m Reconfigure) String() string {
	if m.Add {
		return fmt.Sprintf("ADD(p%d)", m.ID)
	}
	return fmt.Sprintf("REMOVE(p%d)", m.ID)
}

// Configured is output by the leader when a configuration is committed.
type Configured struct {
	Index   uint64    `json:"index"`
	Members []proc.ID `json:"members"`
}

func (Configured) Kind() string { return "configured" }

// Refused is output by the leader for a change it cannot start, and sent
// to the follower that forwarded the change.
type Refused struct {
	Reason string `json:"reason"`
}

func (Refused) Kind() string     { return "refused" }
func (m Refused) String() string { return fmt.Sprintf("REFUSED(%s)", m.Reason) }

// TimeoutNow is sent by a leader whose removal is committed, as it steps
// down, to the members left: the leader of Term resigns, so they may vote
// at once instead of waiting out its silence, and To — the one that holds
// most of the log — campaigns now (the leadership transfer of the
// thesis, §3.10, for a leader that leaves, §4.2.2).
type TimeoutNow struct {
	Term uint64  `json:"term"`
	To   proc.ID `json:"to"`
}

func (TimeoutNow) Kind() string     { return "timeout-now" }
func (m TimeoutNow) String() string { return fmt.Sprintf("TIMEOUT-NOW(t=%d,p%d)", m.Term, m.To) }

// handOver tells the members left, as a removed leader steps down, that
// it resigns, and which of them is to campaign.
func (r *Raft) handOver(env proc.Env) {
	to := proc.None
	for _, p := range r.members {
		if to == proc.None || r.match[p] > r.match[to] {
			to = p
		}
	}
	for _, p := range r.members {
		env.Send(p, TimeoutNow{Term: r.term, To: to})
	}
}

// change starts adding or removing server id, as from asked (ourself, or
// a follower that forwarded the request).
func (r *Raft) change(env proc.Env, from, id proc.ID, add bool) {
	refuse := func(why string, args ...any) { r.refuse(env, from, fmt.Sprintf(why, args...)) }
	switch {
	case r.role != leader && r.cfg.Forward && r.leader != proc.None && from == r.self:
		env.Send(r.leader, Reconfigure{ID: id, Add: add})
	case r.role != leader:
		env.Output(NotLeader{Leader: r.leader})
	case id < 0 || int(id) >= r.n:
		refuse("p%d is not a process of this group of %d", id, r.n)
	case r.confIndex > r.commit:
		refuse("the change at entry %d is "+notCommittedYet, r.confIndex)
	case r.termAt(r.commit) != r.term:
		refuse("no entry of term %d is "+notCommittedYet, r.term)
	case add && r.member[id]:
		refuse("p%d "+memberAlready, id)
	case r.catching.id != proc.None:
		refuse("p%d "+catchingUp, r.catching.id)
	case !add && !r.member[id]:
		refuse("p%d "+notMember, id)
	case !add && len(r.members) == 1:
		refuse("p%d is the last member", id)
	case add:
		// A newcomer is sent what it lacks from the end of the log back,
		// as a learner, until it has caught up.
		r.next[id], r.match[id], r.inflight[id], r.probing[id], r.matchRound[id] = r.lastIndex()+1, 0, 0, false, 0
		r.lastAck[id], r.acked[id] = env.Now(), 0
		r.catching = catchUp{id: id, from: from, round: 1, end: r.lastIndex(), start: env.Now()}
		r.sendAppend(env, id, r.next[id], 0)
	default:
		r.appendConfig(env, id, false)
		if id != r.self {
			r.leaving, r.leavingSince = id, env.Now()
		}
	}
}

// notCommittedYet ends the reasons of the refusals that wait for the
// leader to commit: a change under way, or, at a leader just elected, an
// entry of its term (§4.1 of Ongaro's thesis: a leader changes the
// configuration only once an entry of its term is committed).
const notCommittedYet = "not committed yet"

// Uncommitted reports whether a refusal's reason is that the leader has
// not yet committed the last configuration or an entry of its term: a
// state that ends by itself once the leader commits, within a heartbeat
// or two if no other change is under way.
func (r Refused) Uncommitted() bool { return strings.HasSuffix(r.Reason, notCommittedYet) }

// The reasons of the refusals that a change asked twice meets — again of
// a new leader, say — while the first asking is under way or made.
const (
	memberAlready = "is a member already"
	catchingUp    = "is catching up to be added"
	notMember     = "is not a member"
)

// Pending reports whether the refusal says that the change asked — adding
// server id (add) or removing it — is under way or made already.
func (r Refused) Pending(id proc.ID, add bool) bool {
	if add {
		return r.Reason == fmt.Sprintf("p%d %s", id, memberAlready) || r.Reason == fmt.Sprintf("p%d %s", id, catchingUp)
	}
	return r.Reason == fmt.Sprintf("p%d %s", id, notMember)
}

// Made reports whether the refusal says that the change asked is made
// already at the leader: server id a member there (add), or not one.
func (r Refused) Made(id proc.ID, add bool) bool {
	if add {
		return r.Reason == fmt.Sprintf("p%d %s", id, memberAlready)
	}
	return r.Reason == fmt.Sprintf("p%d %s", id, notMember)
}

// tellRemoved answers a campaign of a server the committed configuration
// does not hold — removed while it was down, it restarted believing it a
// voter — by sending it the log until it holds its removal, as a server
// removed while up is (leaving): it learns it votes no more, instead of
// campaigning for ever.
func (r *Raft) tellRemoved(env proc.Env, from proc.ID) {
	if int(from) >= len(r.member) || r.member[from] || r.leaving != proc.None || from == r.catching.id || r.confIndex > r.commit {
		return
	}
	r.leaving, r.leavingSince = from, env.Now()
	r.next[from], r.match[from], r.inflight[from], r.sentCommit[from] = r.lastIndex()+1, 0, 0, 0
	r.probing[from], r.matchRound[from] = false, 0
	r.sendAppend(env, from, r.next[from], 0)
}

// refuse answers a change that from asked for and that cannot be made.
func (r *Raft) refuse(env proc.Env, from proc.ID, reason string) {
	if from == r.self {
		env.Output(Refused{Reason: reason})
	} else {
		env.Send(from, Refused{Reason: reason})
	}
}

// appendConfig appends the configuration with id added or removed.
func (r *Raft) appendConfig(env proc.Env, id proc.ID, add bool) {
	members := slices.DeleteFunc(slices.Clone(r.members), func(p proc.ID) bool { return p == id })
	if add {
		members = append(members, id)
		slices.Sort(members)
		if id == r.leaving {
			r.leaving = proc.None
		}
		// It has a grace of an election timeout before CheckQuorum counts
		// its silence.
		r.lastAck[id] = env.Now()
	}
	r.appendLocal(env, Entry{Term: r.term, Members: members})
}

// configure sets the configuration: the last one in the log, else the
// snapshot's.
func (r *Raft) configure() {
	r.members, r.confIndex = r.snapConf, 0
	for i := len(r.log) - 1; i >= 0; i-- {
		if r.log[i].Members != nil {
			r.members, r.confIndex = r.log[i].Members, r.first+uint64(i)
			break
		}
	}
	r.member = make([]bool, r.n)
	for _, p := range r.members {
		r.member[p] = true
	}
}

// committedMembers is the last configuration known committed. A server
// that the latest configuration leaves out but the committed one holds
// still campaigns: it may hold the only log that can win, as a leader does
// that stepped down before committing its own removal.
func (r *Raft) committedMembers() []proc.ID {
	for i := min(r.commit, r.lastIndex()); i >= r.first; i-- {
		if m := r.log[i-r.first].Members; m != nil {
			return m
		}
	}
	return r.snapConf
}

// Lease reports until when (on the local clock) this server is certainly
// the leader: no other server can be elected before then, because a
// majority heard from it after the start of a heartbeat round and will
// refuse votes for an election timeout (measured on clocks that may run
// MaxDrift fast) after that. It returns 0 when the server is not a leader
// or holds no lease.
func (r *Raft) Lease() time.Duration {
	if r.role != leader {
		return 0
	}
	rounds := make([]uint64, 0, len(r.members))
	for _, p := range r.members {
		rounds = append(rounds, r.acked[p])
	}
	slices.Sort(rounds)
	q := rounds[len(rounds)-r.majority()] // a majority answered round q or later
	if q == 0 || r.round-q >= uint64(len(r.roundAt)) {
		return 0
	}
	start := r.roundAt[q%uint64(len(r.roundAt))]
	return start + time.Duration(float64(r.cfg.ElectionTimeout)*(1-r.cfg.MaxDrift)/(1+r.cfg.MaxDrift))
}

// Ready reports whether this server is the leader and has committed an
// entry of its term: its state machine then reflects every entry any
// leader ever committed, and nothing it did not apply ever will be.
func (r *Raft) Ready() bool { return r.role == leader && r.commit >= r.termStart }

// Leader reports the leader this server knows and its term.
func (r *Raft) Leader() (proc.ID, uint64) { return r.leader, r.term }

// Members is the configuration this server follows: the servers that vote.
func (r *Raft) Members() []proc.ID { return slices.Clone(r.members) }

// Configuration is the configuration this server follows and whether it
// knows it committed; a server that is not in it does not vote.
func (r *Raft) Configuration() (members []proc.ID, committed bool) {
	return slices.Clone(r.members), r.confIndex <= r.commit
}

// Commit is the highest index known committed here.
func (r *Raft) Commit() uint64 { return r.commit }

// Log access.

func (r *Raft) lastIndex() uint64 { return r.first - 1 + uint64(len(r.log)) }

func (r *Raft) lastTerm() uint64 { return r.termAt(r.lastIndex()) }

// termAt is the term of entry i, which must be in the log or the
// snapshot's last.
func (r *Raft) termAt(i uint64) uint64 {
	if i == r.first-1 {
		return r.snapTerm
	}
	if i < r.first || i > r.lastIndex() {
		panic(fmt.Sprintf("p%d: term of entry %d outside the log [%d, %d]", r.self, i, r.first, r.lastIndex()))
	}
	return r.log[i-r.first].Term
}
