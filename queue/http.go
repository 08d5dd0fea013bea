package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cohort-go/cohort/internal/httpapi"
)

// The HTTP API of a node's queues. Bodies of puts are the message itself
// (at most MaxMessage bytes); replies are JSON, where a message's body is
// base64 (a message is bytes, not text):
//
//	GET  /v1/queues                              the queues: [{"name","ready","leased","bytes"}]
//	POST /v1/queues/{name}[?transient=1]         put the body; 200 {"queue","id"} once durable
//	GET  /v1/queues/{name}?wait=30s&count=1&visibility=30s
//	                                             get: wait (long poll) for a message, then take
//	                                             up to count, all under one lease (replicated
//	                                             queues); 200 {"messages":[...]}, empty when
//	                                             wait ran out
//	GET  /v1/queues/{name}/poll?count=1&visibility=30s   the same without waiting
//	POST /v1/queues/{name}/ack                   {"ids":[...]}: acknowledge, durably; 404 names
//	                                             the ids the queue does not hold; with
//	                                             "lease": L (replicated queues), only
//	                                             messages still under that lease
//	POST /v1/queues/{name}/release?id=N[&lease=L]  give a got message back at once
//	GET  /v1/queues/{name}/events                server-sent events: each message put (notify)
//	POST /v1/queues/{name}/stream                many puts, each acknowledged once durable (stream.go)
//	POST /v1/queues/{name}/batch                 many puts as frames, one transaction (tx.go)
//	POST /v1/queues:tx                           acks and puts, applied together or not at all (tx.go)
//
// A message got and not acknowledged within its visibility is delivered
// again. A put with the headers Cohort-Origin and Cohort-Origin-Seq (1 or
// more) is numbered — a Client's (numbered.go) or a relay's (PutFrom):
// the node applies each number once, and a copy of one applied is
// answered 200 {"duplicate":true} (no id). A put without them is applied
// as it comes, as before: a client that sends it again after a lost reply
// may store it twice. Replies to puts and transactions carry KindHeader.
// PUT is accepted for POST on a queue. The node checks the bearer token.

// Bounds of the API.
const (
	MaxCount      = 1000
	MaxWait       = 5 * time.Minute
	MaxVisibility = 12 * time.Hour
	maxAckBody    = 64 << 10
)

// PutReply is the answer to a put.
type PutReply struct {
	Queue     string `json:"queue"`
	ID        uint64 `json:"id,omitempty"`
	Duplicate bool   `json:"duplicate,omitempty"`
}

// GetReply is the answer to a get or a poll.
type GetReply struct {
	Messages []Message `json:"messages"`
}

// AckRequest is the body of an ack. Lease, on replicated queues: ack
// only what is still under that lease (Message.Lease).
type AckRequest struct {
	IDs   []uint64 `json:"ids"`
	Lease uint64   `json:"lease,omitempty"`
}

// leaseBackend is a backend whose acks and releases can name a lease.
type leaseBackend interface {
	AckLease(name string, lease uint64, ids ...uint64) error
	ReleaseLease(name string, lease, id uint64) error
}

// Backend is what the API serves: a node's own queues (Manager) or
// queues replicated on the cluster's log (Replicated).
type Backend interface {
	Put(name string, body []byte) (uint64, error)
	PutFrom(name string, body []byte, origin string, seq uint64) (uint64, error)
	Get(ctx context.Context, name string, visibility time.Duration) (Message, error)
	Poll(name string, visibility time.Duration) (Message, bool, error)
	Ack(name string, ids ...uint64) error
	Release(name string, id uint64) error
	DeclareTransient(name string) error
	Subscribe(name string, buf int) (<-chan Message, func(), error)
	Queues() []Stats
	WriteMetrics(w io.Writer)
}

// KindHeader names, in the reply to GET /v1/queues, the queues a node
// serves: "replicated" (Replicated: the same queues through every node of
// the cluster) or "own" (the node's own, Manager). A Publisher asks
// before each stream, for where it may send again the puts a lost stream
// left unacknowledged.
const KindHeader = "Cohort-Queues"

