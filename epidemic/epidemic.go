package epidemic

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Algorithms lists the family's algorithms, in the order of the sources.
var Algorithms []proc.Algorithm

// order is the order of Algorithms: the sources', whatever the order in
// which the files register.
var order = []string{"push", "pull", "push-pull", "rumor", "push-sum", "swim", "members", "discovery"}

func register(a proc.Algorithm) {
	a.Family = "gossip"
	if a.Inputs == nil {
		a.Inputs = Inputs
	}
	Algorithms = append(Algorithms, a)
	slices.SortStableFunc(Algorithms, func(x, y proc.Algorithm) int {
		return slices.Index(order, x.Name) - slices.Index(order, y.Name)
	})
}

// Params are the tunable settings of every algorithm of the family. The
// zero value of each field means its default, as its comment says.
type Params struct {
	// Fanout is how many peers a node contacts per round: f in the
	// sources' formulas. 0 means 1.
	Fanout int
	// Period is the length of a round on the node's local clock. 0 means
	// 10 ms (ten times the simulator's default latency, so that a round's
	// exchanges finish within it, as the round model assumes).
	Period time.Duration
	// ReapAfter is the age at which a tombstone is dropped, from its
	// writing. It must exceed the time a deletion takes to reach every
	// node that still holds the deleted value (with anti-entropy, a few
	// times log₂ n rounds, plus the longest pause or partition to be
	// survived); otherwise the old value may come back. 0 means 100
	// rounds.
	ReapAfter time.Duration
	// K is rumor mongering's loss of interest: the 1/k of the coin or the
	// k of the counter. 0 means 1.
	K int
	// Blind: a rumor monger loses interest on every contact (Demers et
	// al.'s blind variant) instead of only on contacts that tell it the
	// peer already knew (feedback, the default).
	Blind bool
	// Counter: interest is lost after k qualifying contacts (Demers et
	// al.'s counter) instead of with probability 1/k at each (the coin,
	// the default, as in the notes' model).
	Counter bool
	// Cycles: a node that learned a rumor during the current round still
	// counts as not having known it when told it again in the same round
	// (feedback is judged against the state at the round's start), as in
	// a simulation in synchronous cycles; the default judges each contact
	// against the state at the moment it is handled.
	Cycles bool
	// Pull: every node asks a random peer for its hot rumors each round,
	// instead of the infective nodes pushing them (push, the default).
	Pull bool
	// Backup runs push-pull anti-entropy beside rumor mongering, every
	// BackupEvery rounds, so the residue is eventually reached too.
	Backup bool
	// BackupEvery is the rounds between backup exchanges; 0 means 10.
	BackupEvery int
	// Aggregate is what push-sum computes: "average" (the default), "sum"
	// or "count".
	Aggregate string

	// SWIM (swim.go). Period is SWIM's protocol period T.

	// IndirectK is SWIM's k: the members asked to ping-req a target that
	// did not answer the direct ping. 0 means 3.
	IndirectK int
	// ProbeTimeout is the wait for a direct ack before the ping-reqs go
	// out, before the local health multiplier scales it. 0 means Period/2.
	ProbeTimeout time.Duration
	// SuspicionMult sets the suspicion timeout: SuspicionMult·max(1,
	// log₁₀ n)·Period (memberlist's rule); Lifeguard's dynamic timeout
	// starts at 6 times that and falls to it. 0 means 4.
	SuspicionMult int
	// Retransmit is SWIM's λ: each membership update is piggybacked
	// λ·⌈log₁₀(n+1)⌉ times (memberlist's rule; it uses λ = 4). 0 means 3.
	Retransmit int
	// NoLHM, NoDynamicSuspicion and NoBuddy switch off Lifeguard's three
	// refinements (Dadgar et al. 2018): the local health multiplier, the
	// dynamic suspicion timeout, the buddy system. All three off is the
	// SWIM of Das et al. with memberlist's suspicion timeout.
	NoLHM, NoDynamicSuspicion, NoBuddy bool
	// LateHealth makes a member's lateness count against its own health
	// (Lifeguard's local health, fed by one more symptom): when its
	// period timer, or its probe's timeout, goes off later than a
	// quarter of a probe's timeout after it was due, the member was not
	// running when its probe's ack was due — a host starved of CPU, a
	// paused process — so it raises its local health multiplier (for a
	// late period) and does not suspect that probe's target, whose ack
	// may wait in its own queue. The multiplier stretches the timeout
	// lateness is judged against, so a member starved for good still
	// probes and suspects, at the pace it can keep. The live membership
	// service sets it.
	LateHealth bool
	// AnnounceDeaths, in an open group, makes the member whose suspicion
	// timer declares a member dead tell every member it holds alive at
	// once (swim.announce), instead of leaving the verdict to the
	// piggybacking alone. The live membership service sets it.
	AnnounceDeaths bool
	// Open makes SWIM's group open, as a live cluster's is: a member knows
	// only the members it has heard of — the first Founders IDs from the
	// start, others once a fact about them reaches it (a newcomer's join,
	// its contact's answer, a piggybacked update) — instead of holding
	// every ID of the run's space alive from the start. Formulas that
	// depend on the group's size use the members known.
	Open bool
	// Founders is, with Open, how many IDs (0 .. Founders−1) every member
	// knows from the start: the cluster's founding members.
	Founders int
	// SyncEvery is the periods between a member's exchanges of its whole
	// member list with a random member (the members algorithm's, after
	// hashicorp/memberlist's push/pull), and of its map. 0 means 10.
	SyncEvery int
	// Stagger starts each SWIM member's periods (and anti-entropy's
	// rounds) at one of StaggerSlots phases, id mod StaggerSlots eighths
	// of a period, instead of at the multiples of the period that every
	// member's clock shares (memberlist staggers its tickers at random).
	// Members that share a host — a thousand in one process — otherwise
	// all probe in the same instant, and their pings, acks and handlers
	// queue behind one another for the CPU while each probe's timeout
	// runs; in slots, a probe competes with an eighth of the period's
	// work. Slots rather than a phase per member: every wake-up of an
	// idle process costs the host, and a slot's members wake together (a
	// phase each cost 100 members 4 times the CPU of one instant; in 8
	// slots, 1.5 times, at 100 members idle). The round model (a round in
	// which every node exchanged once) has rounds that line up; the live
	// service leaves it to its configuration (members.Config.Params).
	Stagger bool

	// Resource discovery (discovery.go).

	// AdRefresh is how often a holder rewrites its advertisements, with
	// its coordinate of the moment. 0 means 10 rounds (SWIM periods in the
	// members algorithm).
	AdRefresh time.Duration
	// AdTTL is how long a node keeps an advertisement it has adopted no
	// newer version of before it takes the holder for gone and deletes it.
	// It must exceed AdRefresh plus the time a rewrite takes to spread.
	// 0 means 6·AdRefresh.
	AdTTL time.Duration
	// Coordinates makes the members algorithm measure Vivaldi coordinates
	// (carried on SWIM's acks, each ack to a member's own ping a sample:
	// no message of their own), so that its finds
	// rank holders by estimated round-trip time; without it they rank by
	// ID. The discovery algorithm always measures them.
	Coordinates bool
}

