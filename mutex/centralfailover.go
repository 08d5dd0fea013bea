package mutex

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Central server with failover (beyond the textbooks; Coulouris et al. name
// the problem: the server is a single point of failure, and a backup is
// needed). The server logic is the textbook's, above; what is added is how
// the processes notice that the coordinator crashed, agree on a new one,
// and let it rebuild the state the old one took with it.
//
// Detection. While its queue is not empty the coordinator sends HEARTBEAT
// every Heartbeat to every queued client and to the client that holds the
// permission. A client that waits for a grant and hears nothing from its
// coordinator (no heartbeat, no grant) for Suspect suspects that it crashed
// and calls an election. Only waiting clients need to notice: a client that
// holds the permission, or wants nothing, has nothing to lose from a dead
// coordinator until it asks again. The holder answers each heartbeat with
// HELD; a holder the coordinator has not heard from for Suspect while
// others wait is taken for crashed, and the permission is taken back (a
// client that crashed in the critical section, or before its grant
// arrived, would otherwise keep it for ever).
//
// Election. The live process with the highest id becomes the coordinator,
// by the bully rule (Garcia-Molina 1982). Cohort has no election family
// yet; this is the minimal form of the rule that the failover needs, and it
// stays here so that the algorithm stands alone. A process that calls an
// election sends ELECTION to every higher id; a higher process answers OK
// and calls its own election; a process that hears no OK within Election
// wins, and a process that heard OK but no COORDINATOR within Announce
// calls the election again. The winner starts a new epoch (one more than
// the epoch it knew) and sends COORDINATOR(epoch) to all; a coordinator in
// office that gets an ELECTION (several clients suspected its predecessor
// at once) repeats its announcement to the caller rather than starting yet
// another epoch. Process 0 is the first coordinator, in epoch 0, so that
// the failure-free run is exactly the textbook algorithm.
//
// Rebuilding. The new coordinator grants nothing until it knows the state:
// every process answers COORDINATOR with STATE (requesting since when,
// holding the permission or not), and the coordinator waits for all of them
// or for Collect, whichever comes first; a process that does not answer is
// taken for crashed. If some process reports that it holds the permission
// (its grant came from the old coordinator), the lock is held until that
// process releases it to the new coordinator. The requesters form the new
// queue, ordered by the local time at which they asked (for fairness only;
// any order is safe), and granting resumes. A STATE that arrives after
// Collect is merged in the same way. But a process that has not answered
// may be a holder that is only slow, and granting at once would put two
// processes inside: so when some process is silent and none reports
// holding, the coordinator grants nothing until every silent process has
// answered or the longest hold a silent holder might have has passed: at
// least Suspect (the silence after which it takes the permission back
// from a holder it knows of), and at least MaxHold and every hold it has
// seen asked for — a live node holding for a remote client under a lease
// may answer late on a loaded machine, and its client acts for the
// lease's length (as Chubby's new master waits out its predecessor's
// leases before it serves).
//
// Epochs. Every grant, request and release carries its coordinator's epoch,
// and a client takes a grant only from its current coordinator and epoch:
// a grant the old coordinator sent just before it crashed is refused if the
// client has already reported "requesting" to the new one (otherwise it is
// taken, and the client then reports "holding").
//
// Restarts (beyond the textbooks). A process restarted from stable storage
// (a live node's data directory) does not believe it coordinates: it
// calls an election. Epochs are on record (synced before a new one is
// announced), so a restarted coordinator's epoch, and its fencing tokens,
// start above every earlier one; a process that gets an announcement of
// an older epoch answers with its own, and the announcer, if the bully
// rule still makes it the winner, starts an epoch above that one. A
// process that crashed holding the permission for a remote holder (a hold
// on record: Acquire.Hold) reports itself holding until the hold has
// passed, and a coordinator takes the permission back from a silent
// holder only after the holder's hold, not after Suspect alone. The
// longest hold a process has seen asked for is on record too: a
// restarted process whose peers' answers reach it late (their links to
// it come back slowly) wins an epoch that a higher process has won
// already, hears from nobody, and must wait that long before it grants,
// by which time the higher winner's announcement has reached it.
//
// Assumptions. Reliable FIFO channels (a STATE precedes the RELEASE the same
// process sends after it; TCP gives this), crash-stop processes, and timeouts
// that match the network: Suspect longer than Heartbeat plus a round trip,
// Election and Collect longer than a round trip. That is a synchronous
// system, which is what a timeout-based failure detector needs: if a live
// coordinator is suspected, two coordinators can each grant the permission,
// and if a live holder is taken for crashed its permission is granted
// again; either way ME1 can fail. The coordinator's own client requests go
// through the same logic as a local call.
//
// Cost. Without failures: the textbook's 3 messages per client entry, plus,
// every Heartbeat while someone waits, one HEARTBEAT per waiting client and
// a HEARTBEAT and a HELD for the holder. A failover
// costs at most N·(N−1)/2 ELECTION and as many OK messages (the bully
// worst case), N−1 COORDINATOR and N−1 STATE messages, and Suspect +
// Election + Collect of time without grants (silentWait more when a
// process, the crashed coordinator at least, does not answer and nobody
// holds: Suspect, or the longest hold).
type centralFailover struct {
	cfg     FailoverConfig
	self    proc.ID
	n       int
	coord   proc.ID // the coordinator this process follows
	epoch   uint64  // its epoch
	granted uint64  // grants in this epoch (the fencing token's low bits)

	// The client side.
	requesting bool
	since      time.Duration // local time of the current request
	inCS       bool
	suspectT   proc.TimerID   // running while waiting for a grant
	hold       time.Duration  // the current request's Acquire.Hold
	phantom    bool           // restarted holding for a remote holder: holding until the hold passes
	wants      *Acquire       // an Acquire made meanwhile
	durable    durableCounter // the epoch bound and the hold, across restarts

	// The election.
	electing bool         // sent ELECTION, waiting for OK
	electT   proc.TimerID // Election, while electing
	awaitT   proc.TimerID // Announce, after an OK

	// The server side (while coord == self).
	collecting bool
	states     map[proc.ID]cfoState // STATE replies while collecting
	collectT   proc.TimerID
	holder     proc.ID
	heard      time.Duration             // local time the holder last showed signs of life
	holds      map[proc.ID]time.Duration // the holds of requests, by requester
	queue      []proc.ID
	beatT      proc.TimerID  // Heartbeat, while the queue is not empty
	silent     []proc.ID     // did not answer COORDINATOR, and may hold: no grants meanwhile
	silentT    proc.TimerID  // running while silent is not empty (see silentWait)
	silentAt   time.Duration // local time silent was set
	longest    time.Duration // the longest hold this process has seen asked for
}

// FailoverConfig holds central-failover's timeouts. They are measured on the
// local clock, in the run's virtual time. A zero field takes its default.
type FailoverConfig struct {
	// Heartbeat is the coordinator's period of heartbeats to the clients
	// in its queue. Default 10ms.
	Heartbeat time.Duration
	// Suspect is how long a waiting client goes without word from its
	// coordinator before it calls an election. It must exceed Heartbeat
	// plus a round trip. Default 40ms.
	Suspect time.Duration
	// Election is how long a candidate waits for an OK from a higher
	// process before it declares itself the coordinator. It must exceed
	// a round trip. Default 10ms.
	Election time.Duration
	// Announce is how long a process that got an OK waits for the winner's
	// COORDINATOR before it calls the election again. Default 40ms.
	Announce time.Duration
	// Collect is how long a new coordinator waits for the processes'
	// states before it takes the silent ones for crashed. It must exceed a
	// round trip. Default 10ms.
	Collect time.Duration
	// MaxHold bounds the Acquire.Hold of every request (a live lock's
	// longest lease). A new coordinator that has not heard from some
	// process, and has no holder reported, grants nothing until that
	// process answers or the longest of Suspect, MaxHold and every hold it
	// has seen asked for has passed: the silent process may be a live
	// holder that is only slow, whose remote holder acts for that long.
	// 0: no bound is known beyond the holds seen.
	MaxHold time.Duration
}

// DefaultFailoverConfig returns the defaults, fit for networks whose round
// trip stays under 10ms.
func DefaultFailoverConfig() FailoverConfig {
	return FailoverConfig{
		Heartbeat: 10 * time.Millisecond,
		Suspect:   40 * time.Millisecond,
		Election:  10 * time.Millisecond,
		Announce:  40 * time.Millisecond,
		Collect:   10 * time.Millisecond,
	}
}

// withDefaults fills the zero fields.
func (c FailoverConfig) withDefaults() FailoverConfig {
	d := DefaultFailoverConfig()
	for _, f := range []struct{ v, def *time.Duration }{
		{&c.Heartbeat, &d.Heartbeat}, {&c.Suspect, &d.Suspect}, {&c.Election, &d.Election},
		{&c.Announce, &d.Announce}, {&c.Collect, &d.Collect},
	} {
		if *f.v == 0 {
			*f.v = *f.def
		}
	}
	return c
}

// Validate reports a negative timeout, or a Suspect no longer than
// Heartbeat (clients would suspect a healthy coordinator between two
// heartbeats).
func (c FailoverConfig) Validate() error {
	c = c.withDefaults()
	if c.Heartbeat < 0 || c.Suspect < 0 || c.Election < 0 || c.Announce < 0 || c.Collect < 0 || c.MaxHold < 0 {
		return errors.New("central-failover: timeouts must not be negative")
	}
	if c.Suspect <= c.Heartbeat {
		return fmt.Errorf("central-failover: suspect timeout %v must exceed the heartbeat period %v", c.Suspect, c.Heartbeat)
	}
	return nil
}

// NewCentralFailover returns the constructor of central-failover processes
// with the given timeouts.
func NewCentralFailover(cfg FailoverConfig) (func(proc.ID, int) proc.Process, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return func(id proc.ID, n int) proc.Process {
		return &centralFailover{cfg: cfg, self: id, n: n, coord: 0, holder: proc.None, durable: durableCounter{block: 1}}
	}, nil
}

func newCentralFailoverDefault(id proc.ID, n int) proc.Process {
	mk, _ := NewCentralFailover(FailoverConfig{})
	return mk(id, n)
}

// The messages of the failover, beside REQUEST, GRANT and RELEASE.
type (
	// cfoHeartbeat tells a queued client that its coordinator lives, and
	// asks the holder whether it does.
	cfoHeartbeat struct {
		Epoch uint64 `json:"epoch"`
	}
	// cfoHeld answers a heartbeat: the holder lives and is still inside.
	cfoHeld struct {
		Epoch uint64 `json:"epoch"`
	}
	// cfoElection calls an election (to higher ids).
	cfoElection struct{}
	// cfoOK answers an election: a higher process is alive and takes over.
	cfoOK struct{}
	// cfoCoordinator announces the winner of an election and asks every
	// process for its state.
	cfoCoordinator struct {
		Epoch uint64 `json:"epoch"`
	}
	// cfoState is a process's answer to COORDINATOR.
	cfoState struct {
		Epoch      uint64        `json:"epoch"`
		Requesting bool          `json:"requesting,omitempty"`
		Since      time.Duration `json:"since,omitempty"` // local time of the request
		Holding    bool          `json:"holding,omitempty"`
		Hold       time.Duration `json:"hold,omitempty"` // the request's or the holding's Acquire.Hold
	}
)

func (cfoHeartbeat) Kind() string       { return "heartbeat" }
func (m cfoHeartbeat) String() string   { return fmt.Sprintf("ALIVE(e%d)", m.Epoch) }
func (cfoHeld) Kind() string            { return "held" }
func (m cfoHeld) String() string        { return fmt.Sprintf("HELD(e%d)", m.Epoch) }
func (cfoElection) Kind() string        { return "election" }
func (cfoElection) String() string      { return "ELECTION" }
func (cfoOK) Kind() string              { return "ok" }
func (cfoOK) String() string            { return "OK" }
func (cfoCoordinator) Kind() string     { return "coordinator" }
func (m cfoCoordinator) String() string { return fmt.Sprintf("COORDINATOR(e%d)", m.Epoch) }
func (cfoState) Kind() string           { return "state" }

func (m cfoState) String() string {
	switch {
	case m.Holding:
		return fmt.Sprintf("STATE(e%d holding)", m.Epoch)
	case m.Requesting:
		return fmt.Sprintf("STATE(e%d requesting since %v)", m.Epoch, m.Since)
	}
	return fmt.Sprintf("STATE(e%d idle)", m.Epoch)
}

// The failover's timer tags.
type cfoTimer uint8

const (
	cfoSuspect cfoTimer = iota + 1
	cfoElect
	cfoAwait
	cfoCollect
	cfoBeat
	cfoUnhold // a restarted holder's hold has passed
	cfoSilent // the processes silent since the collect are taken for crashed
)

func (t cfoTimer) String() string {
	return [...]string{"", "suspect", "election", "await-coordinator", "collect", "heartbeat", "unhold", "silent"}[t]
}

// Start begins an incarnation: the first as the textbook's (process 0
// coordinates epoch 0); a restart follows nobody and calls an election
// (see Restarts).
func (f *centralFailover) Start(env proc.Env) {
	f.epoch = max(f.epoch, f.durable.start(env))
	f.longest = max(f.longest, f.durable.longest)
	if !f.durable.restarted {
		return
	}
	f.coord = proc.None
	if hold := f.durable.held(); hold > 0 {
		f.inCS, f.phantom, f.hold = true, true, hold
		env.SetTimer(hold, cfoUnhold)
	}
	f.startElection(env)
}

func (f *centralFailover) Input(env proc.Env, in proc.Input) {
	switch in := in.(type) {
	case Acquire:
		if f.phantom {
			f.wants = &in
			return
		}
		f.acquire(env, in)
	case Release:
		if !f.phantom {
			f.release(env)
		}
	}
}

func (f *centralFailover) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m := m.(type) {
	case cenRequest:
		f.onRequest(env, from, m.Hold)
	case cenGrant:
		f.onGrant(env, from, m)
	case cenRelease:
		f.onRelease(env, from)
	case cfoHeartbeat:
		f.onHeartbeat(env, from, m)
	case cfoHeld:
		f.onHeld(env, from, m)
	case cfoElection:
		f.onElection(env, from)
	case cfoOK:
		f.onOK(env)
	case cfoCoordinator:
		f.onCoordinator(env, from, m)
	case cfoState:
		f.onState(env, from, m)
	}
}

