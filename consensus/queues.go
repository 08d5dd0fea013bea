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

// Queues is message queues on a Raft log — what JetStream calls R3 and
// RabbitMQ quorum queues: every operation on a queue is an entry, so a
// put acknowledged once committed survives any minority of crashes and
// every restart, and every server holds the same queues. The queuing
// model is that of message-oriented persistent communication (Tanenbaum
// and van Steen, Distributed Systems, §4.3) with the leased gets of SQS
// and JetStream's explicit acknowledgements; the leases are kept on the
// leader's clock as Locks keeps its sessions (Chubby; Ongaro's thesis,
// §6.4).
//
//	on Put(queue, origin, seq, body):   entry; unless origin's seq was applied:
//	                                    full → refuse; else id = ++next, append to queue
//	on Run(queue, origin, seq, after, bodies): entry; unless after ≠ 0 is not applied:
//	                                    each body in turn as a Put numbered seq+i,
//	                                    up to the first refused
//	on Get(queue, origin, seq, vis):    entry; lease the ready head (lowest id) to
//	                                    (origin, seq): token = the entry's index;
//	                                    at the leader, deadline = now + vis
//	on Ack(queue, ids, token):          entry; drop the messages — never delivered again
//	on Release(queue, ids, token):      entry; the messages are ready again
//	                                    (token ≠ 0: only those still under that lease)
//	on Tx(acks, puts):                  entry; every message acked is held (under the
//	                                    lease named) → ack them all and put every
//	                                    message; else none of it
//	every heartbeat (leader):           entry Expire(queue, id, token) for each lease
//	                                    past its deadline → the message is ready again
//	on becoming leader (Ready):         deadline = now + vis for every lease
//
// FIFO: a queue delivers its ready messages lowest id first, and ids
// follow the log, so messages are first delivered in the order their puts
// committed; one that comes back (released, expired) goes before those put
// after it.
//
// Why a consumer may use a message until s + Valid, s when it sent the
// Get (on its clock) and Valid = vis·(1−ρ)/(1+ρ) (ValidFor): the leader
// that applied the lease did so after s and set its deadline vis of its
// own clock later; a leader that takes over gives every lease vis from
// then; so no Expire — the only way a message leased goes to another
// consumer without its holder's release — is proposed before s + Valid
// on any clock within the drift bound. Nothing of this reads the
// leader's own lease (Raft.Lease), as Locks' KeepAlive does: a get, an
// ack, a release and a transaction are each an entry, so a leader whose
// followers answer late (its lease lapsed, on a slow or loaded network)
// commits acks as it commits gets, refusing none, and proposes no expiry
// sooner than it would otherwise (TestQueueLeasesOutliveALapsedLease).
// The checker "queue-delivery" verifies it on the traces, with: every
// acknowledged put delivered in the order of ids (none lost), no acked
// message leased again.
//
// Retries: operations carry a per-origin sequence number and are applied
// once (the origin table of Groups); a retried Get is answered with what
// the first copy leased, a retried Put with id 0. A client's refused
// operation (ClientOrigin) leaves its number free: a retry of it is
// judged afresh. Memory is bounded: a
// queue holds at most Limits.Messages messages and Limits.Bytes bytes
// (puts beyond are refused, "full"), acked messages are dropped at once
// and an empty queue is forgotten, and the snapshot is the queues held.
// The snapshot is bounded too (SnapshotBound): the messages by
// Limits.State, counted as the snapshot encodes them, and the duplicate
// table by MaxOrigins and MaxAbove — a host that keeps a snapshot as one
// record of its storage refuses a put (full) rather than make a snapshot
// it could not write.
type Queues struct {
	raft   *Raft
	cfg    Config
	limits QueueLimits
	log    Log

	next    uint64 // ids given so far, across the queues (ids never repeat)
	queues  map[string]*rqueue
	origins origins
	state   int64 // the messages' MessageCost, across the queues

	// Leader only, volatile: each lease's deadline on our clock.
	leases leaderLeases[leaseKey]
}

// QueueLimits bound what the replicated queues hold. A zero field takes
// DefaultQueueLimits' value.
type QueueLimits struct {
	Messages int   // per queue
	Bytes    int64 // of bodies, per queue
	Queues   int   // queues holding messages
	// State bounds the messages held across every queue, each counted as
	// the snapshot encodes it (MessageCost: its body in base64 and its
	// fields), so that the whole snapshot stays under SnapshotBound — a
	// snapshot is one record of the server's storage, and a record has a
	// largest size.
	State int64
}

// DefaultQueueLimits: 100 000 messages and 64 MiB a queue, 1024 queues,
// 56 MiB of state in all (about 40 MiB of bodies): a snapshot of at most
// about 59 MiB, under the 64 MiB record of the live host's log.
var DefaultQueueLimits = QueueLimits{Messages: 100_000, Bytes: 64 << 20, Queues: 1024, State: 56 << 20}

