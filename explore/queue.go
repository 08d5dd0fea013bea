package explore

import (
	"fmt"
	"slices"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
)

// Act is what a step does with a pending event.
type Act uint8

const (
	// Fire handles the event: a delivery, a timer, an input, or a crash
	// the explorer offers.
	Fire Act = iota
	// Drop loses a pending message (a loss fault).
	Drop
	// Dup delivers a pending message and keeps a copy in flight (a
	// duplication fault).
	Dup
)

var actNames = [...]string{"fire", "drop", "dup"}

func (a Act) String() string {
	if int(a) < len(actNames) {
		return actNames[a]
	}
	return fmt.Sprintf("act(%d)", int(a))
}

// choice is one step: an act on the pending event with that Seq.
type choice struct {
	seq uint64
	act Act
}

// queue is the explorer's sim.Queue: it holds the pending events' keys and
// pops the one the explorer chose (before the run begins, the earliest, as
// the simulator's own queue would).
type queue struct {
	keys []sim.Key
	// info holds, for each key of keys, what the event is and the hash of
	// its contents, computed once per event (not once per state it is
	// pending in): a fingerprint sums them.
	info []pending
	s    *sim.Sim
	next int   // index in keys of the key to pop; -1: the earliest
	at   int64 // the time to hand back with it
	set  bool  // a set network: a message sent twice is one message
	h    *hasher
	// added lists, in a set network, the messages in flight by content
	// (a hash each), in the order they were sent, so that a restored run
	// (run.restore) forgets the ones sent since by cutting it back. A run
	// sends a few dozen: they are looked up in it, and past maxAdded in
	// known as well.
	added []uint64
	known map[uint64]bool
	// sum is the sum of the mixed hashes (pending.mixed) of the events
	// described, crashes left out, and fresh counts the events not yet
	// described: a fingerprint in Async adds sum, kept as events come
	// and go, instead of summing the events again (run.fingerprintWith).
	sum   uint64
	fresh int
	// timers counts the timers among the events described (run.dropStale
	// looks at those and the ones not yet described).
	timers int
	// sends lists, while logging, the messages of a set network pushed,
	// those already in flight too (foresee.go learns a step's effect).
	sends   []pending
	logging bool
}

func (q *queue) Len() int { return len(q.keys) }

func (q *queue) Push(k sim.Key) {
	if q.set && q.s != nil {
		if v := q.s.Payload(k.Slot); v != nil && q.s.Describe(k.Slot).Kind == "deliver" {
			d := q.s.Describe(k.Slot)
			ph := q.h.of(v)
			h := add(add(uint64(d.Node), uint64(d.From)), ph)
			if q.logging {
				q.sends = append(q.sends, described(d, eventHash(d, ph, nil)))
			}
			if q.sent(h) {
				q.s.Lose(k, "already sent")
				return
			}
			q.added = append(q.added, h)
			switch {
			case q.known != nil:
				q.known[h] = true
			case len(q.added) > maxAdded:
				q.known = map[uint64]bool{}
				for _, h := range q.added {
					q.known[h] = true
				}
			}
			q.insert(k, described(d, eventHash(d, ph, nil)))
			return
		}
	}
	q.insert(k, pending{})
}

// maxAdded is the most messages of a set network looked up in
// queue.added, not in a map.
const maxAdded = 64

// sent reports whether a message that hashes to h is in flight in a set
// network.
func (q *queue) sent(h uint64) bool {
	if q.known != nil {
		return q.known[h]
	}
	return slices.Contains(q.added, h)
}

// insert adds k in Seq order (at the end, but for an event the simulator
// puts back, which keeps its Seq).
func (q *queue) insert(k sim.Key, in pending) {
	q.count(&in, 1)
	i := len(q.keys)
	for i > 0 && q.keys[i-1].Seq > k.Seq {
		i--
	}
	if i == len(q.keys) { // the common case: a new event, the latest
		q.keys, q.info = append(q.keys, k), append(q.info, in)
		return
	}
	q.keys, q.info = slices.Insert(q.keys, i, k), slices.Insert(q.info, i, in)
}

// pending is what queue knows of a pending event: its class, the
// processes at its ends and the hash of its contents (kind, processes,
// payload), filled in on first use — a key pushed while the simulator is
// being built cannot be described yet. It holds no pointer, so saving
// and restoring the queue copies plain memory.
type pending struct {
	h uint64
	// mixed is mix64(h), the event's term in a fingerprint's sum (but in
	// Sync, where the term depends on the time too); fire is the label id
	// of firing it (dfs.go). Both are computed once per event, not once
	// per state the event is pending in.
	mixed, fire uint64
	node, from  proc.ID
	class       eventClass
	ok          bool
}