func (f *centralFailover) Timeout(env proc.Env, tag any) {
	switch tag {
	case cfoSuspect:
		f.suspectT = 0
		if f.requesting && f.coord != f.self {
			f.startElection(env)
		}
	case cfoElect:
		f.electT = 0
		f.electing = false
		f.becomeCoordinator(env)
	case cfoAwait:
		f.awaitT = 0
		f.startElection(env)
	case cfoCollect:
		f.collectT = 0
		f.finishCollect(env)
	case cfoBeat:
		f.beatT = 0
		f.onBeat(env)
	case cfoSilent:
		f.silentT = 0
		if left := f.silentAt + f.silentWait() - env.Now(); left > 0 {
			f.silentT = env.SetTimer(left, cfoSilent) // a longer hold was asked for meanwhile
			break
		}
		f.silent = nil
		f.grantNext(env)
	case cfoUnhold:
		if f.phantom {
			f.release(env) // no Exit: this incarnation never entered
			f.phantom = false
			if a := f.wants; a != nil {
				f.wants = nil
				f.acquire(env, *a)
			}
		}
	}
}

// --- the client ---

// acquire is "to enter": ask the coordinator and watch it.
func (f *centralFailover) acquire(env proc.Env, a Acquire) {
	if f.requesting || f.inCS {
		return // a second Acquire breaks the contract; ignore it
	}
	f.requesting, f.since, f.hold = true, env.Now(), a.Hold
	f.noteHold(env, a.Hold)
	switch f.coord {
	case f.self:
		f.onRequest(env, f.self, a.Hold)
		return
	case proc.None: // restarted, no coordinator yet: the STATE it asks for says so
		return
	}
	env.Output(Waiting{For: []proc.ID{f.coord}})
	env.Send(f.coord, cenRequest{Epoch: f.epoch, Hold: a.Hold})
	f.watch(env)
}

