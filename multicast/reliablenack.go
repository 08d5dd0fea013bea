package multicast

import (
	"strconv"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Reliable multicast with negative acknowledgements, for lossy channels
// (the remedy for ack implosion, Coulouris et al.: instead of every
// receiver acknowledging every message, receivers speak up only about what
// they miss). Each sender numbers its messages per group and keeps them in
// a retransmission buffer; each receiver delivers a sender's messages in
// sequence and notices a gap when a later one arrives:
//
//	To multicast m to g:     S := S + 1; buffer[S] := m; send ⟨m, S⟩ to every member
//	On ⟨m, S⟩ from origin q:  hold it; deliver q's messages R+1, R+2, ... that are held
//	                         after every StableEvery of them: send STABLE(R) to q
//	                         if some number ≤ the highest known from q is missing
//	                         for NackWait: send NACK(R, missing) to q, again every NackWait
//	On NACK(R, missing) from r: send buffer[s] to r for each s missing (a repair)
//	On STABLE(R) or NACK(R, …) from r: has[r] := max(has[r], R);
//	                         drop buffer[s] for every s ≤ has[r] of every receiver r
//	Every Heartbeat, for Linger rounds after its last message or repair:
//	                         send SESSION(F, S) to every member (F: the oldest number in the buffer)
//	On SESSION(F, S) from q:  the highest known from q is at least S;
//	                         if F > R + 1: R := F − 1 (those messages are gone)
//
// The session (heartbeat) messages carry the sender's latest number, so a
// receiver that lost the sender's last message, and has nothing later to
// reveal the gap, learns of it. Delivery is in each sender's order: the
// algorithm keeps FIFO order, like FO-multicast over a reliable channel.
//
// The buffer is trimmed by the receivers' watermarks: R, the number up to
// which a receiver has delivered a sender's messages, rides on every NACK
// and on a STABLE report every StableEvery deliveries. A message at or
// below every receiver's R is at every receiver, nobody can ask for it
// again, and it leaves the buffer. A lone multicast costs no report, and a
// stream one report per StableEvery messages per receiver, where positive
// acknowledgements would cost one per message.
// A member that crashes stops reporting and would pin the buffer for ever,
// so the buffer also keeps at most MaxBuffer messages, dropping the oldest.
// That is the one way F can pass a receiver's R + 1: the receiver fell
// MaxBuffer messages behind, or restarted with fresh state; it gives the
// lost messages up and goes on from F rather than wait for ever.
//
// Assumptions: channels may lose, duplicate and reorder messages;
// processes fail by crashing. A receiver misses a message for good only if
// every session message after it is lost too (probability p^Linger with
// loss p), all its NACKs go unanswered (MaxNacks of them), or it fell
// MaxBuffer messages behind. A sender that crashes cannot repair: members
// that lost its last messages never deliver them while others did — no
// agreement. No order across senders.
//
// Cost: N − 1 messages per multicast without loss, a NACK and a repair per
// lost copy, Linger·(N − 1) session messages after each burst of a
// sender's multicasts, and (N − 1)/StableEvery STABLE reports per
// multicast in a stream (none for fewer than StableEvery). Memory: a
// sender's buffer holds about StableEvery messages plus those in flight or
// missing somewhere, at most MaxBuffer; a receiver holds back at most the
// messages above its oldest gap.
type reliableNack struct {
	cfg     NackConfig
	groups  groupTable
	seq     counters
	buffer  map[string]*nackBuffer // per group: my multicasts, while some receiver may miss them
	linger  map[string]int         // per group: session rounds left
	ticking map[string]bool        // per group: a session timer is set
	sources map[source]*nackSource
	held    int // messages held back, over all sources
	hb      holdback
}

// nackBuffer is a sender's retransmission buffer for one group.
type nackBuffer struct {
	first  uint64             // the number of bodies[0]; everything below is gone
	bodies []string           // my multicasts first, first+1, ...
	has    map[proc.ID]uint64 // per receiver: every number ≤ has[r] is delivered at r
}

// source is a sender to a group, as a receiver tracks it.
type source struct {
	Group  string
	Origin proc.ID
}

// nackSource is a receiver's state for one source.
type nackSource struct {
	next     uint64            // the next number to deliver (R + 1)
	high     uint64            // the highest number known to exist
	held     map[uint64]string // received out of order
	timer    proc.TimerID      // the NACK timer; 0 when there is no gap
	nacks    int               // NACKs sent for the current gap
	reported uint64            // the R last sent to the source
}

// NackConfig sets the session period, the NACK timing and the buffer's
// trimming.
type NackConfig struct {
	Heartbeat   time.Duration // session period; default 5 ms
	Linger      int           // session rounds after the last message; default 6
	NackWait    time.Duration // a gap waits this long before a NACK, and between NACKs; default 3 ms
	MaxNacks    int           // NACKs per gap before giving the sender up; default 10
	StableEvery int           // a receiver reports R to a sender after every this many of its messages; default 32
	MaxBuffer   int           // messages a sender keeps per group at most, for members that stopped reporting; default 4096
}

// DefaultNack is the registered entry's configuration.
var DefaultNack = NackConfig{Heartbeat: 5 * time.Millisecond, Linger: 6, NackWait: 3 * time.Millisecond, MaxNacks: 10,
	StableEvery: 32, MaxBuffer: 4096}

// maxMissing bounds the numbers one NACK lists.
const maxMissing = 64

// nData is a multicast message.
type nData struct {
	Group  string
	Origin proc.ID
	Seq    uint64
	Body   string
}

// nSession announces a sender's latest number, Last, and the oldest it can
// still repair, First (0 from a sender that does not say: nothing is gone).
type nSession struct {
	Group  string
	Origin proc.ID
	Last   uint64
	First  uint64
}

// nNack asks the origin to send the listed numbers again; the receiver has
// delivered every number up to Upto.
type nNack struct {
	Group   string
	Origin  proc.ID
	Missing []uint64
	Upto    uint64
}

// nRepair is a message sent again in answer to a NACK.
type nRepair struct {
	Group  string
	Origin proc.ID
	Seq    uint64
	Body   string
}

// nStable tells the origin that the receiver has delivered every number
// of its messages to the group up to Upto.
type nStable struct {
	Group  string
	Origin proc.ID
	Upto   uint64
}

func (nData) Kind() string     { return "data" }
func (d nData) String() string { return "DATA " + msgKey{d.Group, d.Origin, d.Seq}.String() }
func (nSession) Kind() string  { return "session" }
func (s nSession) String() string {
	return "SESSION " + label(s.Origin, s.Last, s.Group)
}
func (nNack) Kind() string { return "nack" }
func (n nNack) String() string {
	s := "NACK " + n.Origin.String() + " #"
	for i, x := range n.Missing {
		if i > 0 {
			s += ","
		}
		s += strconv.FormatUint(x, 10)
	}
	return s
}
func (nRepair) Kind() string      { return "repair" }
func (r nRepair) String() string  { return "REPAIR " + msgKey{r.Group, r.Origin, r.Seq}.String() }
func (nStable) Kind() string      { return "stable" }
func (st nStable) String() string { return "STABLE " + label(st.Origin, st.Upto, st.Group) }

// Timer tags.
type nackSessionTick struct{ group string }
type nackGapTick struct{ src source }

func (nackSessionTick) Kind() string { return "session" }
func (nackGapTick) Kind() string     { return "nack-wait" }

// NewNack builds processes of the NACK-based reliable multicast; zero
// fields take DefaultNack's.
func NewNack(cfg NackConfig) func(proc.ID, int) proc.Process {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultNack.Heartbeat
	}
	if cfg.Linger <= 0 {
		cfg.Linger = DefaultNack.Linger
	}
	if cfg.NackWait <= 0 {
		cfg.NackWait = DefaultNack.NackWait
	}
	if cfg.MaxNacks <= 0 {
		cfg.MaxNacks = DefaultNack.MaxNacks
	}
	if cfg.StableEvery <= 0 {
		cfg.StableEvery = DefaultNack.StableEvery
	}
	if cfg.MaxBuffer <= 0 {
		cfg.MaxBuffer = DefaultNack.MaxBuffer
	}
	return func(_ proc.ID, n int) proc.Process {
		return &reliableNack{cfg: cfg, groups: Groups(n), seq: counters{}, buffer: map[string]*nackBuffer{},
			linger: map[string]int{}, ticking: map[string]bool{}, sources: map[source]*nackSource{}}
	}
}