// kind is m's KindHeader.
func kind(m Backend) string {
	if _, ok := m.(*Replicated); ok {
		return "replicated"
	}
	return "own"
}

// Handler serves the API of m's queues.
func Handler(m Backend) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/queues", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(KindHeader, kind(m))
		httpapi.Reply(w, http.StatusOK, m.Queues())
	})
	put := func(w http.ResponseWriter, r *http.Request) {
		name, ok := queueName(w, r)
		if !ok {
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxMessage+1))
		if err != nil {
			httpapi.Fail(w, http.StatusBadRequest, err.Error())
			return
		}
		if len(body) > MaxMessage {
			httpapi.Fail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("%v: more than %d bytes", ErrTooBig, MaxMessage))
			return
		}
		if t := r.URL.Query().Get("transient"); t == "1" || t == "true" {
			if err := m.DeclareTransient(name); err != nil {
				if errors.Is(err, ErrName) || errors.Is(err, ErrTooMany) || errors.Is(err, ErrClosed) {
					fail(w, err)
				} else {
					httpapi.Fail(w, http.StatusConflict, err.Error())
				}
				return
			}
		}
		var id uint64
		if origin := r.Header.Get("Cohort-Origin"); origin != "" {
			v := r.Header.Get("Cohort-Origin-Seq")
			seq, perr := strconv.ParseUint(v, 10, 64)
			if perr != nil || seq == 0 {
				httpapi.Fail(w, http.StatusBadRequest, fmt.Sprintf("Cohort-Origin-Seq %q: want the put's number, 1 or more", httpapi.Clip(v)))
				return
			}
			id, err = m.PutFrom(name, body, origin, seq)
		} else {
			id, err = m.Put(name, body)
		}
		if err != nil {
			fail(w, err)
			return
		}
		w.Header().Set(KindHeader, kind(m))
		httpapi.Reply(w, http.StatusOK, PutReply{Queue: name, ID: id, Duplicate: id == 0})
	}
	mux.HandleFunc("POST /v1/queues/{name}", put)
	mux.HandleFunc("PUT /v1/queues/{name}", put)
	mux.HandleFunc("GET /v1/queues/{name}", func(w http.ResponseWriter, r *http.Request) { get(m, w, r, true) })
	mux.HandleFunc("GET /v1/queues/{name}/poll", func(w http.ResponseWriter, r *http.Request) { get(m, w, r, false) })
	mux.HandleFunc("POST /v1/queues/{name}/ack", func(w http.ResponseWriter, r *http.Request) {
		name, ok := queueName(w, r)
		if !ok {
			return
		}
		var req AckRequest
		b, err := io.ReadAll(io.LimitReader(r.Body, maxAckBody+1))
		if err == nil && len(b) > maxAckBody {
			err = fmt.Errorf("more than %d bytes", maxAckBody)
		}
		if err == nil {
			err = json.Unmarshal(b, &req)
		}
		if err == nil && (len(req.IDs) == 0 || len(req.IDs) > MaxCount) {
			err = fmt.Errorf("%d ids: want 1 to %d", len(req.IDs), MaxCount)
		}
		if err != nil {
			httpapi.Fail(w, http.StatusBadRequest, "ack: want {\"ids\":[...]}: "+err.Error())
			return
		}
		ack := func() error { return m.Ack(name, req.IDs...) }
		if l, ok := m.(leaseBackend); ok && req.Lease != 0 {
			ack = func() error { return l.AckLease(name, req.Lease, req.IDs...) }
		}
		if err := ack(); err != nil {
			fail(w, err)
			return
		}
		httpapi.Reply(w, http.StatusOK, struct{}{})
	})
	mux.HandleFunc("POST /v1/queues/{name}/release", func(w http.ResponseWriter, r *http.Request) {
		name, ok := queueName(w, r)
		if !ok {
			return
		}
		v := r.URL.Query().Get("id")
		id, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			httpapi.Fail(w, http.StatusBadRequest, fmt.Sprintf("id %q: want a message id", v))
			return
		}
		release := func() error { return m.Release(name, id) }
		if v := r.URL.Query().Get("lease"); v != "" {
			lease, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				httpapi.Fail(w, http.StatusBadRequest, fmt.Sprintf("lease %q: want a lease number", v))
				return
			}
			if l, ok := m.(leaseBackend); ok {
				release = func() error { return l.ReleaseLease(name, lease, id) }
			}
		}
		if err := release(); err != nil {
			fail(w, err)
			return
		}
		httpapi.Reply(w, http.StatusOK, struct{}{})
	})
	mux.HandleFunc("GET /v1/queues/{name}/events", func(w http.ResponseWriter, r *http.Request) { events(m, w, r) })
	mux.HandleFunc("POST /v1/queues/{name}/stream", func(w http.ResponseWriter, r *http.Request) { serveStream(m, w, r) })
	mux.HandleFunc("POST /v1/queues/{name}/batch", func(w http.ResponseWriter, r *http.Request) { serveBatch(m, w, r) })
	mux.HandleFunc("POST /v1/queues:tx", func(w http.ResponseWriter, r *http.Request) { serveTx(m, w, r) })
	if rm, ok := m.(*Replicated); ok {
		// A halted replica refuses every request, its list of queues
		// included, so that clients go on to another node.
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := rm.Halted(); err != nil {
				httpapi.Fail(w, http.StatusServiceUnavailable, err.Error())
				return
			}
			mux.ServeHTTP(w, r)
		})
	}
	return mux
}

