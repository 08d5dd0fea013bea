package multicast

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/cohort-go/cohort/proc"
)

// Totally ordered multicast by distributed agreement, ISIS style (Birman &
// Joseph 1987; Coulouris et al., total ordering by distributed agreement).
// Every member q keeps A_g^q, the largest agreed number it has seen in
// group g, and P_g^q, the largest it has proposed:
//
//	To TO-multicast(g, m):  p B-multicasts ⟨m, i⟩ to g (i: a unique id)
//	On B-deliver(⟨m, i⟩) at q:
//	    P_g^q := max(A_g^q, P_g^q) + 1; reply ⟨i, P_g^q⟩ to p (a proposal);
//	    place m in the hold-back queue with the proposed number, smallest first
//	At p, with every member's proposal:
//	    a := the largest; B-multicast(g, ⟨"order", i, a⟩) (the agreed number)
//	On ⟨"order", i, a⟩ at q:
//	    A_g^q := max(A_g^q, a); give m the number a, marked agreed, and
//	    reorder the queue; deliver from the head while the head is agreed
//
// Numbers are compared with the proposer's id as a tie-breaker, so no two
// messages agree on the same one. A message at the head with its agreed
// number is safe to deliver: an unagreed message's final number is at least
// what q proposed for it, and any message q has not seen yet will get a
// proposal from q above A_g^q.
//
// Assumptions: reliable channels, in any order; no failures (a crashed
// member never proposes, a crashed sender never announces the agreed
// number, and the queues block behind the message). The agreed numbers
// respect a sender's order only if its messages reach every member in that
// order: over FIFO channels the order is FIFO-total (and then, with the
// sender proposing for its own message, causal-total too); over channels
// that reorder it is total only.
//
// Cost: N − 1 data messages, N − 1 proposals, N − 1 agreed numbers:
// 3(N − 1) per multicast, three messages of latency.
type isis struct {
	groups  groupTable
	n       int
	seq     counters
	A, P    map[string]uint64
	queue   map[string][]isisEntry  // the hold-back queue of each group, smallest number first
	done    seen                    // delivered
	pending map[msgKey]*isisPending // my multicasts, collecting proposals
	hb      holdback
}

// Describe implements proc.Describer: per group, the largest agreed (A)
// and proposed (P) numbers and the hold-back queue in its order, each
// entry with its number, who proposed it and whether it is agreed; and
// this process's multicasts still collecting proposals.
func (p *isis) Describe() any {
	type group struct {
		A     uint64   `json:"agreed_max"`
		P     uint64   `json:"proposed_max"`
		Queue []string `json:"queue"`
	}
	out := struct {
		Groups  map[string]*group `json:"groups"`
		Waiting []string          `json:"collecting"`
	}{Groups: map[string]*group{}, Waiting: []string{}}
	at := func(g string) *group {
		if out.Groups[g] == nil {
			out.Groups[g] = &group{Queue: []string{}}
		}
		return out.Groups[g]
	}
	for g, a := range p.A {
		at(g).A = a
	}
	for g, v := range p.P {
		at(g).P = v
	}
	for g, q := range p.queue {
		for _, e := range q {
			s := fmt.Sprintf("%s %d.%d", e.key, e.num, e.by)
			if e.agreed {
				s += " agreed"
			}
			at(g).Queue = append(at(g).Queue, s)
		}
	}
	for k, w := range p.pending {
		out.Waiting = append(out.Waiting, fmt.Sprintf("%s awaits %d", k, len(w.members)))
	}
	slices.Sort(out.Waiting)
	return out
}

type isisEntry struct {
	key    msgKey
	body   string
	num    uint64
	by     proc.ID // who proposed num
	agreed bool
}

// isisPending is a multicast waiting for every member's proposal.
type isisPending struct {
	members []proc.ID // those that have not proposed yet
	num     uint64
	by      proc.ID
}

// iData is ⟨m, i⟩.
type iData struct {
	Group  string
	Origin proc.ID
	Seq    uint64
	Body   string
}

// iPropose is a member's proposal for message i.
type iPropose struct {
	Group  string
	Origin proc.ID
	Seq    uint64
	P      uint64
}

// iAgreed is ⟨"order", i, a⟩: the agreed number a, proposed by By.
type iAgreed struct {
	Group  string
	Origin proc.ID
	Seq    uint64
	A      uint64
	By     proc.ID
}

func (iData) Kind() string     { return "data" }
func (d iData) String() string { return "DATA " + msgKey{d.Group, d.Origin, d.Seq}.String() }
func (iPropose) Kind() string  { return "propose" }
func (p iPropose) String() string {
	return "PROPOSE " + msgKey{p.Group, p.Origin, p.Seq}.String() + " " + uitoa(p.P)
}
func (iAgreed) Kind() string { return "agreed" }
func (a iAgreed) String() string {
	return "AGREED " + msgKey{a.Group, a.Origin, a.Seq}.String() + " " + uitoa(a.A) + "." + uitoa(uint64(a.By))
}

