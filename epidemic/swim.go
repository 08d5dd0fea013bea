package epidemic

import (
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// SWIM: scalable weakly-consistent infection-style process group
// membership (Das, Gupta and Motivala, DSN 2002), with the Lifeguard
// refinements (Dadgar, Phillips and Currey, "Lifeguard: Local Health
// Awareness for More Accurate Failure Detection", 2018) that
// hashicorp/memberlist implements. Every member M_i, each protocol period
// T (Params.Period, on its local clock):
//
//  1. picks a target M_j: the next member of a list of the others in
//     random order, reshuffled after every pass (the paper's round-robin
//     variant, §4.3, which bounds the time to a first probe of a failed
//     member by 2n−1 periods);
//  2. sends ping(M_j) and waits ProbeTimeout for ack(M_j);
//  3. without one, sends ping-req(M_j) to k members chosen at random
//     (Params.IndirectK); each pings M_j and forwards its ack;
//  4. at the end of the period, without any ack, marks M_j suspected —
//     suspect{M_j, inc} — and disseminates that;
//  5. a suspected member not refuted within the suspicion timeout is
//     declared faulty — confirm{M_j, inc}, here dead — everywhere.
//
// Incarnations (§4.2): a member that hears it is suspected (or declared
// dead) in its current incarnation increments it and disseminates
// alive{self, inc}. The precedence of the updates about M_l:
//
//   - alive{inc=i} overrides suspect{inc=j} and alive{inc=j} iff i > j;
//   - suspect{inc=i} overrides suspect{inc=j} iff i > j, and alive{inc=j}
//     iff i ≥ j;
//   - dead{inc=i} overrides alive and suspect of any incarnation ≤ i;
//   - and, as memberlist has it for members that come back (a recovered
//     or rejoining process), alive{inc=i} overrides dead{inc=j} iff i > j.
//
// Updates travel piggybacked on the pings, ping-reqs and acks (§4.1,
// infection-style dissemination): a member keeps a buffer of recent
// updates, at most one per member, and adds the least-sent ones, up to
// eight, to every message it sends; each goes out Retransmit·⌈log₁₀(n+1)⌉
// times (memberlist's λ·log n). A member that receives a ping from one it
// holds dead puts that verdict first in its ack, so that a recovered
// process learns its obituary and refutes it.
//
// Lifeguard's refinements, each of which a Params flag switches off:
//
//   - local health multiplier (NoLHM): a saturating counter 0..7, raised
//     by a failed probe (by the nacks missing, when ping-reqs went out),
//     and by having to refute a suspicion of oneself, lowered by a
//     successful probe; the probe timeout and the period are multiplied by
//     LHM+1, so that a slow member probes less and waits longer before it
//     blames others. Intermediaries of a ping-req send a nack after 80% of
//     the probe timeout if the target has not answered them: a missing
//     nack says the fault may be the requester's own;
//   - dynamic suspicion timeout (NoDynamicSuspicion): the timeout starts
//     at Max = 6·Min and falls with log(C+1)/log(K+1) towards Min as C of
//     K = SuspicionMult−2 expected independent suspicions confirm it
//     (Min = SuspicionMult·max(1, log₁₀ n)·T, memberlist's); without it,
//     the timeout is Min;
//   - buddy system (NoBuddy): a ping to a member held suspected, and an
//     ack to one, carry the suspicion first, so the member can refute at
//     once.
//
// Two more, off by default, for members that share a starved host:
// Params.LateHealth (the live service sets it) counts the lateness of a
// member's own timers as a symptom of its own ill health, and
// Params.Stagger starts the members' periods in 8 slots of the period.
//
// A process that joins sends its alive{self} to its contact, which
// answers with every membership fact it holds — its whole list, the
// push-pull state sync that memberlist and Serf do at a join — and tells
// gossipFanout members of the newcomer at once; from them the news
// travels piggybacked like any other, so a join costs the other members
// no message of their own, and the newcomer knows every member its
// contact knew as soon as the answer arrives. A process that leaves
// sends left{self} to k members, which disseminate it.
//
// Each member knows the run's ID space 0 .. N−1 (as the family's contract
// says) and starts holding every other member alive at incarnation 0; it
// stores only the facts that differ from that, so that 10⁵ members fit in
// memory. In an open group (Params.Open, a live cluster that members join)
// a member knows only the founders and the members it has heard of, and
// holds each explicitly; the members a newcomer learns from its contact's
// answer are learnt quietly, not disseminated again (merge). The answer
// costs the contact O(n) — a list of n members, 5 to 16 bytes each, well
// within a transport frame at the 2¹⁶ IDs a live cluster has — as
// memberlist's push-pull at a join does.
//
// The shuffled list of step 1 is a random affine permutation x = (a·k + b)
// mod p over the smallest prime p ≥ N, skipping IDs ≥ N, itself and
// members held dead: O(1) memory, a fresh (a, b) every pass.
//
// Outputs, at the observing member: Suspect when it comes to suspect a
// member (by its own probe or by hearsay), Dead when it holds a member
// dead (Left, if the member said goodbye), Alive when a member it held
// suspected or dead is shown alive (Member = itself: it refuted).
//
// Assumptions: none on the channels (loss and delay only make probes fail
// and suspicions rise), crash-recover failures; accuracy is
// probabilistic: a member slower than the timeouts, or cut off, may be
// declared dead. Cost: per member and period, one ping and on average one
// ack (it is some member's target once a period on average) — 2 messages
// sent, whatever n (Das et al. §3.1: the load is constant) — plus
// k ping-reqs, k pings, k acks and up to k nacks when a target does not
// answer. Where members measure network coordinates (swim.viv, the
// members algorithm's), each ack carries the answerer's, 4 to 11 bytes,
// and the ack to a ping this member sent is a Vivaldi sample: the round
// trip from the ping, the coordinate in the ack — Serf's way, with no
// message of its own. The expected time from a member's crash to its first detection
// is T/(1 − (1 − 1/(n−1))^{n−1}) → e/(e−1)·T ≈ 1.58 T (§3.1).
type swim struct {
	p     *Params
	self  proc.ID
	n     int
	inc   uint32
	left  bool
	view  []held      // the facts that differ from "alive at incarnation 0", by ID
	live  int         // the members of view held alive or suspected
	susp  []suspected // the open suspicions, each at its view entry's slot
	free  []int32     // the slots of susp not in use
	lhm   int
	queue bqueue // the dissemination buffer, a heap in piggyback order
	made  uint64 // bcasts queued so far: their order

	// The shuffled probe order: x = (a·k + b) mod prime.
	prime, a, b, k uint64

	seq    uint64
	probe  probe
	due    time.Duration // when the period's timer is due, on the local clock
	relays []relay       // ping-reqs this member is serving

	// joining: this member has announced itself to contact and awaits
	// the answer (an open group's newcomer).
	joining bool
	contact proc.ID
	// quietFrom is the member whose list this newcomer learns quietly
	// (merge): its contact until its answer has come, then None.
	quietFrom proc.ID

	// viv, if set, is the member's Vivaldi coordinate: its acks carry
	// it, and the acks to its own pings are its samples (Serf's way).
	viv vivaldi
}

// vivaldi is what SWIM needs of a network coordinate that rides on its
// pings and acks: the coordinate to put on an ack, and a sample — the
// round trip of a ping this member sent, and the coordinate its target
// answered with.
type vivaldi interface {
	coordinate() Coord
	sample(env proc.Env, from proc.ID, c Coord, rtt time.Duration)
}

// held is what a member holds about another: 16 bytes, for a view of
// 10⁵ members that holds hundreds dead must fit 10⁵ times. While the
// member is suspected, slot is where its open suspicion is (swim.susp),
// and suspecters how many distinct members' suspicions of it this member
// has counted (at most 255): once that exceeds Lifeguard's K, a
// suspicion heard again changes nothing, and apply need not look at the
// open suspicion at all — at 10⁵ members most of the facts a member
// hears are such repeats.
type held struct {
	id         proc.ID
	inc        uint32
	state      uint8
	suspecters uint8
	slot       int32
}

// suspected is an open suspicion: since when, its timer, and who
// suspected the member, the first first (Lifeguard's confirmations): n
// of them, the first four in the record itself (64 bytes: one cache
// line, which a suspicion heard again reads), the others in more.
type suspected struct {
	since time.Duration
	timer proc.TimerID
	n     int
	first [4]proc.ID
	more  []proc.ID
}

// counted reports whether p is one of the suspecters.
func (x *suspected) counted(p proc.ID) bool {
	for _, q := range x.first[:min(x.n, len(x.first))] {
		if q == p {
			return true
		}
	}
	return slices.Contains(x.more, p)
}

// add counts suspecter p.
func (x *suspected) add(p proc.ID) {
	if x.n < len(x.first) {
		x.first[x.n] = p
	} else {
		x.more = append(x.more, p)
	}
	x.n++
}

// probe is the member's probe of the current period.
type probe struct {
	active, acked, indirect bool
	late                    bool // its timeout went off late (Params.LateHealth)
	seq                     uint64
	target                  proc.ID
	nacks, expect           int
	timer                   proc.TimerID
	sent                    time.Duration // when the ping left, on the local clock
}

// relay is a ping-req being served: the ping sent to the target under
// seq, for requester's probe reqSeq.
type relay struct {
	seq, reqSeq       uint64
	requester, target proc.ID
	sent              time.Duration
}

// The states of a member, as updates carry them; stateUnknown is an ID
// an open group's member has not heard of.
const (
	stateUnknown uint8 = iota
	StateAlive
	StateSuspect
	StateDead
	StateLeft
)

// Fact is one membership update: Member is alive, suspected, dead or left
// in incarnation Inc. From is who suspected it (suspect only).
type Fact struct {
	State  uint8
	Member proc.ID
	Inc    uint32
	From   proc.ID
}

func (u Fact) String() string { return string(u.appendTo(nil)) }

// appendTo appends "alive p3@2", "suspect p3@1 by p5", "dead p3@1".
func (u Fact) appendTo(b []byte) []byte {
	switch u.State {
	case StateAlive:
		b = append(b, "alive "...)
	case StateSuspect:
		b = append(b, "suspect "...)
	case StateDead:
		b = append(b, "dead "...)
	case StateLeft:
		b = append(b, "left "...)
	default:
		b = append(b, "? "...)
	}
	b = append(b, 'p')
	b = strconv.AppendInt(b, int64(u.Member), 10)
	b = append(b, '@')
	b = strconv.AppendUint(b, uint64(u.Inc), 10)
	if u.State == StateSuspect {
		b = append(b, " by p"...)
		b = strconv.AppendInt(b, int64(u.From), 10)
	}
	return b
}

// Ping asks Target for an ack; Seq names the probe (of the sender).
type Ping struct {
	Seq     uint64
	Target  proc.ID
	Updates []Fact
}

// PingReq asks an intermediary to ping Target for the sender's probe Seq.
type PingReq struct {
	Seq     uint64
	Target  proc.ID
	Updates []Fact
}

// Ack answers a Ping (or, forwarded, a PingReq) of probe Seq. Coord is
// the answering member's network coordinate, where members measure them
// (the members algorithm's resource discovery); nil otherwise, and on a
// forwarded ack, whose round trip is not the pinger's to the target.
type Ack struct {
	Seq     uint64
	Updates []Fact
	Coord   *WireCoord
}

// Nack tells a ping-req's requester that the target did not answer the
// intermediary in time (Lifeguard): the intermediary is alive and hears
// the requester.
type Nack struct{ Seq uint64 }

// JoinReq announces a joining member to its contact.
type JoinReq struct{ Updates []Fact }

// JoinAck answers a JoinReq with the facts the contact holds.
type JoinAck struct{ Updates []Fact }

// Goodbye is a leaving member's last word.
type Goodbye struct{ Inc uint32 }

// Gossip carries membership updates without a probe (open groups).
type Gossip struct{ Updates []Fact }

// gossipFanout is how many members an open group's member tells of a
// newcomer that joined through it (memberlist's GossipNodes).
const gossipFanout = 3

func (Ping) Kind() string    { return "ping" }
func (PingReq) Kind() string { return "ping-req" }
func (Ack) Kind() string     { return "ack" }
func (Nack) Kind() string    { return "nack" }
func (JoinReq) Kind() string { return "join-req" }
func (JoinAck) Kind() string { return "join-ack" }
func (Goodbye) Kind() string { return "goodbye" }
func (Gossip) Kind() string  { return "gossip" }

// The probes, and the news that travels without one, may be lost
// (proc.Lossy): SWIM assumes nothing of its channels, and a live host
// sends them as datagrams, as memberlist sends its probes over UDP. Joins,
// their answers and goodbyes carry more and are sent once: they take the
// reliable channel.
func (Ping) Lossy()    {}
func (PingReq) Lossy() {}
func (Ack) Lossy()     {}
func (Nack) Lossy()    {}
func (Gossip) Lossy()  {}

// A probe's messages are urgent (proc.Urgent): a live host handles them
// ahead of the news waiting for the member — a thousand members joining
// at once each wait behind a thousand rumors of the map, and a ping
// answered, or an ack read, after the probe's timeout is a failed probe
// and a false suspicion (Lifeguard's concern: a slow member's lateness
// must not count against the others).
func (Ping) Urgent()    {}
func (PingReq) Urgent() {}
func (Ack) Urgent()     {}
func (Nack) Urgent()    {}

func (m Ping) String() string    { return probeLabel("PING(", m.Seq, m.Target, m.Updates) }
func (m PingReq) String() string { return probeLabel("PINGREQ(", m.Seq, m.Target, m.Updates) }
func (m Ack) String() string {
	if m.Coord == nil {
		return probeLabel("ACK(", m.Seq, proc.None, m.Updates)
	}
	return probeLabel("ACK(", m.Seq, proc.None, m.Updates) + m.Coord.Coord().String()
}

// probeLabel renders "PING(7→p3){alive p2@1,…}" in one allocation: the
// simulator labels every message it records or hashes.
func probeLabel(name string, seq uint64, target proc.ID, fs []Fact) string {
	b := make([]byte, 0, 24+len(fs)*20)
	b = append(b, name...)
	b = strconv.AppendUint(b, seq, 10)
	if target != proc.None {
		b = append(b, "→p"...)
		b = strconv.AppendInt(b, int64(target), 10)
	}
	b = append(b, "){"...)
	for i, f := range fs {
		if i > 0 {
			b = append(b, ',')
		}
		b = f.appendTo(b)
	}
	return string(append(b, '}'))
}
func (m Nack) String() string    { return "NACK(" + strconv.FormatUint(m.Seq, 10) + ")" }
func (m JoinReq) String() string { return label("JOIN", m.Updates) }
func (m JoinAck) String() string { return label("JOINACK", m.Updates) }
func (m Goodbye) String() string { return "GOODBYE@" + strconv.FormatUint(uint64(m.Inc), 10) }
func (m Gossip) String() string  { return label("GOSSIP", m.Updates) }

// Suspect reports that the observing node came to suspect Member in
// incarnation Inc (From suspected it first).
type Suspect struct {
	Member proc.ID `json:"member"`
	Inc    uint32  `json:"inc"`
	From   proc.ID `json:"from"`
}

// Dead reports that the observing node holds Member dead (faulty) in
// incarnation Inc; Left if it left gracefully.
type Dead struct {
	Member proc.ID `json:"member"`
	Inc    uint32  `json:"inc"`
	Left   bool    `json:"left,omitempty"`
}

// Alive reports that the observing node holds Member alive again in
// incarnation Inc after it had suspected it or held it dead; Member is
// the node itself when it refuted a suspicion.
type Alive struct {
	Member proc.ID `json:"member"`
	Inc    uint32  `json:"inc"`
}

func (Suspect) Kind() string { return "suspect" }
func (Dead) Kind() string    { return "dead" }
func (Alive) Kind() string   { return "alive" }

func (s Suspect) String() string {
	return "suspect " + s.Member.String() + "@" + strconv.FormatUint(uint64(s.Inc), 10)
}
func (d Dead) String() string {
	if d.Left {
		return "left " + d.Member.String() + "@" + strconv.FormatUint(uint64(d.Inc), 10)
	}
	return "dead " + d.Member.String() + "@" + strconv.FormatUint(uint64(d.Inc), 10)
}
func (a Alive) String() string {
	return "alive " + a.Member.String() + "@" + strconv.FormatUint(uint64(a.Inc), 10)
}

// Timer tags.
type (
	swimTick     struct{}
	probeTimeout struct{ Seq uint64 }
	relayTimeout struct{ Seq uint64 }
	suspicion    struct {
		Member proc.ID
		Inc    uint32
	}
)

func (swimTick) String() string     { return "period" }
func (probeTimeout) String() string { return "probe-timeout" }
func (relayTimeout) String() string { return "nack-timeout" }
func (suspicion) String() string    { return "suspicion" }

// lhmMax is Lifeguard's saturation S: the multiplier is 0 .. S−1.
const lhmMax = 8

// maxPiggyback is how many updates a message carries at most; an open
// group's Gossip, which carries nothing else, carries up to maxGossip
// (memberlist fills a UDP packet likewise).
const (
	maxPiggyback = 8
	maxGossip    = 4 * maxPiggyback
)

func init() {
	builders["swim"] = func(p Params) func(proc.ID, int) proc.Process {
		return func(id proc.ID, n int) proc.Process { return newSwim(&p, id, n) }
	}
	register(proc.Algorithm{
		Name:    "swim",
		Summary: "SWIM membership and failure detection: ping, ping-req through k members, suspicion with incarnations, piggybacked dissemination; Lifeguard's local health, dynamic suspicion timeout and buddy system",
		Source:  "Das, Gupta & Motivala, DSN 2002 (SWIM); Dadgar, Phillips & Currey 2018 (Lifeguard); hashicorp/memberlist",
		Assumes: proc.Assumptions{Failures: "crash-recover"},
		New:     builders["swim"](Params{}.withDefaults()),
		Theory: func(n int) map[string]float64 {
			return map[string]float64{
				"first_detection_periods":        FirstDetectionPeriods(n),
				"messages_per_member_per_period": 2,
			}
		},
		Notes: map[string]string{
			"first_detection_periods":        "Das et al. §3.1: a failed member is first pinged after 1/(1−(1−1/(n−1))^{n−1}) periods on average, e/(e−1) ≈ 1.58 for large n; measured from a crash just before the period's start to the first suspicion, which the pinger raises at the end of the period of its ping",
			"messages_per_member_per_period": "a ping and, on average, one ack per member and period (Das et al.: constant in n); ping-reqs, nacks and the pings they cause add a little when members fail",
			"false_positives":                "members that never failed, declared dead by some member",
		},
		Checks: []string{"integrity", "swim-completeness", "swim-accuracy"},
		// Das et al. promise strong completeness and only a probability
		// of false positives: a member paused or cut off for longer than
		// the refutation of its suspicion takes to spread may be declared
		// dead. swim-accuracy is violated only without loss, delay or a
		// pause to justify it (TestSwimCheckersCatchBrokenVariants);
		// otherwise unknown, which is what a run of the default workload,
		// whose pause is such a fault, may give.
		Breaks:   []string{"swim-accuracy"},
		Messages: swimMessages,
		Scenario: "nodes: 32\nstop:\n  deadline: 1500ms\n",
	})
}

// swimMessages are SWIM's messages, in wire-tag order (append-only).
var swimMessages = []proc.Message{Ping{}, PingReq{}, Ack{}, Nack{}, JoinReq{}, JoinAck{}, Goodbye{}, Gossip{}}

// FirstDetectionPeriods is Das et al.'s expected time, in periods, from a
// member's failure to its first detection in a group of n:
// 1/(1 − (1 − 1/(n−1))^{n−1}), which tends to e/(e−1).
func FirstDetectionPeriods(n int) float64 {
	if n <= 2 {
		return 1
	}
	m := float64(n - 1)
	return 1 / (1 - math.Pow(1-1/m, m))
}

func newSwim(p *Params, id proc.ID, n int) *swim {
	return &swim{p: p, self: id, n: n, prime: primeAtLeast(uint64(max(n, 2))), quietFrom: proc.None}
}

func primeAtLeast(x uint64) uint64 {
	for ; ; x++ {
		prime := x >= 2
		for d := uint64(2); d*d <= x && prime; d++ {
			prime = x%d != 0
		}
		if prime {
			return x
		}
	}
}

func (s *swim) Start(env proc.Env) {
	if s.p.Open {
		for id := range min(s.p.Founders, s.n) {
			if proc.ID(id) != s.self {
				s.set(proc.ID(id), StateAlive, 0)
			}
		}
	}
	s.nextPeriod(env)
}

// late reports, with Params.LateHealth, whether a timer due at due goes
// off late — by more than a quarter of a probe's timeout: this member was
// not running when it was due, nor, likely, when its probe's ack was; the
// ack may wait in its own queue, and the fault is likely its own.
func (s *swim) late(env proc.Env, due time.Duration) bool {
	return s.p.LateHealth && env.Now()-due > s.scaled(s.p.ProbeTimeout)/4
}

// nextPeriod sets the timer of the next period.
func (s *swim) nextPeriod(env proc.Env) {
	d := s.p.next(env, s.period())
	s.due = env.Now() + d
	env.SetTimer(d, swimTick{})
}

// Join starts the member and announces it to its contact. In an open
// group the newcomer also holds the contact alive, so that its state syncs
// retry the join if the announcement or its answer is lost.
func (s *swim) Join(env proc.Env, contact proc.ID) {
	s.Start(env)
	if contact != proc.None && s.p.Open {
		if st, _ := s.lookup(contact); st == stateUnknown && int(contact) < s.n && contact != s.self {
			s.set(contact, StateAlive, 0)
			env.Output(Alive{Member: contact})
		}
	}
	if contact != proc.None {
		s.joining, s.contact = s.p.Open, contact
		if s.p.Open {
			s.quietFrom = contact
		}
		env.Send(contact, JoinReq{Updates: []Fact{{State: StateAlive, Member: s.self, Inc: s.inc}}})
	}
}

func (s *swim) Input(env proc.Env, in proc.Input) {
	if _, ok := in.(proc.Leave); !ok || s.left {
		return
	}
	s.left = true
	for _, q := range s.randomMembers(env, max(s.p.IndirectK, 1), proc.None) {
		env.Send(q, Goodbye{Inc: s.inc})
	}
}

// scaled is d multiplied by the local health: LHM+1.
func (s *swim) scaled(d time.Duration) time.Duration {
	if s.p.NoLHM {
		return d
	}
	return d * time.Duration(s.lhm+1)
}

func (s *swim) period() time.Duration { return s.scaled(s.p.Period) }

func (s *swim) health(delta int) {
	if !s.p.NoLHM {
		s.lhm = min(max(s.lhm+delta, 0), lhmMax-1)
	}
}

func (s *swim) Timeout(env proc.Env, tag any) {
	if s.left {
		return
	}
	switch t := tag.(type) {
	case swimTick:
		late := s.late(env, s.due)
		if late {
			s.health(1)
		}
		s.endProbe(env, late || s.probe.late)
		s.startProbe(env)
		s.nextPeriod(env)
	case probeTimeout:
		if s.probe.active && s.probe.seq == t.Seq && !s.probe.acked {
			s.probe.late = s.late(env, s.probe.sent+s.scaled(s.p.ProbeTimeout))
			s.pingReq(env)
		}
	case relayTimeout:
		i := slices.IndexFunc(s.relays, func(r relay) bool { return r.seq == t.Seq })
		if i < 0 {
			return
		}
		if !s.p.NoLHM {
			env.Send(s.relays[i].requester, Nack{Seq: s.relays[i].reqSeq})
		}
		s.relays = slices.Delete(s.relays, i, i+1)
	case suspicion:
		if st, inc := s.lookup(t.Member); st == StateSuspect && inc == t.Inc {
			dead := Fact{State: StateDead, Member: t.Member, Inc: t.Inc}
			s.apply(env, dead)
			s.announce(env, dead)
		}
	}
}

// announce tells every member held alive or suspected, at once, of a
// death this member declared (step 5), in an open group with
// Params.AnnounceDeaths — the live service's. Piggybacked, the verdict reached the last member about two
// periods after the first declared it (on a 64-member cluster at 400 ms,
// a fifth of the time from a crash to every member holding it dead),
// while the members that hold the suspicion wait out timeouts that
// differ; a rumor forwarded to a few at once would leave about e^−f of
// the members unreached (Demers et al. 1987) for the piggybacking to
// find. A death is rare, and one declaration usually ends it (the
// others' timers are stopped by the news), so this costs O(n) small
// messages once per failure, as a join's answer costs O(n) once per
// join. The verdict still goes into the piggyback buffer (apply), for a
// member the announcement misses.
func (s *swim) announce(env proc.Env, f Fact) {
	if !s.p.Open || !s.p.AnnounceDeaths {
		return
	}
	for _, h := range s.view {
		if h.state <= StateSuspect && h.id != f.Member && h.id != s.self {
			env.Send(h.id, Gossip{Updates: []Fact{f}})
		}
	}
}

// endProbe concludes the period's probe: an ack means the target is
// alive; none, that it is suspected (step 4) — unless this member itself
// was late (Params.LateHealth).
func (s *swim) endProbe(env proc.Env, late bool) {
	pr := s.probe
	s.probe.active = false
	if !pr.active {
		return
	}
	if pr.acked {
		s.health(-1)
		return
	}
	if pr.expect > 0 {
		s.health(pr.expect - pr.nacks)
	} else {
		s.health(1)
	}
	if late || s.gone(pr.target) {
		return
	}
	_, inc := s.lookup(pr.target)
	s.apply(env, Fact{State: StateSuspect, Member: pr.target, Inc: inc, From: s.self})
}

// startProbe pings the next member of the shuffled list (steps 1–2).
func (s *swim) startProbe(env proc.Env) {
	target := s.nextTarget(env)
	if target == proc.None {
		return
	}
	s.seq++
	s.probe = probe{active: true, seq: s.seq, target: target, sent: env.Now()}
	env.Send(target, Ping{Seq: s.seq, Target: target, Updates: s.piggyback(s.buddy(target))})
	s.probe.timer = env.SetTimer(s.scaled(s.p.ProbeTimeout), probeTimeout{Seq: s.seq})
}

// buddy is the suspicion of target to put first on a ping to it (the
// buddy system), if it is suspected and the system is on.
func (s *swim) buddy(target proc.ID) *Fact {
	if s.p.NoBuddy {
		return nil
	}
	return s.suspicionFact(target)
}

// verdict is what this member holds against peer, if it holds it dead
// (always: a recovered member must learn its obituary to refute it) or
// suspected (with the buddy system): the first update of a reply to it.
func (s *swim) verdict(peer proc.ID) *Fact {
	st, inc := s.lookup(peer)
	switch st {
	case StateAlive, stateUnknown:
		return nil
	case StateSuspect:
		return s.buddy(peer)
	}
	return &Fact{State: st, Member: peer, Inc: inc}
}

// suspicionFact is the suspicion of id as it travels, or nil if id is not
// suspected.
func (s *swim) suspicionFact(id proc.ID) *Fact {
	i, ok := s.find(id)
	if !ok || s.view[i].state != StateSuspect {
		return nil
	}
	h := s.view[i]
	return &Fact{State: StateSuspect, Member: id, Inc: h.inc, From: s.susp[h.slot].first[0]}
}

// pingReq asks k random members to probe the target (step 3).
func (s *swim) pingReq(env proc.Env) {
	s.probe.indirect = true
	for _, q := range s.randomMembers(env, s.p.IndirectK, s.probe.target) {
		env.Send(q, PingReq{Seq: s.probe.seq, Target: s.probe.target, Updates: s.piggyback(nil)})
		if !s.p.NoLHM {
			s.probe.expect++
		}
	}
}

// nextTarget is the next member of the shuffled list, skipping those held
// dead; a new pass draws a new order. None if there is no other member.
func (s *swim) nextTarget(env proc.Env) proc.ID {
	if s.p.Open {
		return s.nextKnown(env)
	}
	for range 2*s.prime + 2 {
		if s.a == 0 || s.k >= s.prime {
			s.a = 1 + env.Rand().Uint64N(s.prime-1)
			s.b = env.Rand().Uint64N(s.prime)
			s.k = 0
		}
		x := (s.a*s.k + s.b) % s.prime
		s.k++
		if x >= uint64(s.n) || proc.ID(x) == s.self {
			continue
		}
		if s.gone(proc.ID(x)) {
			continue
		}
		return proc.ID(x)
	}
	return proc.None
}

// nextKnown is nextTarget in an open group: the same shuffled order, over
// the members held now (one joining mid-pass waits for the next pass).
func (s *swim) nextKnown(env proc.Env) proc.ID {
	for range 2*len(s.view) + 4 {
		if s.a == 0 || s.k >= s.prime {
			s.prime = primeAtLeast(uint64(max(len(s.view), 2)))
			s.a = 1 + env.Rand().Uint64N(s.prime-1)
			s.b = env.Rand().Uint64N(s.prime)
			s.k = 0
		}
		x := (s.a*s.k + s.b) % s.prime
		s.k++
		if x < uint64(len(s.view)) && s.view[x].state <= StateSuspect {
			return s.view[x].id
		}
	}
	return proc.None
}

// randomDead is a random member held dead (not left), or None.
func (s *swim) randomDead(env proc.Env) proc.ID {
	var dead []proc.ID
	for _, h := range s.view {
		if h.state == StateDead {
			dead = append(dead, h.id)
		}
	}
	if len(dead) == 0 {
		return proc.None
	}
	return dead[env.Rand().IntN(len(dead))]
}

// randomMembers draws up to k distinct members, neither self nor not, and
// none held dead or left.
func (s *swim) randomMembers(env proc.Env, k int, not proc.ID) []proc.ID {
	if s.p.Open {
		// Draw from the view at random, then, if too few were found
		// (a view of mostly dead members, or a small one), go through it
		// all: O(k) a call in a healthy cluster of any size.
		want := s.live
		if st, _ := s.lookup(not); st == StateAlive || st == StateSuspect {
			want--
		}
		want = min(k, want)
		var out []proc.ID
		for range 4*k + 8 {
			if len(out) == want {
				return out
			}
			h := s.view[env.Rand().IntN(len(s.view))]
			if h.state <= StateSuspect && h.id != not && !slices.Contains(out, h.id) {
				out = append(out, h.id)
			}
		}
		var live []proc.ID
		for _, h := range s.view {
			if h.state <= StateSuspect && h.id != not {
				live = append(live, h.id)
			}
		}
		for i := range min(k, len(live)) { // a partial Fisher–Yates shuffle
			j := i + env.Rand().IntN(len(live)-i)
			live[i], live[j] = live[j], live[i]
		}
		return live[:min(k, len(live))]
	}
	var out []proc.ID
	for range 4*k + 8 {
		if len(out) == k || s.n <= 1 {
			break
		}
		q := proc.ID(env.Rand().IntN(s.n))
		if q == s.self || q == not || slices.Contains(out, q) {
			continue
		}
		if s.gone(q) {
			continue
		}
		out = append(out, q)
	}
	return out
}

func (s *swim) Receive(env proc.Env, from proc.ID, msg proc.Message) {
	if s.left {
		return
	}
	switch m := msg.(type) {
	case Ping:
		s.applyAll(env, m.Updates)
		ack := Ack{Seq: m.Seq, Updates: s.piggyback(s.verdict(from))}
		if s.viv != nil {
			c := PackCoord(s.viv.coordinate())
			ack.Coord = &c
		}
		env.Send(from, ack)
	case PingReq:
		s.applyAll(env, m.Updates)
		s.seq++
		s.relays = append(s.relays, relay{seq: s.seq, reqSeq: m.Seq, requester: from, target: m.Target, sent: env.Now()})
		env.Send(m.Target, Ping{Seq: s.seq, Target: m.Target, Updates: s.piggyback(s.buddy(m.Target))})
		env.SetTimer(s.scaled(s.p.ProbeTimeout)*4/5, relayTimeout{Seq: s.seq})
	case Ack:
		s.applyAll(env, m.Updates)
		if s.probe.active && m.Seq == s.probe.seq {
			if !s.probe.acked {
				s.probe.acked = true
				env.CancelTimer(s.probe.timer)
				if from == s.probe.target {
					s.measured(env, from, m.Coord, s.probe.sent)
				}
			}
			return
		}
		if i := slices.IndexFunc(s.relays, func(r relay) bool { return r.seq == m.Seq }); i >= 0 {
			r := s.relays[i]
			s.relays = slices.Delete(s.relays, i, i+1)
			if from == r.target {
				s.measured(env, from, m.Coord, r.sent)
			}
			env.Send(r.requester, Ack{Seq: r.reqSeq, Updates: s.piggyback(nil)})
		}
	case Nack:
		if s.probe.active && m.Seq == s.probe.seq {
			s.probe.nacks++
		}
	case JoinReq:
		// A join, or an exchange of lists (members.go): the sender's
		// facts are merged and the whole list goes back (push-pull).
		known, _ := s.lookup(from)
		s.merge(env, from, m.Updates)
		env.Send(from, JoinAck{Updates: s.facts()})
		if st, inc := s.lookup(from); known == stateUnknown && st == StateAlive {
			// A newcomer that joined through this member: its contact
			// tells a few at once, so that the join spreads in network
			// delays rather than periods; they pass it on piggybacked, as
			// any news (a join costs the others no messages of its own).
			for _, q := range s.randomMembers(env, gossipFanout, from) {
				env.Send(q, Gossip{Updates: []Fact{{State: StateAlive, Member: from, Inc: inc}}})
			}
		}
	case JoinAck:
		s.merge(env, from, m.Updates)
		if s.joining && from == s.contact {
			s.joining, s.quietFrom = false, proc.None // joined: what comes next is news
		}
	case Gossip:
		s.applyAll(env, m.Updates)
	case Goodbye:
		s.apply(env, Fact{State: StateLeft, Member: from, Inc: m.Inc})
	}
}

// measured hands the coordinate a Vivaldi sample: the round trip of a
// ping this member sent at sent, answered by from with coordinate c.
func (s *swim) measured(env proc.Env, from proc.ID, c *WireCoord, sent time.Duration) {
	if s.viv != nil && c != nil {
		s.viv.sample(env, from, c.Coord(), env.Now()-sent)
	}
}

// checksum is a hash (64-bit FNV-1a) of an open group's member list
// (members.go; a closed group's view holds only exceptions) as facts would
// give it, in ID order, this member among the others and the suspecters
// left out: two members that hold every member in the same state and
// incarnation have the same checksum, others almost surely not.
func (s *swim) checksum() uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	add := func(id proc.ID, state uint8, inc uint32) {
		for _, x := range [3]uint64{uint64(uint32(id)), uint64(state), uint64(inc)} {
			for range 4 {
				h = (h ^ (x & 0xff)) * prime
				x >>= 8
			}
		}
	}
	self := false
	for _, v := range s.view {
		if !self && v.id > s.self {
			add(s.self, StateAlive, s.inc)
			self = true
		}
		add(v.id, v.state, v.inc)
	}
	if !self {
		add(s.self, StateAlive, s.inc)
	}
	return h
}

