package queue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/internal/backoff"
	"github.com/cohort-go/cohort/internal/halt"
	"github.com/cohort-go/cohort/internal/httpapi"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/wal"
	"github.com/cohort-go/cohort/proc"
)

// Replicated is the cluster's queues on a replicated log
// (consensus.Queues, one Raft group for every queue, the service
// "queues"): a put returns once its entry is committed — a majority has
// it on disk — so an acknowledged message survives the loss of any
// minority of nodes and a restart of all of them (what JetStream calls
// R3); a get leases the head for a visibility timeout kept on the
// leader's clock; an ack is an entry too, and an acked message is never
// delivered again. Every node serves every queue: an operation given to a
// follower goes to the leader. It has the calls of Manager, and the API
// (Handler) serves either.
type Replicated struct {
	svc    *live.Service
	origin uint64 // this incarnation's id for the log's duplicate suppression (below 2⁶³)
	seq    atomic.Uint64
	retry  time.Duration // the first wait before an unanswered operation is proposed again (package backoff)
	// progress wakes the operations and streams waiting at this node when
	// its log moves again after a quiet spell (a partition healed, a
	// leader elected): they are proposed again at once.
	progress *backoff.Progress
	cfg      ReplicatedConfig
	window   chan struct{} // one token per operation under way
	puts     chan consensus.QueuePut
	// lose, if set, loses the proposals of stream runs it picks (as a
	// change of leader may; n: 1 the first proposal, 2 the next, …): a
	// test's way to make a run overtake another, or wait.
	lose atomic.Pointer[func(run consensus.QueuePutRun, n int, woken bool) bool]
	// gotHook, if set, sees each lease this node asked for as its answer
	// comes, before anyone waiting does: a test's way to give up a Get
	// while its lease is being granted.
	gotHook atomic.Pointer[func(consensus.QueueGot)]

	mu      sync.Mutex
	waits   map[[2]uint64][]*waiter  // by origin and seq: every copy under way on this node
	gets    map[[2]uint64]*getting   // by origin and seq: the leases asked for here and not yet taken or given back
	changed map[string]chan struct{} // closed when a message may have become ready
	subs    map[string]map[*sub]struct{}

	stats struct{ puts, gets, acks, refused, early atomic.Uint64 }
	led   atomic.Bool // an operation was answered from the log here once: it had a leader

	halted  halt.State           // consensus.Halted, until consensus.Resumed
	removed halt.Latch[struct{}] // set once removed from the log's voters (Left), until Rejoined
	log     *slog.Logger
}

// NoLeaderFor is how long an operation waits at a node of replicated
// queues that has known a leader and knows none now before it fails with
// ErrNoLeader: well above an election's time (a few election timeouts),
// so that only a node cut off from the majority, or a cluster that lost
// it, answers so.
const NoLeaderFor = 2 * time.Second

// leaderKnown reports whether this node knows a leader of the queues' log.
func (r *Replicated) leaderKnown() bool {
	known := false
	r.svc.Read(func(p proc.Process) {
		if q, ok := p.(queuesProcess); ok {
			id, _ := q.Raft().Leader()
			known = id != proc.None
		}
	})
	return known
}

type waiter struct {
	ch chan proc.Output
	tx bool // a transaction's or a run's: its puts' acknowledgements are not its answer
}

// ReplicatedConfig configures Replicated. Every node of the cluster must
// use the same Raft and Limits.
type ReplicatedConfig struct {
	Raft consensus.Config // zero: consensus.DefaultConfig
	// Limits bound the queues (a zero field: consensus.DefaultQueueLimits'):
	// the state among them, so that a snapshot fits one record of the
	// node's log (MaxSnapshot).
	Limits consensus.QueueLimits
	// Visibility is the lease of a got message when Get is given none;
	// 0: DefaultVisibility.
	Visibility time.Duration
	// Timeout bounds the calls without a context (Put, Ack, Poll, …);
	// 0: 30 s.
	Timeout time.Duration
	// Logger logs a halt of the replica (ErrHalted); nil: slog.Default.
	Logger *slog.Logger
}

func (c ReplicatedConfig) withDefaults() ReplicatedConfig {
	if c.Raft.Heartbeat == 0 {
		c.Raft = consensus.DefaultConfig
	}
	// An AppendEntries is one transport frame (1 MiB by default): the
	// entries it carries are bounded in bytes, and each is at most
	// maxBatchBytes + MaxReplicatedMessage of bodies.
	if c.Raft.MaxBatchBytes == 0 || c.Raft.MaxBatchBytes > maxAppendBytes {
		c.Raft.MaxBatchBytes = maxAppendBytes
	}
	if c.Visibility <= 0 {
		c.Visibility = DefaultVisibility
	}
	if c.Timeout <= 0 {
		c.Timeout = 30 * time.Second
	}
	return c
}

// MaxSnapshot is the largest snapshot of the queues the node's storage
// takes: a snapshot is one record of its log (wal.MaxRecord), with a
// header.
const MaxSnapshot = wal.MaxRecord - 64<<10

