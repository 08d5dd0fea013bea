package consensus

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Locks is a lock service on a Raft log, in the manner of Chubby (Burrows,
// "The Chubby lock service", OSDI 2006) and of etcd's locks on leases:
// every decision is an entry of the log, so it survives any minority of
// crashes and every restart, and the fencing token of a grant is the index
// of the entry that made it — it strictly increases for ever.
//
// Sessions. A client opens a session with a time to live; the session's
// id is the index of its entry (ids never repeat). The client keeps it
// alive by KeepAlive, which only the leader answers; a session the leader
// has not heard of for its TTL is expired by an entry, which releases its
// locks and withdraws its requests. A restarted client, or one cut off for
// a TTL, has lost its session and everything it held.
//
//	on Open(ttl):                entry; session = its index; at the leader,
//	                             deadline = now + ttl
//	on Acquire(session, lock):   entry; free → granted, token = the entry's index;
//	                             held → queued (FIFO). At the leader, an Acquire
//	                             of a lock held by another that it cannot grant
//	                             before its queue's turn waits to be appended
//	                             with the next entry, or at the next heartbeat
//	                             (see deferAcquire)
//	on Release(session, lock):   entry; the next in the queue is granted in the
//	                             same entry (a handoff is one commit)
//	on KeepAlive(session):       at the leader, if it holds its lease (Raft.Lease):
//	                             deadline = now + ttl, answer ok; if its lease
//	                             has lapsed: entry Renew(session), and when it
//	                             applies, deadline = now + ttl (at the leader),
//	                             answer ok
//	every heartbeat (leader):    entry Expire(s, the renewal it saw) for each
//	                             session past its deadline; ignored if applied
//	                             after a later Renew
//	on becoming leader (Ready):  deadline = now + ttl for every session
//
// Why a client may trust a grant until its deadline. A client that sent a
// KeepAlive at time s (on its clock) and got "ok" may act as the holder of
// what its session holds until s + Valid, Valid = TTL·(1−ρ)/(1+ρ), ρ the
// drift bound (Config.MaxDrift): the leader that answered received it
// after s and set its deadline a TTL of its own clock later; a leader that
// follows it can only be elected once its lease is over, after that
// answer, and extends every session by a TTL when it takes over. A
// renewal through the log is answered only once committed, after s; the
// leader applying it sets its deadline a TTL later, a later leader
// extends every session when it takes over, and an expiry proposed before
// the renewal applied is ignored. So no
// expiry — the only way a lock changes hands without its holder's
// release — commits before s + Valid, on any clock within the bound. The
// checker "lock-leases" verifies it on the traces: no two clients hold
// one lock at once, by their own reckoning, and tokens increase.
//
// Retries. Operations carry a per-session sequence number; the table
// ignores one it has applied (a retry that reached the log twice). Open
// has no session yet: a retried Open may open two, and the one the client
// does not use expires.
type Locks struct {
	raft *Raft
	cfg  Config
	log  Log // the digest of every entry, for the Raft checkers

	sessions map[uint64]*session
	locks    map[string]*lockState
	refs     int // the sessions' references to locks (held or waited for), in all

	// Leader only, volatile: each session's deadline on our clock.
	leases leaderLeases[uint64]
	// Leader only, volatile: Acquires deferred (deferAcquire), in the
	// order they came.
	later []LockOp
}

type session struct {
	TTL     time.Duration `json:"ttl"`
	Owner   proc.ID       `json:"owner"`             // the server it was opened through
	Seq     uint64        `json:"seq"`               // the last operation applied
	Locks   []string      `json:"locks"`             // held or waited for, in the order asked
	Renewed uint64        `json:"renewed,omitempty"` // the last renew entry applied (see touch)
}

type lockState struct {
	Holder uint64   `json:"holder"` // a session; 0: free
	Seq    uint64   `json:"seq"`    // the holder's Acquire
	Token  uint64   `json:"token"`  // the entry that granted it
	Queue  []waiter `json:"queue,omitempty"`
}

type waiter struct {
	Session uint64 `json:"session"`
	Seq     uint64 `json:"seq"` // its Acquire
}

// Limits that keep the replicated state bounded, and every snapshot
// within LocksSnapshotBound: sessions, locks a session holds or waits
// for, such references across the sessions, and a lock's name.
const (
	MaxSessions        = 1 << 16
	MaxLocksPerSession = 64
	MaxLockRefs        = 1 << 16
	MaxLockName        = 256
)

// LocksSnapshotBound is the largest snapshot Locks makes: each session's
// fields, and each reference to a lock: its name in its session's list
// and as the lock's key, at most MaxLockName bytes as JSON writes it,
// and the lock's fields or a waiter's.
const LocksSnapshotBound = MaxSessions*160 + MaxLockRefs*(2*MaxLockName+128) + 4<<10

// NewLocks returns server id of an n-server lock service. Proposals are
// forwarded to the leader whatever cfg.Forward says.
func NewLocks(id proc.ID, n int, cfg Config) *Locks {
	cfg.Forward = true
	l := &Locks{cfg: cfg}
	l.reset()
	l.raft = New(id, n, cfg, l)
	return l
}

func (l *Locks) reset() {
	l.log = Log{}
	l.sessions = map[uint64]*session{}
	l.locks = map[string]*lockState{}
	l.refs = 0
}

// Raft is the server's replicated log.
func (l *Locks) Raft() *Raft { return l.raft }

// Valid is how long after sending a KeepAlive that was answered ok (or an
// Open that was answered) a client may count on its session.
func (l *Locks) Valid(ttl time.Duration) time.Duration { return ValidFor(ttl, l.cfg.MaxDrift) }

// ValidFor is how long a lease of ttl may be counted on by a client whose
// clock, like the leader's, may drift by up to drift: ttl·(1−drift)/(1+drift).
func ValidFor(ttl time.Duration, drift float64) time.Duration {
	return time.Duration(float64(ttl) * (1 - drift) / (1 + drift))
}

// Inputs.

// OpenSession opens a session of the given TTL; Tag, chosen by the
// client, finds the Opened answer. The session's owner is the server it
// is given to (elections report it as the leader).
type OpenSession struct {
	Tag uint64        `json:"tag"`
	TTL time.Duration `json:"ttl"`
}

// Acquire asks for Lock on behalf of Session; Release gives it back, or
// withdraws the request.
type Acquire struct {
	Session uint64 `json:"session"`
	Seq     uint64 `json:"seq"`
	Lock    string `json:"lock"`
}

type Release struct {
	Session uint64 `json:"session"`
	Seq     uint64 `json:"seq"`
	Lock    string `json:"lock"`
}

// CloseSession ends a session, releasing everything it holds.
type CloseSession struct {
	Session uint64 `json:"session"`
	Seq     uint64 `json:"seq"`
}

// KeepAlive renews a session (Seq finds the answer).
type KeepAlive struct {
	Session uint64 `json:"session"`
	Seq     uint64 `json:"seq"`
}

func (OpenSession) Kind() string  { return "open-session" }
func (Acquire) Kind() string      { return "acquire" }
func (Release) Kind() string      { return "release" }
func (CloseSession) Kind() string { return "close-session" }
func (KeepAlive) Kind() string    { return "keepalive" }

// Outputs: on every server that applies the entry, except KeptAlive,
// which the server that was given the KeepAlive outputs.

// Opened: a session is open. Valid as in KeptAlive, counted from the
// sending of the OpenSession.
type Opened struct {
	Tag     uint64        `json:"tag"`
	Session uint64        `json:"session"`
	TTL     time.Duration `json:"ttl"`
	Valid   time.Duration `json:"valid"`
}

// Granted: Session holds Lock, asked for by its Acquire Seq; Token is the
// index of the granting entry; Owner, the server the session was opened
// through.
type Granted struct {
	Lock    string  `json:"lock"`
	Session uint64  `json:"session"`
	Seq     uint64  `json:"seq"`
	Token   uint64  `json:"token"`
	Owner   proc.ID `json:"owner"`
}

// Released: Session no longer holds (Token > 0) or waits for (Token 0)
// Lock, by its Release Seq or, Seq 0, because the session ended.
type Released struct {
	Lock    string `json:"lock"`
	Session uint64 `json:"session"`
	Seq     uint64 `json:"seq,omitempty"`
	Token   uint64 `json:"token,omitempty"`
}

// Closed: a session ended, by CloseSession or, Expired, by the leader.
type Closed struct {
	Session uint64 `json:"session"`
	Expired bool   `json:"expired,omitempty"`
}

// KeptAlive answers a KeepAlive. OK: renewed, and the session may be
// counted on until Valid after the KeepAlive was sent. Gone: the session
// is over (expired, closed, or never known). Neither: no leader could
// answer; try again.
type KeptAlive struct {
	Session uint64        `json:"session"`
	Seq     uint64        `json:"seq"`
	OK      bool          `json:"ok,omitempty"`
	Gone    bool          `json:"gone,omitempty"`
	Valid   time.Duration `json:"valid,omitempty"`
}

// LockRefused answers an operation the table cannot apply.
type LockRefused struct {
	Tag     uint64 `json:"tag,omitempty"`
	Session uint64 `json:"session,omitempty"`
	Seq     uint64 `json:"seq,omitempty"`
	Reason  string `json:"reason"`
}

func (Opened) Kind() string      { return "opened" }
func (Granted) Kind() string     { return "granted" }
func (Released) Kind() string    { return "released" }
func (Closed) Kind() string      { return "closed" }
func (KeptAlive) Kind() string   { return "kept-alive" }
func (LockRefused) Kind() string { return "lock-refused" }

// Messages besides Raft's: a KeepAlive given to a follower goes to the
// leader as Touch and comes back as Touched.
type Touch struct {
	Session uint64 `json:"session"`
	Seq     uint64 `json:"seq"`
}

type Touched struct {
	Session uint64 `json:"session"`
	Seq     uint64 `json:"seq"`
	OK      bool   `json:"ok,omitempty"`
	Gone    bool   `json:"gone,omitempty"`
}

func (Touch) Kind() string   { return "touch" }
func (Touched) Kind() string { return "touched" }

// LockOp is an operation as an entry's data (JSON).
type LockOp struct {
	Op      string        `json:"op"` // open, acquire, release, close, expire, renew
	Tag     uint64        `json:"tag,omitempty"`
	Owner   proc.ID       `json:"owner,omitempty"`
	TTL     time.Duration `json:"ttl,omitempty"`
	Session uint64        `json:"session,omitempty"`
	Seq     uint64        `json:"seq,omitempty"`
	Lock    string        `json:"lock,omitempty"`
	Based   uint64        `json:"based,omitempty"` // an expire's: the session's Renewed when proposed
}

// Process.

func (l *Locks) Start(env proc.Env) {
	l.raft.Start(env)
	l.lead(env)
}

func (l *Locks) Input(env proc.Env, in proc.Input) {
	switch in := in.(type) {
	case OpenSession:
		l.propose(env, LockOp{Op: "open", Tag: in.Tag, TTL: in.TTL, Owner: l.raft.self})
	case Acquire:
		op := LockOp{Op: "acquire", Session: in.Session, Seq: in.Seq, Lock: in.Lock}
		if !l.deferAcquire(op) {
			l.propose(env, op)
		}
	case Release:
		l.propose(env, LockOp{Op: "release", Session: in.Session, Seq: in.Seq, Lock: in.Lock})
	case CloseSession:
		l.propose(env, LockOp{Op: "close", Session: in.Session, Seq: in.Seq})
	case Replay:
		l.replayHolders(env)
	case KeepAlive:
		switch lead, _ := l.raft.Leader(); {
		case l.leases.leading:
			if ok, gone, logged := l.touch(env, in.Session, in.Seq, l.raft.self); !logged {
				l.keptAlive(env, Touched{Session: in.Session, Seq: in.Seq, OK: ok, Gone: gone})
			}
		case lead != proc.None && lead != l.raft.self:
			env.Send(lead, Touch(in))
		default:
			env.Output(KeptAlive{Session: in.Session, Seq: in.Seq})
		}
	default:
		l.appendDeferred(env)
		l.raft.Input(env, in) // Propose, AddServer, RemoveServer
	}
	l.lead(env)
}

// propose proposes op, after the Acquires deferred.
func (l *Locks) propose(env proc.Env, op LockOp) {
	l.appendDeferred(env)
	l.raft.Input(env, Propose{Data: op.encode()})
}

// maxDeferred bounds the Acquires a leader defers; past it, they are
// proposed at once.
const maxDeferred = 1024

// deferAcquire keeps op, an Acquire given to the leader, out of the log
// for now, if it cannot be granted before the lock's queue has had its
// turn: the lock is held by another session, and others wait for it (or
// nothing is under way in the log, so no entry can free it meanwhile).
// It then goes to the log just before the next entry proposed here — a
// Release, most often, which it shares a round of replication with,
// instead of taking one of its own beside the handoff's — or at the next
// heartbeat (appendDeferred). An Acquire waits for the entry that grants
// it anyway, which comes only after the one that queues it; so deferring
// it delays no grant, except where the queue empties meanwhile (its
// waiters leave), by a heartbeat at most. Deferred Acquires keep their
// order, and go before any later operation: a session's operations
// reach the log in the order of their numbers, as the table requires.
// A leader that steps down proposes them again, to the new leader; and
// its clients propose again any that are lost.
func (l *Locks) deferAcquire(op LockOp) bool {
	r := l.raft
	if r.role != leader || len(l.later) >= maxDeferred {
		return false
	}
	lk, s := l.locks[op.Lock], l.sessions[op.Session]
	switch {
	case lk == nil || lk.Holder == op.Session || s == nil || op.Seq <= s.Seq || slices.Contains(s.Locks, op.Lock):
		return false // free, held or waited for by the session, a retry, or refused
	case len(lk.Queue) == 0 && r.lastIndex() > r.commit:
		return false // an entry under way may free it
	}
	for _, d := range l.later {
		if d.Session == op.Session && d.Seq == op.Seq {
			return true // a retry of one deferred
		}
	}
	l.later = append(l.later, op)
	return true
}

// appendDeferred proposes the Acquires deferred, in order.
func (l *Locks) appendDeferred(env proc.Env) {
	if len(l.later) == 0 {
		return
	}
	later := l.later
	l.later = nil
	for _, op := range later {
		l.raft.Input(env, Propose{Data: op.encode()})
	}
}

func (l *Locks) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m := m.(type) {
	case Touch:
		if ok, gone, logged := l.touch(env, m.Session, m.Seq, from); !logged {
			env.Send(from, Touched{Session: m.Session, Seq: m.Seq, OK: ok, Gone: gone})
		}
	case Touched:
		l.keptAlive(env, m)
	case Forward, Reconfigure: // entries to append: after the Acquires deferred
		l.appendDeferred(env)
		l.raft.Receive(env, from, m)
	default:
		l.raft.Receive(env, from, m)
	}
	l.lead(env)
}