// described is what queue knows of the event p, whose contents hash to h.
func described(p sim.Pending, h uint64) pending {
	return pending{h: h, mixed: mix64(h), fire: add(h, uint64(Fire)), node: p.Node, from: p.From, class: classOf(p), ok: true}
}

// eventClass sorts pending events for choices.
type eventClass uint8

const (
	otherEvent eventClass = iota // an input, a fault other than a crash
	deliverEvent
	timerEvent
	crashEvent
)

func classOf(p sim.Pending) eventClass {
	switch {
	case isDeliver(p):
		return deliverEvent
	case isTimer(p):
		return timerEvent
	case isCrash(p):
		return crashEvent
	}
	return otherEvent
}

// ev returns what the i-th pending event is, describing and hashing it
// the first time.
func (q *queue) ev(i int) *pending {
	in := &q.info[i]
	if !in.ok {
		q.describe(i)
	}
	return in
}

func (q *queue) describe(i int) {
	k := q.keys[i]
	p := q.s.Describe(k.Slot)
	q.count(&q.info[i], -1)
	q.info[i] = described(p, eventHash(p, q.h.of(q.s.Payload(k.Slot)), nil))
	q.count(&q.info[i], 1)
}

// count adds the event in to sum and fresh (sign 1) or takes it out
// (sign -1).
func (q *queue) count(in *pending, sign int) {
	switch {
	case !in.ok:
		q.fresh += sign
	case in.class != crashEvent:
		q.sum += uint64(sign) * in.mixed
		if in.class == timerEvent {
			q.timers += sign
		}
	}
}

// describeAll describes every pending event not yet described.
func (q *queue) describeAll() {
	for i := 0; q.fresh > 0 && i < len(q.info); i++ {
		q.ev(i)
	}
}

// copyOf holds k2, a copy of the i-th event (a duplicate, or a message of
// a set network kept after its delivery): the same contents.
func (q *queue) copyOf(i int, k2 sim.Key) {
	q.insert(k2, q.info[i])
}

// eventHash hashes a pending event's contents: its kind, the processes at
// its ends (renamed by rename, if not nil) and its payload's hash.
func eventHash(p sim.Pending, payload uint64, rename func(proc.ID) proc.ID) uint64 {
	node, from := p.Node, p.From
	if rename != nil {
		node, from = rename(node), rename(from)
	}
	return add(add(add(hashString(p.Kind), uint64(node)), uint64(from)), payload)
}

func (q *queue) Pop() sim.Key {
	i := q.next
	if i < 0 {
		i = 0
		for j := range q.keys {
			if k := q.keys[j]; k.At < q.keys[i].At || (k.At == q.keys[i].At && k.Seq < q.keys[i].Seq) {
				i = j
			}
		}
	}
	k := q.keys[i]
	q.remove(i)
	if q.next >= 0 {
		k.At = q.at
		q.next = -1
	}
	return k
}

func (q *queue) remove(i int) {
	// In order: keys stay sorted by Seq (pushed and copied in Seq order),
	// so the pending events need no sorting.
	q.count(&q.info[i], -1)
	// By hand: slices.Delete clears the vacated element, which holds
	// no pointer here.
	n := len(q.keys) - 1
	copy(q.keys[i:], q.keys[i+1:])
	copy(q.info[i:], q.info[i+1:])
	q.keys, q.info = q.keys[:n], q.info[:n]
}

func (q *queue) find(seq uint64) int {
	return slices.IndexFunc(q.keys, func(k sim.Key) bool { return k.Seq == seq })
}

func isDeliver(p sim.Pending) bool { return p.Kind == "deliver" }
func isTimer(p sim.Pending) bool   { return p.Kind == "timer" }
func isCrash(p sim.Pending) bool   { return p.Kind == "fault" && p.What == "crash" }

// describe renders a step for people: "deliver p1←p0 REQ(ts=1,p0)".
func describe(s *sim.Sim, k sim.Key, act Act) string {
	p := s.Describe(k.Slot)
	v := s.Payload(k.Slot)
	label := p.What
	if st, ok := v.(fmt.Stringer); ok {
		label = st.String()
	}
	switch p.Kind {
	case "deliver":
		verb := "deliver"
		switch act {
		case Drop:
			verb = "lose"
		case Dup:
			verb = "deliver (and duplicate)"
		}
		return fmt.Sprintf("%s %s←%s %s", verb, p.Node, p.From, label)
	case "timer":
		return fmt.Sprintf("timeout %s %s", p.Node, label)
	case "input":
		return fmt.Sprintf("input %s %s", p.Node, label)
	case "fault":
		return fmt.Sprintf("%s %s", p.What, p.Node)
	}
	return fmt.Sprintf("%s %s", p.Kind, p.Node)
}