func queueName(w http.ResponseWriter, r *http.Request) (string, bool) {
	name := r.PathValue("name")
	if err := ValidName(name); err != nil {
		httpapi.Fail(w, http.StatusBadRequest, err.Error())
		return "", false
	}
	return name, true
}

func fail(w http.ResponseWriter, err error) {
	if errors.Is(err, ErrRemoved) {
		w.Header().Set(NotVoterHeader, "1")
	}
	httpapi.Fail(w, status(err), err.Error())
}

// NotVoterHeader is set ("1") on a 503 from a node that does not vote in
// the queues' log (removed from its voters, or joined and not added): it
// serves no request however often asked until it is added, so a Client
// passes it for the rest of a call.
const NotVoterHeader = httpapi.NotVoterHeader

// status is the HTTP status of an error of the queues.
func status(err error) int {
	code := http.StatusServiceUnavailable
	switch {
	case errors.Is(err, ErrName), errors.Is(err, ErrInvalid):
		code = http.StatusBadRequest
	case errors.Is(err, ErrTooBig):
		code = http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrFull), errors.Is(err, ErrTooMany):
		code = http.StatusInsufficientStorage
	case errors.Is(err, ErrNoMessage), errors.Is(err, ErrLeaseLost):
		code = http.StatusNotFound
	}
	return code
}