// facts are every fact this member holds that differs from "alive at
// incarnation 0", in ID order, and its own incarnation.
func (s *swim) facts() []Fact {
	out := []Fact{{State: StateAlive, Member: s.self, Inc: s.inc}}
	for _, h := range s.view {
		var f *Fact
		if h.state == StateSuspect {
			f = s.suspicionFact(h.id)
		}
		if f != nil {
			out = append(out, *f)
		} else {
			out = append(out, Fact{State: h.state, Member: h.id, Inc: h.inc})
		}
	}
	return out
}

// merge applies the facts of a state sync (a join's answer, an exchange
// of member lists) from peer. A newcomer learns the members it had not
// heard of from its contact's answer quietly: that they are alive is no news to the group — peer held them
// already — and a newcomer that put a list of n members into its buffer
// would spend its piggybacking on n facts the others hold (n newcomers:
// n²). Every other fact is applied as news: a member's own word about
// itself, suspicions, obituaries and refutations, and what a periodic
// exchange of lists repairs (it is what piggybacking missed, likely at
// others too), still spread from here.
func (s *swim) merge(env proc.Env, peer proc.ID, us []Fact) {
	quiet := s.p.Open && peer == s.quietFrom
	for _, u := range us {
		if st, _ := s.lookup(u.Member); quiet && st == stateUnknown && u.State == StateAlive &&
			u.Member != peer && u.Member != s.self && u.Member >= 0 && int(u.Member) < s.n {
			s.set(u.Member, StateAlive, u.Inc)
			env.Output(Alive{Member: u.Member, Inc: u.Inc})
			continue
		}
		s.apply(env, u)
	}
}