func init() {
	register(proc.Algorithm{
		Name:    "total-isis",
		Summary: "TO-multicast by agreement (ISIS): proposals from every member, the largest agreed (3(N−1) messages)",
		Source:  "Birman & Joseph 1987; Coulouris et al. (ISIS total ordering)",
		Assumes: proc.Assumptions{Reliable: true},
		Theory: func(n int) map[string]float64 {
			N := float64(n)
			return map[string]float64{
				"messages_per_multicast": 3 * (N - 1),
				"latency_msgs":           3,
			}
		},
		Notes: map[string]string{
			"messages_per_multicast": "N − 1 copies, N − 1 proposals, N − 1 agreed numbers",
			"latency_msgs":           "data, proposals, agreed number; under concurrency a message also waits for earlier numbers to be agreed",
		},
		New: func(_ proc.ID, n int) proc.Process {
			return &isis{groups: Groups(n), n: n, seq: counters{}, A: map[string]uint64{}, P: map[string]uint64{},
				queue: map[string][]isisEntry{}, done: seen{}, pending: map[msgKey]*isisPending{}}
		},
		Breaks:   []string{"fifo-order", "causal-order"},
		Messages: []proc.Message{iData{}, iPropose{}, iAgreed{}},
	})
}

func (s *isis) Start(proc.Env)        {}
func (s *isis) Timeout(proc.Env, any) {}

func (s *isis) Input(env proc.Env, in proc.Input) {
	if m, ok := in.(Multicast); ok {
		s.multicast(env, m)
	}
}

func (s *isis) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m := m.(type) {
	case iData:
		s.onData(env, m)
	case iPropose:
		s.onPropose(env, from, m)
	case iAgreed:
		s.onAgreed(env, m)
	}
}

func (s *isis) multicast(env proc.Env, in Multicast) {
	g, ok := s.groups.accept(env, in, false)
	if !ok {
		return
	}
	k := sent(env, g, s.seq.next(g.Name), in.Body)
	s.pending[k] = &isisPending{members: slices.Clone(g.Members), by: proc.None}
	d := iData{Group: k.Group, Origin: k.Origin, Seq: k.Seq, Body: in.Body}
	g.others(env.Self(), func(q proc.ID) { env.Send(q, d) })
	if g.Has(env.Self()) {
		s.onData(env, d)
	}
}

// onData proposes a number for a new message and holds it back.
func (s *isis) onData(env proc.Env, d iData) {
	k := msgKey{d.Group, d.Origin, d.Seq}
	g, ok := s.groups.lookup(d.Group)
	if !ok || !g.Has(env.Self()) || !s.groups.process(d.Origin) || s.done.Has(k) || slices.ContainsFunc(s.queue[d.Group], func(e isisEntry) bool { return e.key == k }) {
		return
	}
	p := max(s.A[d.Group], s.P[d.Group]) + 1
	s.P[d.Group] = p
	if s.hb.hold(env, k, d.Body, d.Origin == env.Self()) { // else dropped: it still proposes, so as not to hold the others up
		s.queue[d.Group] = append(s.queue[d.Group], isisEntry{key: k, body: d.Body, num: p, by: env.Self()})
		s.sort(d.Group)
		s.hb.note(env, len(s.queue[d.Group]))
	}
	prop := iPropose{Group: d.Group, Origin: d.Origin, Seq: d.Seq, P: p}
	if d.Origin == env.Self() {
		s.onPropose(env, env.Self(), prop)
	} else {
		env.Send(d.Origin, prop)
	}
}

// onPropose collects the proposals for one of my messages; with all of
// them, it announces the largest.
func (s *isis) onPropose(env proc.Env, from proc.ID, p iPropose) {
	k := msgKey{p.Group, p.Origin, p.Seq}
	w := s.pending[k]
	if w == nil {
		return
	}
	i := slices.Index(w.members, from)
	if i < 0 {
		return
	}
	w.members = slices.Delete(w.members, i, i+1)
	if p.P > w.num || (p.P == w.num && from > w.by) {
		w.num, w.by = p.P, from
	}
	if len(w.members) > 0 {
		return
	}
	delete(s.pending, k)
	a := iAgreed{Group: p.Group, Origin: p.Origin, Seq: p.Seq, A: w.num, By: w.by}
	g, _ := s.groups.lookup(p.Group)
	g.others(env.Self(), func(q proc.ID) { env.Send(q, a) })
	if g.Has(env.Self()) {
		s.onAgreed(env, a)
	}
}

// onAgreed gives a message its agreed number and delivers from the head of
// the queue while the head is agreed.
func (s *isis) onAgreed(env proc.Env, a iAgreed) {
	k := msgKey{a.Group, a.Origin, a.Seq}
	q := s.queue[a.Group]
	i := slices.IndexFunc(q, func(e isisEntry) bool { return e.key == k })
	if i < 0 {
		return
	}
	s.A[a.Group] = max(s.A[a.Group], a.A)
	q[i].num, q[i].by, q[i].agreed = a.A, a.By, true
	s.sort(a.Group)
	for q = s.queue[a.Group]; len(q) > 0 && q[0].agreed; q = q[1:] {
		s.done.Add(q[0].key)
		s.hb.release(q[0].body)
		deliver(env, q[0].key, q[0].body)
	}
	s.queue[a.Group] = q
}

// sort orders a group's queue by number, then proposer, then identity.
func (s *isis) sort(group string) {
	slices.SortFunc(s.queue[group], func(a, b isisEntry) int {
		return cmp.Or(cmp.Compare(a.num, b.num), cmp.Compare(a.by, b.by),
			cmp.Compare(a.key.Origin, b.key.Origin), cmp.Compare(a.key.Seq, b.key.Seq))
	})
}
