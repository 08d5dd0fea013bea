package queue

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/cohort-go/cohort/internal/httpapi"
)

// Transactions over the API: the transactional queues of the
// message-queuing model (a get and the puts it causes commit together or
// not at all; Tanenbaum and van Steen, §4.3.2), for a consumer that got
// its messages first (GET) and then acks them and puts their results in
// one request:
//
//	POST /v1/queues:tx   {"acks":[{"queue","id","lease"}], "puts":[{"queue","body"}],
//	                      "origin":"...", "seq":N}
//	                     200 {"ids":[...]} once the whole is durable; 404 (an ack's
//	                     message is not held, or no longer under its lease), 507 (a
//	                     queue full), 413 (too big): nothing of it applied
//
// The path is not under /v1/queues/ because every name there is a
// queue's. origin and seq, optional, number the transaction as a relay's
// puts are numbered: it is applied once, and a client that resends it
// gets {"duplicate":true} — through any node of replicated queues, the
// same node of a node's own (whose numbers are on its disk). Without
// them, each copy is applied.

// A batch of puts to one queue, the transaction PutBatch sends, has a
// binary body rather than JSON with base64 bodies, whose decoding was
// about two thirds of the CPU a node spent on such a transaction:
//
//	POST /v1/queues/{name}/batch   body: frames as a stream's, each uvarint(n) ‖ n
//	                               bytes, one a put; numbered, as a put is, by the
//	                               headers Cohort-Origin and Cohort-Origin-Seq
//	                               200 {"ids":[...]} or {"duplicate":true}, as a
//	                               transaction; 400 naming the bad frame, 413 (too big)

// TxAck is a message a transaction acks: Lease, if set (a replicated
// queue's Message.Lease), makes the transaction apply only while the
// message is still under it.
type TxAck struct {
	Queue string `json:"queue"`
	ID    uint64 `json:"id"`
	Lease uint64 `json:"lease,omitempty"`
}

// TxPut is a put of a transaction.
type TxPut struct {
	Queue string `json:"queue"`
	Body  []byte `json:"body"` // base64 in JSON
}

// TxRequest is the body of POST /v1/queues:tx.
type TxRequest struct {
	Acks   []TxAck `json:"acks,omitempty"`
	Puts   []TxPut `json:"puts,omitempty"`
	Origin string  `json:"origin,omitempty"`
	Seq    uint64  `json:"seq,omitempty"`
}

// TxReply answers a transaction: the ids of its puts, in order, or
// Duplicate — it was applied before, under the same origin and seq.
type TxReply struct {
	IDs       []uint64 `json:"ids"`
	Duplicate bool     `json:"duplicate,omitempty"`
}

// Bounds of a transaction: its acks and puts together, and the request
// (bodies in base64).
const (
	MaxTxOps   = MaxCount
	maxTxBytes = 2 * MaxMessage
)

// ErrInvalid is the class of requests with a bad value (other than a
// name: ErrName), answered 400.
var ErrInvalid = errors.New("invalid request")

type inputError string

func (e inputError) Error() string        { return string(e) }
func (e inputError) Is(target error) bool { return target == ErrInvalid }

// invalid is an ErrInvalid that reads as its message alone.
func invalid(format string, args ...any) error { return inputError(fmt.Sprintf(format, args...)) }

// checkTx checks a transaction's names and sizes, naming the bad one;
// maxBodies bounds its puts' bodies together.
func checkTx(acks []TxAck, puts []TxPut, maxBodies int) error {
	if n := len(acks) + len(puts); n == 0 || n > MaxTxOps {
		return invalid("transaction of %d acks and puts: want 1 to %d", n, MaxTxOps)
	}
	type ref struct {
		queue string
		id    uint64
	}
	seen := make(map[ref]bool, len(acks))
	for i, a := range acks {
		if err := ValidName(a.Queue); err != nil {
			return fmt.Errorf("acks[%d]: %w", i, err)
		}
		if a.ID == 0 {
			return invalid("acks[%d]: id 0: want a message id", i)
		}
		if seen[ref{a.Queue, a.ID}] {
			return invalid("acks[%d]: message %d of queue %s is acked twice", i, a.ID, a.Queue)
		}
		seen[ref{a.Queue, a.ID}] = true
	}
	size := 0
	for i, p := range puts {
		if err := ValidName(p.Queue); err != nil {
			return fmt.Errorf("puts[%d]: %w", i, err)
		}
		if size += len(p.Body); size > maxBodies {
			return fmt.Errorf("%w: puts[%d]: the bodies come to more than %d bytes, the most a transaction here puts", ErrTooBig, i, maxBodies)
		}
	}
	return nil
}