// Validate checks the configuration, naming the bad field.
func (c ReplicatedConfig) Validate() error {
	c = c.withDefaults()
	if err := c.Raft.Validate(); err != nil {
		return err
	}
	return c.Limits.Validate(MaxSnapshot)
}

// ServiceName is the replicated queues' service on every node.
const ServiceName = "queues"

// MaxReplicatedMessage bounds a replicated message: each is (part of) a
// log entry, and entries travel in the transport's frames (1 MiB).
const MaxReplicatedMessage = 64 << 10

// ReplicatedAlgorithm is the algorithm behind Replicated with c.
func ReplicatedAlgorithm(c ReplicatedConfig) proc.Algorithm {
	c = c.withDefaults()
	return consensus.QueueServiceAlgorithm(c.Raft, c.Limits)
}

// queuesProcess is what Replicated reads of the service's process (a
// *consensus.Queues).
type queuesProcess interface {
	Raft() *consensus.Raft
	Stats() []consensus.QueueStat
}

// NewReplicated starts (or joins) the replicated queues on node n.
func NewReplicated(n *live.Node, c ReplicatedConfig) (*Replicated, error) {
	return newReplicated(n, c, ReplicatedAlgorithm)
}

func newReplicated(n *live.Node, c ReplicatedConfig, algorithm func(ReplicatedConfig) proc.Algorithm) (*Replicated, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c = c.withDefaults()
	svc, err := n.Service(ServiceName, algorithm(c))
	if err != nil {
		return nil, err
	}
	r := &Replicated{svc: svc, origin: rand.Uint64()>>1 | 1, retry: 2 * c.Raft.ElectionTimeout, cfg: c,
		window: make(chan struct{}, consensus.Window/2), puts: make(chan consensus.QueuePut, 1024),
		waits: map[[2]uint64][]*waiter{}, gets: map[[2]uint64]*getting{}, changed: map[string]chan struct{}{}, subs: map[string]map[*sub]struct{}{},
		log: cmp.Or(c.Logger, slog.Default()), progress: backoff.NewProgress(2 * c.Raft.ElectionTimeout)}
	svc.OnOutput(r.output)
	go r.batch()
	return r, nil
}

// Service is the live service that runs the queues' log.
func (r *Replicated) Service() *live.Service { return r.svc }

// Batching: puts that wait together go to the log as one entry.
const (
	maxBatch       = 256
	maxBatchBytes  = 48 << 10
	maxAppendBytes = 512 << 10
)

// batch hands the queued puts to the service: as many as are waiting (up
// to maxBatch) in one input, so that under load an entry carries many —
// and a put alone goes at once.
func (r *Replicated) batch() {
	for {
		var first consensus.QueuePut
		select {
		case first = <-r.puts:
		case <-r.svc.Done():
			return
		}
		puts, size := []consensus.QueuePut{first}, len(first.Body)
	drain:
		for len(puts) < maxBatch && size < maxBatchBytes {
			select {
			case p := <-r.puts:
				puts, size = append(puts, p), size+len(p.Body)
			default:
				break drain
			}
		}
		var err error
		if len(puts) == 1 {
			err = r.svc.Input(first)
		} else {
			err = r.svc.Input(consensus.QueuePutBatch{Puts: puts})
		}
		if err != nil {
			return // the service stopped; callers see it
		}
	}
}

