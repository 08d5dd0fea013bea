package queue

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/internal/httpapi"
)

// A stream of puts: one long-lived request carries many puts to a queue,
// and the reply acknowledges each once it is on disk — publishers
// pipeline, as with JetStream's asynchronous publish, rather than wait a
// round trip for each put. The node commits the puts it has read
// together (one record of the log), and on its own queues starts the
// next commit while the last is on its way to the disk, in order, so
// that the log's group commit shares one sync among them and the other
// requests' commits. A full queue takes the puts that fit, one at a
// time, as single puts: the puts acknowledged are always a prefix of the
// stream.
//
//	POST /v1/queues/{name}/stream     body: frames, each uvarint(n) ‖ n bytes,
//	                                  n ≤ MaxMessage, one a put, until the body ends
//	200 application/x-ndjson          one line per commit, in the order of the puts:
//	                                  {"ids":[...]}   the next len(ids) puts are durable
//	                                  {"error":"...","code":C}   the last line: the puts
//	                                                  not acknowledged were not applied
//	                                                  (C 503: not known — the node
//	                                                  could not finish; resend them)
//
// Numbered streams: with the headers Cohort-Origin (a publisher's name
// for itself, 1 to 256 bytes) and Cohort-Origin-Seq (the number of the
// stream's first put; the next ones follow), the node applies each number
// once, as at-most-once RPC filters a resent call by the client's
// sequence number (Birrell and Nelson): a put numbered as one applied
// before is acknowledged again with id 0 and not stored twice. A
// publisher that loses its stream (the node gone, the connection cut)
// opens another, through any node of replicated queues, and sends again
// the puts not acknowledged, from the first, under the same numbers. The
// replicated queues keep the numbers in the log's duplicate table, the
// same on every node. A node's own queues remember an origin's highest
// number (they are relayed puts' table), on that node's disk only: a
// numbered stream resumed there must go on in order, and the puts a lost
// stream left unacknowledged can be sent again to that node alone — to
// another, whose queue of the same name is another queue, a put the
// first applied would be stored twice.
//
// A stream whose first put cannot be applied (a bad frame, a full
// queue) is answered with the error's status, as a single put is: 400
// names the bad value — except a numbered stream, whose reply starts at
// once (200 before any acknowledgement; a refusal is an error line), so
// that its publisher learns of a lost stream even while it has nothing
// more to send: an HTTP client waiting for a reply's status learns that
// its connection is gone only when it next writes the body. An ack never
// precedes the sync of its put. A stream that carries no frame for
// StreamIdle ends (an error line). The node checks the bearer token, as
// for every request.

// StreamIdle ends a stream that carries nothing for this long.
const StreamIdle = 2 * time.Minute

// maxStreamPending bounds the bytes a stream holds read but not committed:
// beyond, the node stops reading it until a commit is done.
const maxStreamPending = 4 << 20

// StreamAck is a line of a stream's reply: IDs acknowledges the next
// len(IDs) puts, in order; or Error (with Code, the HTTP status a single
// put would get) ends the stream.
type StreamAck struct {
	IDs   []uint64 `json:"ids,omitempty"`
	Error string   `json:"error,omitempty"`
	Code  int      `json:"code,omitempty"`
}

// readFrame reads one put of a stream: io.EOF at a clean end between
// frames, else an error naming the bad value.
func readFrame(br *bufio.Reader, maxBody int) ([]byte, error) {
	var n uint64
	for i := 0; ; i++ {
		c, err := br.ReadByte()
		if err == io.EOF && i == 0 {
			return nil, io.EOF
		}
		if err == io.EOF {
			return nil, invalid("the length ends after %d bytes", i)
		}
		if err != nil {
			return nil, err
		}
		if i == binary.MaxVarintLen64-1 && c > 1 {
			return nil, invalid("length: a uvarint of more than 64 bits")
		}
		n |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			break
		}
	}
	if n > uint64(maxBody) {
		return nil, fmt.Errorf("%w: length %d: the most is %d bytes", ErrTooBig, n, maxBody)
	}
	b := make([]byte, n)
	if k, err := io.ReadFull(br, b); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, invalid("length %d: the body ends after %d bytes", n, k)
		}
		return nil, err
	}
	return b, nil
}

// appendFrame appends body as a frame of a stream.
func appendFrame(b, body []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(body))), body...)
}