// watch (re)starts the suspect timer of a waiting client.
func (f *centralFailover) watch(env proc.Env) {
	f.cancel(env, &f.suspectT)
	if f.requesting && f.coord != f.self {
		f.suspectT = env.SetTimer(f.cfg.Suspect, cfoSuspect)
	}
}

// onGrant enters, if the grant is from the current coordinator and epoch.
func (f *centralFailover) onGrant(env proc.Env, from proc.ID, m cenGrant) {
	if !f.requesting || from != f.coord || m.Epoch != f.epoch {
		return // a stale grant from a coordinator this process has left behind
	}
	f.cancel(env, &f.suspectT)
	f.requesting, f.inCS = false, true
	f.durable.mark(env, f.hold, f.hold > 0)
	env.Output(Enter{Token: m.token()})
}

// release is "to exit": give the permission back to the current coordinator.
func (f *centralFailover) release(env proc.Env) {
	if !f.inCS {
		return // Release without Enter breaks the contract; ignore it
	}
	f.inCS = false
	f.durable.mark(env, 0, false)
	if !f.phantom {
		env.Output(Exit{})
	}
	switch f.coord {
	case f.self:
		f.onRelease(env, f.self)
	case proc.None:
	default:
		env.Send(f.coord, cenRelease{Epoch: f.epoch})
	}
}

