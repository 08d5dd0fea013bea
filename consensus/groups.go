package consensus

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

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
// An entry carries the sends a server gathered while it was busy, and a
// server outputs each entry's deliveries as one Delivered, and its
// acknowledgements as one Acked: under load an entry holds hundreds of
// messages, and a host hands on an output at about the cost of a message.
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

	groups   map[string]*groupState
	retained int64 // the groups' retainedCost, in all
	origins  origins

	// Sends that arrived while the server was busy, waiting to go to the
	// log as one entry (see queue).
	pending      []Send
	pendingBytes int
	gathering    bool // a gather timer is set

	// Flow control of the server's own entries (see queue and window).
	underWay   []time.Duration // when each entry under way (proposed here, not yet applied) was proposed, oldest first
	srtt       time.Duration   // the smoothed time from proposing an entry to applying it (0: none measured) ...
	rttvar     time.Duration   // ... and its mean deviation
	widening   bool            // a widen timer is set
	ownApplied uint64          // entries taken here and applied, ever
	watching   bool            // a stall timer is set ...
	watched    uint64          // ... when ownApplied was this
	stallAfter time.Duration   // the log's election timeout

	decoded []Send // scratch for Apply
}

// gatherTimer is the tag of the timer that proposes the gathered sends.
type gatherTimer struct{}

func (gatherTimer) String() string { return "gather" }

// stallTimer is the tag of the timer that gives up on entries under way
// that made no progress.
type stallTimer struct{}

func (stallTimer) String() string { return "stall" }

// widenTimer is the tag of the timer that lets one more entry go when
// the oldest under way has waited past its retransmission timeout.
type widenTimer struct{}

func (widenTimer) String() string { return "widen" }

// minUnderWay entries may always be under way, and up to maxUnderWay
// while the oldest is late (see window): past it, sends wait for one to
// be applied and go in the next entry together.
const (
	minUnderWay = 2
	maxUnderWay = 8
)

// maxEntryBytes bounds the messages' bytes in one entry: an entry fits an
// AppendEntries (Config.MaxBatchBytes) and the live transport's frames.
const maxEntryBytes = 256 << 10

type groupState struct {
	Next   uint64         `json:"next"`   // positions delivered so far
	Recent []GroupMessage `json:"recent"` // the last Retain, oldest first
	cost   int64          // Recent's retainedCost
}