// decodeStreamAck decodes a line of a stream's reply.
func decodeStreamAck(line []byte) (StreamAck, error) {
	var a StreamAck
	if err := json.Unmarshal(line, &a); err != nil {
		return a, fmt.Errorf("stream reply %q: %w", httpapi.Clip(string(line)), err)
	}
	if (len(a.IDs) == 0) == (a.Error == "") {
		return a, fmt.Errorf("stream reply %q: want ids or an error", httpapi.Clip(string(line)))
	}
	if a.Error != "" && (a.Code < 400 || a.Code > 599) {
		return a, fmt.Errorf("stream reply %q: code %d: want an HTTP error status", httpapi.Clip(string(line)), a.Code)
	}
	return a, nil
}

// errStreamStopped: the reply ended the stream.
var errStreamStopped = errors.New("the stream stopped")

// putStream is the state a stream's reader and committer share.
type putStream struct {
	mu      sync.Mutex
	cond    *sync.Cond
	frames  [][]byte
	bytes   int
	read    int   // frames read
	end     error // why reading ended: io.EOF, or the n-th frame's error
	stopped bool  // the committer is gone
	started bool  // the reply's status was written (a numbered stream's, at once)
}

// streamNumber reads a stream's numbering from its headers: the origin
// ("": not numbered) and its first put's number.
func streamNumber(h http.Header) (string, uint64, error) {
	origin, v := h.Get("Cohort-Origin"), h.Get("Cohort-Origin-Seq")
	if origin == "" && v == "" {
		return "", 0, nil
	}
	seq, err := strconv.ParseUint(v, 10, 64)
	if err != nil || seq == 0 {
		return "", 0, invalid("Cohort-Origin-Seq %q: want the first put's number, 1 or more", httpapi.Clip(v))
	}
	if err := checkOrigin(origin, seq); err != nil {
		return "", 0, invalid("Cohort-Origin: %v", err)
	}
	return origin, seq, nil
}

// serveStream serves POST /v1/queues/{name}/stream.
func serveStream(m Backend, w http.ResponseWriter, r *http.Request) {
	name, ok := queueName(w, r)
	if !ok {
		return
	}
	origin, seq, err := streamNumber(r.Header)
	if err != nil {
		fail(w, err)
		return
	}
	if _, ok := m.(transactor); !ok {
		httpapi.Fail(w, http.StatusNotImplemented, "stream: these queues take no transactions of puts")
		return
	}
	rc := http.NewResponseController(w)
	// HTTP/1: read the body while replying (HTTP/2 always may).
	_ = rc.EnableFullDuplex()
	s := &putStream{}
	s.cond = sync.NewCond(&s.mu)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		s.readFrames(r.Body, rc)
	}()
	if origin != "" {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		rc.Flush()
		s.started = true
	}
	s.commitFrames(r.Context(), m, name, origin, seq, w, rc)
	s.mu.Lock()
	s.stopped = true
	s.cond.Broadcast()
	if s.end == nil {
		// A reader blocked in Read returns (under mu: after any deadline
		// it set). Not once the body ended: the server then reads the
		// connection in the background, and a timeout there would cancel
		// the next request on it.
		rc.SetReadDeadline(time.Now())
	}
	s.mu.Unlock()
	<-readerDone
}

func (s *putStream) readFrames(body io.Reader, rc *http.ResponseController) {
	br := bufio.NewReaderSize(body, 64<<10)
	for {
		if br.Buffered() == 0 {
			// Under mu, so that the end of the stream (stopped, and a
			// deadline now) cannot come between the check and the set.
			s.mu.Lock()
			if s.stopped {
				s.mu.Unlock()
				return
			}
			rc.SetReadDeadline(time.Now().Add(StreamIdle))
			s.mu.Unlock()
		}
		b, err := readFrame(br, MaxMessage)
		s.mu.Lock()
		if err != nil {
			var ne interface{ Timeout() bool }
			switch {
			case err == io.EOF:
			case errors.Is(err, ErrInvalid) || errors.Is(err, ErrTooBig):
				err = fmt.Errorf("put %d: %w", s.read+1, err)
			case errors.As(err, &ne) && ne.Timeout():
				err = fmt.Errorf("no put for %v: the stream ends", StreamIdle)
			default:
				err = fmt.Errorf("put %d: reading: %w", s.read+1, err)
			}
			s.end = err
			s.cond.Broadcast()
			s.mu.Unlock()
			return
		}
		for s.bytes >= maxStreamPending && !s.stopped {
			s.cond.Wait()
		}
		if s.stopped {
			s.mu.Unlock()
			return
		}
		s.frames = append(s.frames, b)
		s.bytes += len(b)
		s.read++
		s.cond.Broadcast()
		s.mu.Unlock()
	}
}