// onHeartbeat: the coordinator lives; wait on, or say that this process
// still holds the permission.
func (f *centralFailover) onHeartbeat(env proc.Env, from proc.ID, m cfoHeartbeat) {
	if from != f.coord || m.Epoch != f.epoch {
		return
	}
	if f.inCS {
		env.Send(from, cfoHeld{Epoch: f.epoch})
		return
	}
	f.watch(env)
}

// --- the server ---

// onRequest is central's "On REQUEST from p", at the current coordinator.
func (f *centralFailover) onRequest(env proc.Env, from proc.ID, hold time.Duration) {
	if f.coord != f.self {
		return // not the coordinator (any more): drop it
	}
	if f.collecting {
		// The requester answered COORDINATOR before it asked (FIFO), and
		// its STATE is here; the self reads its own state at the end.
		if st, ok := f.states[from]; ok && from != f.self {
			st.Requesting, st.Since, st.Hold = true, env.Now(), hold
			f.states[from] = st
		}
		return
	}
	if from == f.holder || slices.Contains(f.queue, from) {
		return
	}
	f.setHold(env, from, hold)
	if f.free() {
		f.grant(env, from)
		return
	}
	f.enqueue(env, from)
}

// free says the permission is the coordinator's to grant: nobody holds it,
// and no process that might hold it is silent.
func (f *centralFailover) free() bool {
	return f.holder == proc.None && len(f.silent) == 0
}

