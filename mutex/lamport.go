package mutex

import (
	"fmt"
	"slices"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Lamport's algorithm (Lamport 1978; Coulouris et al., mutual exclusion
// using multicast and logical clocks): every process keeps a copy of one
// request queue, ordered by the timestamps (C, pid) of Stamp.Less, and the
// copies agree because every request is multicast and every message is
// FIFO.
//
//	To request:      C := C+1; put Request(C, i) in Q; send it to all others
//	On Request(C_j, j):
//	                 put it in Q; send Reply(C', i) to j
//	Enter when:      (a) i's own request heads Q, and
//	                 (b) i has received from every other process k a
//	                     message (request, reply or release) whose
//	                     timestamp (C_k, k) is larger than (C_req, i)
//	To release:      remove i's request from Q; send Release(C', i) to all
//	On Release(j):   remove j's request from Q
//
// The clock is Lamport's: a send takes C := C+1 and carries C; a receipt
// sets C := max(C, C_msg)+1. A process handles its own request locally
// instead of sending it to itself.
//
// The textbook's worked example (its space-time diagram): P2 requests with
// timestamp 34, and at its local time 44 it may enter. Its request heads
// its queue (a), and it has already received from P1 a message stamped 41,
// larger than its own 34 (b, for P1): P1's clock has passed 34, so any
// request P1 makes from now on sorts after P2's, and FIFO guarantees that
// no earlier one is still on its way. The third process's reply, stamped
// higher still, completes (b). The tests replay that run.
//
// Assumptions: reliable FIFO channels, asynchronous, no failures. FIFO is
// what makes (b) mean "no earlier request from k is still on its way"; the
// tests show what breaks without it: a reply that overtakes the sender's
// own earlier request lets two processes enter at once (ME1), and a
// release that overtakes its request leaves a dead request heading every
// queue for ever (ME2).
//
// Restarts (beyond the textbooks). A process restarted from its stable
// storage has lost its queue and its request; the others keep its dead
// request at the head of theirs for ever. It rejoins:
//
//	On restart:        multicast HELLO(Floor), Floor above every stamp it
//	                   sent before (its clock starts there: durableCounter)
//	On HELLO(F) from j: remove j's requests stamped below F; if requesting
//	                   or in the section, send j the request again, so that
//	                   j's queue holds it before anything else from here
//	                   (FIFO)
//
// A process that crashed inside the section for a remote holder (a hold
// on record: Acquire.Hold) says HELLO only once that hold has passed:
// until then its dead request keeps everyone else out.
//
// Cost: 3(N−1) messages per entry (N−1 requests, N−1 replies, N−1
// releases); a requester waits one round trip; the synchronisation delay
// is one message (the release). ME1, ME2 and ME3 hold: a request that
// happened after another carries a larger timestamp and is served later.
// That takes every message to carry the clock, the application's too (in
// Tanenbaum & van Steen's picture the clock lives in the middleware): App
// messages (Tell) tick and carry C like the algorithm's own.
//
// Every send and receive reports its timestamp as a proc.Stamp, so that
// the clock-condition checker can judge the clock. Waiting lists the
// processes that a request still waits for: those with no larger message
// yet and those whose requests sort before it.
type lamport struct {
	self proc.ID
	n    int

	clock  uint64
	queue  []Stamp  // the request queue Q, ordered by Stamp.Less
	latest []uint64 // the largest timestamp received from each process

	req        Stamp // this process's request, while requesting or in the CS
	requesting bool
	inCS       bool
	waiting    []proc.ID // the last Waiting output
	durable    durableCounter
	hold       time.Duration // the current request's Acquire.Hold
	rejoining  bool          // restarted from inside the section: waiting out its hold
	wants      *Acquire      // an Acquire made meanwhile
}

// Describe implements proc.Describer: the clock, the request queue Q in
// its order, this process's request and whether it is in the section.
func (l *lamport) Describe() any {
	d := struct {
		State   string   `json:"state"`
		Clock   uint64   `json:"clock"`
		Request string   `json:"request,omitempty"`
		Queue   []string `json:"queue"`
	}{State: "released", Clock: l.clock, Queue: stamps(l.queue)}
	switch {
	case l.inCS:
		d.State, d.Request = "in CS", l.req.String()
	case l.requesting:
		d.State, d.Request = "requesting", l.req.String()
	}
	return d
}

// lpHello announces a restart; Floor is above every stamp its sender sent
// before.
type lpHello struct {
	Floor uint64 `json:"floor"`
}

// lpRejoin is the timer that ends a restarted holder's hold.
type lpRejoin struct{}

func (lpHello) Kind() string     { return "hello" }
func (m lpHello) String() string { return fmt.Sprintf("HELLO(%d)", m.Floor) }
func (lpRejoin) String() string  { return "rejoin" }

// lpRequest is Request(C, i).
type lpRequest struct {
	T Stamp `json:"t"`
}

// lpReply is Reply(C, j).
type lpReply struct {
	T Stamp `json:"t"`
}

// lpRelease is Release(C, i).
type lpRelease struct {
	T Stamp `json:"t"`
}

func (lpRequest) Kind() string     { return "request" }
func (m lpRequest) String() string { return "REQ(" + m.T.String() + ")" }
func (lpReply) Kind() string       { return "reply" }
func (m lpReply) String() string   { return "REPLY(" + m.T.String() + ")" }
func (lpRelease) Kind() string     { return "release" }
func (m lpRelease) String() string { return "REL(" + m.T.String() + ")" }

func init() {
	register(proc.Algorithm{
		Name:    "lamport",
		Summary: "Lamport: timestamped request to all, replies, release to all; replicated queue ordered by (C, pid) (3(N−1) messages)",
		Source:  "Lamport 1978; Coulouris et al.",
		Assumes: proc.Assumptions{Reliable: true, FIFO: true},
		Theory: func(n int) map[string]float64 {
			N := float64(n)
			return map[string]float64{
				"messages_per_entry": 3 * (N - 1),
				"client_delay_msgs":  2,
				"sync_delay_msgs":    1,
			}
		},
		Notes: map[string]string{
			"messages_per_entry": "request, reply and release to each of the N−1 others",
		},
		New: newLamport,
		Messages: []proc.Message{
			lpRequest{}, lpReply{}, lpRelease{}, lpHello{},
		},
		Scenario: `nodes: 3
network:
  fifo: true
`,
	})
}

func newLamport(id proc.ID, n int) proc.Process {
	return &lamport{self: id, n: n, latest: make([]uint64, n)}
}

// Start begins an incarnation. The first puts a record on stable storage,
// so that a restart knows it is one; a restart says HELLO, at once or
// after the hold it crashed under.
func (l *lamport) Start(env proc.Env) {
	l.clock = max(l.clock, l.durable.start(env))
	switch {
	case !l.durable.restarted:
	case l.durable.held() > 0:
		l.rejoining = true
		env.SetTimer(l.durable.held(), lpRejoin{})
	default:
		l.hello(env)
	}
}

func (l *lamport) hello(env proc.Env) {
	l.clock++
	l.durable.send(env, l.clock)
	l.multicast(env, lpHello{Floor: l.clock})
}

// Timeout ends a restarted holder's hold: HELLO, then the Acquire asked
// for meanwhile.
func (l *lamport) Timeout(env proc.Env, tag any) {
	if _, ok := tag.(lpRejoin); !ok || !l.rejoining {
		return
	}
	l.rejoining = false
	l.durable.mark(env, 0, false)
	l.hello(env)
	if a := l.wants; a != nil {
		l.wants = nil
		l.request(env, *a)
	}
}

func (l *lamport) Input(env proc.Env, in proc.Input) {
	switch in := in.(type) {
	case Acquire:
		if l.rejoining {
			l.wants = &in
			return
		}
		l.request(env, in)
	case Release:
		l.release(env)
	}
}

func (l *lamport) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m := m.(type) {
	case lpRequest:
		l.witness(from, m.T.C)
		l.onRequest(env, from, m)
	case lpReply:
		l.witness(from, m.T.C)
		l.stamp(env)
	case lpRelease:
		l.witness(from, m.T.C)
		l.onRelease(env, from)
	case lpHello:
		l.witness(from, m.Floor)
		l.onHello(env, from, m)
	}
	l.maybeEnter(env)
}