// output runs in the service's goroutine for every output, in log order:
// it answers this node's callers and wakes its waiting gets and
// listeners.
func (r *Replicated) output(o proc.Output) {
	var origin, seq uint64
	var wake string
	switch o := o.(type) {
	case consensus.Applied:
		r.progress.Moved()
	case consensus.QueuePutDone:
		origin, seq = o.Origin, o.Seq
		if o.ID > 0 {
			wake = o.Queue
			r.notify(Message{Queue: o.Queue, ID: o.ID, Body: o.Body})
		}
	case consensus.QueueGot:
		origin, seq = o.Origin, o.Seq
		if h := r.gotHook.Load(); h != nil {
			(*h)(o)
		}
		r.mu.Lock()
		r.granted(o)
		r.mu.Unlock()
	case consensus.QueueAcked:
		origin, seq = o.Origin, o.Seq
		if o.Released {
			wake = o.Queue
		}
	case consensus.QueueTxDone:
		origin, seq = o.Origin, o.Seq
	case consensus.QueuePutRunDone:
		origin, seq = o.Origin, o.Seq
	case consensus.QueueRefused:
		origin, seq = o.Origin, o.Seq
	case consensus.QueueExpired:
		wake = o.Queue
	case consensus.Halted:
		r.halt(o)
		return
	case consensus.LostState:
		halt.LostState(r.log, "replicated queues", o)
		return
	case consensus.Resumed:
		if r.halted.Resume() {
			r.log.Info("replicated queues resumed: this node restored the leader's snapshot, past the entry it could not apply; it serves the queues again", "entry", o.Index)
		}
		return
	case consensus.Restored:
		r.progress.Moved()
		r.mu.Lock()
		for name, ch := range r.changed {
			close(ch)
			delete(r.changed, name)
		}
		r.mu.Unlock()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if wake != "" {
		if ch, ok := r.changed[wake]; ok {
			close(ch)
			delete(r.changed, wake)
		}
	}
	for _, w := range r.waits[[2]uint64{origin, seq}] {
		if _, put := o.(consensus.QueuePutDone); put && w.tx {
			continue
		}
		select {
		case w.ch <- o:
		default:
		}
	}
}

// halt stops serving: the replica applies nothing more, so every
// operation under way or to come fails with ErrHalted, and the listeners
// are cut off (they go on elsewhere). Logged once: the log outputs
// Halted once.
func (r *Replicated) halt(h consensus.Halted) {
	if !r.halted.Halt(h) {
		return
	}
	r.log.Error("replicated queues halted: a committed entry this node cannot apply; it serves the queues no more, the other nodes do, until the leader's snapshot covers the entry or it restarts able to read it",
		"entry", h.Index, "reason", h.Reason)
	r.EndListeners()
}

// Halted is why this node's replica halted (wrapping ErrHalted), or nil.
func (r *Replicated) Halted() error {
	h := r.halted.At()
	if h == nil {
		return nil
	}
	return fmt.Errorf("%w at entry %d of the log, which it cannot apply (%s): the other nodes serve the queues", ErrHalted, h.Index, h.Reason)
}

// wait registers w for the answers numbered key, beside any other copy of
// the same operation under way on this node (a client's resend while the
// first is still waiting): each is answered. unwait removes w alone. The
// caller holds mu.
func (r *Replicated) wait(key [2]uint64, w *waiter) { r.waits[key] = append(r.waits[key], w) }

func (r *Replicated) unwait(key [2]uint64, w *waiter) {
	ws := slices.DeleteFunc(r.waits[key], func(x *waiter) bool { return x == w })
	if len(ws) == 0 {
		delete(r.waits, key)
	} else {
		r.waits[key] = ws
	}
}

// notify hands a message put to the queue's listeners.
func (r *Replicated) notify(m Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for s := range r.subs[m.Queue] {
		select {
		case s.ch <- m:
		default: // fell behind: cut off
			delete(r.subs[m.Queue], s)
			close(s.ch)
		}
	}
}

// do gives the service in, numbered seq, and waits for its answer; an
// operation unanswered for the retry interval goes again with the same
// number (the log applies it once), and again after twice as long, and so
// on (package backoff).
func (r *Replicated) do(ctx context.Context, origin, seq uint64, in proc.Input, tx bool) (proc.Output, error) {
	if err := r.serving(); err != nil {
		return nil, err
	}
	select {
	case r.window <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-r.halted.Done():
		return nil, r.Halted()
	case <-r.removed.Done():
		return nil, ErrRemoved
	}
	defer func() { <-r.window }()
	w := &waiter{ch: make(chan proc.Output, 1), tx: tx}
	r.mu.Lock()
	r.wait([2]uint64{origin, seq}, w)
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.unwait([2]uint64{origin, seq}, w)
		r.mu.Unlock()
	}()
	t := time.NewTimer(0)
	defer t.Stop()
	seen, first := time.Now(), true // when a leader was last known; the first proposal is not a retry
	b := backoff.New(r.retry, origin, seq)
	resumed := r.progress.Resumed()
	for {
		select {
		case <-resumed: // the log moves again: propose at once, the waits started over
			resumed = r.progress.Resumed()
			b.Reset()
			t.Reset(0)
		case o := <-w.ch:
			r.led.Store(true) // answered from the log: it had a leader
			if ref, ok := o.(consensus.QueueRefused); ok {
				r.stats.refused.Add(1)
				switch {
				case ref.Full:
					return nil, fmt.Errorf("%w: %s", ErrFull, ref.Reason)
				case ref.LeaseLost:
					return nil, fmt.Errorf("%w: %s", ErrLeaseLost, ref.Reason)
				case ref.Missing:
					return nil, fmt.Errorf("%w: %s", ErrNoMessage, ref.Reason)
				}
				return nil, errors.New(ref.Reason)
			}
			return o, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-r.svc.Done():
			return nil, ErrClosed
		case <-r.halted.Done():
			return nil, r.Halted()
		case <-r.removed.Done():
			return nil, ErrRemoved
		case <-t.C:
			switch {
			case first:
				first = false
			case r.leaderKnown():
				seen = time.Now()
			case r.led.Load() && time.Since(seen) > NoLeaderFor:
				return nil, ErrNoLeader
			}
			var err error
			if p, ok := in.(consensus.QueuePut); ok {
				select {
				case r.puts <- p:
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-r.svc.Done():
					return nil, ErrClosed
				}
			} else {
				err = r.svc.Input(in)
			}
			if err != nil {
				return nil, ErrClosed
			}
			t.Reset(b.Next())
		}
	}
}

func (r *Replicated) timeout() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), r.cfg.Timeout)
}

func checkPut(name string, body []byte) error {
	if err := ValidName(name); err != nil {
		return err
	}
	if len(body) > MaxReplicatedMessage {
		return fmt.Errorf("%w: %d bytes, the most a replicated queue takes is %d", ErrTooBig, len(body), MaxReplicatedMessage)
	}
	return nil
}