type locksTag struct{}

func (locksTag) String() string { return "expire" }

func (l *Locks) Timeout(env proc.Env, tag any) {
	if _, ok := tag.(locksTag); ok {
		l.leases.swept(env, l.cfg.Heartbeat, locksTag{}, func() { l.expire(env) })
		return
	}
	if tag == tagHeartbeat {
		l.appendDeferred(env) // the Acquires deferred that no entry took along
	}
	l.raft.Timeout(env, tag)
	l.lead(env)
}

// lead follows the leadership after every event. A server that becomes a
// ready leader (Raft.Ready: it has applied everything ever committed)
// gives every session a full TTL from now; one that stops leading forgets
// the deadlines.
func (l *Locks) lead(env proc.Env) {
	if l.raft.role != leader {
		l.appendDeferred(env) // to the new leader (Forward), if known
	}
	l.leases.follow(env, l.raft, l.cfg.Heartbeat, locksTag{}, func(set func(uint64, time.Duration)) {
		for id, s := range l.sessions {
			set(id, s.TTL)
		}
	})
}

// touch renews a session at the leader, for the KeepAlive seq that
// server asker was given. Under the leader's lease it renews at once: no
// other leader can have expired the session meanwhile. Without it — its
// followers' acknowledgements late, as on a slow or loaded network — it
// renews through the log instead (logged: the answer comes when the
// entry applies, from asker): refusing, as a lease-read does, would let
// the sweep expire sessions whose clients were renewing all along, every
// session at once once the lapse outlasts a TTL. A renew entry commits
// only under a majority, as any entry; an expiry proposed before it
// applied names the renewal it saw (Based) and is ignored when applied
// after a later one, so a renewal answered OK is never undone by an
// expiry already under way.
func (l *Locks) touch(env proc.Env, id, seq uint64, asker proc.ID) (ok, gone, logged bool) {
	if !l.leases.leading {
		return false, false, false
	}
	s, known := l.sessions[id]
	if !known || l.leases.expiring[id] {
		return false, true, false
	}
	if env.Now() >= l.raft.Lease() {
		l.propose(env, LockOp{Op: "renew", Session: id, Seq: seq, Owner: asker})
		return false, false, true
	}
	l.leases.renew(env, id, s.TTL)
	return true, false, false
}