// Transact acks the messages acks and puts the messages puts as one
// record of the log: all of it is durable, or none. An ack whose message
// the queue does not hold (acknowledged already, or never) refuses the
// whole with ErrNoMessage; a full queue, with ErrFull. Leases are not
// checked (as Ack): a per-node queue's messages carry none. ctx is not
// used: the record is on its way once Transact is called.
func (m *Manager) Transact(_ context.Context, acks []TxAck, puts []TxPut) ([]uint64, error) {
	ids, _, err := m.transact("", 0, acks, puts)
	return ids, err
}

// TransactFrom is Transact numbered by its client, as the puts of a
// stream are: origin and seq (1 or more) make the node apply it once,
// whatever copies of it come — a copy of one applied is answered with
// duplicate true and ids 0, once the first is durable. An origin's
// numbers may come out of order only if each is sent after the one
// before was answered or refused (a Client's lane): a number no higher
// than the highest taken is a copy. The numbers are this node's, on its
// disk (carried by the transaction's puts; a transaction of acks alone
// is remembered until a restart — a copy of it after one is refused, its
// messages acknowledged already).
func (m *Manager) TransactFrom(_ context.Context, origin string, seq uint64, acks []TxAck, puts []TxPut) ([]uint64, bool, error) {
	if err := checkOrigin(origin, seq); err != nil {
		return nil, false, err
	}
	return m.transact(origin, seq, acks, puts)
}

func (m *Manager) transact(origin string, seq uint64, acks []TxAck, puts []TxPut) ([]uint64, bool, error) {
	tx := &Tx{m: m, anyLease: true, origin: origin, seq: seq}
	ids, wait, err := m.startTx(tx, acks, puts)
	if err == nil {
		err = wait()
	}
	if err != nil {
		return nil, false, fmt.Errorf("transaction: %w", err)
	}
	return ids, tx.dup, nil
}

// startTx is transact without the wait for the disk (Tx.start).
func (m *Manager) startTx(tx *Tx, acks []TxAck, puts []TxPut) ([]uint64, func() error, error) {
	if err := checkTx(acks, puts, MaxMessage); err != nil {
		return nil, nil, err
	}
	m.mu.Lock()
	if tx.origin != "" && tx.seq <= m.origins[tx.origin] {
		// A copy of one applied: its acks' messages are gone.
		tx.dup, tx.done = true, true
		ids, wait := m.awaitCopy(len(puts))
		m.mu.Unlock()
		return ids, wait, nil
	}
	for _, a := range acks {
		q := m.queues[a.Queue]
		var e *entry
		if q != nil {
			e = q.all[a.ID]
		}
		if e == nil || e.state == acking {
			m.mu.Unlock()
			return nil, nil, fmt.Errorf("%w: queue %s holds no message %d (acknowledged already?)", ErrNoMessage, a.Queue, a.ID)
		}
		tx.gets = append(tx.gets, got{q: q, e: e, lease: e.lease})
	}
	m.mu.Unlock()
	for _, p := range puts {
		body := p.Body
		if body == nil {
			body = []byte{}
		}
		tx.put(p.Queue, body, "", 0)
	}
	return tx.start()
}

// startPuts is startTx of a stream's puts to queue name, numbered seq,
// seq+1, … under origin ("": not numbered): a put numbered no higher
// than one origin put before is a copy of it, not applied again, and its
// id is 0.
func (m *Manager) startPuts(name, origin string, seq uint64, bodies [][]byte) ([]uint64, func() error, error) {
	puts := make([]TxPut, len(bodies))
	for i, b := range bodies {
		puts[i] = TxPut{Queue: name, Body: b}
	}
	if origin == "" {
		return m.startTx(&Tx{m: m, anyLease: true}, nil, puts)
	}
	if err := checkTx(nil, puts, MaxMessage); err != nil {
		return nil, nil, err
	}
	tx := &Tx{m: m}
	for i, b := range bodies {
		tx.put(name, b, origin, seq+uint64(i))
	}
	return tx.start()
}

// transactor is a backend that takes transactions; numbered is one that
// also takes them numbered by their client.
type (
	transactor interface {
		Transact(ctx context.Context, acks []TxAck, puts []TxPut) ([]uint64, error)
	}
	numbered interface {
		TransactFrom(ctx context.Context, origin string, seq uint64, acks []TxAck, puts []TxPut) ([]uint64, bool, error)
	}
)

// maxBatchBody bounds a batch's body: MaxMessage of bodies, and a
// frame's length for each of MaxTxOps puts.
const maxBatchBody = MaxMessage + MaxTxOps*binary.MaxVarintLen32

// decodeBatch reads the puts of a batch's body, frames as a stream's; an
// error names the bad frame.
func decodeBatch(b []byte) ([][]byte, error) {
	br := bufio.NewReader(bytes.NewReader(b))
	var bodies [][]byte
	for {
		body, err := readFrame(br, MaxMessage)
		if err == io.EOF {
			return bodies, nil
		}
		if err != nil {
			return nil, fmt.Errorf("batch: put %d: %w", len(bodies), err)
		}
		if len(bodies) == MaxTxOps {
			return nil, invalid("batch: more than %d puts", MaxTxOps)
		}
		bodies = append(bodies, body)
	}
}