// PutContext appends body to queue name and returns its id once the put
// is committed. If ctx ends first the message may or may not be put.
func (r *Replicated) PutContext(ctx context.Context, name string, body []byte) (uint64, error) {
	return r.putAs(ctx, name, body, r.origin, r.seq.Add(1))
}

func (r *Replicated) putAs(ctx context.Context, name string, body []byte, origin, seq uint64) (uint64, error) {
	if err := checkPut(name, body); err != nil {
		return 0, err
	}
	if body == nil {
		body = []byte{}
	}
	o, err := r.do(ctx, origin, seq, consensus.QueuePut{Queue: name, Origin: origin, Seq: seq, Body: body}, false)
	if err != nil {
		return 0, fmt.Errorf("queue %s: %w", name, err)
	}
	r.stats.puts.Add(1)
	return o.(consensus.QueuePutDone).ID, nil
}

// Put is PutContext with the configured timeout.
func (r *Replicated) Put(name string, body []byte) (uint64, error) {
	ctx, cancel := r.timeout()
	defer cancel()
	return r.PutContext(ctx, name, body)
}

// PutFrom puts a message relayed from a remote queue: origin and seq
// number it, and the log applies each number once (a duplicate returns
// id 0). A relay's numbers must not run more than consensus.Window ahead
// of those acknowledged.
func (r *Replicated) PutFrom(name string, body []byte, origin string, seq uint64) (uint64, error) {
	if err := checkOrigin(origin, seq); err != nil {
		return 0, err
	}
	ctx, cancel := r.timeout()
	defer cancel()
	if err := checkPut(name, body); err != nil {
		return 0, err
	}
	o, err := r.do(ctx, hashOrigin(origin), seq, consensus.QueuePut{Queue: name, Origin: hashOrigin(origin), Seq: seq, Body: body}, false)
	if err != nil {
		return 0, fmt.Errorf("queue %s: %w", name, err)
	}
	return o.(consensus.QueuePutDone).ID, nil
}

func checkOrigin(origin string, seq uint64) error {
	if origin == "" || len(origin) > maxOrigin {
		return invalid("origin %q: want 1 to %d bytes", httpapi.Clip(origin), maxOrigin)
	}
	if seq == 0 {
		return invalid("origin %q: seq 0: want 1 or more", httpapi.Clip(origin))
	}
	return nil
}

// hashOrigin is a client's origin as the log numbers it: a
// consensus.ClientOrigin, apart from the nodes' own (odd, below 2⁶³) — a
// refused operation of a client leaves its number free for the resend.
func hashOrigin(origin string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(origin))
	return h.Sum64() | consensus.ClientOrigin
}

// take leases up to n messages of the queue's head.
func (r *Replicated) take(ctx context.Context, name string, vis time.Duration, n int) ([]Message, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	if vis <= 0 {
		vis = r.cfg.Visibility
	}
	seq := r.seq.Add(1)
	key := [2]uint64{r.origin, seq}
	r.mu.Lock()
	r.asking(key, name)
	r.mu.Unlock()
	o, err := r.do(ctx, r.origin, seq, consensus.QueueGet{Queue: name, Origin: r.origin, Seq: seq, Count: n, Visibility: vis}, false)
	r.mu.Lock()
	r.gaveUp(key, err != nil && (ctx.Err() != nil || errors.Is(err, ErrNoLeader) || errors.Is(err, ErrRemoved)))
	r.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("queue %s: %w", name, err)
	}
	got := o.(consensus.QueueGot)
	out := make([]Message, 0, len(got.Messages))
	for _, m := range got.Messages {
		out = append(out, Message{Queue: name, ID: m.ID, Body: m.Body, Deliveries: m.Deliveries, Lease: got.Token})
	}
	r.stats.gets.Add(uint64(len(out)))
	return out, nil
}

// A lease asked for, from its proposal until the caller has it. A caller
// that gives up (its context ended, the node stopped waiting) may still
// be granted the lease, by an entry committed meanwhile or later: nobody
// would hold those messages, and they would wait out the whole lease
// before another consumer could have them — a relay whose turn ended
// while it asked left its successor waiting up to 30 s. So the lease is
// given back as soon as it is known: at once, if it came before the
// caller gave up, or when it comes.
type getting struct {
	queue     string
	at        time.Time           // when asked
	got       *consensus.QueueGot // the answer, once it came
	abandoned bool                // the caller gave up
}

// maxAbandoned bounds the leases given up and still unanswered that a
// node remembers (an answer may never come: the proposal was lost); the
// oldest are forgotten first, and their leases then run out as any
// consumer's would.
const maxAbandoned = 4096

// asking records that this node asks for a lease under key. The caller
// holds mu.
func (r *Replicated) asking(key [2]uint64, queue string) {
	if len(r.gets) >= maxAbandoned {
		var oldest [2]uint64
		var at time.Time
		for k, g := range r.gets {
			if g.abandoned && (at.IsZero() || g.at.Before(at)) {
				oldest, at = k, g.at
			}
		}
		delete(r.gets, oldest)
	}
	r.gets[key] = &getting{queue: queue, at: time.Now()}
}