func (l *Locks) keptAlive(env proc.Env, t Touched) {
	k := KeptAlive{Session: t.Session, Seq: t.Seq, OK: t.OK, Gone: t.Gone}
	if t.OK {
		if s, ok := l.sessions[t.Session]; ok {
			k.Valid = l.Valid(s.TTL)
		} else {
			k.OK = false // not applied here yet: the client asks again
		}
	}
	env.Output(k)
}

// expire proposes the expiry of every session past its deadline, naming
// the renewal it is based on.
func (l *Locks) expire(env proc.Env) {
	for _, id := range l.leases.due(env.Now(), cmp.Compare[uint64]) {
		if s, ok := l.sessions[id]; ok {
			l.propose(env, LockOp{Op: "expire", Session: id, Based: s.Renewed})
		}
	}
}

// The replicated table: Apply, Snapshot, Restore.

func (l *Locks) Apply(env proc.Env, index uint64, data []byte) error {
	if len(data) == 0 { // the no-op a new leader appends
		l.log.Apply(env, index, data)
		return nil
	}
	op, err := decodeLockOp(data)
	if err != nil {
		return fmt.Errorf("locks: entry %d (%d bytes): %w", index, len(data), err) // the server halts
	}
	l.log.Apply(env, index, data)
	refuse := func(why string, args ...any) {
		env.Output(LockRefused{Tag: op.Tag, Session: op.Session, Seq: op.Seq, Reason: fmt.Sprintf(why, args...)})
	}
	if op.Op == "open" {
		switch {
		case op.TTL <= 0:
			refuse("ttl %v is not positive", op.TTL)
		case len(l.sessions) >= MaxSessions:
			refuse("%d sessions are open, the most there may be", len(l.sessions))
		default:
			l.sessions[index] = &session{TTL: op.TTL, Owner: op.Owner}
			l.leases.renew(env, index, op.TTL)
			env.Output(Opened{Tag: op.Tag, Session: index, TTL: op.TTL, Valid: l.Valid(op.TTL)})
		}
		return nil
	}
	s, ok := l.sessions[op.Session]
	if op.Op == "renew" { // touch's, without the lease: its own sequence of KeepAlives
		if ok {
			s.Renewed = index
			l.leases.renew(env, op.Session, s.TTL)
		}
		if op.Owner == l.raft.self {
			l.keptAlive(env, Touched{Session: op.Session, Seq: op.Seq, OK: ok, Gone: !ok})
		}
		return nil
	}
	if !ok {
		if op.Op != "expire" {
			refuse("session %d is not open", op.Session)
		}
		return nil
	}
	if op.Op == "expire" && op.Based != s.Renewed {
		return nil // renewed through the log after this expiry was proposed
	}
	if op.Op != "expire" {
		if op.Seq < s.Seq {
			return nil // a retry of an operation the session has moved past
		}
		if op.Seq == s.Seq {
			l.reanswer(env, op, s)
			return nil
		}
		s.Seq = op.Seq
	}
	switch op.Op {
	case "acquire":
		l.acquire(env, index, op.Session, s, op.Lock)
	case "release":
		if !slices.Contains(s.Locks, op.Lock) {
			refuse("session %d neither holds nor waits for %q", op.Session, op.Lock)
			return nil
		}
		s.Locks = slices.DeleteFunc(s.Locks, func(x string) bool { return x == op.Lock })
		l.refs--
		l.release(env, index, op.Session, op.Seq, op.Lock)
	case "close", "expire":
		for _, name := range s.Locks {
			l.release(env, index, op.Session, 0, name)
		}
		l.refs -= len(s.Locks)
		delete(l.sessions, op.Session)
		l.leases.drop(op.Session)
		env.Output(Closed{Session: op.Session, Expired: op.Op == "expire"})
	default:
		refuse("unknown operation %q", op.Op)
	}
	return nil
}

