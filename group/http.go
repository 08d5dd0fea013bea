package group

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/cohort-go/cohort/internal/httpapi"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/proc"
)

// The HTTP API of a node's groups:
//
//	POST /v1/groups/{name}/messages     the request body is the message; 200 {"origin","seq"} (and "pos")
//	GET  /v1/groups/{name}/deliveries   server-sent events: one "data: {"origin","seq","pos","body"}" per delivery,
//	                                    body in base64, from the moment of the request on — or, on the
//	                                    replicated backend, with ?from=N, from position N (410 if the node
//	                                    no longer keeps it)
//
// On the replicated backend a message's 200 means it is committed: it
// will be delivered at every member, at position "pos". On a textbook
// algorithm it means this node delivered it; a message it has not
// delivered within DeliveryWait is answered 504, not acknowledged (it may
// still be delivered).
//
// Authentication (the bearer token) is the caller's: the node wraps this
// handler with its API's.

// Server serves the groups of one node.
type Server struct {
	node *live.Node
	algo proc.Algorithm
	rep  *Replicated // nil: the multicast algorithm's groups
	log  *slog.Logger

	stall time.Duration // see ServerConfig.Stall

	mu     sync.Mutex
	groups map[string]*Group
}

// ServerConfig configures a Server.
type ServerConfig struct {
	Node      *live.Node
	Algorithm proc.Algorithm // the multicast algorithm behind every group
	// Replicated, if set, is the backend instead of Algorithm: every
	// group on the replicated log.
	Replicated *Replicated
	Logger     *slog.Logger // nil: slog.Default()
	// Stall is how long a write to a delivery stream's reader may block
	// (the reader stopped reading, and the connection's buffers are full)
	// before the node cuts the reader off; 0 means DefaultStall.
	Stall time.Duration
}

// DefaultStall is ServerConfig.Stall's default.
const DefaultStall = 30 * time.Second

// NewServer returns the group API of a node.
func NewServer(c ServerConfig) *Server {
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	stall := c.Stall
	if stall <= 0 {
		stall = DefaultStall
	}
	return &Server{node: c.Node, algo: c.Algorithm, rep: c.Replicated, log: log, stall: stall, groups: map[string]*Group{}}
}

// Group returns the node's group called name, joining it on first use.
func (s *Server) Group(name string) (*Group, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g, ok := s.groups[name]; ok {
		return g, nil
	}
	g, err := New(s.node, name, s.algo)
	if err != nil {
		return nil, err
	}
	s.groups[name] = g
	return g, nil
}

// WriteMetrics writes, in the Prometheus text format, how many messages
// each of the node's textbook groups dropped rather than hold back (see
// ErrOverflow): more than 0 means the member can no longer deliver the
// group's messages.
func (s *Server) WriteMetrics(w io.Writer) {
	s.mu.Lock()
	names := slices.Sorted(maps.Keys(s.groups))
	groups := make([]*Group, len(names))
	for i, name := range names {
		groups[i] = s.groups[name]
	}
	s.mu.Unlock()
	fmt.Fprintf(w, "# HELP cohort_group_holdback_dropped_total Messages a textbook group member dropped, its hold-back queue full.\n"+
		"# TYPE cohort_group_holdback_dropped_total counter\n")
	for i, g := range groups {
		fmt.Fprintf(w, "cohort_group_holdback_dropped_total{group=%q} %d\n", names[i], g.Dropped())
	}
}

// Handler is the server's HTTP handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/groups/{name}/messages", s.multicast)
	mux.HandleFunc("GET /v1/groups/{name}/deliveries", s.deliveries)
	return mux
}

func (s *Server) group(w http.ResponseWriter, r *http.Request) (*Group, bool) {
	name := r.PathValue("name")
	if err := ValidName(name); err != nil {
		httpapi.Fail(w, http.StatusBadRequest, err.Error())
		return nil, false
	}
	g, err := s.Group(name)
	if err != nil {
		httpapi.Fail(w, http.StatusServiceUnavailable, err.Error())
		return nil, false
	}
	return g, true
}