// take waits for frames and takes those one commit holds (at least one),
// or returns none and why reading ended.
func (s *putStream) take(maxBodies int) ([][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.frames) == 0 && s.end == nil && !s.stopped {
		s.cond.Wait()
	}
	if s.stopped {
		return nil, errStreamStopped
	}
	if len(s.frames) == 0 {
		return nil, s.end
	}
	n, size := 1, len(s.frames[0])
	for n < len(s.frames) && n < MaxTxOps && size+len(s.frames[n]) <= maxBodies {
		size += len(s.frames[n])
		n++
	}
	batch := s.frames[:n:n]
	s.frames = s.frames[n:]
	s.bytes -= size
	s.cond.Broadcast()
	return batch, nil
}

// maxStreamCommits bounds the commits of a stream on their way to the
// disk at once.
const maxStreamCommits = 8

// streamCommit is a commit of a stream's puts on its way: n puts, whose
// ids wait returns once durable — all of them, or a prefix and why the
// next was not applied; or, with n 0, the stream's end (err).
type streamCommit struct {
	n    int
	wait func() ([]uint64, error)
	err  error
}

// commitFrames commits the frames read, in order, and replies: while one
// commit is on its way to the disk (a node's own queues) or to a majority
// (replicated ones) the next is started, so that the puts of a stream
// share syncs and entries with each other and with other requests. A
// replicated stream's commits are runs (consensus.QueuePutRun), each
// applied only after the one before it: one that overtakes another lost
// on its way (a change of leader) is refused as early and proposed again
// after it (runStream).
func (s *putStream) commitFrames(ctx context.Context, m Backend, name, origin string, seq uint64, w http.ResponseWriter, rc *http.ResponseController) {
	tm := m.(transactor)
	rm, replicated := m.(*Replicated)
	maxBodies := MaxMessage
	var runOrigin, after uint64
	var runs *runStream
	if replicated {
		maxBodies = MaxReplicatedMessage
		runOrigin = hashOrigin(origin)
		if origin == "" { // numbered all the same, under a number of its own
			runOrigin, seq = rand.Uint64()|consensus.ClientOrigin, 1
		}
		runs = rm.newRunStream()
		defer runs.close()
	}
	commits := make(chan streamCommit, maxStreamCommits)
	replied := make(chan struct{})
	go func() {
		defer close(replied)
		s.reply(commits, w, rc)
	}()
	start := func(bodies [][]byte) streamCommit {
		c := streamCommit{n: len(bodies)}
		switch mm := m.(type) {
		case *Manager:
			ids, wait, err := mm.startPuts(name, origin, seq, bodies)
			c.err = err
			c.wait = func() ([]uint64, error) { return ids, wait() }
		case *Replicated:
			run := consensus.QueuePutRun{Queue: name, Origin: runOrigin, Seq: seq, After: after, Bodies: bodies}
			ch, err := runs.start(ctx, run)
			c.err = err
			c.wait = func() ([]uint64, error) { r := <-ch; return r.ids, r.err }
			after = seq + uint64(len(bodies)) - 1
		default:
			puts := make([]TxPut, len(bodies))
			for i, b := range bodies {
				puts[i] = TxPut{Queue: name, Body: b}
			}
			ids, err := tm.Transact(ctx, nil, puts)
			c.err = err
			c.wait = func() ([]uint64, error) { return ids, nil }
		}
		if seq != 0 {
			seq += uint64(len(bodies))
		}
		return c
	}
	for {
		batch, end := s.take(maxBodies)
		if len(batch) == 0 {
			commits <- streamCommit{err: end}
			break
		}
		c := start(batch)
		if _, ok := m.(*Manager); ok && errors.Is(c.err, ErrFull) && len(batch) > 1 {
			// The puts of a stream are not a transaction: those that
			// fit go in, one by one, up to the first that does not (a
			// replicated run does so itself).
			if seq != 0 {
				seq -= uint64(len(batch))
			}
			for i := range batch {
				if c = start(batch[i : i+1]); c.err != nil || i == len(batch)-1 {
					break
				}
				commits <- c
			}
		}
		commits <- c
		if c.err != nil {
			break
		}
	}
	close(commits)
	<-replied
}