func (s *swim) applyAll(env proc.Env, us []Fact) {
	for _, u := range us {
		s.apply(env, u)
	}
}

// apply merges one update into the view by the precedence rules, and
// disseminates it if it was news.
func (s *swim) apply(env proc.Env, u Fact) {
	if u.Member < 0 || int(u.Member) >= s.n {
		return // bad input from a peer: dropped
	}
	if u.Member == s.self {
		s.aboutSelf(env, u)
		return
	}
	i, found := s.find(u.Member)
	state, inc := s.absent()
	if found {
		state, inc = s.view[i].state, s.view[i].inc
	}
	gone := state == StateDead || state == StateLeft
	switch u.State {
	case StateAlive:
		if state != stateUnknown && u.Inc <= inc {
			return
		}
		if state != StateAlive {
			env.Output(Alive{Member: u.Member, Inc: u.Inc})
		}
		if state == StateSuspect {
			s.closeSuspicion(env, i)
		}
		s.set(u.Member, StateAlive, u.Inc)
	case StateSuspect:
		if gone || u.Inc < inc {
			return
		}
		if state == StateSuspect && u.Inc == inc {
			if !s.p.NoDynamicSuspicion && int(s.view[i].suspecters) <= s.expectedConfirmations() {
				s.confirm(env, i, u)
			}
			return
		}
		if state == StateSuspect {
			s.closeSuspicion(env, i)
		}
		s.set(u.Member, StateSuspect, u.Inc)
		j, _ := s.find(u.Member)
		s.view[j].slot, s.view[j].suspecters = s.openSuspicion(), 1
		x := &s.susp[s.view[j].slot]
		x.since = env.Now()
		x.add(u.From)
		x.timer = env.SetTimer(s.suspicionTimeout(0), suspicion{Member: u.Member, Inc: u.Inc})
		env.Output(Suspect{Member: u.Member, Inc: u.Inc, From: u.From})
	case StateDead, StateLeft:
		if gone || u.Inc < inc {
			return
		}
		if state == StateSuspect {
			s.closeSuspicion(env, i)
		}
		s.set(u.Member, u.State, u.Inc)
		env.Output(Dead{Member: u.Member, Inc: u.Inc, Left: u.State == StateLeft})
	default:
		return
	}
	s.enqueue(u)
}

