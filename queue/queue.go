package queue

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/cohort-go/cohort/internal/httpapi"
)

// Bounds.
const (
	// MaxMessage is the largest message body, in bytes.
	MaxMessage = 1 << 20
	maxName    = 128
	maxOrigin  = 256
	// DefaultSegmentBytes is the size at which a segment is closed and a
	// new one started.
	DefaultSegmentBytes = 64 << 20
	// DefaultMaxQueueBytes bounds the bodies one queue holds.
	DefaultMaxQueueBytes = 256 << 20
	// DefaultMaxQueues bounds how many queues a manager holds.
	DefaultMaxQueues = 10000
	// DefaultVisibility is how long a got message stays leased to its
	// consumer before it is delivered again.
	DefaultVisibility = 30 * time.Second
)

// Errors, tested with errors.Is.
var (
	ErrFull      = errors.New("queue full")
	ErrTooBig    = errors.New("message too big")
	ErrNoMessage = errors.New("no such message")
	ErrClosed    = errors.New("queue manager closed")
	ErrLeaseLost = errors.New("lease lost: the message was delivered again")
	// ErrNoLeader: a node of replicated queues that had a leader has known
	// none for NoLeaderFor: it is likely cut off from the majority, and
	// another node may serve the request (a Client's Get goes on to it).
	ErrNoLeader = errors.New("no leader in reach (this node may be cut off from the majority)")
	// ErrHalted: this node's replica of the replicated queues met a
	// committed entry it cannot apply (consensus.Halted) and stopped
	// applying the log rather than go on from a state the other nodes no
	// longer hold: it answers nothing until restarted, and the other
	// nodes serve the queues (a Client goes on to them, as from a 503).
	ErrHalted = errors.New("this node's replica of the queues halted")
	// ErrRemoved: this node was removed from the voters of the queues'
	// log (Replicated.Left): it is sent no more of it, and the other
	// nodes serve the queues (a Client goes on to them, as from a 503).
	ErrRemoved = errors.New("this node no longer follows the queues' log: it was removed from its voters; the other nodes serve the queues")
	ErrName    = errors.New("bad queue name")
	ErrTooMany = errors.New("too many queues")
)

// Config configures a Manager. The zero value is a transient manager:
// every queue in memory.
type Config struct {
	// Dir is where persistent queues keep their segment log; "": none,
	// every queue is transient.
	Dir string
	// FS is the file system under Dir; nil: OS.
	FS FS
	// SegmentBytes is the size at which a segment is closed; 0:
	// DefaultSegmentBytes.
	SegmentBytes int64
	// MaxQueueBytes bounds the message bytes one queue holds (puts beyond
	// fail with ErrFull); 0: DefaultMaxQueueBytes.
	MaxQueueBytes int64
	// MaxQueues bounds the queues; 0: DefaultMaxQueues.
	MaxQueues int
	// Visibility is the lease of a got message when Get is given none;
	// 0: DefaultVisibility.
	Visibility time.Duration
	Logger     *slog.Logger
}

// Validate checks the configuration, naming the bad field.
func (c Config) Validate() error {
	switch {
	case c.SegmentBytes < 0:
		return fmt.Errorf("queue: SegmentBytes %d: want ≥ 0", c.SegmentBytes)
	case c.MaxQueueBytes < 0:
		return fmt.Errorf("queue: MaxQueueBytes %d: want ≥ 0", c.MaxQueueBytes)
	case c.MaxQueues < 0:
		return fmt.Errorf("queue: MaxQueues %d: want ≥ 0", c.MaxQueues)
	case c.Visibility < 0:
		return fmt.Errorf("queue: Visibility %v: want ≥ 0", c.Visibility)
	}
	return nil
}

// Message is a delivered message.
type Message struct {
	Queue string `json:"queue"`
	ID    uint64 `json:"id"`
	Body  []byte `json:"body"`
	// Deliveries counts this message's deliveries, this one included: >1
	// means an earlier consumer did not acknowledge it in time.
	Deliveries int `json:"deliveries,omitempty"`
	// Lease names this delivery's lease on a replicated queue (the log
	// entry that made it): an ack or a release that gives it acts only
	// while the lease holds (see Replicated.AckLease).
	Lease uint64 `json:"lease,omitempty"`
}