// enqueue queues p and keeps the heartbeats going. The watch on the
// holder starts afresh with them: nobody asked after it while nobody
// waited.
func (f *centralFailover) enqueue(env proc.Env, p proc.ID) {
	f.queue = append(f.queue, p)
	if p == f.self {
		env.Output(Waiting{For: []proc.ID{f.holder}})
	}
	if f.beatT == 0 {
		f.heard = env.Now()
		f.beatT = env.SetTimer(f.cfg.Heartbeat, cfoBeat)
	}
}

// setHold notes the hold of p's request (see onBeat).
func (f *centralFailover) setHold(env proc.Env, p proc.ID, hold time.Duration) {
	f.noteHold(env, hold)
	if f.holds == nil {
		f.holds = map[proc.ID]time.Duration{}
	}
	if hold > 0 {
		f.holds[p] = hold
	} else {
		delete(f.holds, p)
	}
}

// noteHold notes a hold some request asked for: the longest is kept on
// stable storage, so that a restarted process knows it too (see
// silentWait).
func (f *centralFailover) noteHold(env proc.Env, hold time.Duration) {
	if hold > f.longest {
		f.longest = hold
		f.durable.seen(env, hold)
	}
}

// silentWait is how long a new coordinator waits for the processes silent
// since its collect before it grants: Suspect, or the longest hold a
// silent holder's remote holder might have (MaxHold, or the longest this
// process has seen asked for, since the clients of one lock ask alike).
func (f *centralFailover) silentWait() time.Duration {
	return max(f.cfg.Suspect, f.cfg.MaxHold, f.longest)
}