// confirm counts an independent suspicion of a member already suspected
// in the same incarnation, s.view[i]: with the dynamic timeout, the timer
// is set anew to the shorter timeout, from the first suspicion
// (Lifeguard).
func (s *swim) confirm(env proc.Env, i int, u Fact) {
	x := &s.susp[s.view[i].slot]
	if s.p.NoDynamicSuspicion || x.n > s.expectedConfirmations() || x.counted(u.From) {
		return
	}
	x.add(u.From)
	s.view[i].suspecters = uint8(min(x.n, math.MaxUint8))
	env.CancelTimer(x.timer)
	left := x.since + s.suspicionTimeout(x.n-1) - env.Now()
	x.timer = env.SetTimer(left, suspicion{Member: u.Member, Inc: u.Inc})
	s.enqueue(u) // memberlist re-broadcasts a new confirmation
}

// lookup is what the member holds about id: its state and incarnation.
func (s *swim) lookup(id proc.ID) (state uint8, inc uint32) {
	if i, ok := s.find(id); ok {
		return s.view[i].state, s.view[i].inc
	}
	return s.absent()
}

// absent is what the member holds about a member its view does not
// hold: alive at incarnation 0, or in an open group nothing.
func (s *swim) absent() (state uint8, inc uint32) {
	if s.p.Open {
		return stateUnknown, 0
	}
	return StateAlive, 0
}