func (s *Server) multicast(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := ValidName(name); err != nil {
		httpapi.Fail(w, http.StatusBadRequest, err.Error())
		return
	}
	limit := MaxBody
	if s.rep != nil {
		limit = MaxReplicatedBody
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
	if err != nil {
		httpapi.Fail(w, http.StatusBadRequest, err.Error())
		return
	}
	if len(body) > limit {
		httpapi.Fail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("message over the %d-byte limit", limit))
		return
	}
	if s.rep != nil {
		d, err := s.rep.Multicast(r.Context(), name, body)
		switch {
		case errors.Is(err, ErrTooManyGroups):
			httpapi.Fail(w, http.StatusInsufficientStorage, err.Error())
			return
		case err != nil:
			httpapi.Fail(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		httpapi.Reply(w, http.StatusOK, struct {
			ID
			Pos uint64 `json:"pos"`
		}{d.ID, d.Pos})
		return
	}
	g, ok := s.group(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), DeliveryWait)
	defer cancel()
	id, err := g.Multicast(ctx, body)
	switch {
	case errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil:
		httpapi.Fail(w, http.StatusGatewayTimeout, fmt.Sprintf("%v: not acknowledged (the group's algorithm may have lost its sequencer, or this node restarted and lost the group's state)", err))
	case err != nil:
		httpapi.Fail(w, http.StatusServiceUnavailable, err.Error())
	default:
		httpapi.Reply(w, http.StatusOK, id)
	}
}

// DeliveryWait bounds how long a multicast through the HTTP API of a
// textbook group waits for this node to deliver it: the acknowledgement.
const DeliveryWait = 10 * time.Second

func (s *Server) deliveries(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := ValidName(name); err != nil {
		httpapi.Fail(w, http.StatusBadRequest, err.Error())
		return
	}
	var from uint64
	if v := r.URL.Query().Get("from"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n == 0 {
			httpapi.Fail(w, http.StatusBadRequest, fmt.Sprintf("from %q: want a position (1, 2, ...)", v))
			return
		}
		if s.rep == nil {
			httpapi.Fail(w, http.StatusBadRequest, "from: positions are the replicated backend's (group: raft)")
			return
		}
		from = n
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		httpapi.Fail(w, http.StatusInternalServerError, "streaming unsupported")
		return
	}
	var ds <-chan Delivery
	var wait func() error
	if s.rep != nil {
		var err error
		if ds, wait, err = s.rep.Deliveries(r.Context(), name, from); err != nil {
			code := http.StatusServiceUnavailable
			if errors.Is(err, ErrCompacted) {
				code = http.StatusGone
			}
			httpapi.Fail(w, code, err.Error())
			return
		}
	} else {
		g, ok := s.group(w, r)
		if !ok {
			return
		}
		ds, wait = g.Deliveries(r.Context())
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	bw := bufio.NewWriter(w)
	rc := http.NewResponseController(w)
	for d := range ds {
		// A reader that stops reading is cut off once a write has
		// blocked for the stall bound, rather than held for ever (with
		// its stream's backlog: see MaxBacklogBytes).
		if err := rc.SetWriteDeadline(time.Now().Add(s.stall)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			break
		}
		b, _ := json.Marshal(d)
		bw.WriteString("data: ")
		bw.Write(b)
		_, err := bw.WriteString("\n\n")
		// Flush when nothing more is waiting, so a burst goes out in
		// few writes.
		if err == nil && len(ds) == 0 {
			if err = bw.Flush(); err == nil {
				err = rc.Flush()
			}
		}
		if err != nil {
			s.log.Warn("delivery stream's reader cut off", "group", name, "err", err)
			return // the stream ends with the request's context
		}
	}
	if err := wait(); err != nil {
		fmt.Fprintf(bw, "event: error\ndata: %q\n\n", err.Error())
		bw.Flush()
		s.log.Warn("delivery stream ended", "group", name, "err", err)
	}
}

// Client multicasts and listens through the HTTP API of a cluster's nodes.
type Client struct {
	// Endpoints are nodes' API addresses, "host:port" or URLs; a call uses
	// the first that answers.
	Endpoints []string
	// Token is the bearer token the nodes require, if any.
	Token string
	// HTTP is the client to use; nil means http.DefaultClient.
	HTTP *http.Client
}

// Multicast sends body to group name.
func (c *Client) Multicast(ctx context.Context, name string, body []byte) (ID, error) {
	id, _, err := c.Send(ctx, name, body)
	return id, err
}

// Send is Multicast that also returns the message's position in the group
// (0 but on the replicated backend, where the reply means committed).
func (c *Client) Send(ctx context.Context, name string, body []byte) (ID, uint64, error) {
	var out struct {
		ID
		Pos uint64 `json:"pos"`
	}
	err := c.api().First(ctx, func(base string) (int, string, error) {
		return c.api().Call(ctx, http.MethodPost, base+"/v1/groups/"+url.PathEscape(name)+"/messages", body, &out)
	})
	return out.ID, out.Pos, err
}

// Deliveries streams what the first node that answers delivers from now
// on, until ctx ends or the stream breaks; then the channel closes and the
// returned function says why (nil once ctx ended).
func (c *Client) Deliveries(ctx context.Context, name string) (<-chan Delivery, func() error, error) {
	return c.DeliveriesFrom(ctx, name, 0)
}

// DeliveriesFrom is Deliveries from position from of the group (0: from
// now on), on the replicated backend.
func (c *Client) DeliveriesFrom(ctx context.Context, name string, from uint64) (<-chan Delivery, func() error, error) {
	var resp *http.Response
	q := ""
	if from > 0 {
		q = "?from=" + strconv.FormatUint(from, 10)
	}
	err := c.api().First(ctx, func(base string) (int, string, error) {
		r, code, msg, err := c.api().Open(ctx, http.MethodGet, base+"/v1/groups/"+url.PathEscape(name)+"/deliveries"+q, nil)
		resp = r
		return code, msg, err
	})
	if err != nil {
		return nil, nil, err
	}
	ch := make(chan Delivery, 64)
	errc := make(chan error, 1)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		err := ReadDeliveries(resp.Body, func(d Delivery) bool {
			select {
			case ch <- d:
				return true
			case <-ctx.Done():
				return false
			}
		})
		if ctx.Err() != nil {
			err = nil
		}
		errc <- err
	}()
	return ch, func() error { return <-errc }, nil
}

// MaxEvent bounds one server-sent event's line: a largest message in
// base64 and its identity.
const MaxEvent = MaxBody*4/3 + 1024

// ReadDeliveries reads a delivery stream from r and hands each delivery to
// f until f returns false or the stream ends (nil at EOF). An "error"
// event from the node ends it with that error; a data line that is not a
// delivery is an error that quotes it.
func ReadDeliveries(r io.Reader, f func(Delivery) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), MaxEvent)
	event := ""
	for sc.Scan() {
		line := sc.Bytes()
		if ev, ok := bytes.CutPrefix(line, []byte("event:")); ok {
			event = string(bytes.TrimSpace(ev))
			continue
		}
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			if len(line) == 0 {
				event = ""
			}
			continue
		}
		data = bytes.TrimSpace(data)
		if event == "error" {
			return fmt.Errorf("the node ended the stream: %s", data)
		}
		var d Delivery
		if err := json.Unmarshal(data, &d); err != nil {
			q := string(data)
			if len(q) > 80 {
				q = q[:80] + "..."
			}
			return fmt.Errorf("bad delivery %q: %v", q, err)
		}
		if !f(d) {
			return nil
		}
	}
	return sc.Err()
}

func (c *Client) api() *httpapi.Client {
	return &httpapi.Client{Endpoints: c.Endpoints, Token: c.Token, HTTP: c.HTTP}
}