// What a snapshot spends, at most, beyond the messages' bodies: on a
// message's fields (six integers of up to 20 digits and their keys, in
// JSON), on a queue's name and brackets, on an origin of the duplicate
// table, and on each sequence number it holds above the origin's Done.
const (
	messageOverhead = 256
	queueOverhead   = 2*maxQueueName + 64 // a name in JSON may be escaped
	snapshotFixed   = 4 << 10
	maxQueueName    = 128
)

// MessageCost is what a message of n body bytes counts against
// QueueLimits.State: its size in a snapshot, at most.
func MessageCost(n int) int64 { return 4*int64((n+2)/3) + messageOverhead }

func (l QueueLimits) withDefaults() QueueLimits {
	d := DefaultQueueLimits
	l.Messages = cmp.Or(l.Messages, d.Messages)
	l.Bytes = cmp.Or(l.Bytes, d.Bytes)
	l.Queues = cmp.Or(l.Queues, d.Queues)
	l.State = cmp.Or(l.State, d.State)
	return l
}

// SnapshotBound is the largest snapshot the queues make under l (zero
// fields taking their defaults): the state, the queues' names, and the
// duplicate table at its bounds.
func (l QueueLimits) SnapshotBound() int64 {
	l = l.withDefaults()
	return l.State + int64(l.Queues)*queueOverhead + originsSnapshotBound + snapshotFixed
}

// Validate checks the limits, naming the bad one; maxSnapshot (> 0) is
// the largest snapshot the server's storage takes in one record.
func (l QueueLimits) Validate(maxSnapshot int64) error {
	switch {
	case l.Messages < 0:
		return fmt.Errorf("queue limits: messages %d: want a positive number, or 0 for the default (%d)", l.Messages, DefaultQueueLimits.Messages)
	case l.Bytes < 0:
		return fmt.Errorf("queue limits: bytes %d: want a positive number, or 0 for the default (%d)", l.Bytes, DefaultQueueLimits.Bytes)
	case l.Queues < 0:
		return fmt.Errorf("queue limits: queues %d: want a positive number, or 0 for the default (%d)", l.Queues, DefaultQueueLimits.Queues)
	case l.State < 0:
		return fmt.Errorf("queue limits: state %d: want a positive number, or 0 for the default (%d)", l.State, DefaultQueueLimits.State)
	}
	if maxSnapshot > 0 && l.SnapshotBound() > maxSnapshot {
		d := l.withDefaults()
		room := maxSnapshot - (l.SnapshotBound() - d.State)
		if room < MessageCost(0) {
			return fmt.Errorf("queue limits: queues %d: their names alone could fill a snapshot of %d bytes, the most the storage takes in one record; want at most %d",
				d.Queues, maxSnapshot, (maxSnapshot-originsSnapshotBound-snapshotFixed)/queueOverhead-1)
		}
		return fmt.Errorf("queue limits: state %d bytes (with %d queues) makes snapshots of up to %d bytes, more than the %d the storage takes in one record; want state at most %d",
			d.State, d.Queues, l.SnapshotBound(), maxSnapshot, room)
	}
	return nil
}

type rqueue struct {
	msgs  map[uint64]*QueueMessage
	ready []uint64 // ids not leased, ascending
	bytes int64
}

type leaseKey struct {
	queue string
	id    uint64
}

// QueueMessage is a message held, as snapshots keep it and gets deliver
// it: Token is the entry of its current lease (0: ready), Deliveries how
// many leases it has had.
type QueueMessage struct {
	ID         uint64        `json:"id"`
	Body       []byte        `json:"body"`
	Deliveries int           `json:"deliveries,omitempty"`
	Token      uint64        `json:"token,omitempty"`
	Origin     uint64        `json:"origin,omitempty"` // of the lease
	Seq        uint64        `json:"seq,omitempty"`
	Visibility time.Duration `json:"vis,omitempty"`
}

// NewQueues returns server id of an n-server queue service. Proposals are
// forwarded to the leader.
func NewQueues(id proc.ID, n int, cfg Config, limits QueueLimits) *Queues {
	cfg.Forward = true
	q := &Queues{cfg: cfg, limits: limits.withDefaults()}
	q.reset()
	q.raft = New(id, n, cfg, q)
	return q
}

func (q *Queues) reset() {
	q.log, q.next, q.state = Log{}, 0, 0
	q.queues = map[string]*rqueue{}
	q.origins = newOrigins()
}

// Raft is the server's replicated log.
func (q *Queues) Raft() *Raft { return q.raft }

// Valid is how long after sending a Get a consumer may count on a
// message it leased for vis.
func (q *Queues) Valid(vis time.Duration) time.Duration { return ValidFor(vis, q.cfg.MaxDrift) }

// Inputs: each an entry.

// QueuePut appends Body to Queue; Origin and Seq number it for retries.
type QueuePut struct {
	Queue  string `json:"queue"`
	Origin uint64 `json:"origin"`
	Seq    uint64 `json:"seq"`
	Body   []byte `json:"body"`
}