// size is the group's size as this member knows it: the run's N, or in an
// open group the members held alive or suspected, itself included.
func (s *swim) size() int {
	if !s.p.Open {
		return s.n
	}
	return 1 + s.live
}

// find is where id is, or would be, in the view (sorted by ID).
func (s *swim) find(id proc.ID) (int, bool) {
	lo, hi := 0, len(s.view)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s.view[m].id < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(s.view) && s.view[lo].id == id
}

// gone reports whether id is held dead or left.
func (s *swim) gone(id proc.ID) bool {
	st, _ := s.lookup(id)
	return st == StateDead || st == StateLeft
}

// set records a fact about id; alive at incarnation 0 is the default and
// takes no room.
func (s *swim) set(id proc.ID, state uint8, inc uint32) {
	i, ok := s.find(id)
	if ok && s.view[i].state <= StateSuspect {
		s.live--
	}
	if state <= StateSuspect && (s.p.Open || state != StateAlive || inc != 0) {
		s.live++
	}
	switch {
	case state == StateAlive && inc == 0 && !s.p.Open:
		if ok {
			s.view = slices.Delete(s.view, i, i+1)
		}
	case ok:
		s.view[i] = held{id: id, inc: inc, state: state}
	default:
		s.view = slices.Insert(s.view, i, held{id: id, inc: inc, state: state})
	}
}