// Stats describes a queue.
type Stats struct {
	Name       string `json:"name"`
	Transient  bool   `json:"transient,omitempty"`
	Replicated bool   `json:"replicated,omitempty"` // on the cluster's log (Replicated)
	Ready      int    `json:"ready"`                // messages waiting
	Leased     int    `json:"leased"`               // delivered, not acknowledged yet
	Bytes      int64  `json:"bytes"`
}

// Manager holds a node's queues: persistent ones in one segment log
// under Config.Dir, transient ones in memory. Its methods are safe for
// concurrent use.
type Manager struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	queues  map[string]*queue
	nextID  uint64
	origins map[string]uint64 // origin (a relay's remote queue, a publisher) → highest number taken (submitted)
	used    map[string]uint64 // origin → when it last put, by the count of origin puts
	puts    uint64            // origin puts taken
	err     error             // sticky: the log failed, or Close

	seg *segLog // nil: transient manager
}

type queue struct {
	name      string
	transient bool
	all       map[uint64]*entry
	ready     byID
	leases    byDeadline
	bytes     int64 // bodies held and reserved by puts under way
	wake      chan struct{}
	subs      map[*sub]struct{}
}

type sub struct {
	ch     chan Message
	behind bool
}

// Open opens a manager: a persistent one replays its log (cutting off a
// torn tail, with a log line).
func Open(cfg Config) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.FS == nil {
		cfg.FS = OS
	}
	if cfg.SegmentBytes == 0 {
		cfg.SegmentBytes = DefaultSegmentBytes
	}
	if cfg.MaxQueueBytes == 0 {
		cfg.MaxQueueBytes = DefaultMaxQueueBytes
	}
	if cfg.MaxQueues == 0 {
		cfg.MaxQueues = DefaultMaxQueues
	}
	if cfg.Visibility == 0 {
		cfg.Visibility = DefaultVisibility
	}
	m := &Manager{cfg: cfg, log: cfg.Logger, queues: map[string]*queue{}, nextID: 1, origins: map[string]uint64{}, used: map[string]uint64{}}
	if m.log == nil {
		m.log = slog.Default()
	}
	if cfg.Dir == "" {
		return m, nil
	}
	seg, err := openLog(m)
	if err != nil {
		return nil, err
	}
	go seg.run()
	return m, nil
}

// Close stops the manager. Puts and acks not yet durable fail.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.err == nil {
		m.err = ErrClosed
	}
	for _, q := range m.queues {
		for s := range q.subs {
			close(s.ch)
		}
		q.subs = nil
		close(q.wake)
		q.wake = make(chan struct{})
	}
	m.mu.Unlock()
	if m.seg != nil {
		return m.seg.close()
	}
	return nil
}

// ValidName checks a queue's name: 1 to 128 of A-Z a-z 0-9 . _ -.
func ValidName(name string) error {
	if err := httpapi.ValidName("queue", name); err != nil {
		return fmt.Errorf("%w: %v", ErrName, err)
	}
	return nil
}

// q returns the named queue, creating it. The caller holds mu.
func (m *Manager) q(name string) (*queue, error) {
	if q, ok := m.queues[name]; ok {
		return q, nil
	}
	if err := ValidName(name); err != nil {
		return nil, err
	}
	if len(m.queues) >= m.cfg.MaxQueues {
		return nil, fmt.Errorf("%w: %d queues, the most", ErrTooMany, m.cfg.MaxQueues)
	}
	q := &queue{name: name, all: map[uint64]*entry{}, wake: make(chan struct{}), transient: m.seg == nil}
	m.queues[name] = q
	return q, nil
}

// DeclareTransient makes name a transient queue: in memory, lost at a
// restart, never written to the log. A queue that already holds messages
// keeps its kind; declaring it transient is then an error.
func (m *Manager) DeclareTransient(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return m.err
	}
	q, err := m.q(name)
	if err != nil {
		return err
	}
	if !q.transient && (len(q.all) > 0 || q.bytes > 0) {
		return fmt.Errorf("queue %s is persistent and holds messages", name)
	}
	q.transient = true
	return nil
}

// Put appends body to the queue; it returns once the message is durable
// (fsynced, with others that share the fsync: group commit) or, in a
// transient queue, held.
func (m *Manager) Put(name string, body []byte) (uint64, error) {
	return m.put(name, body, "", 0)
}