// QueuePutBatch is several puts in one entry (a client's way to amortize
// the log under load); each is applied as a QueuePut.
type QueuePutBatch struct {
	Puts []QueuePut `json:"puts"`
}

// QueuePutRun is a run of a stream's puts to Queue in one entry,
// numbered Seq, Seq+1, … under Origin, applied in order: a put refused
// (the queue full) refuses those after it, so that what is applied is a
// prefix of the run; a copy of a put applied before is answered again
// (id 0) and the run goes on. With After ≠ 0 nothing of the run applies
// unless Origin's After was applied: runs proposed one after another,
// without waiting for each to commit, apply in the order of the stream
// or not at all — a run that overtakes the one before it (lost, and
// resent, by a change of leader) is refused. Its answer is one
// QueuePutRunDone, numbered Origin and Seq.
type QueuePutRun struct {
	Queue  string   `json:"queue"`
	Origin uint64   `json:"origin"`
	Seq    uint64   `json:"seq"`
	After  uint64   `json:"after,omitempty"`
	Bodies [][]byte `json:"bodies"`
}

// QueueGet leases up to Count (at least 1) messages of Queue's head for
// Visibility.
type QueueGet struct {
	Queue      string        `json:"queue"`
	Origin     uint64        `json:"origin"`
	Seq        uint64        `json:"seq"`
	Count      int           `json:"count,omitempty"`
	Visibility time.Duration `json:"vis"`
}

// QueueAck drops messages for good; QueueRelease makes them ready again.
// With a Token, only messages still under that lease (the get's entry):
// a consumer whose lease ran out, and whose message went to another,
// neither acks nor releases it under the other's feet — a late release
// would hand it to a third consumer while the second still works on it.
type QueueAck struct {
	Queue  string   `json:"queue"`
	Origin uint64   `json:"origin"`
	Seq    uint64   `json:"seq"`
	IDs    []uint64 `json:"ids"`
	Token  uint64   `json:"token,omitempty"`
}

type QueueRelease QueueAck

// QueueRef names a message; with a Token, as still under that lease.
type QueueRef struct {
	Queue string `json:"queue"`
	ID    uint64 `json:"id"`
	Token uint64 `json:"token,omitempty"`
}

// QueueTx acks messages and puts others atomically: all or nothing.
type QueueTx struct {
	Origin uint64     `json:"origin"`
	Seq    uint64     `json:"seq"`
	Acks   []QueueRef `json:"acks"`
	Puts   []QueuePut `json:"puts"` // their Origin and Seq are the Tx's
}

func (QueuePut) Kind() string      { return "queue-put" }
func (QueuePutBatch) Kind() string { return "queue-put-batch" }
func (QueuePutRun) Kind() string   { return "queue-put-run" }
func (QueueGet) Kind() string      { return "queue-get" }
func (QueueAck) Kind() string      { return "queue-ack" }
func (QueueRelease) Kind() string  { return "queue-release" }
func (QueueTx) Kind() string       { return "queue-tx" }

// Outputs, by every server that applies the entry.

// QueuePutDone acknowledges a put: committed, with ID (0: a copy of one
// applied before).
type QueuePutDone struct {
	Queue  string `json:"queue"`
	Origin uint64 `json:"origin"`
	Seq    uint64 `json:"seq"`
	ID     uint64 `json:"id,omitempty"`
	Body   []byte `json:"body,omitempty"`
}

// QueueGot answers a get: the messages leased (none: the queue had no
// ready message), Token the entry that leased them, usable until Valid
// after the get was sent.
type QueueGot struct {
	Queue    string         `json:"queue"`
	Origin   uint64         `json:"origin"`
	Seq      uint64         `json:"seq"`
	Token    uint64         `json:"token,omitempty"`
	Valid    time.Duration  `json:"valid,omitempty"`
	Messages []QueueMessage `json:"messages"`
}

// QueueAcked answers an ack (Released: a release): the ids that were
// held, and Missing, those that were not.
type QueueAcked struct {
	Queue    string   `json:"queue"`
	Origin   uint64   `json:"origin"`
	Seq      uint64   `json:"seq"`
	Index    uint64   `json:"index"`
	IDs      []uint64 `json:"ids"`
	Missing  []uint64 `json:"missing,omitempty"`
	Released bool     `json:"released,omitempty"`
}

// QueueTxDone answers a transaction: committed with the ids put, or
// refused (nothing of it applied).
type QueueTxDone struct {
	Origin uint64   `json:"origin"`
	Seq    uint64   `json:"seq"`
	Index  uint64   `json:"index"`
	Acked  []uint64 `json:"acked,omitempty"`
	IDs    []uint64 `json:"ids,omitempty"`
}

