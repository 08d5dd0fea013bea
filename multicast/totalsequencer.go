package multicast

import (
	"cmp"
	"slices"

	"github.com/cohort-go/cohort/logical"
	"github.com/cohort-go/cohort/proc"
)

// Totally ordered multicast by a sequencer (Coulouris et al., total
// ordering using a sequencer). One member of each group, the sequencer
// (here its lowest-numbered member), numbers the messages; every member
// delivers in the sequencer's numbering:
//
//	Member p:     On initialization: r_g := 0
//	              To TO-multicast(g, m): B-multicast(g ∪ {sequencer(g)}, ⟨m, i⟩)
//	              On B-deliver(⟨m, i⟩): place ⟨m, i⟩ in the hold-back queue
//	              On B-deliver(⟨"order", i, S⟩): wait until ⟨m, i⟩ is in the
//	                  hold-back queue and S = r_g; TO-deliver m; r_g := S + 1
//	Sequencer:    On initialization: s_g := 0
//	              On B-deliver(⟨m, i⟩): B-multicast(g, ⟨"order", i, s_g⟩); s_g := s_g + 1
//
// The unique identifier i of a message is (origin, origin's number, group).
//
// Assumptions: reliable channels, in any order; no failures — the
// sequencer is a single point of failure (if it crashes nothing more is
// delivered), and a member that misses a message blocks at its number:
// it delivers a prefix of what the others deliver (Coulouris et al.:
// ordered multicast does not imply reliability). The sequencer numbers
// messages as they reach it, so over channels that reorder, two messages of
// one sender can be numbered out of the order they were sent in: total
// order is not FIFO (nor causal) order, as Coulouris et al. point out.
// fifo-total and causal-total are this algorithm with a sequencer that
// admits messages in FIFO or causal order.
//
// Cost: N − 1 data messages and N − 1 order messages, 2(N − 1) per
// multicast; two messages of latency (one for the sequencer's own).
type sequencer struct {
	groups groupTable
	n      int
	admit  admission
	seq    counters

	// As a member.
	r      map[string]uint64            // the next order number to deliver, per group
	held   map[msgKey]string            // the hold-back queue: data waiting for its turn
	orders map[string]map[uint64]msgKey // order numbers received, per group
	done   seen                         // delivered
	V      map[string]logical.Vector    // causal-total: per group, messages delivered per origin (own: sent)
	hb     holdback

	// As the sequencer of a group.
	s        map[string]uint64         // the next order number to give, per group
	numbered seen                      // messages given a number
	waiting  []sData                   // messages not yet admitted (fifo-total, causal-total)
	A        map[string]logical.Vector // per group, messages numbered per origin
}

// Describe implements proc.Describer: per group, the next order number
// to deliver (r_g), the messages held back for their turn and, at the
// group's sequencer, the next number to give (s_g). Maps encode with
// sorted keys; the held-back messages are listed in order.
func (s *sequencer) Describe() any {
	type group struct {
		Deliver uint64   `json:"next_to_deliver"`
		Held    []string `json:"held_back"`
		Give    *uint64  `json:"next_number,omitempty"`
	}
	out := map[string]*group{}
	at := func(g string) *group {
		if out[g] == nil {
			out[g] = &group{Held: []string{}}
		}
		return out[g]
	}
	for g, r := range s.r {
		at(g).Deliver = r
	}
	for g, n := range s.s {
		at(g).Give = &n
	}
	var held []msgKey
	for k := range s.held {
		held = append(held, k)
	}
	slices.SortFunc(held, func(a, b msgKey) int { return cmp.Or(cmp.Compare(a.Origin, b.Origin), cmp.Compare(a.Seq, b.Seq)) })
	for _, k := range held {
		at(k.Group).Held = append(at(k.Group).Held, k.String())
	}
	return out
}

// admission is when the sequencer may number a message it holds.
type admission uint8