func init() {
	register(proc.Algorithm{
		Name:    "reliable-nack",
		Summary: "reliable multicast over lossy channels: sequence numbers, gap detection, NACKs, repairs, session heartbeats (N−1 messages without loss)",
		Source:  "Coulouris et al. (ack implosion)",
		Assumes: proc.Assumptions{Failures: "crash-stop"},
		Theory: func(n int) map[string]float64 {
			N := float64(n)
			return map[string]float64{
				"latency_msgs":                1,
				"messages_per_lone_multicast": (N - 1) * float64(1+DefaultNack.Linger),
			}
		},
		Notes: map[string]string{
			"messages_per_multicast": "N − 1 copies without loss, and Linger (6) rounds of N − 1 SESSION messages after each sender's last multicast: 7(N − 1) for a lone multicast",
		},
		New:    NewNack(DefaultNack),
		Breaks: []string{"mc-agreement", "causal-order", "total-order"},
		Messages: []proc.Message{
			nData{}, nSession{}, nNack{}, nRepair{}, nStable{},
		},
		Scenario: `nodes: 4
network:
  latency: uniform:500us,3ms
  loss: 0.1
`,
	})
}

func (r *reliableNack) Start(proc.Env) {}

func (r *reliableNack) Input(env proc.Env, in proc.Input) {
	if m, ok := in.(Multicast); ok {
		r.multicast(env, m)
	}
}

