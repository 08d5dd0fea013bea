package lock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/internal/backoff"
	"github.com/cohort-go/cohort/internal/halt"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/proc"
)

// Replicated is the lock service on a replicated log (consensus.Locks,
// one Raft group for every lock of the cluster, named "locks"): grants
// survive any minority of crashes and every restart, and a grant's fencing
// token is the index of its log entry, so tokens strictly increase for
// ever, across restarts of any node or of the whole cluster.
//
// Locks are held by sessions. A session is a lease the client keeps alive
// (KeepAlive) and may count on until Until — the send time of its last
// renewal that the leader answered, plus the TTL shortened by the clock
// drift bound; past it, the leader may have expired the session and given
// its locks to others. A client must stop using a lock before Until.
type Replicated struct {
	svc   *live.Service
	self  proc.ID
	cfg   consensus.Config
	retry time.Duration // the first wait before an unanswered operation is proposed again (package backoff)

	seed     uint64            // the backoffs' jitter: this incarnation's seed, and an operation's number (ops)
	ops      atomic.Uint64     // operations proposed, numbered for their jitter
	progress *backoff.Progress // wakes the waiting operations when the log moves after a quiet spell

	// The leader of the log as this node last read it (LeaderHint).
	leader   atomic.Int64 // a proc.ID
	leaderAt atomic.Int64 // when, in Unix nanoseconds
	reading  atomic.Bool  // a read is under way

	kaSeq     atomic.Uint64
	proposals atomic.Uint64 // operations given to the log, copies included

	halted halt.State // consensus.Halted, until consensus.Resumed

	mu      sync.Mutex
	opens   map[uint64]chan consensus.Opened
	grants  map[opKey]chan consensus.Granted
	frees   map[opKey]chan consensus.Released
	kas     map[kaKey]chan consensus.KeptAlive
	closes  map[opKey]chan struct{}
	refused map[opKey]chan string
	holders map[string]consensus.Granted // as this node's copy of the table says
	hooks   []func(lock string, h consensus.Granted, held bool)
}

type opKey struct {
	lock         string
	session, seq uint64
}

type kaKey struct{ session, seq uint64 }

// ServiceName is the replicated lock service's name on every node.
const ServiceName = "locks"

// ReplicatedAlgorithm is the algorithm behind Replicated with cfg.
func ReplicatedAlgorithm(cfg consensus.Config) proc.Algorithm {
	for _, a := range consensus.Algorithms {
		if a.Name == "raft-lock" {
			a.New = func(id proc.ID, n int) proc.Process { return consensus.NewLocks(id, n, cfg) }
			return a
		}
	}
	panic("lock: consensus has no raft-lock")
}

// NewReplicated starts (or joins) the replicated lock service on node n.
// Every node of the cluster must use the same cfg.
func NewReplicated(n *live.Node, cfg consensus.Config) (*Replicated, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	svc, err := n.Service(ServiceName, ReplicatedAlgorithm(cfg))
	if err != nil {
		return nil, err
	}
	retry := 2 * cfg.ElectionTimeout
	r := &Replicated{svc: svc, self: n.Self(), cfg: cfg, retry: retry, seed: rand.Uint64(), progress: backoff.NewProgress(retry),
		opens: map[uint64]chan consensus.Opened{}, grants: map[opKey]chan consensus.Granted{},
		frees: map[opKey]chan consensus.Released{}, kas: map[kaKey]chan consensus.KeptAlive{},
		closes: map[opKey]chan struct{}{}, refused: map[opKey]chan string{}, holders: map[string]consensus.Granted{}}
	r.leader.Store(int64(proc.None))
	// KeepAlives are numbered from a random start in each incarnation: a
	// renewal the log applies again after a restart (Locks renews through
	// the log while its lease has lapsed, and the server that was asked
	// answers when the entry applies) must not answer a new KeepAlive
	// that happens to reuse its number.
	r.kaSeq.Store(rand.Uint64N(1 << 62))
	svc.OnOutput(r.output)
	// The service may have started before we subscribed (a peer's message
	// starts it, and a restart replays its snapshot at once): ask it for
	// who holds what.
	if err := svc.Input(consensus.Replay{}); err != nil {
		return nil, err
	}
	return r, nil
}