// PutFrom appends a message relayed from a remote queue: origin names the
// source queue (its node and name), seq is the message's id there. A
// message from origin with a seq no higher than one already taken is a
// duplicate: PutFrom returns 0 and stores nothing. Relays send a source
// queue's messages in order, so this makes forwarding idempotent.
func (m *Manager) PutFrom(name string, body []byte, origin string, seq uint64) (uint64, error) {
	if origin == "" || len(origin) > maxOrigin {
		return 0, fmt.Errorf("origin %q: want 1 to %d bytes", httpapi.Clip(origin), maxOrigin)
	}
	return m.put(name, body, origin, seq)
}

func (m *Manager) put(name string, body []byte, origin string, seq uint64) (uint64, error) {
	if len(body) > MaxMessage {
		return 0, fmt.Errorf("%w: %d bytes, the most is %d", ErrTooBig, len(body), MaxMessage)
	}
	tx := &Tx{m: m}
	tx.put(name, body, origin, seq)
	ids, err := tx.commit()
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	return ids[0], nil
}

// Get removes the head of the queue, blocking until there is one or ctx
// ends. The message is leased for visibility (0: the manager's default):
// unless acknowledged (Ack) by then, it is delivered again.
func (m *Manager) Get(ctx context.Context, name string, visibility time.Duration) (Message, error) {
	msg, _, err := m.get(ctx, name, visibility, true)
	return msg, err
}

// Poll is Get without blocking: ok is false if the queue is empty.
func (m *Manager) Poll(name string, visibility time.Duration) (msg Message, ok bool, err error) {
	msg, _, err = m.get(context.Background(), name, visibility, false)
	if errors.Is(err, errEmpty) {
		return Message{}, false, nil
	}
	return msg, err == nil, err
}

var errEmpty = errors.New("empty")

// get also returns the delivery, for a transaction.
func (m *Manager) get(ctx context.Context, name string, visibility time.Duration, block bool) (Message, got, error) {
	if visibility <= 0 {
		visibility = m.cfg.Visibility
	}
	for {
		m.mu.Lock()
		if m.err != nil {
			m.mu.Unlock()
			return Message{}, got{}, m.err
		}
		q, err := m.q(name)
		if err != nil {
			m.mu.Unlock()
			return Message{}, got{}, err
		}
		now := time.Now()
		q.expire(now)
		if q.ready.Len() > 0 {
			e := heap.Pop(&q.ready).(*entry)
			e.state, e.deadline = leased, now.Add(visibility)
			e.lease++
			e.deliveries++
			heap.Push(&q.leases, e)
			msg := Message{Queue: name, ID: e.id, Body: e.body, Deliveries: e.deliveries}
			m.mu.Unlock()
			return msg, got{q: q, e: e, lease: e.lease}, nil
		}
		if !block {
			m.mu.Unlock()
			return Message{}, got{}, errEmpty
		}
		wake := q.wake
		var expiry <-chan time.Time
		var t *time.Timer
		if q.leases.Len() > 0 {
			t = time.NewTimer(time.Until(q.leases[0].deadline))
			expiry = t.C
		}
		m.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-wake:
		case <-expiry:
		}
		if t != nil {
			t.Stop()
		}
		if ctx.Err() != nil {
			return Message{}, got{}, ctx.Err()
		}
	}
}

// expire makes the leases that ended ready again.
func (q *queue) expire(now time.Time) {
	for q.leases.Len() > 0 && !q.leases[0].deadline.After(now) {
		e := heap.Pop(&q.leases).(*entry)
		e.state = ready
		heap.Push(&q.ready, e)
	}
}

func (q *queue) signal() {
	close(q.wake)
	q.wake = make(chan struct{})
}

// unlease takes e out of the leases or the ready messages.
func (q *queue) unlease(e *entry) {
	switch e.state {
	case leased:
		heap.Remove(&q.leases, e.leaseIdx)
	case ready:
		heap.Remove(&q.ready, e.readyIdx)
	}
}

// Release gives a leased message back at once (a negative
// acknowledgement): it is the next delivered, before its lease would end.
func (m *Manager) Release(name string, id uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	q, ok := m.queues[name]
	if !ok {
		return fmt.Errorf("%w: queue %s holds no message %d", ErrNoMessage, name, id)
	}
	e, ok := q.all[id]
	if !ok || e.state != leased {
		return fmt.Errorf("%w: queue %s has no leased message %d", ErrNoMessage, name, id)
	}
	heap.Remove(&q.leases, e.leaseIdx)
	e.state = ready
	heap.Push(&q.ready, e)
	q.signal()
	return nil
}

