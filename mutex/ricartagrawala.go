package mutex

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Ricart–Agrawala (Ricart & Agrawala 1981; Coulouris et al.;
// Tanenbaum & van Steen §6.3): Lamport's algorithm without the release
// messages. A process that wants the critical section multicasts a
// timestamped request ⟨T, pᵢ⟩ to every other process and enters when all
// N−1 have replied. A process defers its reply while it is in the critical
// section, or while it wants it with an earlier request (smaller ⟨T, p⟩ in
// the total order of Stamp.Less); it sends the deferred replies when it
// leaves. Coulouris et al.'s pseudocode, at pⱼ:
//
//	On initialization:          state := RELEASED
//	To enter:                   state := WANTED; multicast request ⟨T, pᵢ⟩;
//	                            wait until N−1 replies; state := HELD
//	On receipt of ⟨Tᵢ, pᵢ⟩:     if state = HELD or (state = WANTED and
//	                               (T, pⱼ) < (Tᵢ, pᵢ)) then queue it
//	                            else reply immediately
//	To exit:                    state := RELEASED; reply to queued requests
//
// T is a Lamport clock L: every request and reply carries the sender's L,
// the receiver moves its clock past it, and a request takes the next tick.
// Replies carry the clock too, so that an Acquire that happened after
// another (through any chain of messages) always gets the larger stamp:
// that is what makes the order of entry respect happened-before (ME3).
//
// Assumptions: reliable channels, no failures (a crashed process never
// replies, and everyone waits for it for ever) — but a process restarted
// from stable storage rejoins (beyond the textbooks; see Restarts below). FIFO is not needed: a
// reply always answers the one request its receiver has outstanding, and
// the deferral rule compares stamps, not arrival order (the tests sweep
// runs with FIFO off too).
//
// Cost: 2(N−1) messages per entry (N−1 requests, N−1 replies); the
// synchronisation delay (from one exit to the next entry) is one message.
//
// Restarts. A process that crashes loses the requests it deferred and its
// own; the others wait for its replies for ever. Restarted with its stable
// storage (a live node's data directory), it rejoins:
//
//	On restart:            multicast HELLO (I owe nobody, want nothing)
//	On receipt of HELLO
//	from pᵢ at pⱼ:          drop pᵢ's deferred request (it died with pᵢ);
//	                       if WANTED and pᵢ has not replied, send pᵢ the
//	                       request again
//
// A reply names the request it answers (For), so a reply to a request of
// an earlier incarnation is never counted for a later one; a restarted
// process's clock starts above anything it sent before (durableCounter),
// so its requests never repeat an old stamp. A process that crashed inside
// the section (a hold on record: see Acquire.Hold) defers every request
// for that hold after its restart, so a remote holder that outlived it
// has stopped before anyone else enters.
//
// The JUST-RELEASED variant (an improved algorithm, after Coulouris et al.)
// adds a fourth state: a process that leaves with no request queued keeps
// the permissions it was given, and may re-enter without asking as long as
// no request arrives meanwhile:
//
//	To enter:         if state ≠ JUST-RELEASED then (as above)
//	                  else state := HELD
//	On receipt:       as above, but when replying, if state = JUST-RELEASED
//	                  then state := RELEASED
//	To exit:          state := JUST-RELEASED;
//	                  if Q is not empty then state := RELEASED;
//	                  reply to queued requests
//
// It is safe because no other process can enter without this one's reply,
// which it gives only on receiving a request, and that ends JUST-RELEASED.
// A re-entry in JUST-RELEASED costs no message; otherwise the cost is that
// of the base algorithm.
//
// The variant keeps ME1 and ME2 but not ME3, which is not claimed for it:
// "nobody asked since I left" means "no request has arrived yet". A request
// already on its way is not seen, even when the re-entering process has
// heard from its sender since (the reply that overtook the request on a
// non-FIFO channel) or from someone who had (p2's reply to this process,
// sent after p1's request reached p2, with FIFO channels too). The process
// then re-enters ahead of a request that happened before its own Acquire.
// The tests show both.
type ricartAgrawala struct {
	justReleased bool // run the JUST-RELEASED variant

	state   raState
	clock   uint64 // the Lamport clock L
	req     Stamp  // ⟨T, pᵢ⟩ of the current request, while WANTED or HELD
	replied map[proc.ID]bool
	queue   []Stamp // deferred requests ⟨T, p⟩, in arrival order
	durable durableCounter
	hold    time.Duration // the current request's Acquire.Hold
	wants   *Acquire      // an Acquire made while RECOVERING
}

// Clone returns an independent copy of the state (a model checker's fast
// path: it forks runs instead of replaying them).
func (r *ricartAgrawala) Clone() proc.Process {
	c := *r
	c.replied = maps.Clone(r.replied)
	c.queue = slices.Clone(r.queue)
	if r.wants != nil {
		w := *r.wants
		c.wants = &w
	}
	return &c
}

// Describe implements proc.Describer: the pseudocode's state, the Lamport
// clock, the pending request ⟨T, pᵢ⟩, the replies received for it and
// the requests deferred until the exit.
func (r *ricartAgrawala) Describe() any {
	d := struct {
		State    string   `json:"state"`
		Clock    uint64   `json:"clock"`
		Request  string   `json:"request,omitempty"`
		Replies  []string `json:"replies"`
		Deferred []string `json:"deferred"`
	}{State: r.state.String(), Clock: r.clock, Replies: members(r.replied), Deferred: stamps(r.queue)}
	if r.state == raWanted || r.state == raHeld {
		d.Request = r.req.String()
	}
	return d
}

// raState is the state of a Ricart–Agrawala process in Coulouris et al.'s
// pseudocode.
type raState uint8

const (
	raReleased raState = iota
	raWanted
	raHeld
	raJustReleased
	raRecovering // restarted from inside the section: waiting out its hold
)

func (s raState) String() string {
	switch s {
	case raReleased:
		return "RELEASED"
	case raWanted:
		return "WANTED"
	case raHeld:
		return "HELD"
	case raJustReleased:
		return "JUST-RELEASED"
	case raRecovering:
		return "RECOVERING"
	}
	return fmt.Sprintf("raState(%d)", uint8(s))
}

// raRequest is the request ⟨T, pᵢ⟩.
type raRequest struct {
	T Stamp `json:"t"`
}

// raReply grants the request For; T is the replier's clock and id.
type raReply struct {
	T   Stamp `json:"t"`
	For Stamp `json:"for"`
}

// raHello announces a restart: its sender lost the requests it deferred
// and its own. Floor is above the stamp of every request it made before.
type raHello struct {
	Floor uint64 `json:"floor"`
}

// raRejoin is the timer that ends RECOVERING.
type raRejoin struct{}

func (raHello) Kind() string    { return "hello" }
func (raHello) String() string  { return "HELLO" }
func (raRejoin) String() string { return "rejoin" }

func (raRequest) Kind() string     { return "request" }
func (m raRequest) String() string { return "REQ(" + m.T.String() + ")" }
func (raReply) Kind() string       { return "reply" }
func (m raReply) String() string   { return "REPLY(" + m.T.String() + ")" }

func newRicartAgrawala(justReleased bool) func(proc.ID, int) proc.Process {
	return func(proc.ID, int) proc.Process {
		return &ricartAgrawala{justReleased: justReleased}
	}
}

func init() {
	register(proc.Algorithm{
		Name:    "ricart-agrawala",
		Summary: "timestamped request to all, enter after N−1 replies; replies deferred by earlier requesters (2(N−1) messages)",
		Source:  "Ricart & Agrawala 1981; Coulouris et al.; Tanenbaum & van Steen §6.3",
		Assumes: proc.Assumptions{Reliable: true},
		Theory:  raTheory,
		Notes: map[string]string{
			"client_delay_msgs": "Tanenbaum & van Steen's table counts the N−1 requests as sent one after another, 2(N−1); sent in parallel the client waits one round trip, 2",
		},
		New: newRicartAgrawala(false),
		Messages: []proc.Message{
			raRequest{}, raReply{}, raHello{},
		},
	}, proc.Algorithm{
		Name:    "ricart-agrawala-jr",
		Summary: "Ricart–Agrawala with JUST-RELEASED: re-entry without messages while nobody else asked",
		Source:  "Coulouris et al. (JUST-RELEASED)",
		Assumes: proc.Assumptions{Reliable: true},
		Theory: func(n int) map[string]float64 {
			t := raTheory(n)
			t["repeat_first_messages"] = t["messages_per_entry"] // later entries with nobody else asking are free
			return t
		},
		Notes: map[string]string{
			"client_delay_msgs":  "as Ricart–Agrawala; a process that re-enters with nobody else interested waits 0",
			"messages_per_entry": "as Ricart–Agrawala, but re-entries with nobody else interested cost nothing (the repeated case)",
		},
		New:    newRicartAgrawala(true),
		Breaks: []string{"ME3"},
		Messages: []proc.Message{
			raRequest{}, raReply{}, raHello{},
		},
	})
}

// Start begins an incarnation. The first one puts a record on stable
// storage, so that a restart knows it is one; a restart says HELLO, and
// after a crash inside the section waits out the hold first.
func (r *ricartAgrawala) Start(env proc.Env) {
	r.clock = max(r.clock, r.durable.start(env))
	if !r.durable.restarted {
		return
	}
	for _, p := range others(env.Self(), env.N()) {
		env.Send(p, raHello{Floor: r.clock})
	}
	if hold := r.durable.held(); hold > 0 {
		r.state = raRecovering
		env.SetTimer(hold, raRejoin{})
	}
}

// The application's messages share the Lamport clock (see clocked).
func (r *ricartAgrawala) appSend() uint64   { r.clock++; return r.clock }
func (r *ricartAgrawala) appRecv(ts uint64) { r.clock = max(r.clock, ts) + 1 }

// Timeout ends RECOVERING: the hold of the incarnation that crashed in the
// section has passed. The deferred requests are answered, and an Acquire
// made meanwhile is carried out.
func (r *ricartAgrawala) Timeout(env proc.Env, tag any) {
	if _, ok := tag.(raRejoin); !ok || r.state != raRecovering {
		return
	}
	r.state = raReleased
	r.durable.mark(env, 0, false)
	for _, t := range r.queue {
		r.reply(env, t)
	}
	r.queue = nil
	if a := r.wants; a != nil {
		r.wants = nil
		r.acquire(env, *a)
	}
}

func (r *ricartAgrawala) Input(env proc.Env, in proc.Input) {
	switch in := in.(type) {
	case Acquire:
		r.acquire(env, in)
	case Release:
		r.release(env)
	}
}

func (r *ricartAgrawala) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m := m.(type) {
	case raRequest:
		r.onRequest(env, from, m)
	case raReply:
		r.onReply(env, from, m)
	case raHello:
		r.onHello(env, from, m)
	}
}