// duration reads a duration parameter within [lo, hi].
func duration(w http.ResponseWriter, r *http.Request, key string, def, lo, hi time.Duration) (time.Duration, bool) {
	v := r.URL.Query().Get(key)
	if v == "" {
		return def, true
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < lo || d > hi {
		httpapi.Fail(w, http.StatusBadRequest, fmt.Sprintf("%s %q: want a duration between %v and %v", key, v, lo, hi))
		return 0, false
	}
	return d, true
}

func get(m Backend, w http.ResponseWriter, r *http.Request, block bool) {
	name, ok := queueName(w, r)
	if !ok {
		return
	}
	count := 1
	if v := r.URL.Query().Get("count"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxCount {
			httpapi.Fail(w, http.StatusBadRequest, fmt.Sprintf("count %q: want 1 to %d", v, MaxCount))
			return
		}
		count = n
	}
	wait, ok := duration(w, r, "wait", 30*time.Second, 0, MaxWait)
	if !ok {
		return
	}
	vis, ok := duration(w, r, "visibility", 0, time.Millisecond, MaxVisibility)
	if !ok {
		return
	}
	reply := GetReply{Messages: []Message{}}
	if block && wait > 0 {
		ctx, cancel := context.WithTimeout(r.Context(), wait)
		msgs, err := getN(ctx, m, name, vis, count)
		cancel()
		switch {
		case err == nil:
			reply.Messages = append(reply.Messages, msgs...)
		case errors.Is(err, context.DeadlineExceeded):
			if r.Context().Err() != nil {
				return
			}
			httpapi.Reply(w, http.StatusOK, reply)
			return
		case errors.Is(err, context.Canceled):
			return // the client went away
		default:
			fail(w, err)
			return
		}
	} else {
		more, err := pollN(m, name, vis, count)
		if err != nil && len(more) == 0 {
			fail(w, err)
			return
		}
		reply.Messages = append(reply.Messages, more...)
	}
	if r.Context().Err() != nil {
		// The client is gone: give its messages back at once.
		for _, msg := range reply.Messages {
			m.Release(name, msg.ID)
		}
		return
	}
	httpapi.Reply(w, http.StatusOK, reply)
}

// getN waits for a ready message and takes up to n: in one operation
// from a backend that can (Replicated: one entry of the log, so the
// messages share one lease and the caller acknowledges them with one
// AckLease), else the first by Get and the rest by pollN.
func getN(ctx context.Context, m Backend, name string, vis time.Duration, n int) ([]Message, error) {
	if b, ok := m.(interface {
		GetN(ctx context.Context, name string, visibility time.Duration, n int) ([]Message, error)
	}); ok {
		return b.GetN(ctx, name, vis, n)
	}
	msg, err := m.Get(ctx, name, vis)
	if err != nil {
		return nil, err
	}
	out := []Message{msg}
	if n > 1 {
		more, _ := pollN(m, name, vis, n-1) // what could not be taken now is not waited for
		out = append(out, more...)
	}
	return out, nil
}

// pollN takes up to n messages without waiting: in one operation from a
// backend that can (Replicated: one entry of the log), else one by one.
func pollN(m Backend, name string, vis time.Duration, n int) ([]Message, error) {
	if b, ok := m.(interface {
		PollN(name string, visibility time.Duration, n int) ([]Message, error)
	}); ok {
		return b.PollN(name, vis, n)
	}
	var out []Message
	for len(out) < n {
		msg, ok, err := m.Poll(name, vis)
		if err != nil || !ok {
			return out, err
		}
		out = append(out, msg)
	}
	return out, nil
}

// eventsBacklog bounds the messages an event stream holds for a slow
// reader; beyond, the stream ends with an error event.
const eventsBacklog = 1024

func events(m Backend, w http.ResponseWriter, r *http.Request) {
	name, ok := queueName(w, r)
	if !ok {
		return
	}
	ch, cancel, err := m.Subscribe(name, eventsBacklog)
	if err != nil {
		fail(w, err)
		return
	}
	defer cancel()
	ev, ok := httpapi.StartEvents(w)
	if !ok {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case msg, ok := <-ch:
			if !ok {
				ev.End("the stream ended: the reader fell behind, or the node stops or no longer follows the queues' log; reconnect")
				return
			}
			if ev.Send(msg, len(ch) > 0) != nil {
				return
			}
		}
	}
}

// Client uses the queues of a cluster's nodes over HTTP: a call goes to
// the first endpoint that answers. Replicated queues are the same through
// every node; per-node queues are each node's own, so with the same
// endpoints, in the same order, producers and consumers meet at the same
// node. Put and PutBatch are numbered, and sent again after a lost reply
// without being stored twice (numbered.go). A Client is safe for
// concurrent use; do not copy one once used.
type Client struct {
	Endpoints []string
	Token     string
	HTTP      *http.Client // nil: one shared by the package's clients, keeping connections (defaultHTTP)
	// Retry bounds how long a put whose reply was lost is sent again
	// (0: DefaultRetry), as a Publisher's Retry.
	Retry time.Duration
	// Attempt bounds how long a node of replicated queues may take to
	// answer a put before it is sent again through the next endpoint
	// (0: DefaultAttempt): a node cut off from the majority holds a put
	// it cannot commit, and another node can.
	Attempt time.Duration

	numbering // the numbers of Put and PutBatch
}