// granted takes the answer to a lease asked for here: kept for its caller,
// or given back if the caller gave up. The caller holds mu.
func (r *Replicated) granted(o consensus.QueueGot) {
	key := [2]uint64{o.Origin, o.Seq}
	g := r.gets[key]
	switch {
	case g == nil:
	case g.abandoned:
		delete(r.gets, key)
		r.giveBack(g.queue, o)
	default:
		g.got = &o
	}
}

// gaveUp ends the wait for the lease under key: its caller has it (or a
// refusal), or gave up while the answer may still come. The caller holds
// mu.
func (r *Replicated) gaveUp(key [2]uint64, abandoned bool) {
	g := r.gets[key]
	switch {
	case g == nil:
	case !abandoned:
		delete(r.gets, key)
	case g.got != nil:
		delete(r.gets, key)
		r.giveBack(g.queue, *g.got)
	default:
		g.abandoned = true
	}
}

// giveBack releases the messages of a lease nobody took.
func (r *Replicated) giveBack(queue string, o consensus.QueueGot) {
	if len(o.Messages) == 0 {
		return
	}
	ids := make([]uint64, len(o.Messages))
	for i, m := range o.Messages {
		ids[i] = m.ID
	}
	go func() {
		if err := r.ackOrRelease(queue, ids, o.Token, true); err != nil && !errors.Is(err, ErrLeaseLost) && !errors.Is(err, ErrClosed) {
			r.log.Warn("giving back a lease nobody took", "queue", queue, "ids", ids, "err", err)
		}
	}()
}

// Get leases the head of the queue for visibility (0: the configured
// one), waiting until there is one or ctx ends. Unless acknowledged
// (Ack) before the lease ends on the leader's clock, the message is
// delivered again; the consumer may count on it for
// consensus.ValidFor(visibility, MaxDrift) from the call.
func (r *Replicated) Get(ctx context.Context, name string, visibility time.Duration) (Message, error) {
	ms, err := r.GetN(ctx, name, visibility, 1)
	if err != nil {
		return Message{}, err
	}
	return ms[0], nil
}

// GetN is Get of up to n messages: it waits until the queue has a ready
// message and leases up to n of its head in one entry, so that they share
// one lease (Message.Lease) and one AckLease acknowledges them all.
func (r *Replicated) GetN(ctx context.Context, name string, visibility time.Duration, n int) ([]Message, error) {
	for {
		r.mu.Lock()
		ch := r.changed[name]
		if ch == nil {
			ch = make(chan struct{})
			r.changed[name] = ch
		}
		r.mu.Unlock()
		ms, err := r.take(ctx, name, visibility, n)
		if err != nil {
			return nil, err
		}
		if len(ms) > 0 {
			return ms, nil
		}
		select {
		case <-ch: // a put, a release or an expiry: ask again
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-r.svc.Done():
			return nil, ErrClosed
		case <-r.halted.Done():
			return nil, r.Halted()
		case <-r.removed.Done():
			return nil, ErrRemoved
		}
	}
}

// Poll is Get without waiting: ok is false if the queue has no ready
// message.
func (r *Replicated) Poll(name string, visibility time.Duration) (Message, bool, error) {
	ms, err := r.PollN(name, visibility, 1)
	if err != nil || len(ms) == 0 {
		return Message{}, false, err
	}
	return ms[0], true, nil
}

// PollN leases up to n messages of the queue's head in one entry.
func (r *Replicated) PollN(name string, visibility time.Duration, n int) ([]Message, error) {
	ctx, cancel := r.timeout()
	defer cancel()
	return r.take(ctx, name, visibility, n)
}

// Ack acknowledges messages got from the queue: once Ack returns their
// removal is committed and they are never delivered again. Ids the queue
// does not hold make an error wrapping ErrNoMessage; the others are
// acknowledged all the same.
func (r *Replicated) Ack(name string, ids ...uint64) error {
	return r.ackOrRelease(name, ids, 0, false)
}

// AckLease is Ack of messages got under lease (Message.Lease): only
// those still under it; for the others (their lease ran out and they went
// to another consumer) the error wraps ErrLeaseLost.
func (r *Replicated) AckLease(name string, lease uint64, ids ...uint64) error {
	return r.ackOrRelease(name, ids, lease, false)
}

// Release gives a leased message back at once: it is delivered again
// before the messages put after it. Whoever holds it loses it: a
// consumer gives back its own with ReleaseLease.
func (r *Replicated) Release(name string, id uint64) error {
	return r.ackOrRelease(name, []uint64{id}, 0, true)
}

// ReleaseLease is Release of a message got under lease, if it still is
// (else the error wraps ErrLeaseLost): a consumer whose lease ran out
// cannot take the message from the one it went to.
func (r *Replicated) ReleaseLease(name string, lease, id uint64) error {
	return r.ackOrRelease(name, []uint64{id}, lease, true)
}