func (r *reliableNack) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m := m.(type) {
	case nData:
		r.onData(env, source{m.Group, m.Origin}, m.Seq, m.Body)
	case nRepair:
		r.onData(env, source{m.Group, m.Origin}, m.Seq, m.Body)
	case nSession:
		r.onSession(env, from, m)
	case nNack:
		r.onNack(env, from, m)
	case nStable:
		r.onStable(env, from, m.Group, m.Upto)
	}
}

func (r *reliableNack) Timeout(env proc.Env, tag any) {
	switch t := tag.(type) {
	case nackSessionTick:
		r.session(env, t.group)
	case nackGapTick:
		r.nack(env, t.src)
	}
}

func (r *reliableNack) multicast(env proc.Env, in Multicast) {
	g, ok := r.groups.accept(env, in, false)
	if !ok {
		return
	}
	k := sent(env, g, r.seq.next(g.Name), in.Body)
	b := r.buf(g.Name)
	b.bodies = append(b.bodies, in.Body)
	r.trim(env, g)
	if g.Has(env.Self()) {
		deliver(env, k, in.Body)
	}
	d := nData{Group: k.Group, Origin: k.Origin, Seq: k.Seq, Body: in.Body}
	g.others(env.Self(), func(q proc.ID) { env.Send(q, d) })
	r.keepTalking(env, g.Name)
}

// onData holds a message (new or repaired) and delivers whatever of its
// source is now in sequence.
func (r *reliableNack) onData(env proc.Env, src source, seq uint64, body string) {
	s := r.source(env, src)
	if s == nil {
		return
	}
	if _, dup := s.held[seq]; dup || seq < s.next {
		return
	}
	s.high = max(s.high, seq)
	if !r.hb.hold(env, msgKey{src.Group, src.Origin, seq}, body, seq == s.next) {
		r.watchGap(env, src, s) // dropped: a NACK will ask for it again
		return
	}
	s.held[seq] = body
	r.held++
	r.deliverReady(env, src, s)
	r.hb.note(env, r.held)
	r.watchGap(env, src, s)
}

// deliverReady delivers the source's held messages that are next in
// sequence, and reports R to the source after every StableEvery of them.
func (r *reliableNack) deliverReady(env proc.Env, src source, s *nackSource) {
	for {
		b, ok := s.held[s.next]
		if !ok {
			break
		}
		delete(s.held, s.next)
		r.held--
		r.hb.release(b)
		deliver(env, msgKey{src.Group, src.Origin, s.next}, b)
		s.next++
	}
	if R := s.next - 1; R >= s.reported+uint64(r.cfg.StableEvery) {
		s.reported = R
		env.Send(src.Origin, nStable{Group: src.Group, Origin: src.Origin, Upto: R})
	}
}

// onSession learns the sender's latest number — a gap at the end shows —
// and, from the sender itself, the oldest it still has: anything older is
// given up.
func (r *reliableNack) onSession(env proc.Env, from proc.ID, m nSession) {
	src := source{m.Group, m.Origin}
	s := r.source(env, src)
	if s == nil {
		return
	}
	s.high = max(s.high, m.Last)
	if first := min(m.First, m.Last+1); first > s.next && from == m.Origin {
		for seq := range s.held { // deletions only: the order does not matter
			if seq < first {
				r.hb.release(s.held[seq])
				delete(s.held, seq)
				r.held--
			}
		}
		s.next = first
		r.deliverReady(env, src, s)
	}
	r.watchGap(env, src, s)
}

// onNack repairs: the listed messages go again to the one who missed them
// — or, for those no longer in the buffer, a session message that says so.
// The NACK's Upto counts as a STABLE report.
func (r *reliableNack) onNack(env proc.Env, from proc.ID, m nNack) {
	g, ok := r.groups.lookup(m.Group)
	if m.Origin != env.Self() || !ok {
		return
	}
	b := r.buf(g.Name)
	gone := false
	for _, seq := range m.Missing {
		switch {
		case seq < b.first:
			gone = true
		case seq < b.first+uint64(len(b.bodies)):
			env.Send(from, nRepair{Group: m.Group, Origin: m.Origin, Seq: seq, Body: b.bodies[seq-b.first]})
		}
	}
	if gone {
		env.Send(from, nSession{Group: g.Name, Origin: env.Self(), Last: r.seq[g.Name], First: b.first})
	}
	r.onStable(env, from, g.Name, m.Upto)
	r.keepTalking(env, m.Group)
}