// grant hands the permission to p.
func (f *centralFailover) grant(env proc.Env, p proc.ID) {
	f.holder, f.heard = p, env.Now()
	env.Output(Lent{To: p})
	f.granted++
	g := cenGrant{Epoch: f.epoch, Seq: f.granted}
	if p == f.self {
		f.onGrant(env, f.self, g)
		return
	}
	if slices.Contains(f.queue, f.self) {
		env.Output(Waiting{For: []proc.ID{p}})
	}
	env.Send(p, g)
}

// onRelease is central's "On RELEASE": grant to the head of the queue.
func (f *centralFailover) onRelease(env proc.Env, from proc.ID) {
	if f.coord != f.self {
		return
	}
	if f.collecting {
		if st, ok := f.states[from]; ok && from != f.self {
			st.Holding = false
			f.states[from] = st
		}
		return
	}
	if from != f.holder {
		return
	}
	f.holder = proc.None
	env.Output(Lent{To: proc.None})
	f.grantNext(env)
}

func (f *centralFailover) grantNext(env proc.Env) {
	if !f.free() || len(f.queue) == 0 {
		return
	}
	next := f.queue[0]
	f.queue = f.queue[1:]
	f.grant(env, next)
}

// onBeat sends a heartbeat to every queued client and to the holder, and
// takes the permission back from a holder silent for Suspect.
func (f *centralFailover) onBeat(env proc.Env) {
	if f.coord != f.self || f.collecting || len(f.queue) == 0 {
		return
	}
	if f.holder != proc.None && f.holder != f.self && env.Now()-f.heard > max(f.cfg.Suspect, f.holds[f.holder]) {
		f.holder = proc.None // crashed inside, or before its grant arrived
		env.Output(Lent{To: proc.None})
		f.grantNext(env)
		if len(f.queue) == 0 {
			return
		}
	}
	for _, p := range f.queue {
		if p != f.self {
			env.Send(p, cfoHeartbeat{Epoch: f.epoch})
		}
	}
	if f.holder != proc.None && f.holder != f.self {
		env.Send(f.holder, cfoHeartbeat{Epoch: f.epoch})
	}
	f.beatT = env.SetTimer(f.cfg.Heartbeat, cfoBeat)
}

// onHeld: the holder lives.
func (f *centralFailover) onHeld(env proc.Env, from proc.ID, m cfoHeld) {
	if f.coord == f.self && m.Epoch == f.epoch && from == f.holder {
		f.heard = env.Now()
	}
}

// --- the election (the bully rule) ---