const (
	onArrival     admission = iota // total-sequencer: at once
	inFIFOOrder                    // fifo-total: after the sender's earlier messages
	inCausalOrder                  // causal-total: after everything its sender had delivered
)

// sData is a multicast message. V, the sender's vector, is set by
// causal-total only.
type sData struct {
	Group  string
	Origin proc.ID
	Seq    uint64
	V      []uint64
	Body   string
}

// sOrder is the sequencer's ⟨"order", i, S⟩.
type sOrder struct {
	Group  string
	Origin proc.ID
	Seq    uint64
	S      uint64
}

func (sData) Kind() string { return "data" }
func (d sData) String() string {
	s := "DATA " + d.key().String()
	if d.V != nil {
		s += " " + logical.Vector(d.V).String()
	}
	return s
}
func (d sData) key() msgKey     { return msgKey{d.Group, d.Origin, d.Seq} }
func (sOrder) Kind() string     { return "order" }
func (o sOrder) String() string { return "ORDER " + o.key().String() + " S=" + uitoa(o.S) }
func (o sOrder) key() msgKey    { return msgKey{o.Group, o.Origin, o.Seq} }

func newSequencer(admit admission) func(proc.ID, int) proc.Process {
	return func(_ proc.ID, n int) proc.Process {
		return &sequencer{groups: Groups(n), n: n, admit: admit, seq: counters{},
			r: map[string]uint64{}, held: map[msgKey]string{}, orders: map[string]map[uint64]msgKey{},
			done: seen{}, V: map[string]logical.Vector{},
			s: map[string]uint64{}, numbered: seen{}, A: map[string]logical.Vector{}}
	}
}

func init() {
	register(proc.Algorithm{
		Name:    "total-sequencer",
		Summary: "TO-multicast by a sequencer: data to the group and the sequencer, ⟨order, i, S⟩ from the sequencer (2(N−1) messages)",
		Source:  "Coulouris et al. (total ordering using a sequencer)",
		Assumes: proc.Assumptions{Reliable: true},
		Theory:  sequencerTheory,
		Notes: map[string]string{
			"messages_per_multicast": "N − 1 copies (the sequencer among them) and N − 1 order messages; the textbook's B-multicast(g ∪ {sequencer})",
			"latency_msgs":           "data, then the order: 2; the sequencer's own messages take 1, so the mean is (2N − 1)/N",
		},
		New:      newSequencer(onArrival),
		Breaks:   []string{"fifo-order", "causal-order"},
		Messages: []proc.Message{sData{}, sOrder{}},
	})
}

func (s *sequencer) Start(proc.Env)        {}
func (s *sequencer) Timeout(proc.Env, any) {}

func (s *sequencer) Input(env proc.Env, in proc.Input) {
	if m, ok := in.(Multicast); ok {
		s.multicast(env, m)
	}
}

func (s *sequencer) Receive(env proc.Env, _ proc.ID, m proc.Message) {
	switch m := m.(type) {
	case sData:
		s.onData(env, m)
	case sOrder:
		s.onOrder(env, m)
	}
}

// vector is this process's vector for a group (causal-total), or the
// sequencer's count of numbered messages per origin.
func vector(vs map[string]logical.Vector, group string, n int) logical.Vector {
	v, ok := vs[group]
	if !ok {
		v = logical.New(n)
		vs[group] = v
	}
	return v
}

// multicast sends ⟨m, i⟩ to the group, the sequencer among them, and hands
// the sender's own copy to itself.
func (s *sequencer) multicast(env proc.Env, in Multicast) {
	g, ok := s.groups.accept(env, in, false)
	if !ok {
		return
	}
	k := sent(env, g, s.seq.next(g.Name), in.Body)
	d := sData{Group: k.Group, Origin: k.Origin, Seq: k.Seq, Body: in.Body}
	if s.admit == inCausalOrder {
		v := vector(s.V, g.Name, s.n)
		v[env.Self()] = k.Seq
		d.V = v.Copy()
	}
	g.others(env.Self(), func(q proc.ID) { env.Send(q, d) })
	if g.Has(env.Self()) {
		s.onData(env, d)
	}
}