func (r *Replicated) ackOrRelease(name string, ids []uint64, lease uint64, release bool) error {
	if err := ValidName(name); err != nil {
		return err
	}
	ctx, cancel := r.timeout()
	defer cancel()
	seq := r.seq.Add(1)
	var in proc.Input = consensus.QueueAck{Queue: name, Origin: r.origin, Seq: seq, IDs: ids, Token: lease}
	if release {
		in = consensus.QueueRelease{Queue: name, Origin: r.origin, Seq: seq, IDs: ids, Token: lease}
	}
	o, err := r.do(ctx, r.origin, seq, in, false)
	if err != nil {
		return fmt.Errorf("queue %s: %w", name, err)
	}
	a := o.(consensus.QueueAcked)
	if !release {
		r.stats.acks.Add(uint64(len(a.IDs)))
	}
	switch {
	case len(a.Missing) > 0 && lease != 0:
		return fmt.Errorf("%w: queue %s: messages %v are no longer under lease %d (%w)", ErrLeaseLost, name, a.Missing, lease, ErrNoMessage)
	case len(a.Missing) > 0:
		return fmt.Errorf("%w: queue %s holds no message %v", ErrNoMessage, name, a.Missing)
	}
	return nil
}

// Transact acks the messages acks and puts the messages puts in one
// entry: all of it is committed, or none (a message of acks no longer
// held, or under the lease named, or a queue full, refuses the whole). It
// returns the ids put.
func (r *Replicated) Transact(ctx context.Context, acks []TxAck, puts []TxPut) ([]uint64, error) {
	done, err := r.transact(ctx, r.origin, r.seq.Add(1), acks, puts)
	return done.IDs, err
}

// TransactFrom is Transact numbered by its client: origin and seq, as
// PutFrom's, make the log apply it once — a client that resends it,
// through any node, gets duplicate true and no ids.
func (r *Replicated) TransactFrom(ctx context.Context, origin string, seq uint64, acks []TxAck, puts []TxPut) (ids []uint64, duplicate bool, err error) {
	if err := checkOrigin(origin, seq); err != nil {
		return nil, false, err
	}
	done, err := r.transact(ctx, hashOrigin(origin), seq, acks, puts)
	return done.IDs, err == nil && done.Index == 0, err
}

func (r *Replicated) transact(ctx context.Context, origin, seq uint64, acks []TxAck, puts []TxPut) (consensus.QueueTxDone, error) {
	if err := checkTx(acks, puts, MaxReplicatedMessage); err != nil {
		return consensus.QueueTxDone{}, err
	}
	tx := consensus.QueueTx{Origin: origin, Seq: seq}
	for _, a := range acks {
		tx.Acks = append(tx.Acks, consensus.QueueRef{Queue: a.Queue, ID: a.ID, Token: a.Lease})
	}
	for _, p := range puts {
		body := p.Body
		if body == nil {
			body = []byte{}
		}
		tx.Puts = append(tx.Puts, consensus.QueuePut{Queue: p.Queue, Body: body})
	}
	o, err := r.do(ctx, origin, seq, tx, true)
	if err != nil {
		return consensus.QueueTxDone{}, fmt.Errorf("transaction: %w", err)
	}
	done := o.(consensus.QueueTxDone)
	r.stats.puts.Add(uint64(len(done.IDs)))
	r.stats.acks.Add(uint64(len(done.Acked)))
	return done, nil
}

// runStream is a stream's runs of puts under way at this node
// (consensus.QueuePutRun: numbered run.Seq onwards under run.Origin,
// applied in order, after run.After), in the order of the stream. A run
// is proposed without waiting for the commit of the one before it: runs
// proposed one after another reach the leader in that order, so a stream
// keeps many on their way at once and each commits with the others'
// entries.
//
// A run lost on its way (as at a change of leader) is overtaken by the
// next, which the log refuses as early: nothing of it applies. As in
// Go-Back-N (Tanenbaum, Computer Networks, §3.4.2), where the receiver
// discards what comes out of order and the sender retransmits every
// frame from the oldest not acknowledged, an early run stays under way,
// and the runs unanswered are proposed again together, in the order of
// the stream: one timer, the oldest run's, set to the retry interval
// after the last answer and doubled at each expiry (package backoff). Before,
// each run had its own timer, and an early run ended the stream (the
// Publisher resent the rest on a new one): an older run had waited, and
// backed off, longer than a younger one, so after a change of leader
// lost both the younger one's copy went first and was refused; and a
// resumed stream's run took the refusal of an older stream's copy of the
// same numbers, still on its way, for its own — on a busy machine,
// streams were opened again and again.
type runStream struct {
	r *Replicated

	mu     sync.Mutex
	runs   []*streamRun    // proposed and not answered, in the order of the stream
	waits  backoff.Backoff // the oldest run's waits
	wait   time.Duration   // the oldest run's wait now
	timer  *time.Timer     // set while runs is not empty
	due    time.Time       // when the timer is set to fire
	woken  bool            // proposing again after progress (resend)
	done   chan struct{}   // closed with the stream
	closed bool
}

// streamRun is a run under way: its waiter and how many times it was
// proposed.
type streamRun struct {
	run consensus.QueuePutRun
	w   *waiter
	n   int
}

// runResult is the outcome of a run of puts: ids, one per put applied
// from the first, and why the next was not (nil: all were).
type runResult struct {
	ids []uint64
	err error
}