// ErrParams is wrapped by the errors of Params.Validate.
var ErrParams = errors.New("bad gossip parameters")

// Validate reports the first bad field of p by name.
func (p Params) Validate() error {
	switch {
	case p.Fanout < 0:
		return fmt.Errorf("%w: fanout %d: must not be negative", ErrParams, p.Fanout)
	case p.Period < 0:
		return fmt.Errorf("%w: period %v: must not be negative", ErrParams, p.Period)
	case p.ReapAfter < 0:
		return fmt.Errorf("%w: reap-after %v: must not be negative", ErrParams, p.ReapAfter)
	case p.K < 0:
		return fmt.Errorf("%w: k %d: must not be negative", ErrParams, p.K)
	case p.BackupEvery < 0:
		return fmt.Errorf("%w: backup-every %d: must not be negative", ErrParams, p.BackupEvery)
	case p.IndirectK < 0:
		return fmt.Errorf("%w: indirect-k %d: must not be negative", ErrParams, p.IndirectK)
	case p.ProbeTimeout < 0:
		return fmt.Errorf("%w: probe-timeout %v: must not be negative", ErrParams, p.ProbeTimeout)
	case p.SuspicionMult < 0:
		return fmt.Errorf("%w: suspicion-mult %d: must not be negative", ErrParams, p.SuspicionMult)
	case p.Retransmit < 0:
		return fmt.Errorf("%w: retransmit %d: must not be negative", ErrParams, p.Retransmit)
	case p.SyncEvery < 0:
		return fmt.Errorf("%w: sync-every %d: must not be negative", ErrParams, p.SyncEvery)
	case p.AdRefresh < 0:
		return fmt.Errorf("%w: ad-refresh %v: must not be negative", ErrParams, p.AdRefresh)
	case p.AdTTL < 0:
		return fmt.Errorf("%w: ad-ttl %v: must not be negative", ErrParams, p.AdTTL)
	case p.Founders < 0:
		return fmt.Errorf("%w: founders %d: must not be negative", ErrParams, p.Founders)
	}
	switch p.Aggregate {
	case "", "average", "sum", "count":
	default:
		return fmt.Errorf("%w: aggregate %q: want average, sum or count", ErrParams, p.Aggregate)
	}
	return nil
}

