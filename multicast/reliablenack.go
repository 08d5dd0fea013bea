package multicast

import (
	"strconv"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Reliable multicast with negative acknowledgements, for lossy channels
// (seed 000's "Ack & Ack-implosion": instead of every receiver
// acknowledging every message, receivers speak up only about what they
// miss). Each sender numbers its messages per group and keeps them in a
// retransmission buffer; each receiver delivers a sender's messages in
// sequence and notices a gap when a later one arrives:
//
//	To multicast m to g:     S := S + 1; buffer[S] := m; send ⟨m, S⟩ to every member
//	On ⟨m, S⟩ from origin q:  hold it; deliver q's messages R+1, R+2, ... that are held
//	                         if some number ≤ the highest known from q is missing
//	                         for NackWait: send NACK(missing) to q, again every NackWait
//	On NACK(missing) from r: send buffer[s] to r for each s missing (a repair)
//	Every Heartbeat, for Linger rounds after its last message or repair:
//	                         send SESSION(S) to every member
//
// The session (heartbeat) messages carry the sender's latest number, so a
// receiver that lost the sender's last message, and has nothing later to
// reveal the gap, learns of it. Delivery is in each sender's order: the
// algorithm keeps FIFO order, like FO-multicast over a reliable channel.
//
// Assumptions: channels may lose, duplicate and reorder messages;
// processes fail by crashing. A receiver misses a message for good only if
// every session message after it is lost too (probability p^Linger with
// loss p), or all its NACKs go unanswered (MaxNacks of them). A sender
// that crashes cannot repair: members that lost its last messages never
// deliver them while others did — no agreement. No order across senders.
// The buffer is never trimmed (without positive acknowledgements a sender
// cannot know when everyone has a message; real protocols age it out).
//
// Cost: N − 1 messages per multicast without loss, a NACK and a repair per
// lost copy, and Linger·(N − 1) session messages after each burst of a
// sender's multicasts.
type reliableNack struct {
	cfg     NackConfig
	groups  groupTable
	seq     counters
	buffer  map[string][]string // per group: the bodies of my multicasts, seq 1 first
	linger  map[string]int      // per group: session rounds left
	ticking map[string]bool     // per group: a session timer is set
	sources map[source]*nackSource
	held    int // messages held back, over all sources
	hb      holdback
}

// source is a sender to a group, as a receiver tracks it.
type source struct {
	Group  string
	Origin proc.ID
}

// nackSource is a receiver's state for one source.
type nackSource struct {
	next  uint64            // the next number to deliver (R + 1)
	high  uint64            // the highest number known to exist
	held  map[uint64]string // received out of order
	timer proc.TimerID      // the NACK timer; 0 when there is no gap
	nacks int               // NACKs sent for the current gap
}

// NackConfig sets the session period and the NACK timing.
type NackConfig struct {
	Heartbeat time.Duration // session period; default 5 ms
	Linger    int           // session rounds after the last message; default 6
	NackWait  time.Duration // a gap waits this long before a NACK, and between NACKs; default 3 ms
	MaxNacks  int           // NACKs per gap before giving the sender up; default 10
}

// DefaultNack is the registered entry's configuration.
var DefaultNack = NackConfig{Heartbeat: 5 * time.Millisecond, Linger: 6, NackWait: 3 * time.Millisecond, MaxNacks: 10}

// maxMissing bounds the numbers one NACK lists.
const maxMissing = 64

// nData is a multicast message.
type nData struct {
	Group  string
	Origin proc.ID
	Seq    uint64
	Body   string
}

// nSession announces a sender's latest number.
type nSession struct {
	Group  string
	Origin proc.ID
	Last   uint64
}

// nNack asks the origin to send the listed numbers again.
type nNack struct {
	Group   string
	Origin  proc.ID
	Missing []uint64
}

// nRepair is a message sent again in answer to a NACK.
type nRepair struct {
	Group  string
	Origin proc.ID
	Seq    uint64
	Body   string
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
func (nRepair) Kind() string     { return "repair" }
func (r nRepair) String() string { return "REPAIR " + msgKey{r.Group, r.Origin, r.Seq}.String() }

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
	return func(_ proc.ID, n int) proc.Process {
		return &reliableNack{cfg: cfg, groups: Groups(n), seq: counters{}, buffer: map[string][]string{},
			linger: map[string]int{}, ticking: map[string]bool{}, sources: map[source]*nackSource{}}
	}
}

func init() {
	register(proc.Algorithm{
		Name:    "reliable-nack",
		Summary: "reliable multicast over lossy channels: sequence numbers, gap detection, NACKs, repairs, session heartbeats (N−1 messages without loss)",
		Source:  "seed 000 (ack implosion)",
		Assumes: proc.Assumptions{Failures: "crash-stop"},
		New:     NewNack(DefaultNack),
		Breaks:  []string{"mc-agreement", "causal-order", "total-order"},
		Messages: []proc.Message{
			nData{}, nSession{}, nNack{}, nRepair{},
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
		r.onSession(env, m)
	case nNack:
		r.onNack(env, from, m)
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
	r.buffer[g.Name] = append(r.buffer[g.Name], in.Body)
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
	if src.Origin == env.Self() {
		return
	}
	s := r.source(src)
	if _, dup := s.held[seq]; dup || seq < s.next {
		return
	}
	s.high = max(s.high, seq)
	s.held[seq] = body
	r.held++
	for {
		b, ok := s.held[s.next]
		if !ok {
			break
		}
		delete(s.held, s.next)
		r.held--
		deliver(env, msgKey{src.Group, src.Origin, s.next}, b)
		s.next++
	}
	r.hb.note(env, r.held)
	r.watchGap(env, src, s)
}

// onSession learns the sender's latest number: a gap at the end shows.
func (r *reliableNack) onSession(env proc.Env, m nSession) {
	src := source{m.Group, m.Origin}
	s := r.source(src)
	s.high = max(s.high, m.Last)
	r.watchGap(env, src, s)
}

// onNack repairs: the listed messages go again to the one who missed them.
func (r *reliableNack) onNack(env proc.Env, from proc.ID, m nNack) {
	if m.Origin != env.Self() {
		return
	}
	buf := r.buffer[m.Group]
	for _, seq := range m.Missing {
		if seq >= 1 && seq <= uint64(len(buf)) {
			env.Send(from, nRepair{Group: m.Group, Origin: m.Origin, Seq: seq, Body: buf[seq-1]})
		}
	}
	r.keepTalking(env, m.Group)
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
	s := r.source(src)
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
	env.Send(src.Origin, nNack{Group: src.Group, Origin: src.Origin, Missing: missing})
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
	m := nSession{Group: group, Origin: env.Self(), Last: uint64(len(r.buffer[group]))}
	g.others(env.Self(), func(q proc.ID) { env.Send(q, m) })
	if r.linger[group] > 0 {
		r.ticking[group] = true
		env.SetTimer(r.cfg.Heartbeat, nackSessionTick{group})
	}
}

func (r *reliableNack) source(src source) *nackSource {
	s := r.sources[src]
	if s == nil {
		s = &nackSource{next: 1, held: map[uint64]string{}}
		r.sources[src] = s
	}
	return s
}