// QueuePutRunDone answers a QueuePutRun: IDs, one per put applied from
// the first (0: a copy of one applied before), and, if fewer than the
// run's puts, Reason why the next was refused (Full: the queue is full).
// After and Puts are the run's: two runs may share a first number — a
// stream resumed from a put whose run was refused sends it again, first
// in a run after nothing — and a copy of the older one, still on its way,
// must not answer the newer (a refusal for an older run's order would
// end the new stream).
type QueuePutRunDone struct {
	Origin uint64   `json:"origin"`
	Seq    uint64   `json:"seq"`
	After  uint64   `json:"after,omitempty"`
	Puts   int      `json:"puts"`
	IDs    []uint64 `json:"ids"`
	Reason string   `json:"reason,omitempty"`
	Full   bool     `json:"full,omitempty"`
	// Early: none of the run was applied, for it came before the put it
	// follows (After) was; a copy proposed again after that put may be.
	Early bool `json:"early,omitempty"`
}

// QueueExpired: a lease ran out on the leader's clock; the message is
// ready again.
type QueueExpired struct {
	Queue string `json:"queue"`
	ID    uint64 `json:"id"`
	Token uint64 `json:"token"`
}

// QueueRefused answers an operation the queues cannot apply; Full: a
// queue is full.
type QueueRefused struct {
	Origin uint64 `json:"origin"`
	Seq    uint64 `json:"seq"`
	Reason string `json:"reason"`
	Full   bool   `json:"full,omitempty"`
	// A transaction's: a message it acks is not held (Missing), or no
	// longer under the lease it names (LeaseLost).
	Missing   bool `json:"missing,omitempty"`
	LeaseLost bool `json:"lease_lost,omitempty"`
}

// QueueStat describes a queue (Stats).
type QueueStat struct {
	Name   string `json:"name"`
	Ready  int    `json:"ready"`
	Leased int    `json:"leased"`
	Bytes  int64  `json:"bytes"`
}

func (QueuePutDone) Kind() string    { return "queue-put-done" }
func (QueueGot) Kind() string        { return "queue-got" }
func (QueueAcked) Kind() string      { return "queue-acked" }
func (QueueTxDone) Kind() string     { return "queue-tx-done" }
func (QueuePutRunDone) Kind() string { return "queue-put-run-done" }
func (QueueExpired) Kind() string    { return "queue-expired" }
func (QueueRefused) Kind() string    { return "queue-refused" }

// QueueOp is an operation as an entry's data (encode, decodeQueueOp:
// binary for the puts, JSON for the rest).
type QueueOp struct {
	Op     string        `json:"op"` // put, get, ack, release, tx, expire
	Queue  string        `json:"q,omitempty"`
	Origin uint64        `json:"o,omitempty"`
	Seq    uint64        `json:"s,omitempty"`
	Body   []byte        `json:"b,omitempty"`
	Puts   []QueuePut    `json:"puts,omitempty"`
	Count  int           `json:"n,omitempty"`
	Vis    time.Duration `json:"vis,omitempty"`
	IDs    []uint64      `json:"ids,omitempty"`
	Acks   []QueueRef    `json:"acks,omitempty"`
	Token  uint64        `json:"token,omitempty"` // expire; ack, release: the lease
	After  uint64        `json:"after,omitempty"` // run
	Bodies [][]byte      `json:"bs,omitempty"`    // run
}

// Process.

func (q *Queues) Start(env proc.Env) {
	q.raft.Start(env)
	q.lead(env)
}

func (q *Queues) Input(env proc.Env, in proc.Input) {
	switch in := in.(type) {
	case QueuePut:
		q.propose(env, QueueOp{Op: "put", Queue: in.Queue, Origin: in.Origin, Seq: in.Seq, Body: in.Body})
	case QueuePutBatch:
		q.propose(env, QueueOp{Op: "puts", Puts: in.Puts})
	case QueuePutRun:
		q.propose(env, QueueOp{Op: "run", Queue: in.Queue, Origin: in.Origin, Seq: in.Seq, After: in.After, Bodies: in.Bodies})
	case QueueGet:
		q.propose(env, QueueOp{Op: "get", Queue: in.Queue, Origin: in.Origin, Seq: in.Seq, Count: in.Count, Vis: in.Visibility})
	case QueueAck:
		q.propose(env, QueueOp{Op: "ack", Queue: in.Queue, Origin: in.Origin, Seq: in.Seq, IDs: in.IDs, Token: in.Token})
	case QueueRelease:
		q.propose(env, QueueOp{Op: "release", Queue: in.Queue, Origin: in.Origin, Seq: in.Seq, IDs: in.IDs, Token: in.Token})
	case QueueTx:
		q.propose(env, QueueOp{Op: "tx", Origin: in.Origin, Seq: in.Seq, Acks: in.Acks, Puts: in.Puts})
	default:
		q.raft.Input(env, in)
	}
	q.lead(env)
}

func (q *Queues) propose(env proc.Env, op QueueOp) {
	q.raft.Input(env, Propose{Data: op.encode()})
}

func (q *Queues) Receive(env proc.Env, from proc.ID, m proc.Message) {
	q.raft.Receive(env, from, m)
	q.lead(env)
}