// reanswer answers again the session's latest operation, which reached the
// log again: its client retried it, through this node or another, after
// an answer it never got (the node it asked first paused or was cut off).
// Applied once, answered as often as asked: an acquire the session holds
// is granted again with the same token, a release whose lock it no longer
// holds nor waits for is released again; a waiting acquire gets its
// answer when the lock comes to it, as the first one would have.
func (l *Locks) reanswer(env proc.Env, op LockOp, s *session) {
	switch op.Op {
	case "acquire":
		if lk := l.locks[op.Lock]; lk != nil && lk.Holder == op.Session {
			env.Output(Granted{Lock: op.Lock, Session: op.Session, Seq: op.Seq, Token: lk.Token, Owner: s.Owner})
		}
	case "release":
		if !slices.Contains(s.Locks, op.Lock) {
			env.Output(Released{Lock: op.Lock, Session: op.Session, Seq: op.Seq})
		}
	}
}

func (l *Locks) acquire(env proc.Env, index, id uint64, s *session, name string) {
	lk := l.locks[name]
	switch {
	case name == "":
		env.Output(LockRefused{Session: id, Seq: s.Seq, Reason: "no lock named"})
	case lk != nil && lk.Holder == id:
		env.Output(Granted{Lock: name, Session: id, Seq: s.Seq, Token: lk.Token, Owner: s.Owner}) // held already
	case slices.Contains(s.Locks, name):
		// Waiting for it already.
	case jsonLen(name) > MaxLockName:
		env.Output(LockRefused{Session: id, Seq: s.Seq, Reason: fmt.Sprintf("a lock name of %d bytes as stored: the most is %d", jsonLen(name), MaxLockName)})
	case len(s.Locks) >= MaxLocksPerSession:
		env.Output(LockRefused{Session: id, Seq: s.Seq, Reason: fmt.Sprintf("session %d holds or waits for %d locks, the most there may be", id, len(s.Locks))})
	case l.refs >= MaxLockRefs:
		env.Output(LockRefused{Session: id, Seq: s.Seq, Reason: fmt.Sprintf("the sessions hold or wait for %d locks in all, the most there may be", l.refs)})
	case lk == nil:
		l.locks[name] = &lockState{Holder: id, Seq: s.Seq, Token: index}
		s.Locks = append(s.Locks, name)
		l.refs++
		env.Output(Granted{Lock: name, Session: id, Seq: s.Seq, Token: index, Owner: s.Owner})
	default:
		lk.Queue = append(lk.Queue, waiter{id, s.Seq})
		s.Locks = append(s.Locks, name)
		l.refs++
	}
}