// openSuspicion is a free slot for an open suspicion, its list of
// suspecters empty.
func (s *swim) openSuspicion() int32 {
	if n := len(s.free); n > 0 {
		k := s.free[n-1]
		s.free = s.free[:n-1]
		return k
	}
	s.susp = append(s.susp, suspected{})
	return int32(len(s.susp) - 1)
}

// closeSuspicion ends the open suspicion of s.view[i], a member held
// suspected.
func (s *swim) closeSuspicion(env proc.Env, i int) {
	k := s.view[i].slot
	env.CancelTimer(s.susp[k].timer)
	s.susp[k] = suspected{more: s.susp[k].more[:0]}
	s.free = append(s.free, k)
}

// aboutSelf refutes a suspicion or obituary of this member's current
// incarnation: a new incarnation, alive (§4.2).
func (s *swim) aboutSelf(env proc.Env, u Fact) {
	if (u.State != StateSuspect && u.State != StateDead) || u.Inc < s.inc {
		return
	}
	s.inc = u.Inc + 1
	s.health(1)
	env.Output(Alive{Member: s.self, Inc: s.inc})
	s.enqueue(Fact{State: StateAlive, Member: s.self, Inc: s.inc})
}

// expectedConfirmations is Lifeguard's K: SuspicionMult−2 independent
// suspicions, fewer in a group too small to give them.
func (s *swim) expectedConfirmations() int {
	return max(0, min(s.p.SuspicionMult-2, s.size()-2))
}