// withDefaults fills in the zero fields.
func (p Params) withDefaults() Params {
	if p.Fanout == 0 {
		p.Fanout = 1
	}
	if p.Period == 0 {
		p.Period = 10 * time.Millisecond
	}
	if p.ReapAfter == 0 {
		p.ReapAfter = 100 * p.Period
	}
	if p.K == 0 {
		p.K = 1
	}
	if p.BackupEvery == 0 {
		p.BackupEvery = 10
	}
	if p.Aggregate == "" {
		p.Aggregate = "average"
	}
	if p.IndirectK == 0 {
		p.IndirectK = 3
	}
	if p.ProbeTimeout == 0 {
		p.ProbeTimeout = p.Period / 2
	}
	if p.SuspicionMult == 0 {
		p.SuspicionMult = 4
	}
	if p.Retransmit == 0 {
		p.Retransmit = 3
	}
	if p.SyncEvery == 0 {
		p.SyncEvery = 10
	}
	return p
}

// DefaultPeriod is the length of a round when Params.Period is zero.
const DefaultPeriod = 10 * time.Millisecond

// builders make each algorithm's processes from Params, by name.
var builders = map[string]func(p Params) func(id proc.ID, n int) proc.Process{}

// Configure returns algorithm a with its processes built from p instead of
// the defaults. a must be one of Algorithms.
func Configure(a proc.Algorithm, p Params) (proc.Algorithm, error) {
	if err := p.Validate(); err != nil {
		return a, err
	}
	b, ok := builders[a.Name]
	if !ok || a.Family != "gossip" {
		return a, fmt.Errorf("%w: %s/%s is not a gossip algorithm", ErrParams, a.Family, a.Name)
	}
	a.New = b(p.withDefaults())
	return a, nil
}

// Put asks a node to write Value under Key.
type Put struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	// Floor, if above the version the write would take, is its version
	// instead: for a key only its writer writes, written again after a
	// restart that lost the map. A fresh map gives the write the first
	// version, which the write before the restart had too; as versions
	// tie, the others would keep the old value for ever (their digests
	// agree). A live writer passes its wall clock in nanoseconds, which
	// rises from one incarnation to the next.
	Floor Version `json:"floor,omitempty"`
}

// Delete asks a node to delete Key (to write its tombstone).
type Delete struct {
	Key string `json:"key"`
}

// Value gives a push-sum node its value x (added to its sum, before the
// first round).
type Value struct {
	X float64 `json:"x"`
}

func (Put) Kind() string    { return "put" }
func (Delete) Kind() string { return "delete" }
func (Value) Kind() string  { return "value" }

func (p Put) String() string    { return "put " + p.Key + "=" + p.Value }
func (d Delete) String() string { return "delete " + d.Key }
func (v Value) String() string  { return "value " + strconv.FormatFloat(v.X, 'g', -1, 64) }