// startElection sends ELECTION to every higher id, or wins at once if
// there is none.
func (f *centralFailover) startElection(env proc.Env) {
	if f.electing || f.awaitT != 0 {
		return // already running
	}
	if int(f.self) == f.n-1 {
		f.becomeCoordinator(env)
		return
	}
	f.electing = true
	for p := f.self + 1; int(p) < f.n; p++ {
		env.Send(p, cfoElection{})
	}
	f.electT = env.SetTimer(f.cfg.Election, cfoElect)
}

// onElection: a lower process calls an election; answer, and take over.
// A coordinator already in office repeats its announcement to the caller
// instead.
func (f *centralFailover) onElection(env proc.Env, from proc.ID) {
	env.Send(from, cfoOK{})
	if f.coord == f.self {
		env.Send(from, cfoCoordinator{Epoch: f.epoch})
		return
	}
	f.startElection(env)
}

// onOK: a higher process is alive; wait for its announcement.
func (f *centralFailover) onOK(env proc.Env) {
	if !f.electing {
		return
	}
	f.electing = false
	f.cancel(env, &f.electT)
	f.awaitT = env.SetTimer(f.cfg.Announce, cfoAwait)
}

// becomeCoordinator starts a new epoch and asks everyone for their state.
func (f *centralFailover) becomeCoordinator(env proc.Env) {
	f.electing = false
	f.cancel(env, &f.electT)
	f.cancel(env, &f.awaitT)
	f.cancel(env, &f.suspectT)
	f.cancel(env, &f.beatT)
	f.epoch++
	f.durable.send(env, f.epoch) // on record before it is announced
	f.coord = f.self
	f.collecting = true
	f.states = map[proc.ID]cfoState{}
	f.holder, f.queue = proc.None, nil
	f.cancel(env, &f.silentT)
	f.silent = nil
	for _, p := range others(f.self, f.n) {
		env.Send(p, cfoCoordinator{Epoch: f.epoch})
	}
	f.cancel(env, &f.collectT)
	f.collectT = env.SetTimer(f.cfg.Collect, cfoCollect)
	if f.n == 1 {
		f.finishCollect(env)
	}
}

// onCoordinator follows a newer coordinator and tells it this process's
// state. Announcements are ordered by (epoch, id): two winners of one
// epoch (timeouts too short for the network) resolve to the higher id.
func (f *centralFailover) onCoordinator(env proc.Env, from proc.ID, m cfoCoordinator) {
	if m.Epoch < f.epoch {
		// Stale: its sender restarted behind the times. Tell it the
		// epoch; if it still wins by the bully rule, it starts a later one.
		env.Send(from, f.state())
		return
	}
	if m.Epoch == f.epoch && from < f.coord {
		return // stale
	}
	f.electing = false
	f.cancel(env, &f.electT)
	f.cancel(env, &f.awaitT)
	if m.Epoch == f.epoch && from == f.coord {
		f.watch(env) // a repeated announcement: the coordinator lives
		return
	}
	if f.coord == f.self {
		// Superseded: drop the server's state.
		f.cancel(env, &f.collectT)
		f.cancel(env, &f.beatT)
		f.cancel(env, &f.silentT)
		f.collecting, f.states, f.silent = false, nil, nil
		f.holder, f.queue = proc.None, nil
	}
	f.coord, f.epoch = from, m.Epoch
	f.durable.send(env, f.epoch)
	env.Send(from, f.state())
	if f.requesting {
		env.Output(Waiting{For: []proc.ID{f.coord}})
	}
	f.watch(env)
}

func (f *centralFailover) state() cfoState {
	return cfoState{Epoch: f.epoch, Requesting: f.requesting, Since: f.since, Holding: f.inCS, Hold: f.hold}
}