type queuesTag struct{}

func (queuesTag) String() string { return "expire-leases" }

func (q *Queues) Timeout(env proc.Env, tag any) {
	if _, ok := tag.(queuesTag); ok {
		q.leases.swept(env, q.cfg.Heartbeat, queuesTag{}, func() { q.expire(env) })
		return
	}
	q.raft.Timeout(env, tag)
	q.lead(env)
}

// lead follows the leadership after every event, as Locks.lead does: a
// server that becomes a ready leader gives every lease its full
// visibility from now; one that stops leading forgets the deadlines.
func (q *Queues) lead(env proc.Env) {
	q.leases.follow(env, q.raft, q.cfg.Heartbeat, queuesTag{}, func(set func(leaseKey, time.Duration)) {
		for name, rq := range q.queues {
			for id, m := range rq.msgs {
				if m.Token != 0 {
					set(leaseKey{name, id}, m.Visibility)
				}
			}
		}
	})
}

// expire proposes the expiry of every lease past its deadline.
func (q *Queues) expire(env proc.Env) {
	due := q.leases.due(env.Now(), func(a, b leaseKey) int { return cmp.Or(cmp.Compare(a.queue, b.queue), cmp.Compare(a.id, b.id)) })
	for _, k := range due {
		m := q.queues[k.queue].msgs[k.id] // a deadline is dropped with its lease
		q.propose(env, QueueOp{Op: "expire", Queue: k.queue, IDs: []uint64{k.id}, Token: m.Token})
	}
}

// The replicated queues: Apply, Snapshot, Restore.

// Apply applies an entry; one it cannot decode, or whose operation it
// does not know (written by a newer version, or damaged), it refuses
// whole, with an error, and the server halts (Halted): skipped here and
// applied by the others, it would make this server's queues another's.
func (q *Queues) Apply(env proc.Env, index uint64, data []byte) error {
	if len(data) == 0 { // the no-op a new leader appends
		q.log.applyDigest(env, index, data)
		return nil
	}
	op, err := decodeQueueOp(data)
	if err == nil && !slices.Contains(queueOps, op.Op) {
		err = fmt.Errorf("unknown operation %q", op.Op)
	}
	if err != nil {
		return fmt.Errorf("queues: entry %d (%d bytes): %w", index, len(data), err)
	}
	q.log.applyDigest(env, index, data)
	switch op.Op {
	case "expire":
		if len(op.IDs) == 1 {
			q.expired(env, op.Queue, op.IDs[0], op.Token)
		}
		return nil
	case "puts":
		for _, p := range op.Puts {
			if q.fresh(env, p.Origin, p.Seq, QueueOp{Op: "put", Queue: p.Queue}) {
				if q.put(env, p) || p.Origin&ClientOrigin == 0 {
					q.applied(index, p.Origin, p.Seq)
				}
			}
		}
		return nil
	case "run":
		q.run(env, index, op)
		return nil
	}
	if !q.fresh(env, op.Origin, op.Seq, op) {
		return nil
	}
	done := true
	switch op.Op {
	case "put":
		done = q.put(env, QueuePut{Queue: op.Queue, Origin: op.Origin, Seq: op.Seq, Body: op.Body})
	case "get":
		done = q.get(env, index, op)
	case "ack", "release":
		q.ackOrRelease(env, index, op)
	case "tx":
		done = q.tx(env, index, op)
	}
	if done || op.Origin&ClientOrigin == 0 {
		q.applied(index, op.Origin, op.Seq)
	}
	return nil
}

// queueOps are the operations an entry may hold.
var queueOps = []string{"put", "puts", "run", "get", "ack", "release", "tx", "expire"}

// ClientOrigin marks the origins of clients that resend a refused
// operation under its number (a relay retrying a full queue, a client's
// numbered transaction): an operation of theirs that is refused is not
// counted applied, and its resend is judged afresh. Other origins (a
// node's stub, which answers its caller with the refusal) count a
// refused operation done, so a copy of it still on its way is answered
// as a duplicate rather than applied after the refusal.
const ClientOrigin = 1 << 63

// fresh reports whether (o, seq) was not applied before; a copy of one
// applied is answered again. An operation of a ClientOrigin that is
// refused (a queue full, a transaction's message gone) leaves its number
// free, and a copy resent is applied afresh — a relay that retries a put
// on a full queue puts it once there is room, where a copy answered as a
// duplicate would have made it drop the message.
func (q *Queues) fresh(env proc.Env, o, seq uint64, op QueueOp) bool {
	if seq == 0 {
		env.Output(QueueRefused{Origin: o, Seq: seq, Reason: "operation without a sequence number"})
		return false
	}
	if q.origins.applied(o, seq) {
		q.reanswer(env, o, seq, op)
		return false
	}
	return true
}

// applied marks (o, seq) applied, by entry index.
func (q *Queues) applied(index, o, seq uint64) { q.origins.mark(index, o, seq) }