// defaultHTTP keeps up to 256 idle connections per node, where
// http.DefaultClient keeps 2: many goroutines putting at once through a
// Client would otherwise close and reopen a connection for most puts
// (measured at 256 publishers over loopback: about half the puts per
// second, and thousands of sockets left in TIME_WAIT).
var defaultHTTP = func() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 256
	tr.MaxIdleConns = 1024
	return &http.Client{Transport: tr}
}()

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return defaultHTTP
}

func (c *Client) api() *httpapi.Client {
	return &httpapi.Client{Endpoints: c.Endpoints, Token: c.Token, HTTP: c.httpClient()}
}

// Put appends body to the queue; it returns once the node has it on
// disk (replicated queues: once a majority has). The put is numbered: if
// its reply is lost it is sent again, through any node of replicated
// queues and to the same node of a node's own, and stored once; id 0
// with no error means that an earlier copy was stored, whose id is not
// known. A put in doubt on a node of its own queues that does not come
// back within Retry fails with ErrInDoubt (see numbered.go).
func (c *Client) Put(ctx context.Context, name string, body []byte) (uint64, error) {
	if err := ValidName(name); err != nil {
		return 0, err
	}
	if len(body) > MaxMessage {
		return 0, fmt.Errorf("%w: %d bytes, the most is %d", ErrTooBig, len(body), MaxMessage)
	}
	var reply PutReply
	err := c.sendNumbered(ctx, func(ctx context.Context, base, origin string, seq uint64) (int, string, http.Header, error) {
		h := http.Header{"Cohort-Origin": {origin}, "Cohort-Origin-Seq": {strconv.FormatUint(seq, 10)}}
		return c.call(ctx, http.MethodPost, base+"/v1/queues/"+url.PathEscape(name), body, h, &reply)
	})
	return reply.ID, err
}

// PutBatch appends bodies to the queue, in order, in one request: they
// are one record of the node's log (a transaction of puts, POST
// /v1/queues/{name}/batch), on disk after one sync, all or none — a full queue
// refuses the whole batch. It returns their ids. A batch holds at most
// MaxTxOps messages of MaxMessage bytes together. It is numbered as Put
// is, and sent again as Put is: ids of 0 mean that an earlier copy of the
// batch was stored. A node of an earlier version, which answers the batch
// route 404, is sent the batch as JSON to /v1/queues:tx (as such nodes'
// clients did), under the same number.
func (c *Client) PutBatch(ctx context.Context, name string, bodies [][]byte) ([]uint64, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	puts := make([]TxPut, len(bodies))
	for i, b := range bodies {
		puts[i] = TxPut{Queue: name, Body: b}
	}
	if err := checkTx(nil, puts, MaxMessage); err != nil {
		return nil, err
	}
	var frames []byte
	for _, b := range bodies {
		frames = appendFrame(frames, b)
	}
	var reply TxReply
	err := c.sendNumbered(ctx, func(ctx context.Context, base, origin string, seq uint64) (int, string, http.Header, error) {
		if !c.oldNode(base) {
			h := http.Header{"Cohort-Origin": {origin}, "Cohort-Origin-Seq": {strconv.FormatUint(seq, 10)},
				"Content-Type": {"application/octet-stream"}}
			code, msg, rh, err := c.call(ctx, http.MethodPost, base+"/v1/queues/"+url.PathEscape(name)+"/batch", frames, h, &reply)
			if err != nil || code != http.StatusNotFound || strings.HasPrefix(rh.Get("Content-Type"), "application/json") {
				return code, msg, rh, err
			}
			// Not a reply of the queues (JSON), but a 404 of a node
			// that has no such route, an earlier version's: it applied
			// nothing, so the same number goes again, as JSON.
			c.setOldNode(base)
		}
		b, err := json.Marshal(TxRequest{Puts: puts, Origin: origin, Seq: seq})
		if err != nil {
			return 0, "", nil, err
		}
		if len(b) > maxTxBytes {
			return 0, "", nil, fmt.Errorf("%w: a batch of %d bytes in JSON, the most an earlier node at %s takes is %d", ErrTooBig, len(b), base, maxTxBytes)
		}
		return c.call(ctx, http.MethodPost, base+"/v1/queues:tx", b, nil, &reply)
	})
	if err != nil {
		return nil, err
	}
	if reply.Duplicate {
		return make([]uint64, len(bodies)), nil
	}
	return reply.IDs, nil
}

