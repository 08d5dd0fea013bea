package multicast

import (
	"cmp"
	"slices"

	"github.com/cohort-go/cohort/logical"
	"github.com/cohort-go/cohort/proc"
)

// Totally ordered multicast with Lamport timestamps and acknowledgements
// (Lamport 1978; Tanenbaum & van Steen §6.2, totally ordered multicasting;
// the replicated bank account is its application):
//
//	To multicast m:     stamp m with the Lamport clock; put it in my
//	                    queue; send it to every other member
//	On m from q:        put it in the queue, ordered by timestamp (ties by
//	                    sender id); multicast an ACK, itself stamped, to
//	                    every other member
//	Deliver the head of the queue once every member has acknowledged it —
//	or, as Tanenbaum & van Steen allow instead, once a message with a
//	larger timestamp has come from every member.
//
// The second form is the rule here, and covers the first: an ACK of m is a
// message stamped later than m. With FIFO channels, once member k has sent
// anything stamped at least ts(m), nothing stamped earlier can still come
// from k; m's sender is covered by m itself, and this process by its own
// clock. So the head is delivered once, for every other member k but its
// sender, the last message from k is stamped ≥ ts(m). Every process then
// delivers in timestamp order: the same total order everywhere, and — as a
// later multicast of a process that delivered m is stamped later than m —
// a causal one.
//
// Assumptions: reliable FIFO channels; no failures (one silent member
// blocks every queue); groups are closed — the rule must hear from every
// process that could send to the group, so a process outside a group is
// refused, open group or not.
//
// Cost: N − 1 messages and (N − 1)² acknowledgements per multicast
// (every member but the sender acknowledges to every member but itself);
// two messages of latency.
type lamportTO struct {
	groups groupTable
	n      int
	seq    counters
	clock  logical.Lamport
	latest []uint64 // per process: the timestamp of the last message from it
	queue  map[string][]lEntry
	hb     holdback
}

type lEntry struct {
	key  msgKey
	body string
	T    uint64
}

// lData is a multicast message stamped T.
type lData struct {
	Group  string
	Origin proc.ID
	Seq    uint64
	T      uint64
	Body   string
}

// lAck acknowledges message (Origin, Seq); T is the acknowledgement's own
// timestamp.
type lAck struct {
	Group  string
	Origin proc.ID
	Seq    uint64
	T      uint64
}

func (lData) Kind() string { return "data" }
func (d lData) String() string {
	return "DATA " + msgKey{d.Group, d.Origin, d.Seq}.String() + " T=" + uitoa(d.T)
}
func (lAck) Kind() string { return "ack" }
func (a lAck) String() string {
	return "ACK " + msgKey{a.Group, a.Origin, a.Seq}.String() + " T=" + uitoa(a.T)
}

func init() {
	register(proc.Algorithm{
		Name:    "total-lamport",
		Summary: "total order by Lamport timestamps: deliver the head of the queue once every member acknowledged it (N−1 + (N−1)² messages)",
		Source:  "Lamport 1978; Tanenbaum & van Steen §6.2",
		Assumes: proc.Assumptions{Reliable: true, FIFO: true},
		Theory: func(n int) map[string]float64 {
			N := float64(n)
			return map[string]float64{
				"messages_per_multicast": (N - 1) + (N-1)*(N-1),
				"latency_msgs":           2,
			}
		},
		Notes: map[string]string{
			"messages_per_multicast": "N − 1 copies and (N − 1)² acknowledgements (every receiver acknowledges to every other member)",
		},
		New: func(_ proc.ID, n int) proc.Process {
			return &lamportTO{groups: Groups(n), n: n, seq: counters{}, latest: make([]uint64, n), queue: map[string][]lEntry{}}
		},
		Messages: []proc.Message{lData{}, lAck{}},
		Scenario: `nodes: 4
network:
  latency: uniform:500us,3ms
  fifo: true
`,
	})
}

func (l *lamportTO) Start(proc.Env)        {}
func (l *lamportTO) Timeout(proc.Env, any) {}

func (l *lamportTO) Input(env proc.Env, in proc.Input) {
	if m, ok := in.(Multicast); ok {
		l.multicast(env, m)
	}
}

func (l *lamportTO) Receive(env proc.Env, from proc.ID, m proc.Message) {
	if from < 0 || int(from) >= l.n {
		return
	}
	switch m := m.(type) {
	case lData:
		l.onData(env, from, m)
	case lAck:
		l.clock.Recv(m.T)
		l.latest[from] = max(l.latest[from], m.T)
	}
	l.deliver(env)
}

func (l *lamportTO) multicast(env proc.Env, in Multicast) {
	g, ok := l.groups.accept(env, in, true)
	if !ok {
		return
	}
	k := sent(env, g, l.seq.next(g.Name), in.Body)
	t := l.clock.Send()
	l.hb.hold(env, k, in.Body, true)
	l.enqueue(lEntry{key: k, body: in.Body, T: t})
	d := lData{Group: k.Group, Origin: k.Origin, Seq: k.Seq, T: t, Body: in.Body}
	g.others(env.Self(), func(q proc.ID) { env.Send(q, d) })
	l.deliver(env)
}

// onData queues a message and acknowledges it to every other member.
func (l *lamportTO) onData(env proc.Env, from proc.ID, d lData) {
	l.clock.Recv(d.T)
	l.latest[from] = max(l.latest[from], d.T)
	g, ok := l.groups.lookup(d.Group)
	if !ok || !g.Has(env.Self()) {
		return
	}
	if k := (msgKey{d.Group, d.Origin, d.Seq}); l.hb.hold(env, k, d.Body, false) { // else dropped: it still acknowledges, so as not to hold the others up
		l.enqueue(lEntry{key: k, body: d.Body, T: d.T})
	}
	a := lAck{Group: d.Group, Origin: d.Origin, Seq: d.Seq, T: l.clock.Send()}
	g.others(env.Self(), func(q proc.ID) { env.Send(q, a) })
}

func (l *lamportTO) enqueue(e lEntry) {
	q := append(l.queue[e.key.Group], e)
	slices.SortFunc(q, func(a, b lEntry) int {
		return cmp.Or(cmp.Compare(a.T, b.T), cmp.Compare(a.key.Origin, b.key.Origin))
	})
	l.queue[e.key.Group] = q
}

// deliver delivers, in every group, the heads of the queue that no member
// can still precede.
func (l *lamportTO) deliver(env proc.Env) {
	held := 0
	for _, g := range l.groups {
		q := l.queue[g.Name]
		for len(q) > 0 && l.stable(env.Self(), g, q[0]) {
			l.hb.release(q[0].body)
			deliver(env, q[0].key, q[0].body)
			q = q[1:]
		}
		l.queue[g.Name] = q
		held += len(q)
	}
	l.hb.note(env, held)
}

// stable reports whether every member but self and the sender has sent a
// message stamped at least e.T.
func (l *lamportTO) stable(self proc.ID, g Group, e lEntry) bool {
	for _, k := range g.Members {
		if k != self && k != e.key.Origin && l.latest[k] < e.T {
			return false
		}
	}
	return true
}