// serveBatch serves POST /v1/queues/{name}/batch.
func serveBatch(m Backend, w http.ResponseWriter, r *http.Request) {
	name, ok := queueName(w, r)
	if !ok {
		return
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBatchBody+1))
	if err != nil {
		httpapi.Fail(w, http.StatusBadRequest, "batch: "+err.Error())
		return
	}
	if len(b) > maxBatchBody {
		httpapi.Fail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("batch: a request of more than %d bytes", maxBatchBody))
		return
	}
	bodies, err := decodeBatch(b)
	if err != nil {
		fail(w, err)
		return
	}
	origin, seq, err := streamNumber(r.Header)
	if err != nil {
		fail(w, err)
		return
	}
	puts := make([]TxPut, len(bodies))
	for i, body := range bodies {
		puts[i] = TxPut{Queue: name, Body: body}
	}
	tm, ok := m.(transactor)
	if !ok {
		httpapi.Fail(w, http.StatusNotImplemented, "batch: these queues take no transactions")
		return
	}
	var ids []uint64
	var dup bool
	if origin != "" {
		nm, ok := m.(numbered)
		if !ok {
			httpapi.Fail(w, http.StatusNotImplemented, fmt.Sprintf("batch: origin %q: a node's own queues take no numbered transactions (replicated queues do)", httpapi.Clip(origin)))
			return
		}
		ids, dup, err = nm.TransactFrom(r.Context(), origin, seq, nil, puts)
	} else {
		ids, err = tm.Transact(r.Context(), nil, puts)
	}
	replyTx(m, w, r, ids, dup, err)
}

// replyTx answers a transaction (or a batch): its ids, or its error.
func replyTx(m Backend, w http.ResponseWriter, r *http.Request, ids []uint64, dup bool, err error) {
	if err != nil {
		if r.Context().Err() != nil && errors.Is(err, r.Context().Err()) {
			return // the client left
		}
		fail(w, err)
		return
	}
	if ids == nil {
		ids = []uint64{}
	}
	w.Header().Set(KindHeader, kind(m))
	httpapi.Reply(w, http.StatusOK, TxReply{IDs: ids, Duplicate: dup})
}

// serveTx serves POST /v1/queues:tx.
func serveTx(m Backend, w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxTxBytes+1))
	if err != nil {
		httpapi.Fail(w, http.StatusBadRequest, "transaction: "+err.Error())
		return
	}
	if len(b) > maxTxBytes {
		httpapi.Fail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("transaction: a request of more than %d bytes", maxTxBytes))
		return
	}
	var req TxRequest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		httpapi.Fail(w, http.StatusBadRequest, `transaction: want {"acks":[{"queue","id","lease"}],"puts":[{"queue","body"}]}: `+err.Error())
		return
	}
	tm, ok := m.(transactor)
	if !ok {
		httpapi.Fail(w, http.StatusNotImplemented, "transaction: these queues take none")
		return
	}
	var ids []uint64
	var dup bool
	switch {
	case req.Origin == "" && req.Seq != 0:
		err = invalid("transaction: seq %d without an origin", req.Seq)
	case req.Origin != "":
		nm, ok := m.(numbered)
		if !ok {
			httpapi.Fail(w, http.StatusNotImplemented, fmt.Sprintf("transaction: origin %q: a node's own queues take no numbered transactions (replicated queues do)", httpapi.Clip(req.Origin)))
			return
		}
		ids, dup, err = nm.TransactFrom(r.Context(), req.Origin, req.Seq, req.Acks, req.Puts)
	default:
		ids, err = tm.Transact(r.Context(), req.Acks, req.Puts)
	}
	replyTx(m, w, r, ids, dup, err)
}

// Transact sends a transaction to the first node that answers: its acks
// and puts are applied together or not at all. Resending a numbered one
// (Origin, Seq) after an error is safe on replicated queues, and on a
// node's own queues to the same node. (PutBatch numbers its transaction
// and resends it itself.)
func (c *Client) Transact(ctx context.Context, req TxRequest) (TxReply, error) {
	if err := checkTx(req.Acks, req.Puts, MaxMessage); err != nil {
		return TxReply{}, err
	}
	b, err := json.Marshal(req)
	if err != nil {
		return TxReply{}, err
	}
	if len(b) > maxTxBytes {
		return TxReply{}, fmt.Errorf("%w: a transaction of %d bytes in JSON, the most is %d", ErrTooBig, len(b), maxTxBytes)
	}
	var reply TxReply
	err = c.api().First(ctx, func(base string) (int, string, error) {
		return c.api().Call(ctx, http.MethodPost, base+"/v1/queues:tx", b, &reply)
	})
	return reply, err
}