// Ack acknowledges messages got from the queue: once Ack returns they
// are removed durably and never delivered again. Ids the queue does not
// hold (acknowledged already, or never) make an error wrapping
// ErrNoMessage; the others are acknowledged all the same.
func (m *Manager) Ack(name string, ids ...uint64) error {
	tx := &Tx{m: m}
	var missing []uint64
	m.mu.Lock()
	q := m.queues[name]
	for _, id := range ids {
		var e *entry
		if q != nil {
			e = q.all[id]
		}
		if e == nil || e.state == acking {
			missing = append(missing, id)
			continue
		}
		tx.gets = append(tx.gets, got{q: q, e: e, lease: e.lease})
	}
	m.mu.Unlock()
	if len(tx.gets) > 0 {
		tx.anyLease = true
		if _, err := tx.commit(); err != nil {
			return err
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: queue %s holds no message %v", ErrNoMessage, name, missing)
	}
	return nil
}

// Notify calls f with each message put on the queue from now until ctx
// ends (the message stays in the queue: a notification, not a get). It
// returns ErrFull if f falls more than 1024 messages behind.
func (m *Manager) Notify(ctx context.Context, name string, f func(Message)) error {
	ch, cancel, err := m.Subscribe(name, 1024)
	if err != nil {
		return err
	}
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			return nil
		case msg, ok := <-ch:
			if !ok {
				m.mu.Lock()
				err := m.err
				m.mu.Unlock()
				if err != nil {
					return err
				}
				return fmt.Errorf("%w: the listener fell behind", ErrFull)
			}
			f(msg)
		}
	}
}

// Subscribe returns a channel that receives each message put on the
// queue (durably) from now on. The channel is closed by cancel, when the
// manager closes, or when it holds buf messages unread (the reader fell
// behind).
func (m *Manager) Subscribe(name string, buf int) (<-chan Message, func(), error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return nil, nil, m.err
	}
	q, err := m.q(name)
	if err != nil {
		return nil, nil, err
	}
	s := &sub{ch: make(chan Message, max(buf, 1))}
	if q.subs == nil {
		q.subs = map[*sub]struct{}{}
	}
	q.subs[s] = struct{}{}
	return s.ch, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if _, ok := q.subs[s]; ok {
			delete(q.subs, s)
			close(s.ch)
		}
	}, nil
}