// reanswer answers a copy of an operation applied before (its client
// retried, and both copies reached the log): a put with id 0, a get with
// what the first copy leased and still holds, an ack or a release as
// done.
func (q *Queues) reanswer(env proc.Env, o, seq uint64, op QueueOp) {
	switch op.Op {
	case "put":
		env.Output(QueuePutDone{Queue: op.Queue, Origin: o, Seq: seq})
	case "get":
		got := QueueGot{Queue: op.Queue, Origin: o, Seq: seq, Messages: []QueueMessage{}}
		if rq := q.queues[op.Queue]; rq != nil {
			for _, id := range slices.Sorted(maps.Keys(rq.msgs)) {
				if m := rq.msgs[id]; m.Token != 0 && m.Origin == o && m.Seq == seq {
					got.Token, got.Valid = m.Token, q.Valid(m.Visibility)
					got.Messages = append(got.Messages, *m)
				}
			}
		}
		env.Output(got)
	case "ack", "release":
		env.Output(QueueAcked{Queue: op.Queue, Origin: o, Seq: seq, IDs: op.IDs, Released: op.Op == "release"})
	case "tx":
		env.Output(QueueTxDone{Origin: o, Seq: seq})
	}
}

func (q *Queues) queue(name string) *rqueue {
	rq := q.queues[name]
	if rq == nil {
		rq = &rqueue{msgs: map[uint64]*QueueMessage{}}
		q.queues[name] = rq
	}
	return rq
}

// full reports why n more messages, of size bytes in all, would not fit
// in queue name, or "".
func (q *Queues) full(name string, n int, size int64) string {
	var held int
	var bytes int64
	if rq := q.queues[name]; rq != nil {
		held, bytes = len(rq.msgs), rq.bytes
	} else if n > 0 && len(q.queues) >= q.limits.Queues {
		return fmt.Sprintf("%d queues hold messages, the most there may be", len(q.queues))
	}
	if n > 0 && held+n > q.limits.Messages {
		return fmt.Sprintf("queue %q is full: it holds %d messages, the most it may", name, held)
	}
	if size > 0 && bytes+size > q.limits.Bytes {
		return fmt.Sprintf("queue %q is full: it holds %d bytes, and %d more would pass its %d", name, bytes, size, q.limits.Bytes)
	}
	return ""
}

// stateFull reports why messages costing cost more (MessageCost) would
// not fit in the state, or "".
func (q *Queues) stateFull(cost int64) string {
	if cost > 0 && q.state+cost > q.limits.State {
		return fmt.Sprintf("the queues are full: their messages take %d bytes of state, and %d more would pass the %d a snapshot may hold", q.state, cost, q.limits.State)
	}
	return ""
}

// put appends a message, or refuses it (false) when it does not fit.
func (q *Queues) put(env proc.Env, p QueuePut) bool {
	why := q.full(p.Queue, 1, int64(len(p.Body)))
	if why == "" {
		why = q.stateFull(MessageCost(len(p.Body)))
	}
	if why != "" {
		env.Output(QueueRefused{Origin: p.Origin, Seq: p.Seq, Reason: why, Full: true})
		return false
	}
	id := q.add(p.Queue, p.Body)
	env.Output(QueuePutDone{Queue: p.Queue, Origin: p.Origin, Seq: p.Seq, ID: id, Body: p.Body})
	return true
}

// run applies a stream's run of puts (QueuePutRun): in order, up to the
// first refused; none if the run before it was not applied.
func (q *Queues) run(env proc.Env, index uint64, op QueueOp) {
	done := QueuePutRunDone{Origin: op.Origin, Seq: op.Seq, After: op.After, Puts: len(op.Bodies), IDs: []uint64{}}
	if op.Seq == 0 || len(op.Bodies) == 0 {
		done.Reason = "a run of puts without a sequence number or puts"
		env.Output(done)
		return
	}
	if op.After != 0 && !q.origins.applied(op.Origin, op.After) {
		done.Reason = fmt.Sprintf("put %d of origin %d comes before put %d, which is not applied: resend from there", op.After, op.Origin, op.Seq)
		done.Early = true
		env.Output(done)
		return
	}
	for i, body := range op.Bodies {
		seq := op.Seq + uint64(i)
		if q.origins.applied(op.Origin, seq) {
			done.IDs = append(done.IDs, 0)
			continue
		}
		why := q.full(op.Queue, 1, int64(len(body)))
		if why == "" {
			why = q.stateFull(MessageCost(len(body)))
		}
		if why != "" {
			done.Reason, done.Full = why, true // its number stays free, as a client's
			break
		}
		id := q.add(op.Queue, body)
		q.applied(index, op.Origin, seq)
		done.IDs = append(done.IDs, id)
		env.Output(QueuePutDone{Queue: op.Queue, Origin: op.Origin, Seq: seq, ID: id, Body: body})
	}
	env.Output(done)
}