// Inputs builds the family's inputs by name, for scenario files: "put KEY
// VALUE", "delete KEY", "value X".
func Inputs(name string, args []string) (proc.Input, error) {
	switch {
	case name == "put" && len(args) == 2:
		return Put{Key: args[0], Value: args[1]}, nil
	case name == "delete" && len(args) == 1:
		return Delete{Key: args[0]}, nil
	case name == "value" && len(args) == 1:
		x, err := strconv.ParseFloat(args[0], 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("value %q: want a finite number", args[0])
		}
		return Value{X: x}, nil
	}
	return nil, fmt.Errorf(`unknown gossip input %q with %d arguments (want "put KEY VALUE", "delete KEY" or "value X")`, name, len(args))
}

// Version orders the writes of a key: the write's sequence number for the
// key in the high 32 bits (one above every version its writer had seen),
// the writer's ID in the low 32. Two writers racing on a key get the same
// sequence number and the larger ID wins, everywhere alike.
type Version = uint64

func nextVersion(seen Version, self proc.ID) Version {
	return (seen>>32+1)<<32 | Version(uint32(self))
}

// Entry is one key of the replicated map as it travels: a value, or a
// tombstone (Deleted), with its version. A tombstone carries Born, its
// writer's local time when it deleted the key: Demers et al.'s death
// certificates are dropped by their age, measured from it (so nodes' clocks
// are assumed to agree to well within ReapAfter).
type Entry struct {
	Key     string
	Value   string
	Version Version
	Deleted bool
	Born    time.Duration
}

func (e Entry) String() string { return string(e.appendTo(nil)) }

// appendTo appends "k=v@3.1", or "k@3.1†" for a tombstone.
func (e Entry) appendTo(b []byte) []byte {
	b = append(b, e.Key...)
	if !e.Deleted {
		b = append(b, '=')
		b = append(b, e.Value...)
	}
	b = append(b, '@')
	b = appendVersion(b, e.Version)
	if e.Deleted {
		b = append(b, "†"...)
	}
	return b
}

// Sum is one key of a digest: the key and the version a node has.
type Sum struct {
	Key     string
	Version Version
}

func (s Sum) String() string { return string(s.appendTo(nil)) }

func (s Sum) appendTo(b []byte) []byte {
	b = append(b, s.Key...)
	b = append(b, '@')
	return appendVersion(b, s.Version)
}

// appendVersion appends "3.1": sequence number 3, written by p1.
func appendVersion(b []byte, v Version) []byte {
	b = strconv.AppendUint(b, v>>32, 10)
	b = append(b, '.')
	return strconv.AppendUint(b, v&0xffffffff, 10)
}

func versionString(v Version) string { return string(appendVersion(nil, v)) }

// label renders a message as NAME{x,y,...}: every message's String, one
// allocation (the simulator labels every message it records or hashes).
func label[T interface{ appendTo([]byte) []byte }](name string, xs []T) string {
	b := make([]byte, 0, len(name)+2+len(xs)*16)
	b = append(b, name...)
	b = append(b, '{')
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = x.appendTo(b)
	}
	return string(append(b, '}'))
}

// Applied reports that a node adopted an entry newer than what it had.
type Applied struct {
	Key     string  `json:"key"`
	Value   string  `json:"value,omitempty"`
	Version Version `json:"version"`
	Deleted bool    `json:"deleted,omitempty"`
}

// Reaped reports that a node dropped a tombstone it had kept for
// Params.ReapAfter.
type Reaped struct {
	Key     string  `json:"key"`
	Version Version `json:"version"`
}

func (Applied) Kind() string { return "applied" }
func (Reaped) Kind() string  { return "reaped" }
func (a Applied) String() string {
	return Entry{Key: a.Key, Value: a.Value, Version: a.Version, Deleted: a.Deleted}.String()
}
func (r Reaped) String() string { return "reaped " + Sum{r.Key, r.Version}.String() }

