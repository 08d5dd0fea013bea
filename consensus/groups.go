package consensus

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/cohort-go/cohort/proc"
)

// Groups is totally ordered group multicast on a Raft log: a message is an
// entry, so every member delivers every group's messages in the log's
// order, and a send is acknowledged once its entry is committed — an
// acknowledged message is never lost while a majority's disks survive. A
// group numbers its messages 1, 2, … (the position a listener resumes
// from); a member that restarts or lags replays the log, or a snapshot,
// which keeps each group's last retain (to 2·retain) messages.
//
//	on Send(group, origin, seq, body): entry (via = self)
//	on applying it:                     unless origin's seq was applied, pos = ++next[group];
//	                                    deliver (group, pos, body);
//	                                    if via = self: acknowledge (origin, seq, pos)
//
// Only the server that took a send acknowledges it (its sender waits
// there; the others' acknowledgements would serve no one). A sender that
// gets no answer sends again, through the same server or another: a
// copy is acknowledged by the server that took it.
//
// Senders number their messages per origin (a random id per sender
// incarnation), keep at most Window unacknowledged, and resend those that
// go unacknowledged with the same number; the machine applies a number
// once: it keeps, per origin, the highest number below which all are
// applied and the applied ones above it (fewer than Window).
type Groups struct {
	raft   *Raft
	retain int
	log    Log

	groups  map[string]*groupState
	origins map[uint64]*origin

	// Sends that arrived while the server was busy, waiting to go to the
	// log as one entry (see queue).
	pending      []Send
	pendingBytes int
	gathering    bool // a gather timer is set

	decoded []Send // scratch for Apply
}

// gatherTimer is the tag of the timer that proposes the gathered sends.
type gatherTimer struct{}

func (gatherTimer) String() string { return "gather" }

// maxEntryBytes bounds the messages' bytes in one entry: an entry fits an
// AppendEntries (Config.MaxBatchBytes) and the live transport's frames.
const maxEntryBytes = 256 << 10

type groupState struct {
	Next   uint64         `json:"next"`   // positions delivered so far
	Recent []GroupMessage `json:"recent"` // the last Retain, oldest first
}

type origin struct {
	Done  uint64          `json:"done"`  // every seq ≤ Done is applied
	Above map[uint64]bool `json:"above"` // applied seqs > Done
	Used  uint64          `json:"used"`  // the entry that last used it
}

// Window bounds a sender's unacknowledged messages.
const Window = 4096

// MaxOrigins bounds the senders remembered; the one unused longest is
// forgotten first (a sender that resends after that may deliver twice).
const MaxOrigins = 4096

// NewGroups returns server id of an n-server group service that keeps
// each group's last retain messages in its snapshots. Proposals are
// forwarded to the leader.
func NewGroups(id proc.ID, n int, cfg Config, retain int) *Groups {
	cfg.Forward = true
	g := &Groups{retain: retain, groups: map[string]*groupState{}, origins: map[uint64]*origin{}}
	g.raft = New(id, n, cfg, g)
	return g
}

// Raft is the server's replicated log.
func (g *Groups) Raft() *Raft { return g.raft }

// Send multicasts Body to Group: Origin and Seq number it for retries.
type Send struct {
	Group  string `json:"group"`
	Origin uint64 `json:"origin"`
	Seq    uint64 `json:"seq"`
	Body   []byte `json:"body"`
}

func (Send) Kind() string { return "group-send" }

// SendBatch multicasts several messages in one entry (a sender's way to
// amortize the log's cost under load); each is applied as a Send.
type SendBatch struct {
	Sends []Send `json:"sends"`
}

func (SendBatch) Kind() string { return "group-send-batch" }

// Replay asks a server to output again what its state machine keeps for
// its clients (Groups: each group's retained messages; Locks: every
// holder): a host that subscribes to the outputs after the server started
// catches up with it.
type Replay struct{}

func (Replay) Kind() string { return "replay" }

// GroupMessage is a delivery: output, in the log's order, by every
// server that applies it.
type GroupMessage struct {
	Group  string `json:"group"`
	Pos    uint64 `json:"pos"`
	Origin uint64 `json:"origin"`
	Seq    uint64 `json:"seq"`
	Body   []byte `json:"body"`
}

func (GroupMessage) Kind() string { return "group-message" }

// Sent acknowledges (Origin, Seq): committed, at position Pos of Group
// (0 for a copy of one applied before). Only the server that took the
// send outputs it.
type Sent struct {
	Group  string `json:"group"`
	Origin uint64 `json:"origin"`
	Seq    uint64 `json:"seq"`
	Pos    uint64 `json:"pos"`
}

func (Sent) Kind() string { return "group-sent" }