// NewGroups returns server id of an n-server group service that keeps
// each group's last retain messages in its snapshots. Proposals are
// forwarded to the leader.
func NewGroups(id proc.ID, n int, cfg Config, retain int) *Groups {
	cfg.Forward = true
	g := &Groups{retain: retain, groups: map[string]*groupState{}, origins: newOrigins(), stallAfter: cfg.ElectionTimeout}
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

// GroupMessage is a delivered message: its group, its position there, its
// origin's number for it and its body.
type GroupMessage struct {
	Group  string `json:"group"`
	Pos    uint64 `json:"pos"`
	Origin uint64 `json:"origin"`
	Seq    uint64 `json:"seq"`
	Body   []byte `json:"body"`
}

// Delivered is output by every server that applies an entry: the entry's
// messages, in the log's order (Index: the entry). A replay of what a
// server retains outputs one per group, with Index 0. The bodies are the
// log's: read-only.
type Delivered struct {
	Index    uint64         `json:"index"`
	Messages []GroupMessage `json:"messages"`
}

func (Delivered) Kind() string { return "group-delivered" }

// Sent acknowledges (Origin, Seq): committed, at position Pos of Group
// (0 for a copy of one applied before).
type Sent struct {
	Group   string `json:"group"`
	Origin  uint64 `json:"origin"`
	Seq     uint64 `json:"seq"`
	Pos     uint64 `json:"pos"`
	Refused string `json:"refused,omitempty"` // why the message was not delivered (MaxGroups)
}

// Acked is output, after the entry's Delivered, by the server that took
// the entry's sends: their acknowledgements, in the entry's order.
type Acked struct {
	Index uint64 `json:"index"`
	Sent  []Sent `json:"sent"`
}

func (Acked) Kind() string { return "group-acked" }

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

// queue gathers a send into the next entry. While fewer than a window
// of the server's entries are under way (proposed, not yet applied), the
// entry is proposed by a timer set to fire at once, which a host fires
// once the events already waiting have been handled: a send to an idle
// server goes at once, alone, and the sends that queued while the server
// worked (while it synced its log, say) go together. Past the window,
// the sends wait for one of them to be applied: the busier the server,
// the more an entry carries, with one append, one sync and one apply for
// them all — group commit at the level of the messages, where the log
// does it for entries, and batches that grow with the load without a
// delay at low load (as Nagle's algorithm's segments do in TCP).
//
// An entry may be lost (a leader that fails before it replicates it, a
// server that knows no leader): if none of the server's entries is
// applied for an election timeout, it counts none under way. Its senders
// resend what was lost.
func (g *Groups) queue(env proc.Env, s Send) {
	if g.pendingBytes+len(s.Body)+len(s.Group) > maxEntryBytes {
		g.propose(env)
	}
	g.pending = append(g.pending, s)
	g.pendingBytes += len(s.Body) + len(s.Group)
	g.proposeSoon(env)
}

// proposeSoon sets the gather timer if sends wait and fewer than a
// window of entries are under way, or else the widen timer for when the
// window will have grown.
func (g *Groups) proposeSoon(env proc.Env) {
	if len(g.pending) == 0 || g.gathering {
		return
	}
	now := env.Now()
	if len(g.underWay) < g.window(now) {
		g.gathering = true
		env.SetTimer(0, gatherTimer{})
		return
	}
	if rto := g.rto(); rto > 0 && !g.widening && len(g.underWay) < maxUnderWay {
		g.widening = true
		at := g.underWay[0] + time.Duration(len(g.underWay)-minUnderWay+1)*rto
		env.SetTimer(max(at-now, 0), widenTimer{})
	}
}

// window is how many of the server's entries may be under way at now:
// minUnderWay, and one more for each retransmission timeout the oldest
// has waited, up to maxUnderWay. Most of the time an entry is applied
// within its timeout and two suffice to keep the log busy; but when one
// stalls — its leader paused by a collection, a sync or the scheduler —
// the sends behind it would wait for the stall and then for a whole
// round through the log, and the slowest messages are those. A window
// that opens while the oldest is late lets them reach the leader as soon
// as it works again, as TCP's retransmission timer (Jacobson 1988; RFC
// 6298: srtt + 4·rttvar) tells a late segment from the usual.
func (g *Groups) window(now time.Duration) int {
	rto := g.rto()
	if len(g.underWay) == 0 || rto <= 0 {
		return minUnderWay
	}
	late := (now - g.underWay[0]) / rto
	return int(min(minUnderWay+late, maxUnderWay))
}

// rto is the retransmission timeout of an entry under way (0: no round
// measured yet): srtt + 4·rttvar, and at least twice srtt — where rounds
// barely vary (a simulated network, an idle machine) the deviation
// shrinks to nothing, and an entry merely later than the mean is not
// stalled (TCP bounds its timeout from below for the same reason).
func (g *Groups) rto() time.Duration { return g.srtt + max(4*g.rttvar, g.srtt) }

// measure takes the round of the oldest entry under way, applied at now,
// into the smoothed round and its deviation (RFC 6298, §2).
func (g *Groups) measure(now time.Duration) {
	r := now - g.underWay[0]
	if g.srtt == 0 {
		g.srtt, g.rttvar = r, r/2
		return
	}
	d := g.srtt - r
	if d < 0 {
		d = -d
	}
	g.rttvar = (3*g.rttvar + d) / 4
	g.srtt = (7*g.srtt + r) / 8
}

// propose hands the gathered sends to the log as one entry.
func (g *Groups) propose(env proc.Env) {
	if len(g.pending) == 0 {
		return
	}
	g.raft.Input(env, Propose{Data: encodeSends(env.Self(), g.pending)})
	clear(g.pending) // the bodies belong to the callers
	g.pending, g.pendingBytes = g.pending[:0], 0
	g.underWay = append(g.underWay, env.Now())
	g.watch(env)
}

// watch sets the stall timer, unless it is set.
func (g *Groups) watch(env proc.Env) {
	if !g.watching {
		g.watching, g.watched = true, g.ownApplied
		env.SetTimer(g.stallAfter, stallTimer{})
	}
}

// onStall: none of the entries under way was applied since the timer was
// set, so they are taken for lost.
func (g *Groups) onStall(env proc.Env) {
	g.watching = false
	if len(g.underWay) == 0 {
		return
	}
	if g.ownApplied == g.watched {
		g.underWay = g.underWay[:0]
		g.proposeSoon(env)
		return
	}
	g.watch(env)
}

func (g *Groups) Receive(env proc.Env, from proc.ID, m proc.Message) { g.raft.Receive(env, from, m) }

func (g *Groups) Timeout(env proc.Env, tag any) {
	switch tag.(type) {
	case gatherTimer:
		g.gathering = false
		g.propose(env)
		// The timer fired once what was queued before it was handled:
		// the entry leaves now, not after another zero-delay timer.
		g.raft.flushNow(env)
	case stallTimer:
		g.onStall(env)
	case widenTimer:
		g.widening = false
		g.proposeSoon(env)
	default:
		g.raft.Timeout(env, tag)
	}
}

func (g *Groups) Apply(env proc.Env, index uint64, data []byte) error {
	if len(data) == 0 { // the no-op a new leader appends
		g.log.applyDigest(env, index, data)
		return nil
	}
	via, ss, err := appendSends(g.decoded[:0], data)
	if err != nil {
		return fmt.Errorf("groups: entry %d (%d bytes): %w", index, len(data), err) // the server halts
	}
	g.log.applyDigest(env, index, data)
	out := Delivered{Index: index, Messages: make([]GroupMessage, 0, len(ss))}
	var acked *Acked
	if via == env.Self() || via == anyServer {
		acked = &Acked{Index: index, Sent: make([]Sent, 0, len(ss))}
	}
	for _, s := range ss {
		if s.Seq > 0 {
			g.deliver(index, s, &out, acked)
		}
	}
	clear(ss) // the bodies are the log's: not kept alive by the scratch
	g.decoded = ss[:0]
	if len(out.Messages) > 0 {
		env.Output(out)
	}
	if acked != nil && len(acked.Sent) > 0 {
		env.Output(*acked)
	}
	if via == env.Self() { // one of ours (or of an earlier incarnation's)
		g.ownApplied++
		if len(g.underWay) > 0 { // not one an earlier incarnation proposed, or one given up
			g.measure(env.Now())
			g.underWay = g.underWay[:copy(g.underWay, g.underWay[1:])]
		}
		g.proposeSoon(env)
	}
	return nil
}

// deliver applies one message of entry index: it adds the delivery to
// out and, if acked is not nil, the acknowledgement to acked.
func (g *Groups) deliver(index uint64, s Send, out *Delivered, acked *Acked) {
	ack := func(a Sent) {
		if acked != nil {
			acked.Sent = append(acked.Sent, a)
		}
	}
	if g.origins.applied(s.Origin, s.Seq) {
		ack(Sent{Group: s.Group, Origin: s.Origin, Seq: s.Seq}) // a copy
		return
	}
	g.origins.mark(index, s.Origin, s.Seq)
	gs := g.groups[s.Group]
	if gs == nil {
		if len(g.groups) >= MaxGroups {
			ack(Sent{Group: s.Group, Origin: s.Origin, Seq: s.Seq,
				Refused: fmt.Sprintf("the cluster keeps %d groups, the most it may: send to one of them", MaxGroups)})
			return
		}
		gs = &groupState{}
		g.groups[s.Group] = gs
	}
	gs.Next++
	m := GroupMessage{Group: s.Group, Pos: gs.Next, Origin: s.Origin, Seq: s.Seq, Body: s.Body}
	if g.retain > 0 {
		g.keep(gs, m)
	}
	out.Messages = append(out.Messages, m)
	ack(Sent{Group: s.Group, Origin: s.Origin, Seq: s.Seq, Pos: gs.Next})
}

// keep retains m for snapshots: each group keeps its last retain to
// 2·retain messages (amortized), and all of them together at most
// RetainState bytes as a snapshot encodes them — past it, the group that
// keeps the most bytes (the first by name among equals) drops its oldest.
func (g *Groups) keep(gs *groupState, m GroupMessage) {
	if len(gs.Recent) >= 2*g.retain {
		k := copy(gs.Recent, gs.Recent[len(gs.Recent)-g.retain:]) // in place: the array is reused
		for _, old := range gs.Recent[k:] {
			g.drop(gs, old)
		}
		clear(gs.Recent[k:])
		gs.Recent = gs.Recent[:k]
	}
	gs.Recent = append(gs.Recent, m)
	gs.cost += retainedCost(m)
	g.retained += retainedCost(m)
	for g.retained > RetainState {
		var most *groupState
		var first string
		for name, c := range g.groups { // any order: ties go to the first name
			if most == nil || c.cost > most.cost || c.cost == most.cost && name < first {
				most, first = c, name
			}
		}
		g.drop(most, most.Recent[0])
		most.Recent[0] = GroupMessage{}
		most.Recent = most.Recent[1:]
	}
}

// drop uncounts a retained message of gs.
func (g *Groups) drop(gs *groupState, m GroupMessage) {
	gs.cost -= retainedCost(m)
	g.retained -= retainedCost(m)
}

// MaxGroups bounds the groups of the replicated state: a message to a new
// group past it is refused. Positions never go back, so a group is never
// forgotten.
const MaxGroups = 4096

// RetainState bounds the retained messages' bytes in a snapshot, across
// the groups, so that a snapshot — with MaxGroups groups and the
// duplicate table at its bounds — fits one 64 MiB record of the live
// storage log (GroupsSnapshotBound).
const RetainState = 48 << 20

// retainedCost is what a retained message takes in a snapshot, at most:
// its body in base64, its group's name (no escaping: see ValidName) and
// three numbers with their keys.
func retainedCost(m GroupMessage) int64 {
	return 4*int64((len(m.Body)+2)/3) + int64(len(m.Group)) + 96
}

// GroupsSnapshotBound is the largest snapshot Groups makes.
const GroupsSnapshotBound = RetainState + MaxGroups*(128+64) + originsSnapshotBound + 4<<10

type groupsSnapshot struct {
	Log     []byte                 `json:"log"`
	Groups  map[string]*groupState `json:"groups"`
	Origins map[uint64]*origin     `json:"origins"`
}

func (g *Groups) Snapshot() []byte {
	b, _ := json.Marshal(groupsSnapshot{Log: g.log.Snapshot(), Groups: g.groups, Origins: g.origins.byID})
	return b
}

// Restore replaces the state by a snapshot's, and delivers again the
// messages it retains, in order, so that a server that starts from it can
// serve them to its listeners.
func (g *Groups) Restore(env proc.Env, b []byte) error {
	g.log, g.groups, g.retained, g.origins = Log{}, map[string]*groupState{}, 0, newOrigins()
	var s groupsSnapshot
	if len(b) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("groups: snapshot of %d bytes: %w", len(b), err) // the server halts
	}
	if err := g.log.Restore(env, s.Log); err != nil {
		return fmt.Errorf("groups: snapshot: %w", err)
	}
	for name, gs := range s.Groups {
		for _, m := range gs.Recent {
			gs.cost += retainedCost(m)
		}
		g.retained += gs.cost
		g.groups[name] = gs
	}
	g.origins.restore(s.Origins)
	g.replay(env)
	return nil
}