// store is a node's replica of the map: its entries sorted by key, each
// with the local time at which the node adopted it. A sorted slice, not a
// map: the maps are small, a million replicas must fit, and iteration is
// deterministic for free.
//
// A tombstone is kept until it is reapAfter old (from its Born), then
// dropped. One that arrives older than that is not kept: it deletes the
// older value it finds, if any, and is forgotten at once. So a death
// certificate dies everywhere at about the same time, instead of being
// handed back and forth by nodes that reaped it at different moments.
type store struct {
	items     []item
	reapAfter time.Duration
}

type item struct {
	Entry
	since time.Duration
}

func (s *store) find(key string) (int, bool) {
	return slices.BinarySearchFunc(s.items, key, func(it item, k string) int { return strings.Compare(it.Key, k) })
}

// version is the version the node has of key (0: none).
func (s *store) version(key string) Version {
	if i, ok := s.find(key); ok {
		return s.items[i].Version
	}
	return 0
}

// apply adopts e if it is newer than what the node has, and outputs
// Applied; it reports whether it did.
func (s *store) apply(env proc.Env, e Entry) bool {
	i, ok := s.find(e.Key)
	if ok && s.items[i].Version >= e.Version {
		return false
	}
	if e.Deleted && env.Now()-e.Born >= s.reapAfter {
		if ok { // an expired certificate still deletes what it is newer than
			env.Output(Applied{Key: e.Key, Version: e.Version, Deleted: true})
			env.Output(Reaped{Key: e.Key, Version: e.Version})
			s.items = slices.Delete(s.items, i, i+1)
		}
		return false
	}
	it := item{Entry: e, since: env.Now()}
	if ok {
		s.items[i] = it
	} else {
		s.items = slices.Insert(s.items, i, it)
	}
	env.Output(Applied{Key: e.Key, Value: e.Value, Version: e.Version, Deleted: e.Deleted})
	return true
}

// put is a local Put: a version above the node's, and at least p.Floor.
func (s *store) put(env proc.Env, p Put) Entry {
	e := Entry{Key: p.Key, Value: p.Value, Version: max(nextVersion(s.version(p.Key), env.Self()), p.Floor)}
	s.apply(env, e)
	return e
}

// write is a local Put or Delete: a version above the node's.
func (s *store) write(env proc.Env, key, value string, deleted bool) Entry {
	e := Entry{Key: key, Value: value, Version: nextVersion(s.version(key), env.Self()), Deleted: deleted}
	if deleted {
		e.Born = env.Now()
	}
	s.apply(env, e)
	return e
}

// digest is the node's (key, version) summary, sorted by key.
// checksum is a hash (64-bit FNV-1a) of the digest: replicas with the
// same keys at the same versions have the same checksum, and replicas
// that differ almost surely not — Demers et al.'s (1987, §1.3) checksum,
// compared before the databases are. O(keys) at each call.
func (s *store) checksum() uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	word := func(x uint64) { // eight bytes, little-endian
		for range 8 {
			h = (h ^ (x & 0xff)) * prime
			x >>= 8
		}
	}
	for _, it := range s.items {
		word(uint64(len(it.Key))) // the length first: no two digests hash one byte string
		for i := 0; i < len(it.Key); i++ {
			h = (h ^ uint64(it.Key[i])) * prime
		}
		word(it.Version)
	}
	return h
}

func (s *store) digest() []Sum {
	if len(s.items) == 0 {
		return nil // most digests of a dissemination: nil boxes without an allocation
	}
	d := make([]Sum, len(s.items))
	for i, it := range s.items {
		d[i] = Sum{it.Key, it.Version}
	}
	return d
}

// entries are all the node's entries, sorted by key.
func (s *store) entries() []Entry {
	es := make([]Entry, len(s.items))
	for i, it := range s.items {
		es[i] = it.Entry
	}
	return es
}

// newer are the node's entries newer than the digest d has for them
// (or absent from d): what the digest's owner lacks.
func (s *store) newer(d []Sum) []Entry {
	var out []Entry
	for _, it := range s.items {
		j, ok := slices.BinarySearchFunc(d, it.Key, func(x Sum, k string) int { return strings.Compare(x.Key, k) })
		if !ok || d[j].Version < it.Version {
			out = append(out, it.Entry)
		}
	}
	return out
}