// onState collects a STATE for the rebuild, or merges a late one.
func (f *centralFailover) onState(env proc.Env, from proc.ID, m cfoState) {
	if f.coord == f.self && m.Epoch > f.epoch {
		// This coordinator announced an epoch older than one in use: it
		// restarted behind the times. Start a later one.
		f.epoch = m.Epoch
		f.becomeCoordinator(env)
		return
	}
	if f.coord != f.self || m.Epoch != f.epoch {
		return
	}
	if f.collecting {
		f.states[from] = m
		if len(f.states) == f.n-1 {
			f.finishCollect(env)
		}
		return
	}
	// A process taken for crashed was only slow: merge what it says.
	if i := slices.Index(f.silent, from); i >= 0 {
		f.silent = slices.Delete(f.silent, i, i+1)
		if len(f.silent) == 0 {
			f.cancel(env, &f.silentT)
		}
	}
	switch {
	case m.Holding && f.holder == proc.None:
		f.setHold(env, from, m.Hold)
		f.holder, f.heard = from, env.Now()
		env.Output(Lent{To: from})
	case m.Requesting && f.holder != from && !slices.Contains(f.queue, from):
		f.setHold(env, from, m.Hold)
		f.enqueue(env, from)
	}
	f.grantNext(env)
}

// finishCollect rebuilds the server's state from the reports: the holder,
// if one reports holding, and the queue of requesters ordered by the local
// time of their requests.
func (f *centralFailover) finishCollect(env proc.Env) {
	if !f.collecting {
		return
	}
	f.cancel(env, &f.collectT)
	f.collecting = false
	f.states[f.self] = f.state()
	ids := make([]proc.ID, 0, len(f.states))
	for p := range f.states {
		ids = append(ids, p)
	}
	slices.Sort(ids)
	var waiting []proc.ID
	for _, p := range ids {
		st := f.states[p]
		f.setHold(env, p, st.Hold)
		switch {
		case st.Holding && f.holder == proc.None:
			f.holder, f.heard = p, env.Now()
			env.Output(Lent{To: p})
		case st.Requesting:
			waiting = append(waiting, p)
		}
	}
	slices.SortStableFunc(waiting, func(a, b proc.ID) int {
		return cmp.Compare(f.states[a].Since, f.states[b].Since)
	})
	if f.holder == proc.None {
		for _, p := range others(f.self, f.n) {
			if _, ok := f.states[p]; !ok {
				f.silent = append(f.silent, p)
			}
		}
		if len(f.silent) > 0 {
			f.silentAt = env.Now()
			f.silentT = env.SetTimer(f.silentWait(), cfoSilent)
		}
	}
	f.states = nil
	for _, p := range waiting {
		if f.free() {
			f.grant(env, p)
		} else {
			f.enqueue(env, p)
		}
	}
}

func (f *centralFailover) cancel(env proc.Env, t *proc.TimerID) {
	if *t != 0 {
		env.CancelTimer(*t)
		*t = 0
	}
}

func init() {
	register(proc.Algorithm{
		Name:    "central-failover",
		Summary: "central server that survives the coordinator's crash: heartbeats, bully election of the highest live id, queue rebuilt from every process's state",
		Source:  "Coulouris et al.; Tanenbaum & van Steen §6.3; failover beyond the textbooks (election: the bully rule, Garcia-Molina 1982)",
		Assumes: proc.Assumptions{Reliable: true, FIFO: true, Synchronous: true, Failures: "crash-stop"},
		Theory:  centralTheory,
		Notes: map[string]string{
			"messages_per_entry": "as central, plus the coordinator's heartbeats to waiting processes every 10 ms: they grow with the queue under saturation",
		},
		New:    newCentralFailoverDefault,
		Breaks: []string{"ME3"},
		Messages: []proc.Message{
			cenRequest{}, cenGrant{}, cenRelease{},
			cfoHeartbeat{}, cfoHeld{}, cfoElection{}, cfoOK{}, cfoCoordinator{}, cfoState{},
		},
		Scenario: `nodes: 5
network:
  latency: uniform:500us,2ms
  fifo: true
faults:
  - crash 0 at 20ms
`,
	})
}

// Rejoins: a restarted process rejoins (see Restarts above).
func (*centralFailover) Rejoins() {}