// jsonLen is the length of s as JSON writes it, quotes included.
func jsonLen(s string) int {
	b, _ := json.Marshal(s)
	return len(b)
}

// release takes session id off lock name, by its Release seq (0: the
// session ended) — as holder, handing the lock to the next in line in this
// same entry, or as a waiter.
func (l *Locks) release(env proc.Env, index, id, seq uint64, name string) {
	lk := l.locks[name]
	if lk == nil {
		return
	}
	if lk.Holder != id {
		lk.Queue = slices.DeleteFunc(lk.Queue, func(w waiter) bool { return w.Session == id })
		env.Output(Released{Lock: name, Session: id, Seq: seq})
		return
	}
	env.Output(Released{Lock: name, Session: id, Seq: seq, Token: lk.Token})
	if len(lk.Queue) == 0 {
		delete(l.locks, name)
		return
	}
	next := lk.Queue[0]
	lk.Holder, lk.Seq, lk.Token, lk.Queue = next.Session, next.Seq, index, lk.Queue[1:]
	env.Output(Granted{Lock: name, Session: next.Session, Seq: next.Seq, Token: index, Owner: l.sessions[next.Session].Owner})
}

// Holder reports who holds lock name in this server's table, which may be
// behind the leader's.
func (l *Locks) Holder(name string) (session, token uint64) {
	if lk := l.locks[name]; lk != nil {
		return lk.Holder, lk.Token
	}
	return 0, 0
}