// wants are the keys of d newer there than here: what this node lacks.
func (s *store) wants(d []Sum) []Sum {
	var out []Sum
	for _, x := range d {
		if x.Version > s.version(x.Key) {
			out = append(out, x)
		}
	}
	return out
}

// pick are the node's entries for the keys named in want.
func (s *store) pick(want []Sum) []Entry {
	var out []Entry
	for _, x := range want {
		if i, ok := s.find(x.Key); ok {
			out = append(out, s.items[i].Entry)
		}
	}
	return out
}

// reap drops the tombstones at least reapAfter old.
// exchange is the answering side of anti-entropy, shared by the
// anti-entropy algorithms and rumor mongering's backup: it answers a Pull
// or a Digest with what is newer here (and what it wants), and hands the
// entries an Update or a Reply brings to adopt — then sends a Reply's
// sender what it asked for.
func (s *store) exchange(env proc.Env, from proc.ID, m proc.Message, adopt func([]Entry)) {
	switch m := m.(type) {
	case Update:
		adopt(m.Entries)
	case Pull:
		if es := s.newer(m.Digest); len(es) > 0 {
			env.Send(from, Update{Entries: es})
		}
	case Digest:
		es, want := s.newer(m.Digest), s.wants(m.Digest)
		if len(es) > 0 || len(want) > 0 {
			env.Send(from, Reply{Entries: es, Want: want})
		}
	case Reply:
		adopt(m.Entries)
		if es := s.pick(m.Want); len(es) > 0 {
			env.Send(from, Update{Entries: es})
		}
	}
}

func (s *store) reap(env proc.Env) {
	now := env.Now()
	s.items = slices.DeleteFunc(s.items, func(it item) bool {
		if it.Deleted && now-it.Born >= s.reapAfter {
			env.Output(Reaped{Key: it.Key, Version: it.Version})
			return true
		}
		return false
	})
}

// peers draws f distinct peers other than self from 0 .. N−1 (fewer if
// there are not so many), in buf's array if it has room: a caller that
// passes an array of its stack draws them without an allocation.
func peers(env proc.Env, f int, buf []proc.ID) []proc.ID {
	n, self := env.N(), env.Self()
	f = min(f, n-1)
	out := buf[:0]
	for len(out) < f {
		q := proc.ID(env.Rand().IntN(n - 1))
		if q >= self {
			q++ // uniform over the others
		}
		if !slices.Contains(out, q) {
			out = append(out, q)
		}
	}
	return out
}

// nextRound is the delay to the next round: the next multiple of period
// on the local clock, so that the rounds of all nodes line up (as the
// round model has them) whenever each joined or became active; at least
// half a period, so that a timer that fires a hair early on a drifting
// clock does not make two rounds of one.
func nextRound(env proc.Env, period time.Duration) time.Duration {
	return nextPhase(env, period, 0)
}

// nextPhase is nextRound for rounds that start at phase·period after each
// multiple of period (0 ≤ phase < 1).
func nextPhase(env proc.Env, period time.Duration, phase float64) time.Duration {
	now := env.Now()
	if now < 0 {
		return period
	}
	now -= time.Duration(phase * float64(period))
	d := period - (now%period+period)%period
	if d < period/2 {
		d += period
	}
	return d
}

// next is the delay to this member's next round of length period: on the
// multiples of period, or with Stagger at its own phase of it.
func (p *Params) next(env proc.Env, period time.Duration) time.Duration {
	if !p.Stagger {
		return nextRound(env, period)
	}
	return nextPhase(env, period, float64(int(env.Self())%StaggerSlots)/StaggerSlots)
}

// StaggerSlots is how many phases of a period Params.Stagger spreads
// the members over.
const StaggerSlots = 8

// round is the tag of the periodic round timer.
type round struct{}

func (round) String() string { return "round" }

func exp(x float64) float64     { return math.Exp(x) }
func cmpString(a, b string) int { return strings.Compare(a, b) }