// acquire is "to enter the section".
func (r *ricartAgrawala) acquire(env proc.Env, a Acquire) {
	switch {
	case r.state == raWanted || r.state == raHeld:
		return // a second Acquire breaks the contract; ignore it
	case r.state == raRecovering:
		r.wants = &a
		return
	}
	r.hold = a.Hold
	if r.justReleased && r.state == raJustReleased {
		r.state = raHeld
		r.durable.mark(env, r.hold, r.hold > 0)
		env.Output(Enter{})
		return
	}
	r.state = raWanted
	r.clock++
	r.durable.send(env, r.clock)
	r.req = Stamp{C: r.clock, P: env.Self()}
	r.replied = map[proc.ID]bool{}
	all := others(env.Self(), env.N())
	for _, p := range all {
		env.Send(p, raRequest{T: r.req})
	}
	r.maybeEnter(env)
}

// onRequest is "on receipt of a request ⟨Tᵢ, pᵢ⟩ at pⱼ".
func (r *ricartAgrawala) onRequest(env proc.Env, from proc.ID, m raRequest) {
	r.clock = max(r.clock, m.T.C) + 1
	if r.state == raHeld || r.state == raRecovering || (r.state == raWanted && r.req.Less(m.T)) {
		r.queue = append(r.queue, m.T)
		return
	}
	r.reply(env, m.T)
	if r.state == raJustReleased {
		r.state = raReleased
	}
}