func (r *Replicated) newRunStream() *runStream {
	s := &runStream{r: r, waits: backoff.New(r.retry, r.origin, rand.Uint64()), done: make(chan struct{})}
	s.wait = s.waits.Next()
	s.timer = time.AfterFunc(time.Hour, func() { s.resend(false) })
	s.timer.Stop()
	go func() {
		for {
			select {
			case <-r.progress.Resumed():
				s.resend(true)
			case <-s.done:
				return
			}
		}
	}()
	return s
}

// close stops proposing the stream's runs again.
func (s *runStream) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		close(s.done)
	}
	s.closed = true
	s.timer.Stop()
}

// start proposes run, after the stream's runs started before it, and
// returns without waiting for its commit. The answer comes on the
// returned channel: the ids of the puts applied (a prefix of the run; 0
// for a copy of one applied before) and, if not all were, why.
func (s *runStream) start(ctx context.Context, run consensus.QueuePutRun) (<-chan runResult, error) {
	r := s.r
	for _, b := range run.Bodies {
		if err := checkPut(run.Queue, b); err != nil {
			return nil, err
		}
	}
	if err := r.serving(); err != nil {
		return nil, err
	}
	select {
	case r.window <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-r.svc.Done():
		return nil, ErrClosed
	case <-r.halted.Done():
		return nil, r.Halted()
	case <-r.removed.Done():
		return nil, ErrRemoved
	}
	// Room for an older run's answers beside its own (they are skipped).
	sr := &streamRun{run: run, w: &waiter{ch: make(chan proc.Output, 4), tx: true}}
	key := [2]uint64{run.Origin, run.Seq}
	r.mu.Lock()
	r.waits[key] = []*waiter{sr.w} // a stream resumed on this node takes over from an older one
	r.mu.Unlock()
	s.mu.Lock()
	err := s.propose(sr)
	if err == nil {
		s.runs = append(s.runs, sr)
		if len(s.runs) == 1 && !s.closed {
			s.arm()
		}
	}
	s.mu.Unlock()
	if err != nil {
		r.endRun(key, sr.w)
		return nil, ErrClosed
	}
	out := make(chan runResult, 1)
	go func() {
		defer r.endRun(key, sr.w)
		res := s.waitRun(ctx, sr)
		s.answered(sr)
		out <- res
	}()
	return out, nil
}

// propose gives the service the next proposal of sr. The caller holds
// mu, so that the stream's proposals reach the service in its order.
func (s *runStream) propose(sr *streamRun) error {
	sr.n++
	if lose := s.r.lose.Load(); lose != nil && (*lose)(sr.run, sr.n, s.woken) {
		return nil // lost on its way: proposed again with the others
	}
	return s.r.svc.Input(sr.run)
}

// resend proposes again, in order, every run not answered for the
// wait, and doubles the wait; after progress (the log moving again after
// a quiet spell) at once, and the waits start over.
func (s *runStream) resend(progress bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(s.runs) == 0 {
		return
	}
	if !progress && time.Now().Before(s.due) {
		return // a timer that fired as progress set it again: not due
	}
	s.woken = progress
	defer func() { s.woken = false }()
	for _, sr := range s.runs {
		if s.propose(sr) != nil {
			return // the service stopped: waitRun sees it
		}
	}
	if progress {
		s.waits.Reset()
	}
	s.wait = s.waits.Next()
	s.arm()
}

// arm sets the timer to fire after the wait. The caller holds mu.
func (s *runStream) arm() {
	s.due = time.Now().Add(s.wait)
	s.timer.Reset(s.wait)
}

// answered removes sr from the runs under way. An answer to the oldest is
// progress: the wait starts again from the retry interval, for the next.
func (s *runStream) answered(sr *streamRun) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.Index(s.runs, sr)
	if i < 0 {
		return
	}
	s.runs = slices.Delete(s.runs, i, i+1)
	if i > 0 {
		return
	}
	s.waits.Reset()
	s.wait = s.waits.Next()
	s.timer.Stop()
	if len(s.runs) > 0 && !s.closed {
		s.arm()
	}
}

func (r *Replicated) endRun(key [2]uint64, w *waiter) {
	r.mu.Lock()
	r.unwait(key, w)
	r.mu.Unlock()
	<-r.window
}

// waitRun waits for the answer to sr's run: its own, not that of another
// run of the same first number (an older stream's, resumed on this node).
func (s *runStream) waitRun(ctx context.Context, sr *streamRun) runResult {
	r, run := s.r, sr.run
	for {
		select {
		case o := <-sr.w.ch:
			done, ok := o.(consensus.QueuePutRunDone)
			if !ok || done.After != run.After || done.Puts != len(run.Bodies) {
				continue
			}
			if done.Early {
				// This copy overtook the run before it, lost on its way:
				// it is proposed again after that one.
				r.stats.early.Add(1)
				continue
			}
			r.stats.puts.Add(uint64(len(done.IDs)))
			res := runResult{ids: done.IDs}
			switch {
			case done.Full:
				r.stats.refused.Add(1)
				res.err = fmt.Errorf("%w: %s", ErrFull, done.Reason)
			case done.Reason != "":
				res.err = errors.New(done.Reason)
			}
			return res
		case <-ctx.Done():
			return runResult{err: ctx.Err()}
		case <-r.svc.Done():
			return runResult{err: ErrClosed}
		case <-r.halted.Done():
			return runResult{err: r.Halted()}
		case <-r.removed.Done():
			return runResult{err: ErrRemoved}
		}
	}
}