// onHello: j restarted. Its request died with it; ours it no longer knows.
func (l *lamport) onHello(env proc.Env, from proc.ID, m lpHello) {
	l.queue = slices.DeleteFunc(l.queue, func(s Stamp) bool { return s.P == from && s.C < m.Floor })
	if l.requesting || l.inCS {
		l.clock++
		l.durable.send(env, l.clock)
		env.Send(from, lpRequest{T: l.req})
	}
	l.stamp(env)
}

// witness is the receipt rule: C := max(C, C_msg)+1; and it remembers the
// largest timestamp heard from the sender, for condition (b).
func (l *lamport) witness(from proc.ID, c uint64) {
	l.clock = max(l.clock, c) + 1
	l.latest[from] = max(l.latest[from], c)
}

// appSend and appRecv run the clock for the application's messages
// (clocked): a send ticks and carries C, a receipt witnesses it.
func (l *lamport) appSend() uint64 {
	l.clock++
	return l.clock
}

func (l *lamport) appRecv(ts uint64) { l.clock = max(l.clock, ts) + 1 }

// stamp reports the timestamp of the event just performed.
func (l *lamport) stamp(env proc.Env) { env.Output(proc.Stamp{C: l.clock}) }

// multicast sends m to every other process, as one event with one
// timestamp.
func (l *lamport) multicast(env proc.Env, m proc.Message) {
	for _, p := range others(l.self, l.n) {
		env.Send(p, m)
	}
	if l.n > 1 {
		l.stamp(env)
	}
}