// reply writes the outcome of each commit, in order, once it is durable;
// after an error, or the client's departure, it stops the stream.
func (s *putStream) reply(commits <-chan streamCommit, w http.ResponseWriter, rc *http.ResponseController) {
	started := s.started
	enc := json.NewEncoder(w)
	send := func(a StreamAck) error {
		if !started {
			if a.Error != "" {
				httpapi.Fail(w, a.Code, a.Error)
				return errors.New(a.Error)
			}
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.WriteHeader(http.StatusOK)
			started = true
		}
		if err := enc.Encode(a); err != nil {
			return err
		}
		return rc.Flush()
	}
	failed := func(err error) StreamAck { return StreamAck{Error: err.Error(), Code: status(err)} }
	done := 0
	for c := range commits {
		var err error
		switch {
		case c.n == 0 && c.err == io.EOF:
			if !started {
				w.Header().Set("Content-Type", "application/x-ndjson")
				w.WriteHeader(http.StatusOK)
			}
		case c.n == 0:
			err = send(failed(c.err))
		default:
			var ids []uint64
			if c.err == nil {
				ids, c.err = c.wait()
			}
			switch {
			case c.err == nil && len(ids) != c.n:
				c.err = fmt.Errorf("%d ids for %d puts", len(ids), c.n)
			case c.err != nil && len(ids) > 0 && len(ids) < c.n:
				// A replicated run applied a prefix of its puts.
				if err = send(StreamAck{IDs: ids}); err == nil {
					done, c.n = done+len(ids), c.n-len(ids)
				}
			}
			if c.err != nil {
				// None of these puts is applied (a refusal), or it is
				// not known (503: a numbered stream sends them again).
				send(failed(fmt.Errorf("puts %d to %d: %w", done+1, done+c.n, c.err)))
				err = c.err
			} else if err == nil {
				done += c.n
				err = send(StreamAck{IDs: ids})
			}
		}
		if err != nil {
			break
		}
	}
	// Stop the reading, and so the commits; let the committer go on.
	s.mu.Lock()
	s.stopped = true
	s.cond.Broadcast()
	s.mu.Unlock()
	for range commits {
	}
}

// ErrPublisherClosed: a put on a closed Publisher.
var ErrPublisherClosed = errors.New("queue: publisher closed")

// DefaultMaxPending bounds the puts a Publisher has sent and not had
// acknowledged; a put beyond waits.
const DefaultMaxPending = 4096

// PutAck is the outcome of an asynchronous put: Done closes once the put
// is acknowledged (on disk) or has failed.
type PutAck struct {
	done chan struct{}
	id   uint64
	err  error
}

// Done closes when the put's outcome is known.
func (a *PutAck) Done() <-chan struct{} { return a.done }

// Result is the put's id, or why it failed; call it after Done. Id 0
// with no error: the put was applied by an earlier send whose
// acknowledgement was lost (a stream lost, and the put sent again on the
// next), and the node no longer knows its id.
func (a *PutAck) Result() (uint64, error) { return a.id, a.err }