// output routes the service's outputs to the calls waiting for them.
func (r *Replicated) output(o proc.Output) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch o := o.(type) {
	case consensus.Applied, consensus.Restored:
		r.progress.Moved()
	case consensus.Halted:
		if r.halted.Halt(o) {
			slog.Error("replicated locks halted: a committed entry this node cannot apply; it serves the locks no more, the other nodes do, until the leader's snapshot covers the entry or it restarts able to read it",
				"entry", o.Index, "reason", o.Reason)
		}
	case consensus.LostState:
		halt.LostState(slog.Default(), "replicated locks", o)
	case consensus.Resumed:
		if r.halted.Resume() {
			slog.Info("replicated locks resumed: this node restored the leader's snapshot, past the entry it could not apply; it serves the locks again", "entry", o.Index)
		}
	case consensus.Opened:
		notify(r.opens[o.Tag], o)
	case consensus.Granted:
		if h, ok := r.holders[o.Lock]; !ok || h.Token != o.Token {
			r.holders[o.Lock] = o
			for _, f := range r.hooks {
				f(o.Lock, o, true)
			}
		}
		notify(r.grants[opKey{o.Lock, o.Session, o.Seq}], o)
	case consensus.Released:
		if h, ok := r.holders[o.Lock]; ok && h.Session == o.Session && o.Token > 0 {
			delete(r.holders, o.Lock)
			for _, f := range r.hooks {
				f(o.Lock, h, false)
			}
		}
		notify(r.frees[opKey{o.Lock, o.Session, o.Seq}], o)
	case consensus.KeptAlive:
		notify(r.kas[kaKey{o.Session, o.Seq}], o)
	case consensus.Closed:
		for k, ch := range r.closes {
			if k.session == o.Session {
				notify(ch, struct{}{})
			}
		}
		for k, ch := range r.refused { // what else waits on it is over
			if _, closing := r.closes[k]; k.session == o.Session && !closing {
				notify(ch, string(sessionEnded))
			}
		}
	case consensus.LockRefused:
		for k, ch := range r.refused {
			if k.session == o.Session && k.seq == o.Seq {
				notify(ch, o.Reason)
			}
		}
	}
}

func notify[T any](ch chan T, v T) {
	if ch == nil {
		return
	}
	select {
	case ch <- v:
	default:
	}
}

// Errors.
var (
	// ErrSessionGone: the session expired or was closed; its locks are
	// released.
	ErrSessionGone = errors.New("session expired or closed")
	// ErrNoLeader: no leader answered (a majority is down or cut off);
	// the call can be tried again.
	ErrNoLeader = errors.New("no leader answered")
	// ErrHalted: this node's copy of the lock table met a committed entry
	// it cannot apply (written by a newer version, or damaged) and
	// halted; the other nodes serve the locks.
	ErrHalted = errors.New("this node's replica of the locks halted")
)

// Halted is why this node's copy of the lock table halted (wrapping
// ErrHalted), or nil.
func (r *Replicated) Halted() error {
	h := r.halted.At()
	if h == nil {
		return nil
	}
	return fmt.Errorf("%w at entry %d of the log, which it cannot apply (%s): the other nodes serve the locks", ErrHalted, h.Index, h.Reason)
}

// await proposes in, and again while it goes unanswered (with the same
// number, which the table applies once), until ch yields, the table
// refuses the operation (refused: errRefused, with the reason), or ctx
// ends. The waits between proposals double from the retry interval up to
// backoff.Max, with jitter; when the log moves again at this node after a
// quiet spell (a partition healed, a leader elected) it is proposed at
// once and the waits start over.
func await[T any](ctx context.Context, r *Replicated, in proc.Input, ch chan T, refused chan string) (T, error) {
	var zero T
	if err := r.Halted(); err != nil {
		return zero, err
	}
	resumed := r.progress.Resumed()
	r.proposals.Add(1)
	if err := r.svc.Input(in); err != nil { // at once: a timer would cost a wake-up on the way
		return zero, err
	}
	b := backoff.New(r.retry, r.seed, r.ops.Add(1))
	t := time.NewTimer(b.Next())
	defer t.Stop()
	for {
		select {
		case v := <-ch:
			return v, nil
		case why := <-refused:
			return zero, refusal(why)
		case <-ctx.Done():
			return zero, ctx.Err()
		case <-r.svc.Done():
			return zero, live.ErrClosed
		case <-r.halted.Done():
			return zero, r.Halted()
		case <-resumed:
			resumed = r.progress.Resumed()
			b.Reset()
		case <-t.C:
		}
		r.proposals.Add(1)
		if err := r.svc.Input(in); err != nil {
			return zero, err
		}
		t.Reset(b.Next())
	}
}

// refusal is the error of an operation the table refused.
type refusal string

func (r refusal) Error() string { return string(r) }