// Queues lists the queues, by name.
func (m *Manager) Queues() []Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	out := make([]Stats, 0, len(m.queues))
	for _, q := range m.queues {
		q.expire(now)
		out = append(out, Stats{Name: q.name, Transient: q.transient, Ready: q.ready.Len(), Leased: q.leases.Len(), Bytes: q.bytes})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Len is how many messages the queue holds, leased ones included.
func (m *Manager) Len(name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if q, ok := m.queues[name]; ok {
		return len(q.all)
	}
	return 0
}

// Tx is a transaction: the messages it gets and the messages it puts
// commit together — one record of the log — or not at all. A Tx is used
// by one goroutine.
type Tx struct {
	m        *Manager
	gets     []got
	puts     []op
	anyLease bool // Ack: the lease may have moved on; a Tx's may not
	done     bool
	// origin and seq number a client's transaction (TransactFrom): it is
	// applied once, and a copy (dup) is answered without applying it.
	origin string
	seq    uint64
	dup    bool
}

type got struct {
	q     *queue
	e     *entry
	lease uint64
}

// Begin starts a transaction.
func (m *Manager) Begin() *Tx { return &Tx{m: m} }

// Get gets a message (as Manager.Get) for the transaction: Commit
// acknowledges it, Abort gives it back.
func (tx *Tx) Get(ctx context.Context, name string, visibility time.Duration) (Message, error) {
	msg, g, err := tx.m.get(ctx, name, visibility, true)
	if err != nil {
		return msg, err
	}
	tx.gets = append(tx.gets, g)
	return msg, nil
}

// Put adds a put to the transaction.
func (tx *Tx) Put(name string, body []byte) error {
	if len(body) > MaxMessage {
		return fmt.Errorf("%w: %d bytes, the most is %d", ErrTooBig, len(body), MaxMessage)
	}
	if err := ValidName(name); err != nil {
		return err
	}
	tx.put(name, body, "", 0)
	return nil
}

func (tx *Tx) put(name string, body []byte, origin string, seq uint64) {
	tx.puts = append(tx.puts, op{kind: opPut, queue: name, body: body, origin: origin, seq: seq})
}

// Abort gives back the messages the transaction got (they are delivered
// again at once) and drops its puts.
func (tx *Tx) Abort() {
	if tx.done {
		return
	}
	tx.done = true
	tx.m.mu.Lock()
	defer tx.m.mu.Unlock()
	for _, g := range tx.gets {
		if g.e.state == leased && g.e.lease == g.lease {
			heap.Remove(&g.q.leases, g.e.leaseIdx)
			g.e.state = ready
			heap.Push(&g.q.ready, g.e)
			g.q.signal()
		}
	}
}

// Commit makes the transaction's gets and puts durable at once. If a
// message it got was delivered again meanwhile (its lease ended), nothing
// commits: ErrLeaseLost.
func (tx *Tx) Commit() error {
	_, err := tx.commit()
	return err
}

// commit checks the transaction, reserves room for its puts and hands it
// to the log (or applies it at once when it touches transient queues
// only), and waits until it is durable.
func (tx *Tx) commit() ([]uint64, error) {
	ids, wait, err := tx.start()
	if err == nil {
		err = wait()
	}
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// start is commit without the wait: wait returns once the transaction is
// durable (or failed). Transactions started one after another reach the
// log, and so are applied, in that order.
func (tx *Tx) start() (ids []uint64, wait func() error, err error) {
	if tx.done {
		return nil, nil, errors.New("queue: transaction already ended")
	}
	tx.done = true
	m := tx.m
	m.mu.Lock()
	if m.err != nil {
		m.mu.Unlock()
		return nil, nil, m.err
	}
	if tx.origin != "" && tx.seq <= m.origins[tx.origin] {
		tx.dup = true
		ids, wait = m.awaitCopy(len(tx.puts))
		m.mu.Unlock()
		return ids, wait, nil
	}
	for _, g := range tx.gets {
		if g.e.state == acking || m.queues[g.q.name] != g.q || g.q.all[g.e.id] != g.e {
			m.mu.Unlock()
			return nil, nil, fmt.Errorf("%w: queue %s, message %d was acknowledged already", ErrNoMessage, g.q.name, g.e.id)
		}
		if !tx.anyLease && (g.e.state != leased || g.e.lease != g.lease) {
			m.mu.Unlock()
			tx.done = false
			tx.Abort()
			return nil, nil, fmt.Errorf("%w: queue %s, message %d", ErrLeaseLost, g.q.name, g.e.id)
		}
	}
	// Room for the puts, and duplicates from remote queues.
	need := map[*queue]int64{}
	var puts []op
	dup := make([]bool, len(tx.puts))
	for i, p := range tx.puts {
		q, err := m.q(p.queue)
		if err != nil {
			m.mu.Unlock()
			return nil, nil, err
		}
		if p.origin != "" && (p.seq <= m.origins[p.origin] || i > 0 && p.origin == tx.puts[i-1].origin && p.seq <= tx.puts[i-1].seq) {
			dup[i] = true // a duplicate: its id is 0
			continue
		}
		need[q] += int64(len(p.body))
		if q.bytes+need[q] > m.cfg.MaxQueueBytes {
			m.mu.Unlock()
			return nil, nil, fmt.Errorf("%w: queue %s holds %d bytes, the most is %d", ErrFull, q.name, q.bytes, m.cfg.MaxQueueBytes)
		}
		puts = append(puts, p)
	}
	c := &commit{done: make(chan error, 1)}
	ids = make([]uint64, 0, len(tx.puts))
	for _, p := range puts {
		q := m.queues[p.queue]
		q.bytes += int64(len(p.body))
		p.id = m.nextID
		m.nextID++
		for dup[len(ids)] {
			ids = append(ids, 0)
		}
		ids = append(ids, p.id)
		if tx.origin != "" { // every put carries the number, so that it is durable with any
			p.origin, p.seq = tx.origin, tx.seq
		} else if p.origin != "" {
			m.takeOrigin(p.origin, p.seq)
		}
		c.ops = append(c.ops, p)
		c.queues = append(c.queues, q)
	}
	for len(ids) < len(tx.puts) {
		ids = append(ids, 0)
	}
	if tx.origin != "" {
		m.takeOrigin(tx.origin, tx.seq)
	}
	for _, g := range tx.gets {
		g.q.unlease(g.e)
		g.e.state = acking
		c.ops = append(c.ops, op{kind: opAck, queue: g.q.name, id: g.e.id})
		c.queues = append(c.queues, g.q)
	}
	durable := false
	for i := range c.ops {
		if !c.queues[i].transient {
			durable = true
		}
	}
	if !durable && (len(tx.puts) == len(puts) || m.seg == nil) {
		m.apply(c, 0)
		m.mu.Unlock()
		return ids, func() error { return nil }, nil
	}
	// Persistent, or a duplicate (whose original may still be on its way
	// to the disk: the empty commit waits for it).
	m.seg.submit(c)
	m.mu.Unlock()
	return ids, func() error { return <-c.done }, nil
}

// awaitCopy answers a copy of a numbered transaction applied before:
// nothing is applied again and no id is known (0 for each of its n
// puts), and the answer waits for the original to be durable — an empty
// commit after it, since the original may still be on its way to the
// disk. The caller holds mu.
func (m *Manager) awaitCopy(n int) ([]uint64, func() error) {
	ids := make([]uint64, n)
	if m.seg == nil {
		return ids, func() error { return nil }
	}
	c := &commit{done: make(chan error, 1)}
	m.seg.submit(c)
	return ids, func() error { return <-c.done }
}

// commit is a batch of ops that reach the log as one record.
type commit struct {
	ops    []op
	queues []*queue // of each op
	done   chan error
	// A Pipeline's commit (pipelinePut): its puts' acks, resolved once it
	// is durable, then then; and taken, set under the log's pmu once the
	// committer took it, after which no put joins it.
	acks  []*PutAck
	size  int // the bodies' bytes of the puts
	then  func(error)
	taken bool
}

// finish answers a commit the log wrote (err nil) or failed.
func (c *commit) finish(err error) {
	if c.done != nil {
		c.done <- err
	}
	for i, a := range c.acks {
		if err != nil {
			a.resolve(0, err)
		} else {
			a.resolve(c.ops[i].id, nil)
		}
	}
	if c.then != nil {
		c.then(err)
	}
}

// pipelinePut puts body on queue name for a Pipeline, whose ack a is
// resolved once the put is durable: it joins prev, the commit the
// Pipeline handed to the log last, if the committer has not taken it yet
// and has room — one record, one entry of the log's pending list, for
// the puts that came while the log synced the last — else it starts a
// commit, whose then is newThen(c). It returns the commit, or nil for a transient
// queue's put, applied and acknowledged at once.
func (m *Manager) pipelinePut(name string, body []byte, a *PutAck, prev *commit, newThen func(*commit) func(error)) (*commit, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return nil, m.err
	}
	q, err := m.q(name)
	if err != nil {
		return nil, err
	}
	if q.bytes+int64(len(body)) > m.cfg.MaxQueueBytes {
		return nil, fmt.Errorf("%w: queue %s holds %d bytes, the most is %d", ErrFull, q.name, q.bytes, m.cfg.MaxQueueBytes)
	}
	q.bytes += int64(len(body))
	o := op{kind: opPut, queue: name, id: m.nextID, body: body}
	m.nextID++
	if q.transient || m.seg == nil {
		m.apply(&commit{ops: []op{o}, queues: []*queue{q}}, 0)
		a.resolve(o.id, nil)
		return nil, nil
	}
	l := m.seg
	l.pmu.Lock()
	// At most a transaction's puts and bytes in one record, as a stream's
	// commit.
	if prev != nil && !prev.taken && len(prev.ops) < MaxTxOps && prev.size+len(body) <= MaxMessage {
		prev.ops = append(prev.ops, o)
		prev.queues = append(prev.queues, q)
		prev.acks = append(prev.acks, a)
		prev.size += len(body)
		l.pmu.Unlock()
		return prev, nil
	}
	l.pmu.Unlock()
	c := &commit{ops: []op{o}, queues: []*queue{q}, acks: []*PutAck{a}, size: len(body)}
	c.then = newThen(c)
	l.submit(c)
	return c, nil
}

// apply makes a durable commit's effects visible; seg is the segment
// that holds it. The caller holds mu.
func (m *Manager) apply(c *commit, seg uint64) {
	for i, o := range c.ops {
		q := c.queues[i]
		switch o.kind {
		case opPut:
			e := &entry{id: o.id, body: o.body, state: ready, readyIdx: -1, leaseIdx: -1}
			if !q.transient {
				e.seg = seg
				m.seg.track(e, q)
			}
			q.all[o.id] = e
			heap.Push(&q.ready, e)
			q.signal()
			for s := range q.subs {
				select {
				case s.ch <- Message{Queue: q.name, ID: o.id, Body: o.body}:
				default:
					delete(q.subs, s)
					close(s.ch)
				}
			}
			if _, kept := m.origins[o.origin]; kept && m.seg != nil {
				m.seg.durableOrigin(o.origin, o.seq)
			}
		case opAck:
			e := q.all[o.id]
			if e == nil {
				continue
			}
			delete(q.all, o.id)
			q.bytes -= int64(len(e.body))
			if !q.transient {
				m.seg.untrack(e)
			}
		}
	}
}

// MaxOrigins bounds the origins a node's queues remember (what each
// took last, to drop a resent copy): every publisher's stream and every
// relay is one, and a client may name any. Past it the origin that put
// longest ago is forgotten, here and in the next segment's start record:
// a copy it resends after that is stored again (at-most-once's table
// traded for bounded memory, as the replicated queues' MaxOrigins).
const MaxOrigins = 4096

// takeOrigin records that origin put number seq, and forgets the origins
// past MaxOrigins that put longest ago. The caller holds mu.
func (m *Manager) takeOrigin(origin string, seq uint64) {
	m.origins[origin] = seq
	m.puts++
	m.used[origin] = m.puts
	m.forgetOrigins()
}

// forgetOrigins forgets origins, the least recently used first, until
// at most MaxOrigins are left. The caller holds mu (or opens the log).
func (m *Manager) forgetOrigins() {
	for len(m.origins) > MaxOrigins {
		oldest, at := "", uint64(0)
		for o := range m.origins {
			if u := m.used[o]; oldest == "" || u < at || u == at && o < oldest {
				oldest, at = o, u
			}
		}
		delete(m.origins, oldest)
		delete(m.used, oldest)
		if m.seg != nil {
			delete(m.seg.durOrigins, oldest)
		}
	}
}

// WriteMetrics writes the queues' gauges and the log's counters in the
// Prometheus text format.
func (m *Manager) WriteMetrics(w io.Writer) {
	qs := m.Queues()
	fmt.Fprintln(w, "# HELP cohort_queue_messages Messages a queue holds: ready, or leased to a consumer and not acknowledged yet.")
	fmt.Fprintln(w, "# TYPE cohort_queue_messages gauge")
	for _, q := range qs {
		fmt.Fprintf(w, "cohort_queue_messages{queue=%q,state=\"ready\"} %d\n", q.Name, q.Ready)
		fmt.Fprintf(w, "cohort_queue_messages{queue=%q,state=\"leased\"} %d\n", q.Name, q.Leased)
	}
	fmt.Fprintln(w, "# HELP cohort_queue_bytes Bytes of the messages a queue holds.")
	fmt.Fprintln(w, "# TYPE cohort_queue_bytes gauge")
	for _, q := range qs {
		fmt.Fprintf(w, "cohort_queue_bytes{queue=%q} %d\n", q.Name, q.Bytes)
	}
	if m.seg == nil {
		return
	}
	fmt.Fprintln(w, "# HELP cohort_queue_segments Segment files of the queues' log.")
	fmt.Fprintln(w, "# TYPE cohort_queue_segments gauge")
	fmt.Fprintf(w, "cohort_queue_segments %d\n", m.seg.nsegs.Load())
	fmt.Fprintln(w, "# HELP cohort_queue_records_total Records (puts, acknowledgements, transactions) written to the log.")
	fmt.Fprintln(w, "# TYPE cohort_queue_records_total counter")
	fmt.Fprintf(w, "cohort_queue_records_total %d\n", m.seg.records.Load())
	fmt.Fprintln(w, "# HELP cohort_queue_syncs_total fdatasyncs of the log; records/syncs is the group commit's batch.")
	fmt.Fprintln(w, "# TYPE cohort_queue_syncs_total counter")
	fmt.Fprintf(w, "cohort_queue_syncs_total %d\n", m.seg.syncs.Load())
}