// onReply counts a reply to the current request.
func (r *ricartAgrawala) onReply(env proc.Env, from proc.ID, m raReply) {
	r.clock = max(r.clock, m.T.C) + 1
	if r.state != raWanted || m.For != r.req {
		return // not for the request outstanding: an earlier incarnation's, or a duplicate
	}
	r.replied[from] = true
	r.maybeEnter(env)
}

// onHello: process from restarted. Its deferred request died with it (a
// new one, stamped above Floor, may have overtaken the HELLO), and it no
// longer knows ours: ask it again if it has not replied.
func (r *ricartAgrawala) onHello(env proc.Env, from proc.ID, m raHello) {
	r.clock = max(r.clock, m.Floor) + 1
	r.queue = slices.DeleteFunc(r.queue, func(t Stamp) bool { return t.P == from && t.C < m.Floor })
	if r.state == raWanted && !r.replied[from] {
		env.Send(from, raRequest{T: r.req})
	}
}

// maybeEnter enters once every other process has replied, and otherwise
// reports whom the request still waits for.
func (r *ricartAgrawala) maybeEnter(env proc.Env) {
	if wait := waitingFor(others(env.Self(), env.N()), r.replied); len(wait) > 0 {
		env.Output(Waiting{For: wait})
		return
	}
	r.state = raHeld
	r.replied = nil
	r.durable.mark(env, r.hold, r.hold > 0)
	// Requests are granted in stamp order, so the stamp is a fencing token
	// — but not with JUST-RELEASED, whose re-entries reuse an old request.
	var token uint64
	if !r.justReleased {
		token = r.req.Fencing()
	}
	env.Output(Enter{Token: token})
}

// release is "to exit the critical section".
func (r *ricartAgrawala) release(env proc.Env) {
	if r.state != raHeld {
		return // Release without Enter breaks the contract; ignore it
	}
	r.state = raReleased
	if r.justReleased && len(r.queue) == 0 {
		r.state = raJustReleased
	}
	r.durable.mark(env, 0, false)
	env.Output(Exit{})
	for _, t := range r.queue {
		r.reply(env, t)
	}
	r.queue = nil
}

// reply grants request req.
func (r *ricartAgrawala) reply(env proc.Env, req Stamp) {
	r.clock++
	r.durable.send(env, r.clock)
	env.Send(req.P, raReply{T: Stamp{C: r.clock, P: env.Self()}, For: req})
}

// raTheory is the textbook cost of Ricart–Agrawala: a request to and a
// reply from each of the N−1 others; Tanenbaum & van Steen's table counts
// the client's delay as the N−1 requests sent one after another.
func raTheory(n int) map[string]float64 {
	N := float64(n)
	return map[string]float64{"messages_per_entry": 2 * (N - 1), "client_delay_msgs": 2 * (N - 1), "sync_delay_msgs": 1}
}

// Rejoins: a restarted process rejoins (see Restarts above).
func (*ricartAgrawala) Rejoins() {}