// op runs the operation in, numbered key, on the table: it waits for its
// answer in waiters (or a refusal) while proposing it again (await).
func op[T any](ctx context.Context, r *Replicated, key opKey, waiters map[opKey]chan T, in proc.Input) (T, error) {
	ch, refused := make(chan T, 1), make(chan string, 1)
	r.mu.Lock()
	waiters[key], r.refused[key] = ch, refused
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(waiters, key)
		delete(r.refused, key)
		r.mu.Unlock()
	}()
	return await(ctx, r, in, ch, refused)
}

// Session is a lease held by one client.
type Session struct {
	r   *Replicated
	ID  uint64
	TTL time.Duration

	seq   atomic.Uint64
	mu    sync.Mutex
	until time.Time

	// numbered: the client numbers the operations (AttachNumbered). A
	// wait that fails here leaves the operation to it: it may be retrying
	// the same number through another node, and a withdrawal sent from
	// here would take back the lock that retry is granted.
	numbered bool
}

// Open opens a session of ttl. Its reckoning (Until) counts from the
// moment Open was called.
func (r *Replicated) Open(ctx context.Context, ttl time.Duration) (*Session, error) {
	if ttl <= 0 || ttl > MaxTTL {
		return nil, fmt.Errorf("ttl %v: want a duration between 1ms and %v", ttl, MaxTTL)
	}
	sent := time.Now()
	tag := rand.Uint64() | 1
	ch := make(chan consensus.Opened, 1)
	r.mu.Lock()
	r.opens[tag] = ch
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.opens, tag)
		r.mu.Unlock()
	}()
	o, err := await(ctx, r, consensus.OpenSession{Tag: tag, TTL: ttl}, ch, nil)
	if err != nil {
		return nil, err
	}
	s := &Session{r: r, ID: o.Session, TTL: ttl, until: sent.Add(o.Valid)}
	s.seq.Store(uint64(time.Now().UnixNano())) // above any number another node gave this session before
	return s, nil
}

// Attach returns session id, opened elsewhere (through another node, or
// by a client of the HTTP API), to act on it from this node. seq is the
// number of its last operation (0: let this node number them, from its
// clock).
func (r *Replicated) Attach(id uint64, ttl time.Duration, seq uint64) *Session {
	s := &Session{r: r, ID: id, TTL: ttl}
	if seq == 0 {
		seq = uint64(time.Now().UnixNano())
	}
	s.seq.Store(seq)
	return s
}

// AttachNumbered returns session id for one operation a client numbered
// seq (an HTTP request with ?seq=): the next operation takes that number.
// If its wait fails (the client went away, or moved on to another node),
// the operation is the client's to retry or withdraw; nothing is
// withdrawn for it here.
func (r *Replicated) AttachNumbered(id, seq uint64) *Session {
	s := &Session{r: r, ID: id, numbered: true}
	s.seq.Store(seq - 1)
	return s
}

// Until is the end of the session's reckoning: until then, no lock it
// holds can have been given to anyone else.
func (s *Session) Until() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.until
}

// KeepAlive renews the session. On success the reckoning moves to the
// call's start plus the session's validity; ErrSessionGone means it is
// over; ErrNoLeader, that no leader could answer in time (try again, and
// stop using the locks at Until).
func (s *Session) KeepAlive(ctx context.Context) (time.Time, error) {
	r := s.r
	sent := time.Now()
	key := kaKey{s.ID, r.kaSeq.Add(1)}
	ch := make(chan consensus.KeptAlive, 1)
	r.mu.Lock()
	r.kas[key] = ch
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.kas, key)
		r.mu.Unlock()
	}()
	if err := r.svc.Input(consensus.KeepAlive{Session: s.ID, Seq: key.seq}); err != nil {
		return s.Until(), err
	}
	t := time.NewTimer(r.retry)
	defer t.Stop()
	select {
	case k := <-ch:
		switch {
		case k.OK:
			s.mu.Lock()
			if u := sent.Add(k.Valid); u.After(s.until) {
				s.until = u
			}
			s.mu.Unlock()
			return s.Until(), nil
		case k.Gone:
			return s.Until(), ErrSessionGone
		}
		return s.Until(), ErrNoLeader
	case <-t.C:
		return s.Until(), ErrNoLeader
	case <-ctx.Done():
		return s.Until(), ctx.Err()
	case <-r.svc.Done():
		return s.Until(), live.ErrClosed
	}
}

// Lock waits until the session holds lock name, and returns the grant's
// fencing token. If ctx ends first, the request is withdrawn.
// ErrSessionGone: the session ended.
func (s *Session) Lock(ctx context.Context, name string) (uint64, error) {
	if err := ValidName(name); err != nil {
		return 0, err
	}
	return s.LockKey(ctx, name)
}