// oldNode reports whether the node at base is of an earlier version,
// without the batch route (it answered it 404).
func (c *Client) oldNode(base string) bool {
	c.numbering.mu.Lock()
	defer c.numbering.mu.Unlock()
	return c.old[base]
}

func (c *Client) setOldNode(base string) {
	c.numbering.mu.Lock()
	defer c.numbering.mu.Unlock()
	if c.old == nil {
		c.old = map[string]bool{}
	}
	c.old[base] = true
}

func (c *Client) put(ctx context.Context, name string, body []byte, h http.Header) (PutReply, error) {
	if err := ValidName(name); err != nil {
		return PutReply{}, err
	}
	if len(body) > MaxMessage {
		return PutReply{}, fmt.Errorf("%w: %d bytes, the most is %d", ErrTooBig, len(body), MaxMessage)
	}
	var reply PutReply
	err := c.api().First(ctx, func(base string) (int, string, error) {
		code, msg, _, err := c.call(ctx, http.MethodPost, base+"/v1/queues/"+url.PathEscape(name), body, h, &reply)
		return code, msg, err
	})
	return reply, err
}

// call is httpapi.Client.Call with headers, which also returns the
// reply's headers.
func (c *Client) call(ctx context.Context, method, u string, body []byte, h http.Header, out any) (int, string, http.Header, error) {
	hc := c.httpClient()
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return 0, "", nil, err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, httpapi.ErrorMessage(resp.Body), resp.Header, nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, "", nil, err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return resp.StatusCode, "", nil, fmt.Errorf("bad reply: %w", err)
	}
	return resp.StatusCode, "", resp.Header, nil
}

// GetOptions are a get's parameters; zero values are the node's
// defaults (wait 30 s, count 1, the manager's visibility).
type GetOptions struct {
	Wait       time.Duration
	Count      int
	Visibility time.Duration
	NoWait     bool // poll
}

// Get takes up to Count messages, waiting up to Wait for the first; an
// empty answer means none came in time. The messages are leased: Ack them.
func (c *Client) Get(ctx context.Context, name string, o GetOptions) ([]Message, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	q := url.Values{}
	if o.Count > 0 {
		q.Set("count", strconv.Itoa(o.Count))
	}
	if o.Wait > 0 {
		q.Set("wait", o.Wait.String())
	}
	if o.Visibility > 0 {
		q.Set("visibility", o.Visibility.String())
	}
	path := "/v1/queues/" + url.PathEscape(name)
	if o.NoWait {
		path += "/poll"
	}
	// A node that answers 503 (one of replicated queues cut off from the
	// majority: ErrNoLeader) is passed for the next. A get it took and
	// could not answer leases messages to no one, which are delivered
	// again after their visibility.
	var reply GetReply
	err := c.inTurn(ctx, true, func(base string) (int, string, error) {
		reply = GetReply{}
		return c.api().Call(ctx, http.MethodGet, base+path+"?"+q.Encode(), nil, &reply)
	})
	return reply.Messages, err
}

// inTurn calls call on the endpoints in turn, those gone quiet lately
// (numbering.order) last, until one answers: a node that cannot be
// reached is passed for the next, and so, with past503, is one that
// answers 503 (and is counted quiet). Any other answer is the outcome.
func (c *Client) inTurn(ctx context.Context, past503 bool, call func(base string) (code int, msg string, err error)) error {
	bases, err := c.bases()
	if err != nil {
		return err
	}
	var errs []error
	for _, base := range bases {
		code, msg, err := call(base)
		switch {
		case err == nil && code == http.StatusOK:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case err == nil && (code != http.StatusServiceUnavailable || !past503):
			return fmt.Errorf("%s: HTTP %d: %s", base, code, msg)
		case err == nil:
			err = fmt.Errorf("HTTP %d: %s", code, msg)
		}
		c.setQuiet(base, true)
		errs = append(errs, fmt.Errorf("%s: %w", base, err))
	}
	return fmt.Errorf("no endpoint answered: %w", errors.Join(errs...))
}