// add appends a message to queue name, ready.
func (q *Queues) add(name string, body []byte) uint64 {
	rq := q.queue(name)
	q.next++
	rq.msgs[q.next] = &QueueMessage{ID: q.next, Body: body}
	rq.ready = append(rq.ready, q.next)
	rq.bytes += int64(len(body))
	q.state += MessageCost(len(body))
	return q.next
}

func (q *Queues) get(env proc.Env, index uint64, op QueueOp) bool {
	if op.Vis <= 0 {
		env.Output(QueueRefused{Origin: op.Origin, Seq: op.Seq, Reason: fmt.Sprintf("visibility %v is not positive", op.Vis)})
		return false
	}
	got := QueueGot{Queue: op.Queue, Origin: op.Origin, Seq: op.Seq, Messages: []QueueMessage{}}
	rq := q.queues[op.Queue]
	for rq != nil && len(rq.ready) > 0 && len(got.Messages) < max(op.Count, 1) {
		m := rq.msgs[rq.ready[0]]
		rq.ready = rq.ready[1:]
		m.Token, m.Origin, m.Seq, m.Visibility = index, op.Origin, op.Seq, op.Vis
		m.Deliveries++
		q.leases.renew(env, leaseKey{op.Queue, m.ID}, op.Vis)
		got.Messages = append(got.Messages, *m)
	}
	if len(got.Messages) > 0 {
		got.Token, got.Valid = index, q.Valid(op.Vis)
	}
	env.Output(got)
	return true
}

func (q *Queues) ackOrRelease(env proc.Env, index uint64, op QueueOp) {
	out := QueueAcked{Queue: op.Queue, Origin: op.Origin, Seq: op.Seq, Index: index, IDs: []uint64{}, Released: op.Op == "release"}
	rq := q.queues[op.Queue]
	for _, id := range op.IDs {
		if rq == nil || rq.msgs[id] == nil || (op.Token != 0 && rq.msgs[id].Token != op.Token) {
			out.Missing = append(out.Missing, id)
			continue
		}
		if op.Op == "ack" {
			q.drop(op.Queue, id)
		} else {
			q.unlease(op.Queue, id)
		}
		out.IDs = append(out.IDs, id)
	}
	env.Output(out)
}

// drop removes a message for good.
func (q *Queues) drop(name string, id uint64) {
	rq := q.queues[name]
	m := rq.msgs[id]
	if m.Token == 0 {
		if i, ok := slices.BinarySearch(rq.ready, id); ok {
			rq.ready = slices.Delete(rq.ready, i, i+1)
		}
	}
	delete(rq.msgs, id)
	rq.bytes -= int64(len(m.Body))
	q.state -= MessageCost(len(m.Body))
	q.forgetLease(name, id)
	if len(rq.msgs) == 0 {
		delete(q.queues, name)
	}
}

// unlease makes a leased message ready again, in its place by id.
func (q *Queues) unlease(name string, id uint64) {
	rq := q.queues[name]
	m := rq.msgs[id]
	if m.Token == 0 {
		return
	}
	m.Token, m.Origin, m.Seq, m.Visibility = 0, 0, 0, 0
	i, _ := slices.BinarySearch(rq.ready, id)
	rq.ready = slices.Insert(rq.ready, i, id)
	q.forgetLease(name, id)
}

func (q *Queues) forgetLease(name string, id uint64) {
	q.leases.drop(leaseKey{name, id})
}

func (q *Queues) expired(env proc.Env, name string, id, token uint64) {
	rq := q.queues[name]
	if rq == nil || rq.msgs[id] == nil || rq.msgs[id].Token != token {
		return // acked, released, or leased again since
	}
	q.unlease(name, id)
	env.Output(QueueExpired{Queue: name, ID: id, Token: token})
}