// request is "P_i makes a request": into its own queue, and to all others.
func (l *lamport) request(env proc.Env, a Acquire) {
	if l.requesting || l.inCS {
		return // a second Acquire breaks the contract; ignore it
	}
	l.hold = a.Hold
	l.clock++
	l.durable.send(env, l.clock)
	l.req = Stamp{C: l.clock, P: l.self}
	l.requesting = true
	l.insert(l.req)
	l.multicast(env, lpRequest{T: l.req})
	l.maybeEnter(env)
}

// onRequest queues the request and replies.
func (l *lamport) onRequest(env proc.Env, from proc.ID, m lpRequest) {
	l.insert(Stamp{C: m.T.C, P: from})
	l.clock++
	l.durable.send(env, l.clock)
	env.Send(from, lpReply{T: Stamp{C: l.clock, P: l.self}})
	l.stamp(env)
}

// onRelease removes the sender's request from the queue.
func (l *lamport) onRelease(env proc.Env, from proc.ID) {
	l.remove(from)
	l.stamp(env)
}

// maybeEnter enters when conditions (a) and (b) hold; otherwise it
// reports whom the request waits for, when that changes.
func (l *lamport) maybeEnter(env proc.Env) {
	if !l.requesting {
		return
	}
	var wait []proc.ID
	for _, s := range l.queue {
		if !s.Less(l.req) {
			break
		}
		wait = append(wait, s.P) // (a): an earlier request
	}
	for _, p := range others(l.self, l.n) {
		if !l.req.Less(Stamp{C: l.latest[p], P: p}) && !slices.Contains(wait, p) {
			wait = append(wait, p) // (b): nothing larger from p yet
		}
	}
	slices.Sort(wait)
	if len(wait) > 0 {
		if !slices.Equal(wait, l.waiting) {
			l.waiting = wait
			env.Output(Waiting{For: wait})
		}
		return
	}
	l.requesting, l.inCS, l.waiting = false, true, nil
	l.durable.mark(env, l.hold, l.hold > 0)
	env.Output(Enter{Token: l.req.Fencing()}) // entries follow the stamps' total order
}

// release is "P_i releases the resource".
func (l *lamport) release(env proc.Env) {
	if !l.inCS {
		return // Release without Enter breaks the contract; ignore it
	}
	l.inCS = false
	l.remove(l.self)
	l.durable.mark(env, 0, false)
	env.Output(Exit{})
	l.clock++
	l.durable.send(env, l.clock)
	l.multicast(env, lpRelease{T: Stamp{C: l.clock, P: l.self}})
}

// insert puts s into the queue in (C, pid) order.
func (l *lamport) insert(s Stamp) {
	i, _ := slices.BinarySearchFunc(l.queue, s, func(a, b Stamp) int {
		switch {
		case a.Less(b):
			return -1
		case b.Less(a):
			return 1
		}
		return 0
	})
	l.queue = slices.Insert(l.queue, i, s)
}

// remove takes p's request out of the queue (a process has at most one).
func (l *lamport) remove(p proc.ID) {
	l.queue = slices.DeleteFunc(l.queue, func(s Stamp) bool { return s.P == p })
}

// Rejoins: a restarted process rejoins (see Restarts above).
func (*lamport) Rejoins() {}