// SuspicionTimeouts are the shortest and longest suspicion timeouts of a
// group of n under p: Min = SuspicionMult·max(1, log₁₀ n)·Period, Max =
// 6·Min (Lifeguard's); without the dynamic timeout both are Min.
func SuspicionTimeouts(p Params, n int) (lo, hi time.Duration) {
	p = p.withDefaults()
	lo = time.Duration(float64(p.SuspicionMult) * max(1, math.Log10(float64(n))) * float64(p.Period))
	if p.NoDynamicSuspicion {
		return lo, lo
	}
	return lo, 6 * lo
}

// suspicionTimeout is the timeout after c confirmations beyond the first
// suspicion: Max − (Max−Min)·log(c+1)/log(K+1), at least Min.
func (s *swim) suspicionTimeout(c int) time.Duration {
	lo, hi := SuspicionTimeouts(*s.p, s.size())
	k := s.expectedConfirmations()
	if hi == lo || k < 1 {
		return lo
	}
	frac := math.Log(float64(c)+1) / math.Log(float64(k)+1)
	return max(lo, hi-time.Duration(frac*float64(hi-lo)))
}

// enqueue puts u in the dissemination buffer, replacing any older update
// about the same member; a new update goes first. A replaced update
// becomes the new one in place: it is unsent and newest, and fix moves
// it where it belongs — the order is total (no two updates have the same
// id), so the buffer yields the same sequence as if the old one had left
// and the new one come in.
func (s *swim) enqueue(u Fact) {
	s.made++
	b := bcast{u: u, id: s.made}
	if i, ok := s.queue.find(u.Member); ok {
		s.queue.q[i] = b
		s.queue.fix(i)
		return
	}
	s.queue.push(b)
}