// tx applies a transaction whole, or refuses it whole (false).
func (q *Queues) tx(env proc.Env, index uint64, op QueueOp) bool {
	refuse := func(full bool, why string, args ...any) {
		env.Output(QueueRefused{Origin: op.Origin, Seq: op.Seq, Reason: fmt.Sprintf(why, args...), Full: full})
	}
	for _, r := range op.Acks {
		if rq := q.queues[r.Queue]; rq == nil || rq.msgs[r.ID] == nil {
			env.Output(QueueRefused{Origin: op.Origin, Seq: op.Seq, Missing: true,
				Reason: fmt.Sprintf("transaction: message %d of queue %q is not held (acknowledged already?)", r.ID, r.Queue)})
			return false
		} else if r.Token != 0 && rq.msgs[r.ID].Token != r.Token {
			env.Output(QueueRefused{Origin: op.Origin, Seq: op.Seq, LeaseLost: true,
				Reason: fmt.Sprintf("transaction: message %d of queue %q is no longer under lease %d", r.ID, r.Queue, r.Token)})
			return false
		}
	}
	// Room as the queues will be after the acks.
	n, size := map[string]int{}, map[string]int64{}
	var cost int64
	for _, r := range op.Acks {
		n[r.Queue]--
		size[r.Queue] -= int64(len(q.queues[r.Queue].msgs[r.ID].Body))
		cost -= MessageCost(len(q.queues[r.Queue].msgs[r.ID].Body))
	}
	created := 0
	for _, p := range op.Puts {
		if _, ok := n[p.Queue]; !ok && q.queues[p.Queue] == nil {
			created++
		}
		n[p.Queue]++
		size[p.Queue] += int64(len(p.Body))
		cost += MessageCost(len(p.Body))
	}
	if why := q.stateFull(cost); why != "" {
		refuse(true, "transaction: %s", why)
		return false
	}
	if created > 0 && len(q.queues)+created > q.limits.Queues {
		refuse(true, "transaction: %d queues hold messages, and %d more would pass the %d there may be", len(q.queues), created, q.limits.Queues)
		return false
	}
	for _, name := range slices.Sorted(maps.Keys(n)) {
		if q.queues[name] == nil && len(q.queues) >= q.limits.Queues {
			continue // counted above, with the others created
		}
		if why := q.full(name, n[name], size[name]); why != "" {
			refuse(true, "transaction: %s", why)
			return false
		}
	}
	done := QueueTxDone{Origin: op.Origin, Seq: op.Seq, Index: index}
	for _, r := range op.Acks {
		if q.queues[r.Queue] != nil && q.queues[r.Queue].msgs[r.ID] != nil {
			q.drop(r.Queue, r.ID)
			done.Acked = append(done.Acked, r.ID)
		}
	}
	for _, p := range op.Puts {
		id := q.add(p.Queue, p.Body)
		done.IDs = append(done.IDs, id)
		env.Output(QueuePutDone{Queue: p.Queue, Origin: op.Origin, Seq: op.Seq, ID: id, Body: p.Body})
	}
	env.Output(done)
	return true
}

// Stats is this server's view of the queues, by name (a follower's may
// be behind the leader's).
func (q *Queues) Stats() []QueueStat {
	s := []QueueStat{}
	for _, name := range slices.Sorted(maps.Keys(q.queues)) {
		rq := q.queues[name]
		s = append(s, QueueStat{Name: name, Ready: len(rq.ready), Leased: len(rq.msgs) - len(rq.ready), Bytes: rq.bytes})
	}
	return s
}

type queuesSnapshot struct {
	Log     []byte                     `json:"log"`
	Next    uint64                     `json:"next"`
	Queues  map[string][]*QueueMessage `json:"queues"`
	Origins map[uint64]*origin         `json:"origins"`
}

func (q *Queues) Snapshot() []byte {
	s := queuesSnapshot{Log: q.log.Snapshot(), Next: q.next, Queues: map[string][]*QueueMessage{}, Origins: q.origins.byID}
	for name, rq := range q.queues {
		ms := slices.Collect(maps.Values(rq.msgs))
		slices.SortFunc(ms, func(a, b *QueueMessage) int { return cmp.Compare(a.ID, b.ID) })
		s.Queues[name] = ms
	}
	b, _ := json.Marshal(s)
	return b
}

// Restore replaces the state by a snapshot's: the messages held (acked
// ones are gone), their leases, and the origins.
func (q *Queues) Restore(env proc.Env, b []byte) error {
	q.reset()
	q.leases.forget() // deadlines are set again by lead
	var s queuesSnapshot
	if len(b) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("queues: snapshot of %d bytes: %w", len(b), err) // the server halts
	}
	if err := q.log.Restore(env, s.Log); err != nil {
		return fmt.Errorf("queues: snapshot: %w", err)
	}
	q.next = s.Next
	for name, ms := range s.Queues {
		rq := q.queue(name)
		for _, m := range ms {
			rq.msgs[m.ID] = m
			rq.bytes += int64(len(m.Body))
			q.state += MessageCost(len(m.Body))
			if m.Token == 0 {
				rq.ready = append(rq.ready, m.ID)
			}
		}
	}
	q.origins.restore(s.Origins)
	return nil
}

func (g QueueGot) String() string {
	return fmt.Sprintf("queue-got %s %d/%d: %d messages, token %d", g.Queue, g.Origin, g.Seq, len(g.Messages), g.Token)
}

// QueueServiceAlgorithm is the replicated queues (Queues) with cfg and
// limits, as a host runs them.
func QueueServiceAlgorithm(cfg Config, limits QueueLimits) proc.Algorithm {
	a := raftAlgorithm(cfg)
	a.Name = "raft-queue"
	a.Summary = "message queues on Raft: puts acknowledged once committed, leased gets that expire on the leader's clock, durable acks"
	a.Source = "Tanenbaum & van Steen, Distributed Systems §4.3 (message queuing); Ongaro's thesis 2014, §6.4 (leases)"
	a.New = func(id proc.ID, n int) proc.Process { return NewQueues(id, n, cfg, limits) }
	a.Checks = append(a.Checks, "queue-delivery")
	a.Inputs = nil
	return a
}