// LockKey is Lock for any key of the table: the services built on it
// keep their own keys apart from the locks' names, which cannot contain
// a "/" (elections take "election/NAME").
func (s *Session) LockKey(ctx context.Context, name string) (uint64, error) {
	key := opKey{name, s.ID, s.seq.Add(1)}
	g, err := op(ctx, s.r, key, s.r.grants, consensus.Acquire{Session: s.ID, Seq: key.seq, Lock: name})
	var why refusal
	switch {
	case errors.As(err, &why) && why == sessionEnded:
		return 0, ErrSessionGone
	case errors.As(err, &why):
		return 0, fmt.Errorf("lock %q: %w", name, err)
	case err != nil && s.numbered:
		return 0, err
	case err != nil:
		s.withdraw(name)
		return 0, err
	}
	return g.Token, nil
}

// withdraw takes back the session's request for key, or gives back a
// grant that came too late for a caller who has gone. A node whose copy
// of the table halted refuses every call, a withdrawal's too, yet the
// request it proposed before may still be granted, and the lock would
// stay with a caller told ErrHalted until the session ended. Its log's
// server still forwards proposals to the leader, so there the release is
// proposed once, unanswered (its answer would need the halted copy);
// the session's end remains the backstop if it is lost.
func (s *Session) withdraw(key string) {
	if s.r.Halted() != nil {
		s.r.proposals.Add(1)
		_ = s.r.svc.Input(consensus.Release{Session: s.ID, Seq: s.seq.Add(1), Lock: key})
		return
	}
	wctx, cancel := context.WithTimeout(context.Background(), 4*s.r.retry)
	defer cancel()
	_ = s.UnlockKey(wctx, key)
}

// sessionEnded is the refusal of an operation whose session ended.
const sessionEnded refusal = "the session ended"

// Unlock releases lock name, or withdraws the session's request for it.
// ErrNotHeld: the session neither holds nor waits for it (or is gone).
func (s *Session) Unlock(ctx context.Context, name string) error { return s.UnlockKey(ctx, name) }

// UnlockKey is Unlock for any key of the table (see LockKey).
func (s *Session) UnlockKey(ctx context.Context, name string) error {
	key := opKey{name, s.ID, s.seq.Add(1)}
	_, err := op(ctx, s.r, key, s.r.frees, consensus.Release{Session: s.ID, Seq: key.seq, Lock: name})
	if _, refused := err.(refusal); refused {
		return ErrNotHeld
	}
	return err
}

// Close ends the session, releasing its locks. ErrSessionGone: it was
// over already.
func (s *Session) Close(ctx context.Context) error {
	key := opKey{"", s.ID, s.seq.Add(1)}
	_, err := op(ctx, s.r, key, s.r.closes, consensus.CloseSession{Session: s.ID, Seq: key.seq})
	if _, refused := err.(refusal); refused {
		return ErrSessionGone
	}
	return err
}

// Holder reports who holds lock name as this node's copy of the table
// says (it may lag the leader's).
func (r *Replicated) Holder(name string) (session, token uint64) {
	g, _ := r.Grant(name)
	return g.Session, g.Token
}

// Grant is the grant of key (a lock's name, or a key of another service
// on the table) as this node's copy of the table says.
func (r *Replicated) Grant(key string) (consensus.Granted, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g, ok := r.holders[key]
	return g, ok
}

// OnHolder calls f, in the table's order, whenever a key changes hands
// in this node's copy: granted (held) or released. f must not block or
// call back into r.
func (r *Replicated) OnHolder(f func(key string, g consensus.Granted, held bool)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hooks = append(r.hooks, f)
}

// LeaderHint is the leader of the log as this node knows it (proc.None:
// none known). It is read from the log's server at most once a heartbeat
// period, off the caller's path — a call may get the value before the
// last read — so a client told it may find another leader there: it is a
// hint where to send requests (the leader grants without the hop of the
// commit's news to a follower), never needed for safety: every node
// serves every request.
func (r *Replicated) LeaderHint() proc.ID {
	if time.Now().UnixNano()-r.leaderAt.Load() >= int64(r.cfg.Heartbeat) && r.reading.CompareAndSwap(false, true) {
		go func() {
			defer r.reading.Store(false)
			l := proc.None
			if r.svc.Read(func(p proc.Process) { l, _ = p.(*consensus.Locks).Raft().Leader() }) == nil {
				r.leader.Store(int64(l))
				r.leaderAt.Store(time.Now().UnixNano())
			}
		}()
	}
	return proc.ID(r.leader.Load())
}

// Self is this node's ID.
func (r *Replicated) Self() proc.ID { return r.self }

// Service is the replicated log's live service.
func (r *Replicated) Service() *live.Service { return r.svc }