// replay outputs every group's retained messages, in order, a Delivered
// per group.
func (g *Groups) replay(env proc.Env) {
	for _, name := range slices.Sorted(maps.Keys(g.groups)) {
		if r := g.groups[name].Recent; len(r) > 0 {
			env.Output(Delivered{Messages: slices.Clone(r)}) // Recent changes in place
		}
	}
}

func (m GroupMessage) String() string {
	return fmt.Sprintf("group %s #%d (%d bytes)", m.Group, m.Pos, len(m.Body))
}

func (d Delivered) String() string {
	switch len(d.Messages) {
	case 0:
		return "delivered nothing"
	case 1:
		return "delivered " + d.Messages[0].String()
	}
	first, last := d.Messages[0], d.Messages[len(d.Messages)-1]
	if first.Group == last.Group && last.Pos == first.Pos+uint64(len(d.Messages))-1 {
		return fmt.Sprintf("delivered group %s #%d–#%d", first.Group, first.Pos, last.Pos)
	}
	return fmt.Sprintf("delivered %d messages", len(d.Messages))
}

func (a Acked) String() string {
	if len(a.Sent) == 1 {
		s := a.Sent[0]
		return fmt.Sprintf("acked %d/%d at #%d", s.Origin, s.Seq, s.Pos)
	}
	return fmt.Sprintf("acked %d sends", len(a.Sent))
}