// before is the buffer's order.
func (x *bcast) before(y *bcast) bool {
	return x.sent < y.sent || x.sent == y.sent && x.id > y.id
}

// retransmits is λ·⌈log₁₀(n+1)⌉.
func (s *swim) retransmits() int {
	return s.p.Retransmit * int(math.Ceil(math.Log10(float64(s.size()+1))))
}

// hasNews reports whether the buffer holds an update to send; the
// updates sent retransmits() times already leave it (all of them, when
// the least sent has been: the group shrank, and with it the limit).
func (s *swim) hasNews() bool {
	if len(s.queue.q) > 0 && s.queue.q[0].sent >= s.retransmits() {
		s.queue.reset()
	}
	return len(s.queue.q) > 0
}

// piggyback takes up to maxPiggyback updates from the buffer, the least
// sent first (newest first among equals), after first if it is set. The
// updates taken are sent once more; those sent retransmits() times leave
// the buffer.
func (s *swim) piggyback(first *Fact) []Fact { return s.take(first, maxPiggyback) }

// take is piggyback, up to most updates.
func (s *swim) take(first *Fact, most int) []Fact {
	if len(s.queue.q) == 0 && first == nil {
		return nil
	}
	out := make([]Fact, 0, min(len(s.queue.q)+1, most))
	if first != nil {
		out = append(out, *first)
	}
	limit := s.retransmits()
	if first == nil && s.queue.at == nil && len(s.queue.q) <= most {
		return s.takeAll(out, limit)
	}
	var buf [maxGossip]bcast
	taken := buf[:0]
	var skipped bcast
	skip := false
	for len(out) < most && len(s.queue.q) > 0 {
		b := s.queue.pop()
		switch {
		case b.sent >= limit:
		case first != nil && b.u.Member == first.Member:
			skipped, skip = b, true
		default:
			out = append(out, b.u)
			b.sent++
			taken = append(taken, b)
		}
	}
	if skip {
		s.queue.push(skipped)
	}
	for _, b := range taken {
		if b.sent < limit {
			s.queue.push(b)
		}
	}
	return out
}

// takeAll is take of a whole buffer that fits in a message, no update put
// first: the buffer sorted (the order in which take would pop it, and a
// heap still), each update sent once more, those sent limit times
// dropped — from the end, where the most sent are — with no heap
// operation.
func (s *swim) takeAll(out []Fact, limit int) []Fact {
	q := s.queue.q
	for i := 1; i < len(q); i++ { // insertion sort: a few updates
		b := q[i]
		j := i
		for ; j > 0 && b.before(&q[j-1]); j-- {
			q[j] = q[j-1]
		}
		q[j] = b
	}
	n := 0
	for ; n < len(q) && q[n].sent < limit; n++ {
		out = append(out, q[n].u)
		q[n].sent++
	}
	for n > 0 && q[n-1].sent >= limit {
		n--
	}
	s.queue.q = q[:n]
	return out
}