type locksSnapshot struct {
	Log      []byte                `json:"log"`
	Sessions map[uint64]*session   `json:"sessions"`
	Locks    map[string]*lockState `json:"locks"`
}

func (l *Locks) Snapshot() []byte {
	b, _ := json.Marshal(locksSnapshot{Log: l.log.Snapshot(), Sessions: l.sessions, Locks: l.locks})
	return b
}

func (l *Locks) Restore(env proc.Env, b []byte) error {
	l.log = Log{}
	l.sessions = map[uint64]*session{}
	l.locks = map[string]*lockState{}
	var s locksSnapshot
	if len(b) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("locks: snapshot of %d bytes: %w", len(b), err) // the server halts
	}
	if err := l.log.Restore(env, s.Log); err != nil {
		return fmt.Errorf("locks: snapshot: %w", err)
	}
	maps.Copy(l.sessions, s.Sessions)
	maps.Copy(l.locks, s.Locks)
	l.refs = 0
	for _, s := range l.sessions {
		l.refs += len(s.Locks)
	}
	// Who holds what, as the snapshot says: a server that starts from it
	// tells its clients as if it had applied the grants.
	l.replayHolders(env)
	return nil
}

// replayHolders outputs a Granted for every lock held.
func (l *Locks) replayHolders(env proc.Env) {
	for _, name := range slices.Sorted(maps.Keys(l.locks)) {
		lk := l.locks[name]
		if s, ok := l.sessions[lk.Holder]; ok {
			env.Output(Granted{Lock: name, Session: lk.Holder, Seq: lk.Seq, Token: lk.Token, Owner: s.Owner})
		}
	}
}
