package epidemic

import (
	"math"
	"strconv"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Membership with a replicated map, as hashicorp/memberlist and Serf
// build a live cluster's: SWIM (swim.go) keeps the member list and finds
// the failed, and anti-entropy by push-pull (antientropy.go) keeps a
// versioned key-value map, every SyncEvery periods with f members that
// SWIM holds alive (memberlist's periodic push/pull state sync, here on
// digests). One process runs both halves; every input, message and timer
// goes to the half it belongs to:
//
//	Put, Delete                     → the map
//	Leave                           → SWIM (it says goodbye)
//	Reading, Query                  → the aggregates (aggregate.go)
//	Advertise, Withdraw, Find       → resource discovery (discovery.go)
//	Update, Pull, Digest, Reply,
//	Checksum                        → the map
//	Mass                            → the aggregates
//	Ping, PingReq, Ack, Nack, ...   → SWIM
//	the round timer                 → the map; SWIM's timers → SWIM;
//	the aggregation timer           → the aggregates
//
// News travels at once as well: a member that writes a key, or adopts
// an entry newer than its own from an Update, sends it on to f members at
// once — rumor mongering that forwards each rumor once (Demers et al.'s
// "blind, counter 1"), with anti-entropy as its backup, the combination
// Demers et al. recommend: the rumor reaches almost every member in a few
// network delays, the exchanges reach the rest. With f forwards the
// fraction s that misses the rumor solves s = e^{−f(1−s)}; f = ⌈ln n⌉ + 2
// leaves about e^{−2} ≈ 0.14 members of n expected to miss it, whatever n.
//
// The group is open (Params.Open): a member knows the founders and the
// members it has heard of; a newcomer joins through any member and
// exchanges state with it at once, as memberlist and Serf do at a join:
// the contact answers with its whole member list (swim.go) and, to the
// newcomer's pull of the map, with every entry newer than the newcomer's
// digest (antientropy.go); the other members learn of the newcomer by
// rumor. A member that restarts has lost both halves' state: it joins again (through a
// founder, or its contact), refutes its obituary with a higher incarnation
// (SWIM's §4.2) and pulls the map back.
//
// Assumptions: those of its halves — none on the channels, crash-recover
// failures; membership is accurate only with probability (a member paused
// longer than its suspicion takes to spread is declared dead, and comes
// back alive when it resumes); the map converges once the members can
// reach one another, and a deletion survives only if every member holding
// the old value hears of it within Params.ReapAfter.
type members struct {
	swim  *swim
	kv    *antiEntropy
	agg   aggregates // the queries (aggregate.go)
	disc  discovery  // resource discovery (discovery.go)
	ticks uint64     // SWIM's periods so far
	// rumors is the news not sent on yet (spread), from rumorsFrom
	// (proc.None: from several, or this member's own); a rumorTick is
	// set while it holds any.
	rumors     []Entry
	rumorsFrom proc.ID
	// joined: this member joined through a contact (not a founder that
	// started with the group); its first lists are exchanged sooner
	// (syncFirst).
	joined bool
}

// rumorTick sends the rumors on: a timer of no delay, which goes off
// behind what already waits in the member's inbox.
type rumorTick struct{}

// maxRumorBytes bounds an Update of rumors, its entries' keys and values
// with a margin for the rest: a live host sends it as one datagram.
const maxRumorBytes = 1024

func init() {
	builders["members"] = func(p Params) func(proc.ID, int) proc.Process {
		return func(id proc.ID, n int) proc.Process { return newMembers(&p, id, n) }
	}
	register(proc.Algorithm{
		Name:    "members",
		Summary: "a cluster's membership and key-value map: SWIM with Lifeguard over an open group, and push-pull anti-entropy with the members it holds alive",
		Source:  "Das, Gupta & Motivala 2002 (SWIM); Demers et al. 1987 (anti-entropy); hashicorp/memberlist and Serf",
		Assumes: proc.Assumptions{Failures: "crash-recover", Joins: true},
		New:     builders["members"](Params{}.withDefaults()),
		// Its runs are judged on the map; its member list is SWIM's, whose
		// checkers judge swim runs (and the tests of this algorithm judge
		// its open group: TestOpenGroupLearnsEveryMember,
		// TestPartitionHeals).
		Checks: []string{"integrity", "gossip-convergence", "gossip-no-resurrection"},
		// Probe and Echo are retired (the coordinates ride on SWIM's
		// acks) but keep their tags, so that Checksum's is new.
		Messages: append(append(append(append([]proc.Message{}, swimMessages...), aeMessages...), Mass{}, Probe{}, Echo{}), Checksum{}, ListChecksum{}),
		Scenario: "nodes: 16\nstop:\n  deadline: 2s\n",
	})
}

// newMembers makes a member of an open group; without Params.Open (an
// algorithm configured from zero Params), every ID is a founder, as in a
// simulated run where all start together.
func newMembers(p *Params, id proc.ID, n int) *members {
	if !p.Open {
		q := *p
		q.Open, q.Founders = true, n
		p = &q
	}
	// The map's exchanges are the rumors' backup: every SyncEvery
	// periods, as the member lists' (memberlist's push/pull interval).
	kvp := *p
	kvp.Period = p.Period * time.Duration(p.SyncEvery)
	m := &members{swim: newSwim(p, id, n), kv: &antiEntropy{mode: pushPull, p: &kvp, db: store{reapAfter: p.ReapAfter}, checksumFirst: true}}
	m.disc = newDiscovery(p, p.Period, false)
	if p.Coordinates {
		// Vivaldi rides on SWIM: every ack carries the answering member's
		// coordinate, and each ack to this member's own ping is a sample
		// (Serf carries its coordinates on memberlist's pings likewise).
		m.swim.viv = &m.disc
	}
	m.kv.pick = func(env proc.Env, f int) []proc.ID { return m.swim.randomMembers(env, f, proc.None) }
	return m
}

func (m *members) Start(env proc.Env) {
	m.swim.Start(env)
	m.kv.Start(env)
}

// Join starts both halves through the contact: SWIM announces the
// newcomer, the map pulls from it.
func (m *members) Join(env proc.Env, contact proc.ID) {
	m.joined = contact != proc.None
	m.swim.Join(env, contact)
	m.kv.Join(env, contact)
}

func (m *members) Input(env proc.Env, in proc.Input) {
	switch in := in.(type) {
	case proc.Leave:
		m.swim.Input(env, in)
	case Put:
		m.spread(env, []Entry{m.kv.db.put(env, in)}, proc.None)
	case Delete:
		m.spread(env, []Entry{m.kv.db.write(env, in.Key, "", true)}, proc.None)
	case Reading:
		m.agg.setReading(in)
	case Query:
		if !m.swim.left {
			m.agg.query(env, m, in)
		}
	case Advertise, Withdraw, Find:
		if !m.swim.left {
			m.disc.input(env, discoMembers{m}, in)
		}
	}
}

// spread sends news on to f = ⌈ln n⌉ + 2 live members other than the one
// it came from — not at once but behind what already waits in the inbox
// (a timer of no delay): news that arrives together goes out together,
// in one Update to each of f members instead of one per write. An idle
// member forwards a write as soon as it has it; one that many writes
// reach at once (n members joining, each writing its address, cost n²·f
// messages one by one) forwards them in batches as large as its backlog.
// Each entry still goes to f random members, once.
func (m *members) spread(env proc.Env, news []Entry, from proc.ID) {
	if len(news) == 0 {
		return
	}
	if len(m.rumors) == 0 {
		m.rumorsFrom = from
		env.SetTimer(0, rumorTick{})
	} else if m.rumorsFrom != from {
		m.rumorsFrom = proc.None
	}
	m.rumors = append(m.rumors, news...)
}

// sendRumors sends the news spread gathered to f live members, in Updates
// of at most maxRumorBytes.
func (m *members) sendRumors(env proc.Env) {
	news, from := m.rumors, m.rumorsFrom
	m.rumors = nil
	f := int(math.Ceil(math.Log(float64(m.swim.size())))) + 2
	to := m.swim.randomMembers(env, f, from)
	for len(news) > 0 {
		k, size := 0, 0
		for k < len(news) && (k == 0 || size+entrySize(news[k]) <= maxRumorBytes) {
			size += entrySize(news[k])
			k++
		}
		for _, q := range to {
			env.Send(q, Update{Entries: news[:k:k]})
		}
		news = news[k:]
	}
}

// entrySize is about what an entry takes on the wire: its key and value,
// and 32 bytes for its version, birth and framing.
func entrySize(e Entry) int { return len(e.Key) + len(e.Value) + 32 }

func (m *members) Receive(env proc.Env, from proc.ID, msg proc.Message) {
	switch msg := msg.(type) {
	case Update:
		if m.swim.left {
			return
		}
		var news []Entry
		for _, e := range msg.Entries {
			if m.kv.db.apply(env, e) {
				news = append(news, e)
			}
		}
		m.spread(env, news, from)
	case ListChecksum:
		if !m.swim.left && msg.Sum != m.swim.checksum() {
			env.Send(from, JoinReq{Updates: m.swim.facts()})
		}
	case Pull, Digest, Reply, Checksum:
		if !m.swim.left {
			m.kv.Receive(env, from, msg)
		}
	case Mass:
		if !m.swim.left {
			m.agg.onMass(env, m, msg)
		}
	default:
		m.swim.Receive(env, from, msg)
	}
}

func (m *members) Timeout(env proc.Env, tag any) {
	switch tag.(type) {
	case round:
		if !m.swim.left {
			m.kv.Timeout(env, tag)
		}
	case rumorTick:
		if m.swim.left {
			m.rumors = nil
			return
		}
		m.sendRumors(env)
	case aggTick:
		if !m.swim.left {
			m.agg.tick(env, m, tag.(aggTick))
		}
	case swimTick:
		m.swim.Timeout(env, tag)
		if !m.swim.left {
			m.ticks++
			m.periodic(env)
			m.disc.tick(env, discoMembers{m})
		}
	default:
		m.swim.Timeout(env, tag)
	}
}

// syncFirst is the periods between a joined member's exchanges of lists
// in its first SyncEvery periods; then they come SyncEvery periods apart,
// as a founder's do from the start. Members that join together learn one another
// by rumor — a contact that answered one before it had heard of another
// could not tell it — and a rumor misses a member now and then, or finds
// it unknown to those who hold the rumor; a newcomer's own lists are
// still filling in. The first exchanges repair what the rumors missed
// within a few periods of the joins, not SyncEvery periods on.
const syncFirst = 2

// syncDue says whether this period is one of an exchange of lists.
func (m *members) syncDue() bool {
	every := uint64(m.swim.p.SyncEvery)
	if m.joined && m.ticks < every {
		return m.ticks%syncFirst == 0
	}
	return m.ticks%every == 0
}

// periodic is what a live cluster's member does each SWIM period besides
// its probe, which a closed group of Das et al. does not need:
//
//   - it gossips what is news to gossipFanout members (memberlist's gossip
//     interval): a cluster that many join at once has more to say than
//     the pings can carry;
//   - every SyncEvery periods it sends the checksum of its list to one
//     live member, which, if its own list differs, sends its whole list,
//     answered with the first member's (memberlist's push/pull, after
//     Demers et al.'s checksums: a quiet cluster's lists agree, and a
//     checksum is 10 bytes where a list is 5 a member), so that what
//     piggybacking missed still spreads; and its whole list to one member
//     held dead (Serf's reconnect), so that members that declared each
//     other dead across a partition, or a restart, find each other
//     again (in a joined member's first SyncEvery periods, every
//     syncFirst).
func (m *members) periodic(env proc.Env) {
	s := m.swim
	if s.hasNews() {
		for _, q := range s.randomMembers(env, gossipFanout, proc.None) {
			if news := s.take(nil, maxGossip); len(news) > 0 {
				env.Send(q, Gossip{Updates: news})
			}
		}
	}
	if !m.syncDue() {
		return
	}
	for _, q := range s.randomMembers(env, 1, proc.None) {
		env.Send(q, ListChecksum{Sum: s.checksum()})
	}
	if d := s.randomDead(env); d != proc.None {
		env.Send(d, JoinReq{Updates: s.facts()})
	}
}

// ListChecksum opens an exchange of member lists: the checksum of the
// sender's (swim.checksum). A member whose list differs answers with a
// JoinReq of its whole list; one whose list is the same, not at all.
type ListChecksum struct{ Sum uint64 }

func (ListChecksum) Kind() string { return "list-checksum" }

// Lossy: a lost checksum is a skipped exchange of lists, which the next
// one (SyncEvery periods on) makes up; a live host sends it as a datagram.
func (ListChecksum) Lossy() {}
func (c ListChecksum) String() string {
	return "LISTCHECKSUM(" + strconv.FormatUint(c.Sum, 16) + ")"
}

// View is a member's list as it holds it: every member it knows, itself
// first, with its state and incarnation. (The live service reads it.)
func (m *members) View() []Fact {
	return m.swim.facts()
}

// Entries is the member's replica of the map, tombstones included, sorted
// by key.
func (m *members) Entries() []Entry { return m.kv.db.entries() }

// HasRoomFor reports whether a reading of name would be kept: it is held
// already, or fewer than MaxReadings are. (The live service asks before
// it acknowledges a reading.)
func (m *members) HasRoomFor(name string) bool {
	_, ok := m.agg.readings[name]
	return ok || len(m.agg.readings) < MaxReadings
}

// discoMembers is the members algorithm as the discovery half's host:
// writes spread as rumors, probes go to live members, finds skip the
// members SWIM holds dead or left.
type discoMembers struct{ m *members }

func (h discoMembers) db() *store { return &h.m.kv.db }
func (h discoMembers) write(env proc.Env, key, value string, deleted bool) {
	h.m.spread(env, []Entry{h.m.kv.db.write(env, key, value, deleted)}, proc.None)
}
func (h discoMembers) peer(env proc.Env) proc.ID {
	if q := h.m.swim.randomMembers(env, 1, proc.None); len(q) > 0 {
		return q[0]
	}
	return proc.None
}
func (h discoMembers) alive(id proc.ID) bool { return !h.m.swim.gone(id) }

// Coordinate is the member's Vivaldi coordinate (the origin without
// Params.Coordinates).
func (m *members) Coordinate() Coord { return m.disc.coord }