// Leading reports whether this node leads the queues' log (a ready
// leader).
func (r *Replicated) Leading() bool {
	var ok bool
	r.svc.Read(func(p proc.Process) {
		if q, is := p.(queuesProcess); is {
			ok = q.Raft().Ready()
		}
	})
	return ok
}

// DeclareTransient fails: replicated queues are all persistent.
func (r *Replicated) DeclareTransient(name string) error {
	return fmt.Errorf("queue %s: the queues are replicated on the log, all persistent (a node with queues: local keeps transient ones)", name)
}

// Subscribe returns a channel that receives each message put on the
// queue (committed, as this node applies it) from now on. The channel is
// closed by cancel, or when it holds buf messages unread.
func (r *Replicated) Subscribe(name string, buf int) (<-chan Message, func(), error) {
	if err := ValidName(name); err != nil {
		return nil, nil, err
	}
	if r.removed.Get() != nil {
		return nil, nil, ErrRemoved
	}
	s := &sub{ch: make(chan Message, max(buf, 1))}
	r.mu.Lock()
	if r.subs[name] == nil {
		r.subs[name] = map[*sub]struct{}{}
	}
	r.subs[name][s] = struct{}{}
	r.mu.Unlock()
	return s.ch, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if _, ok := r.subs[name][s]; ok {
			delete(r.subs[name], s)
			close(s.ch)
		}
	}, nil
}

// EndListeners cuts off every listener (Subscribe): their channels
// close, as when one falls behind. For a node that no longer follows the
// log — removed from its voters, it is sent no more entries — so that
// its listeners learn it and go elsewhere instead of waiting for ever.
func (r *Replicated) EndListeners() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, ss := range r.subs {
		for s := range ss {
			close(s.ch)
		}
		delete(r.subs, name)
	}
}

// Left tells the queues that this node no longer votes in their log
// (removed from its voters): it is sent no more entries, so nothing
// waiting at it would ever be answered. Every operation under way or to
// come fails with ErrRemoved (503 over HTTP, so a Client goes on to
// another node) and the listeners are cut off, until Rejoined. Before, an
// operation under way as its node was removed waited out its caller's
// timeout: under load, a put sent to the queues' leader as it was
// removed held a producer for its whole 10 s.
func (r *Replicated) Left() {
	r.removed.Set(struct{}{})
	r.EndListeners()
}

// Rejoined tells the queues that this node votes in their log again
// (added back): they serve again.
func (r *Replicated) Rejoined() { r.removed.Clear() }

// serving is why this node's replica serves no operation now (halted,
// or removed from the voters), or nil.
func (r *Replicated) serving() error {
	if err := r.Halted(); err != nil {
		return err
	}
	if r.removed.Get() != nil {
		return ErrRemoved
	}
	return nil
}

// Queues lists the queues as this node has applied them (a follower may
// be a little behind the leader).
func (r *Replicated) Queues() []Stats {
	out := []Stats{}
	r.svc.Read(func(p proc.Process) {
		if q, ok := p.(queuesProcess); ok {
			for _, s := range q.Stats() {
				out = append(out, Stats{Name: s.Name, Replicated: true, Ready: s.Ready, Leased: s.Leased, Bytes: s.Bytes})
			}
		}
	})
	return out
}

// WriteMetrics writes the replicated queues' gauges and this node's
// counters (Prometheus text format).
func (r *Replicated) WriteMetrics(w io.Writer) {
	fmt.Fprintf(w, "# TYPE cohort_rqueue_operations_total counter\n")
	fmt.Fprintf(w, "cohort_rqueue_operations_total{op=\"put\"} %d\n", r.stats.puts.Load())
	fmt.Fprintf(w, "cohort_rqueue_operations_total{op=\"get\"} %d\n", r.stats.gets.Load())
	fmt.Fprintf(w, "cohort_rqueue_operations_total{op=\"ack\"} %d\n", r.stats.acks.Load())
	fmt.Fprintf(w, "cohort_rqueue_operations_total{op=\"refused\"} %d\n", r.stats.refused.Load())
	// 1 once the replica halted (Halted), with the entry it halted at.
	var halted, at uint64
	if h := r.halted.At(); h != nil {
		halted, at = 1, h.Index
	}
	fmt.Fprintf(w, "# TYPE cohort_rqueue_halted gauge\ncohort_rqueue_halted %d\n", halted)
	fmt.Fprintf(w, "# TYPE cohort_rqueue_halted_entry gauge\ncohort_rqueue_halted_entry %d\n", at)
	fmt.Fprintf(w, "# TYPE cohort_rqueue_messages gauge\n")
	for _, s := range r.Queues() {
		fmt.Fprintf(w, "cohort_rqueue_messages{queue=%q,state=\"ready\"} %d\n", s.Name, s.Ready)
		fmt.Fprintf(w, "cohort_rqueue_messages{queue=%q,state=\"leased\"} %d\n", s.Name, s.Leased)
	}
}