// Wait waits for the put's outcome or the end of ctx.
func (a *PutAck) Wait(ctx context.Context) (uint64, error) {
	select {
	case <-a.done:
		return a.id, a.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (a *PutAck) resolve(id uint64, err error) {
	a.id, a.err = id, err
	close(a.done)
}

// Publisher puts messages on one queue over a stream (POST
// /v1/queues/{name}/stream): puts are sent as they come, without waiting
// for earlier ones, and each is acknowledged once the node has it on
// disk (a replicated queue: once committed) — the puts of many goroutines
// share the stream. The puts are numbered (a numbered stream: the origin
// a random name of the Publisher's, then 1, 2, …), so that when the
// stream is lost — the node gone, the connection cut, the node unable to
// serve (503) — the Publisher opens another, on the first of the client's
// endpoints that answers, and sends again every put not acknowledged,
// under its number: the node applies each number once, so none is lost
// and none stored twice. Replicated queues are the same through every
// node (KindHeader), and their numbers are the log's: any node will do.
// A node's own queues are its own, as are the numbers it applied: while
// puts sent to such a node are unacknowledged the Publisher opens its
// new streams to that node only, waiting for it to come back (on its
// disk, which holds the numbers), since another node would store again
// the puts the first applied. A put whose outcome is an error was not
// applied, except when the error is the loss of every stream for Retry:
// then, as for any put whose reply was lost, it may have been — and
// when the node it waited for was one of its own queues, the error is
// ErrInDoubt.
type Publisher struct {
	MaxPending int           // 0: DefaultMaxPending; set before the first put
	Retry      time.Duration // how long to try to open a new stream without progress; 0: DefaultRetry; set before the first put

	c      *Client
	name   string
	origin string
	ctx    context.Context
	cancel context.CancelFunc
	kick   chan struct{}
	ended  chan struct{} // the last stream ended, and every put has its outcome

	mu      sync.Mutex
	room    *sync.Cond
	next    uint64      // the number of the next put
	pending []*outgoing // not acknowledged, in order of number
	sent    int         // of pending, handed to the current stream
	err     error       // the end
	closing bool
	streams int // opened, the first included
	// holder: the node of its own queues (base URL) that may hold puts
	// of pending, sent on a stream to it and not acknowledged: a new
	// stream goes to it only. "": none.
	holder string
}

// outgoing is a put sent and not acknowledged.
type outgoing struct {
	seq  uint64
	body []byte
	ack  *PutAck
}

// DefaultRetry is how long a Publisher tries to open a new stream after
// losing one, without any put acknowledged, before it gives up.
const DefaultRetry = 30 * time.Second

// ErrInDoubt: a Publisher lost its stream to a node of its own queues
// with puts unacknowledged, and found no stream to that node again for
// Retry. The node may hold them, so they were not sent to another node
// (where they would be stored twice): their outcome is unknown.
var ErrInDoubt = errors.New("queue: puts in doubt")

// streamStart bounds the wait for the start of a stream's reply (a
// variable for the tests).
var streamStart = 10 * time.Second

// errNoStart: a stream's reply did not start within streamStart.
var errNoStart = errors.New("the reply did not start in time")

// errRetry marks the loss of a stream: a new one may take over.
type errRetry struct{ err error }

func (e errRetry) Error() string { return e.err.Error() }
func (e errRetry) Unwrap() error { return e.err }

// Publish opens a stream of puts to the queue name, on the first of the
// client's endpoints that answers; it lasts until Close or the end of
// ctx, on as many streams as it takes.
func (c *Client) Publish(ctx context.Context, name string) (*Publisher, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	base, replicated, err := c.answering(ctx, "")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &Publisher{c: c, name: name, origin: fmt.Sprintf("publisher-%016x", rand.Uint64()), ctx: ctx, cancel: cancel,
		kick: make(chan struct{}, 1), ended: make(chan struct{}), next: 1}
	p.room = sync.NewCond(&p.mu)
	go p.run(base, replicated)
	return p, nil
}

// answering returns the base URL of the first endpoint that answers (and
// takes the token), the one at base last, and whether it serves
// replicated queues (KindHeader): a stream's reply starts with its first
// acknowledgement, so ask first.
func (c *Client) answering(ctx context.Context, last string) (base string, replicated bool, err error) {
	api := c.api()
	if i := slices.IndexFunc(api.Endpoints, func(ep string) bool { b, _ := httpapi.BaseURL(ep); return b == last }); i >= 0 {
		api.Endpoints = append(slices.Clone(api.Endpoints[i+1:]), api.Endpoints[:i+1]...)
	}
	err = api.First(ctx, func(b string) (int, string, error) {
		base = b
		resp, code, msg, err := api.Open(ctx, http.MethodGet, b+"/v1/queues", nil)
		if resp != nil {
			replicated = resp.Header.Get(KindHeader) == "replicated"
			resp.Body.Close()
		}
		return code, msg, err
	})
	return base, replicated, err
}

// PutAsync sends body; the outcome comes on the returned PutAck. It waits
// only while MaxPending puts are unacknowledged.
func (p *Publisher) PutAsync(body []byte) *PutAck {
	a := &PutAck{done: make(chan struct{})}
	if len(body) > MaxMessage {
		a.resolve(0, fmt.Errorf("%w: %d bytes, the most is %d", ErrTooBig, len(body), MaxMessage))
		return a
	}
	p.mu.Lock()
	limit := p.MaxPending
	if limit <= 0 {
		limit = DefaultMaxPending
	}
	for len(p.pending) >= limit && p.err == nil && !p.closing {
		p.room.Wait()
	}
	switch {
	case p.err != nil:
		err := p.err
		p.mu.Unlock()
		a.resolve(0, err)
		return a
	case p.closing:
		p.mu.Unlock()
		a.resolve(0, ErrPublisherClosed)
		return a
	}
	p.pending = append(p.pending, &outgoing{seq: p.next, body: body, ack: a})
	p.next++
	p.mu.Unlock()
	p.wake()
	return a
}

func (p *Publisher) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Put sends body and waits for its acknowledgement: it returns once the
// message is on disk.
func (p *Publisher) Put(ctx context.Context, body []byte) (uint64, error) {
	return p.PutAsync(body).Wait(ctx)
}

// Streams is how many streams the Publisher opened: 1, and one more for
// each it lost and replaced.
func (p *Publisher) Streams() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.streams
}

// run keeps a stream open until Close, or an error that is an answer (a
// refusal), or Retry without progress: a lost stream is replaced by one
// to the first endpoint that answers — the holder of puts in doubt, if
// any — which is sent every put not acknowledged.
func (p *Publisher) run(base string, replicated bool) {
	defer close(p.ended)
	since := time.Now() // the last progress
	pause := 10 * time.Millisecond
	for {
		progress, err := p.stream(base, replicated)
		var lost errRetry
		if err == nil || !errors.As(err, &lost) {
			p.fail(cmp.Or(err, ErrPublisherClosed))
			return
		}
		if progress {
			since, pause = time.Now(), 10*time.Millisecond
		}
		p.mu.Lock()
		retry := cmp.Or(p.Retry, DefaultRetry)
		idle := p.closing && len(p.pending) == 0
		holder, doubt := p.holder, len(p.pending)
		p.mu.Unlock()
		c := p.c
		if holder != "" { // the one node that may hold them
			c = &Client{Endpoints: []string{holder}, Token: p.c.Token, HTTP: p.c.HTTP}
		}
		if idle { // closed, with nothing left to send: no new stream
			p.fail(ErrPublisherClosed)
			return
		}
		for {
			if time.Since(since) > retry && holder != "" {
				p.fail(fmt.Errorf("%w: no stream of puts for %v to %s, a node of its own queues, which may hold %d puts not acknowledged: not sent to another node, where they would be stored twice: %w",
					ErrInDoubt, retry, holder, doubt, lost.err))
				return
			}
			if time.Since(since) > retry {
				p.fail(fmt.Errorf("no stream of puts for %v: %w", retry, lost.err))
				return
			}
			select {
			case <-p.ctx.Done():
				p.fail(p.ctx.Err())
				return
			case <-time.After(pause):
			}
			pause = min(2*pause, time.Second)
			if next, repl, err := c.answering(p.ctx, base); err == nil {
				base, replicated = next, repl
				break
			}
		}
	}
}

// stream sends the puts not acknowledged, and those that come, on one
// stream to base, and reads their acknowledgements until the stream
// ends: nil once Close was called and every put acknowledged; an
// errRetry when the stream was lost; another error, a refusal, ends the
// Publisher. progress: a put was acknowledged. replicated: base serves
// replicated queues (else the puts sent are in doubt there until
// acknowledged).
func (p *Publisher) stream(base string, replicated bool) (progress bool, err error) {
	ctx, cancel := context.WithCancel(p.ctx)
	defer cancel()
	pr, pw := io.Pipe()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/queues/"+url.PathEscape(p.name)+"/stream", pr)
	if err != nil {
		return false, err
	}
	p.mu.Lock()
	if p.err != nil {
		p.mu.Unlock()
		return false, p.err
	}
	first := p.next
	if len(p.pending) > 0 {
		first = p.pending[0].seq
	}
	p.sent = 0
	p.streams++
	p.mu.Unlock()
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Cohort-Origin", p.origin)
	req.Header.Set("Cohort-Origin-Seq", strconv.FormatUint(first, 10))
	if p.c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+p.c.Token)
	}
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		p.write(ctx, pw, base, replicated)
	}()
	defer func() {
		pw.CloseWithError(cmp.Or(err, io.ErrClosedPipe))
		cancel()
		<-wrote
	}()
	// The reply of a numbered stream starts at once; an HTTP client
	// whose connection is lost before it learns so only when it next
	// writes the body, which may be never: without a start within
	// streamStart, the body ends and the stream is lost.
	late := time.AfterFunc(streamStart, func() { pr.CloseWithError(errNoStart) })
	resp, err := p.c.httpClient().Do(req)
	if !late.Stop() && err == nil {
		resp.Body.Close()
		err = errNoStart
	}
	if err != nil {
		return false, errRetry{fmt.Errorf("stream of puts: %w", err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		err := fmt.Errorf("%s: HTTP %d: %s", req.URL.Host, resp.StatusCode, httpapi.ErrorMessage(resp.Body))
		if resp.StatusCode == http.StatusServiceUnavailable {
			return false, errRetry{err}
		}
		return false, err
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	sc.Split(wholeLines)
	for sc.Scan() {
		a, err := decodeStreamAck(sc.Bytes())
		if err != nil {
			return progress, err
		}
		if a.Error != "" {
			err := fmt.Errorf("%s: HTTP %d: %s", req.URL.Host, a.Code, a.Error)
			if a.Code == http.StatusServiceUnavailable {
				return progress, errRetry{err}
			}
			return progress, err
		}
		p.mu.Lock()
		if len(a.IDs) > p.sent {
			n := p.sent
			p.mu.Unlock()
			return progress, fmt.Errorf("stream reply: %d ids for %d puts sent", len(a.IDs), n)
		}
		done := p.pending[:len(a.IDs)]
		p.pending = p.pending[len(a.IDs):]
		p.sent -= len(a.IDs)
		if len(p.pending) == 0 {
			p.holder = "" // none in doubt
		}
		p.room.Broadcast()
		p.mu.Unlock()
		for i, put := range done {
			put.ack.resolve(a.IDs[i], nil)
		}
		progress = true
	}
	err = sc.Err()
	p.mu.Lock()
	clean := err == nil && len(p.pending) == 0 && p.closing
	p.mu.Unlock()
	switch {
	case clean:
		return progress, nil
	case err == nil:
		return progress, errRetry{fmt.Errorf("stream of puts: %w", httpapi.ErrStreamEnded)}
	case ctx.Err() != nil && p.ctx.Err() != nil:
		return progress, p.ctx.Err()
	}
	return progress, errRetry{fmt.Errorf("stream of puts: %w", err)}
}

// wholeLines splits a stream's reply into lines, as bufio.ScanLines,
// but a last line without its newline is an error: the reply was cut
// (the node gone) in the middle of an acknowledgement, not a bad one.
func wholeLines(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return 0, nil, fmt.Errorf("the reply ends within a line: %w", io.ErrUnexpectedEOF)
	}
	return 0, nil, nil
}

// write hands the puts not yet sent on this stream to its body, together:
// one write (a chunk of the body) for all the puts that came while the
// last one was written; once Close was called and every put is sent, it
// ends the body (the node commits what it read, then ends the reply).
// Puts handed to a node of its own queues are in doubt there (holder)
// until acknowledged.
func (p *Publisher) write(ctx context.Context, pw *io.PipeWriter, base string, replicated bool) {
	var b []byte
	for {
		p.mu.Lock()
		b = b[:0]
		for _, o := range p.pending[p.sent:] {
			b = appendFrame(b, o.body)
		}
		p.sent = len(p.pending)
		if len(b) > 0 && !replicated {
			p.holder = base
		}
		closing := p.closing
		p.mu.Unlock()
		if len(b) > 0 {
			if _, err := pw.Write(b); err != nil {
				return // the stream's end: stream replaces it
			}
			continue
		}
		if closing {
			pw.Close()
			return
		}
		select {
		case <-p.kick:
		case <-ctx.Done():
			return
		}
	}
}

// fail ends the Publisher: every put not acknowledged fails with err.
func (p *Publisher) fail(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	pending := p.pending
	p.pending, p.sent = nil, 0
	p.room.Broadcast()
	p.mu.Unlock()
	for _, o := range pending {
		o.ack.resolve(0, err)
	}
	p.cancel()
}

// Close sends what was put, waits for its acknowledgements (or ctx's
// end) and ends the stream. It returns the Publisher's error if a put
// failed for another reason than Close.
func (p *Publisher) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closing = true
	p.room.Broadcast()
	p.mu.Unlock()
	p.wake()
	select {
	case <-p.ended:
	case <-ctx.Done():
		p.fail(ctx.Err())
		<-p.ended
	}
	p.mu.Lock()
	err := p.err
	p.mu.Unlock()
	if err == ErrPublisherClosed {
		return nil
	}
	return err
}