// An entry's data: 'V', uvarints via (the server that took the sends) and
// count, then count messages, each uvarints origin, seq and len(group),
// group, uvarint len(body), body. Entries written before the via was
// recorded, which every server acknowledges, are 'g' and one message
// without its body's length (the body runs to the end), or 'G', a
// uvarint count and that many messages.
func encodeSends(via proc.ID, ss []Send) []byte {
	size := 2*binary.MaxVarintLen64 + 1
	for _, s := range ss {
		size += 4*binary.MaxVarintLen64 + len(s.Group) + len(s.Body)
	}
	b := append(make([]byte, 0, size), 'V')
	b = binary.AppendUvarint(b, uint64(via))
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = binary.AppendUvarint(b, s.Origin)
		b = binary.AppendUvarint(b, s.Seq)
		b = binary.AppendUvarint(b, uint64(len(s.Group)))
		b = append(b, s.Group...)
		b = binary.AppendUvarint(b, uint64(len(s.Body)))
		b = append(b, s.Body...)
	}
	return b
}

// anyServer is the via of an entry written without one: every server
// acknowledges its messages.
const anyServer proc.ID = -1

var errNotSend = errors.New("not a group message")

// decodeSends decodes an entry's messages and the server that took them.
func decodeSends(b []byte) (proc.ID, []Send, error) { return appendSends(nil, b) }

// appendSends decodes an entry's messages, appends them to ss and says
// which server took them (anyServer: not recorded). The bodies point into
// b. A group name equal to the previous message's is that string again,
// not a copy: an entry's messages mostly go to one group.
func appendSends(ss []Send, b []byte) (proc.ID, []Send, error) {
	if len(b) == 0 || (b[0] != 'g' && b[0] != 'G' && b[0] != 'V') {
		return 0, nil, errNotSend
	}
	tag := b[0]
	b = b[1:]
	uv := func() (uint64, bool) {
		x, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return x, true
	}
	via := anyServer
	if tag == 'V' {
		x, ok := uv()
		if !ok || x > math.MaxInt32 {
			return 0, nil, errNotSend
		}
		via = proc.ID(x)
	}
	count := uint64(1)
	if tag != 'g' {
		var ok bool
		if count, ok = uv(); !ok || count > uint64(len(b)) {
			return 0, nil, errNotSend
		}
	}
	ss = slices.Grow(ss, int(min(count, 1024)))
	group := ""
	for range count {
		var s Send
		var v [3]uint64
		for i := range v {
			x, ok := uv()
			if !ok {
				return 0, nil, errNotSend
			}
			v[i] = x
		}
		if v[2] > uint64(len(b)) {
			return 0, nil, errNotSend
		}
		if string(b[:v[2]]) != group {
			group = string(b[:v[2]])
		}
		s.Origin, s.Seq, s.Group, b = v[0], v[1], group, b[v[2]:]
		if tag == 'g' {
			s.Body, b = b, nil
		} else {
			n, ok := uv()
			if !ok || n > uint64(len(b)) {
				return 0, nil, errNotSend
			}
			s.Body, b = b[:n], b[n:]
		}
		ss = append(ss, s)
	}
	if len(b) != 0 {
		return 0, nil, errNotSend
	}
	return via, ss, nil
}

func (g *Groups) Start(env proc.Env) { g.raft.Start(env) }

func (g *Groups) Input(env proc.Env, in proc.Input) {
	switch in := in.(type) {
	case Send:
		g.queue(env, in)
	case SendBatch:
		for _, s := range in.Sends {
			g.queue(env, s)
		}
	case Replay:
		g.replay(env)
	default:
		g.raft.Input(env, in)
	}
}

// queue gathers a send into the next entry. The entry is proposed by a
// timer set to fire at once, which a host fires once the events already
// waiting have been handled: the sends that queued while the server
// worked (while it synced its log, say) share one entry, and so one
// append, one sync and one apply — group commit at the level of the
// messages, where the log does it for entries. A send to an idle server
// goes at once, alone.
func (g *Groups) queue(env proc.Env, s Send) {
	if g.pendingBytes+len(s.Body)+len(s.Group) > maxEntryBytes {
		g.propose(env)
	}
	g.pending = append(g.pending, s)
	g.pendingBytes += len(s.Body) + len(s.Group)
	if !g.gathering {
		g.gathering = true
		env.SetTimer(0, gatherTimer{})
	}
}

// propose hands the gathered sends to the log as one entry.
func (g *Groups) propose(env proc.Env) {
	if len(g.pending) == 0 {
		return
	}
	g.raft.Input(env, Propose{Data: encodeSends(env.Self(), g.pending)})
	clear(g.pending) // the bodies belong to the callers
	g.pending, g.pendingBytes = g.pending[:0], 0
}

func (g *Groups) Receive(env proc.Env, from proc.ID, m proc.Message) { g.raft.Receive(env, from, m) }