// Ack acknowledges messages: they are never delivered again.
func (c *Client) Ack(ctx context.Context, name string, ids ...uint64) error {
	return c.AckLease(ctx, name, 0, ids...)
}

// AckLease is Ack of messages got under lease (Message.Lease, set by
// replicated queues; 0: none): only those still under it are
// acknowledged, and the error says which were not.
//
// Under a lease the acknowledgement is numbered, as a put is: sent as a
// transaction of acks under the Client's next number, and, when a node
// answers 503 or not at all, sent again under the same number through
// the next — a copy that reached the log is applied once. Should a
// message no longer be under the lease, the transaction is refused whole
// (nothing applied), and a plain ack then acknowledges the others and
// names those.
func (c *Client) AckLease(ctx context.Context, name string, lease uint64, ids ...uint64) error {
	if err := ValidName(name); err != nil {
		return err
	}
	if lease != 0 && len(ids) > 0 && len(ids) <= MaxCount {
		refused, err := c.ackNumbered(ctx, name, lease, ids)
		if !refused {
			return err
		}
	}
	b, _ := json.Marshal(AckRequest{IDs: ids, Lease: lease})
	// Not past a 503: the ack may yet apply there, and a copy applied
	// through another node would find its messages gone.
	return c.inTurn(ctx, false, func(base string) (int, string, error) {
		return c.api().Call(ctx, http.MethodPost, base+"/v1/queues/"+url.PathEscape(name)+"/ack", b, nil)
	})
}

// ackNumbered acknowledges ids under lease as one numbered transaction;
// refused says a node refused it (a message not held under the lease),
// so that nothing of it was applied.
func (c *Client) ackNumbered(ctx context.Context, name string, lease uint64, ids []uint64) (refused bool, err error) {
	acks := make([]TxAck, len(ids))
	for i, id := range ids {
		acks[i] = TxAck{Queue: name, ID: id, Lease: lease}
	}
	list, err := json.Marshal(acks)
	if err != nil {
		return false, err
	}
	err = c.sendNumbered(ctx, func(ctx context.Context, base, origin string, seq uint64) (int, string, http.Header, error) {
		var reply TxReply
		b := fmt.Appendf(nil, `{"acks":%s,"origin":%q,"seq":%d}`, list, origin, seq) // origin: letters, digits, - and .
		code, msg, h, err := c.call(ctx, http.MethodPost, base+"/v1/queues:tx", b, nil, &reply)
		refused = err == nil && code == http.StatusNotFound
		return code, msg, h, err
	})
	return refused, err
}

// Queues lists the queues of the first node that answers.
func (c *Client) Queues(ctx context.Context) ([]Stats, error) {
	var out []Stats
	err := c.api().First(ctx, func(base string) (int, string, error) {
		return c.api().Call(ctx, http.MethodGet, base+"/v1/queues", nil, &out)
	})
	return out, err
}

// Listen calls f with each message put on the queue (notify) until ctx
// ends or the stream breaks.
func (c *Client) Listen(ctx context.Context, name string, f func(Message)) error {
	if err := ValidName(name); err != nil {
		return err
	}
	return c.api().First(ctx, func(base string) (int, string, error) {
		resp, code, msg, err := c.api().Open(ctx, http.MethodGet, base+"/v1/queues/"+url.PathEscape(name)+"/events", nil)
		if resp == nil {
			return code, msg, err
		}
		defer resp.Body.Close()
		// An event that is not a message ends the stream with an error
		// naming it: dropped, the message would be missed without a word.
		var bad error
		err = httpapi.ReadEvents(resp.Body, 4*MaxMessage, func(data []byte) {
			var m Message
			if bad != nil {
				return
			}
			if err := json.Unmarshal(data, &m); err != nil {
				bad = fmt.Errorf("listen: event %q is not a message: %w", httpapi.Clip(string(data)), err)
				resp.Body.Close() // ends the reading
				return
			}
			f(m)
		})
		if bad != nil {
			return 0, "", bad
		}
		if ctx.Err() != nil {
			return http.StatusOK, "", nil
		}
		return 0, "", fmt.Errorf("listen: %w", err)
	})
}