// onStable records that receiver from has every number up to upto, and
// trims the buffer.
func (r *reliableNack) onStable(env proc.Env, from proc.ID, group string, upto uint64) {
	g, ok := r.groups.lookup(group)
	if !ok || from == env.Self() || !g.Has(from) {
		return
	}
	b := r.buf(g.Name)
	b.has[from] = max(b.has[from], min(upto, r.seq[g.Name]))
	r.trim(env, g)
}

// trim drops from g's buffer what every receiver has, and the oldest
// messages beyond MaxBuffer.
func (r *reliableNack) trim(env proc.Env, g Group) {
	b := r.buf(g.Name)
	low := r.seq[g.Name]
	g.others(env.Self(), func(q proc.ID) { low = min(low, b.has[q]) })
	drop := 0
	if low >= b.first {
		drop = int(low - b.first + 1)
	}
	drop = max(drop, len(b.bodies)-r.cfg.MaxBuffer)
	if drop > 0 {
		clear(b.bodies[:drop]) // let the bodies go before the slice is reallocated
		b.bodies = b.bodies[drop:]
		b.first += uint64(drop)
	}
}

// watchGap sets the NACK timer when a source has a gap, and clears it when
// the gap is filled.
func (r *reliableNack) watchGap(env proc.Env, src source, s *nackSource) {
	switch {
	case s.high >= s.next && s.timer == 0:
		s.nacks = 0
		s.timer = env.SetTimer(r.cfg.NackWait, nackGapTick{src})
	case s.high < s.next && s.timer != 0:
		env.CancelTimer(s.timer)
		s.timer = 0
	}
}

// nack asks the source for what is still missing, and checks again after
// NackWait — at most MaxNacks times.
func (r *reliableNack) nack(env proc.Env, src source) {
	s := r.sources[src]
	if s == nil {
		return
	}
	s.timer = 0
	if s.high < s.next || s.nacks >= r.cfg.MaxNacks {
		return
	}
	var missing []uint64
	for seq := s.next; seq <= s.high && len(missing) < maxMissing; seq++ {
		if _, ok := s.held[seq]; !ok {
			missing = append(missing, seq)
		}
	}
	s.nacks++
	s.reported = max(s.reported, s.next-1)
	env.Send(src.Origin, nNack{Group: src.Group, Origin: src.Origin, Missing: missing, Upto: s.next - 1})
	s.timer = env.SetTimer(r.cfg.NackWait, nackGapTick{src})
}

// keepTalking (re)starts the Linger rounds of session messages to g.
func (r *reliableNack) keepTalking(env proc.Env, group string) {
	r.linger[group] = r.cfg.Linger
	if !r.ticking[group] {
		r.ticking[group] = true
		env.SetTimer(r.cfg.Heartbeat, nackSessionTick{group})
	}
}

// session sends one round of session messages.
func (r *reliableNack) session(env proc.Env, group string) {
	r.ticking[group] = false
	g, ok := r.groups.lookup(group)
	if !ok || r.linger[group] <= 0 {
		return
	}
	r.linger[group]--
	m := nSession{Group: group, Origin: env.Self(), Last: r.seq[group], First: r.buf(group).first}
	g.others(env.Self(), func(q proc.ID) { env.Send(q, m) })
	if r.linger[group] > 0 {
		r.ticking[group] = true
		env.SetTimer(r.cfg.Heartbeat, nackSessionTick{group})
	}
}

// buf is my retransmission buffer for a group.
func (r *reliableNack) buf(group string) *nackBuffer {
	b := r.buffer[group]
	if b == nil {
		b = &nackBuffer{first: 1, has: map[proc.ID]uint64{}}
		r.buffer[group] = b
	}
	return b
}

// source is the state of a source this process receives from, or nil if
// it is not one: a group it is not a member of, an origin outside the run,
// or itself.
func (r *reliableNack) source(env proc.Env, src source) *nackSource {
	g, ok := r.groups.lookup(src.Group)
	if !ok || !g.Has(env.Self()) || src.Origin == env.Self() || !r.groups.process(src.Origin) {
		return nil
	}
	s := r.sources[src]
	if s == nil {
		s = &nackSource{next: 1, held: map[uint64]string{}}
		r.sources[src] = s
	}
	return s
}