// onData places a message in the hold-back queue, and at the sequencer
// numbers it.
func (s *sequencer) onData(env proc.Env, d sData) {
	g, ok := s.groups.lookup(d.Group)
	if !ok || d.Origin < 0 || int(d.Origin) >= s.n || (s.admit == inCausalOrder && len(d.V) != s.n) {
		return // not a message of this run
	}
	k := d.key()
	if _, dup := s.held[k]; g.Has(env.Self()) && !s.done.Has(k) && !dup {
		// A message whose order is known is delivered at once (or fills
		// the next place); one that waits for its order may be dropped.
		next, ok := s.orders[d.Group][s.r[d.Group]]
		if s.hb.hold(env, k, d.Body, d.Origin == env.Self() || ok && next == k) {
			s.held[k] = d.Body
		}
	}
	if g.Members[0] == env.Self() && !s.numbered.Has(k) &&
		!slices.ContainsFunc(s.waiting, func(w sData) bool { return w.key() == k }) {
		s.waiting = append(s.waiting, d)
		s.number(env, g)
	}
	s.deliver(env, d.Group)
}

// number gives the next order numbers to every waiting message the
// sequencer may admit, as long as there are some.
func (s *sequencer) number(env proc.Env, g Group) {
	for i := 0; i < len(s.waiting); i++ {
		d := s.waiting[i]
		if d.Group != g.Name || !s.admissible(d) {
			continue
		}
		s.waiting = slices.Delete(s.waiting, i, i+1)
		i = -1
		k := d.key()
		s.numbered.Add(k)
		vector(s.A, g.Name, s.n)[d.Origin]++
		o := sOrder{Group: k.Group, Origin: k.Origin, Seq: k.Seq, S: s.s[g.Name]}
		s.s[g.Name]++
		g.others(env.Self(), func(q proc.ID) { env.Send(q, o) })
		s.onOrder(env, o)
	}
}

func (s *sequencer) admissible(d sData) bool {
	switch s.admit {
	case inFIFOOrder:
		return fifoAdmissible(vector(s.A, d.Group, s.n), d)
	case inCausalOrder:
		return causalAdmissible(vector(s.A, d.Group, s.n), d)
	}
	return true
}

func (s *sequencer) onOrder(env proc.Env, o sOrder) {
	if g, ok := s.groups.lookup(o.Group); !ok || !g.Has(env.Self()) || o.Origin < 0 || int(o.Origin) >= s.n {
		return // not an order of this run
	}
	byNum := s.orders[o.Group]
	if byNum == nil {
		byNum = map[uint64]msgKey{}
		s.orders[o.Group] = byNum
	}
	if o.S >= s.r[o.Group] {
		byNum[o.S] = o.key()
	}
	s.deliver(env, o.Group)
}

// deliver TO-delivers the group's messages while the next number's message
// is in the hold-back queue.
func (s *sequencer) deliver(env proc.Env, group string) {
	for {
		k, ok := s.orders[group][s.r[group]]
		if !ok {
			break
		}
		body, ok := s.held[k]
		if !ok {
			break
		}
		delete(s.held, k)
		s.hb.release(body)
		delete(s.orders[group], s.r[group])
		s.r[group]++
		s.done.Add(k)
		if s.admit == inCausalOrder && k.Origin != env.Self() {
			vector(s.V, group, s.n)[k.Origin]++
		}
		deliver(env, k, body)
	}
	s.hb.note(env, len(s.held))
}

// sequencerTheory is the cost of a multicast through a sequencer (total,
// FIFO-total and causal-total order alike): N − 1 copies and N − 1 order
// messages; the data, then the order.
func sequencerTheory(n int) map[string]float64 {
	N := float64(n)
	return map[string]float64{"messages_per_multicast": 2 * (N - 1), "latency_msgs": 2}
}