func (g *Groups) Timeout(env proc.Env, tag any) {
	if _, ok := tag.(gatherTimer); ok {
		g.gathering = false
		g.propose(env)
		return
	}
	g.raft.Timeout(env, tag)
}

func (g *Groups) Apply(env proc.Env, index uint64, data []byte) {
	g.log.applyDigest(env, index, data)
	via, ss, err := appendSends(g.decoded[:0], data)
	if err != nil {
		return
	}
	ack := via == env.Self() || via == anyServer
	for _, s := range ss {
		if s.Seq > 0 {
			g.deliver(env, index, s, ack)
		}
	}
	clear(ss) // the bodies are the log's: not kept alive by the scratch
	g.decoded = ss[:0]
}

// deliver applies one message of entry index, and acknowledges it if ack.
func (g *Groups) deliver(env proc.Env, index uint64, s Send, ack bool) {
	o := g.origins[s.Origin]
	if o == nil {
		if len(g.origins) >= MaxOrigins {
			g.forgetOldestOrigin()
		}
		o = &origin{Above: map[uint64]bool{}}
		g.origins[s.Origin] = o
	}
	o.Used = index
	if s.Seq <= o.Done || o.Above[s.Seq] {
		if ack {
			env.Output(Sent{Group: s.Group, Origin: s.Origin, Seq: s.Seq}) // a copy
		}
		return
	}
	if s.Seq == o.Done+1 { // in order, the usual case: no set to keep
		o.Done++
	} else {
		o.Above[s.Seq] = true
	}
	for len(o.Above) > 0 && o.Above[o.Done+1] {
		delete(o.Above, o.Done+1)
		o.Done++
	}
	if len(o.Above) > Window { // a sender past its window: give up on the gap
		o.Done = slices.Min(slices.Collect(maps.Keys(o.Above)))
		delete(o.Above, o.Done)
		for o.Above[o.Done+1] {
			delete(o.Above, o.Done+1)
			o.Done++
		}
	}
	gs := g.groups[s.Group]
	if gs == nil {
		gs = &groupState{}
		g.groups[s.Group] = gs
	}
	gs.Next++
	m := GroupMessage{Group: s.Group, Pos: gs.Next, Origin: s.Origin, Seq: s.Seq, Body: s.Body}
	if g.retain > 0 {
		if len(gs.Recent) >= 2*g.retain { // amortized: keep the last retain to 2·retain
			k := copy(gs.Recent, gs.Recent[len(gs.Recent)-g.retain:]) // in place: the array is reused
			clear(gs.Recent[k:])
			gs.Recent = gs.Recent[:k]
		}
		gs.Recent = append(gs.Recent, m)
	}
	env.Output(m)
	if ack {
		env.Output(Sent{Group: s.Group, Origin: s.Origin, Seq: s.Seq, Pos: gs.Next})
	}
}

// forgetOldestOrigin forgets the sender unused longest (the lowest id
// among equals, for determinism).
func (g *Groups) forgetOldestOrigin() {
	ids := slices.Sorted(maps.Keys(g.origins))
	oldest := slices.MinFunc(ids, func(a, b uint64) int { return cmp.Compare(g.origins[a].Used, g.origins[b].Used) })
	delete(g.origins, oldest)
}

type groupsSnapshot struct {
	Log     []byte                 `json:"log"`
	Groups  map[string]*groupState `json:"groups"`
	Origins map[uint64]*origin     `json:"origins"`
}

func (g *Groups) Snapshot() []byte {
	b, _ := json.Marshal(groupsSnapshot{Log: g.log.Snapshot(), Groups: g.groups, Origins: g.origins})
	return b
}

// Restore replaces the state by a snapshot's, and delivers again the
// messages it retains, in order, so that a server that starts from it can
// serve them to its listeners.
func (g *Groups) Restore(env proc.Env, b []byte) {
	g.log, g.groups, g.origins = Log{}, map[string]*groupState{}, map[uint64]*origin{}
	var s groupsSnapshot
	if len(b) == 0 || json.Unmarshal(b, &s) != nil {
		return
	}
	g.log.Restore(env, s.Log)
	maps.Copy(g.groups, s.Groups)
	for id, o := range s.Origins {
		if o.Above == nil {
			o.Above = map[uint64]bool{}
		}
		g.origins[id] = o
	}
	g.replay(env)
}

// replay outputs every group's retained messages, in order.
func (g *Groups) replay(env proc.Env) {
	for _, name := range slices.Sorted(maps.Keys(g.groups)) {
		for _, m := range g.groups[name].Recent {
			env.Output(m)
		}
	}
}

func (m GroupMessage) String() string {
	return fmt.Sprintf("group %s #%d (%d bytes)", m.Group, m.Pos, len(m.Body))
}
