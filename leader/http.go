package leader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/cohort-go/cohort/election"
	"github.com/cohort-go/cohort/internal/httpapi"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/proc"
)

// The HTTP API of a node's elections (JSON bodies):
//
//	GET    /v1/elections/{name}                   {"name","leader","term","is_leader","since","changes","node"}
//	GET    /v1/elections/{name}/watch             server-sent events: one "data: {view}" per change, the current view first
//	POST   /v1/elections/{name}/campaign?ttl=10s  wait until this node leads (long poll); 200 {"name","leader","term","lease","ttl_ms"}
//	POST   /v1/elections/{name}/keepalive?lease=ID   renew the campaign's lease; 404 if it expired
//	DELETE /v1/elections/{name}?lease=ID          resign; 404 if the lease is unknown
//
// A campaign over HTTP is a lease, as a lock is: unless the client renews
// it within its ttl the node resigns, so a client that dies does not keep
// the leadership. One campaign per election and node at a time: a second
// one gets 409. Authentication (the bearer token) is the caller's: the
// node wraps this handler with the lock API's.

// Server serves the elections of one node.
type Server struct {
	node *live.Node
	cfg  election.LeaderConfig
	log  *slog.Logger

	mu        sync.Mutex
	elections map[string]*Election
	leases    map[string]*lease // by election name
}

type lease struct {
	id    string
	ttl   time.Duration
	timer *time.Timer
}

// ServerConfig configures a Server.
type ServerConfig struct {
	Node     *live.Node
	Election election.LeaderConfig // every election runs with it
	Logger   *slog.Logger          // nil: slog.Default()
}

// NewServer returns the election API of a node.
func NewServer(c ServerConfig) *Server {
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Server{node: c.Node, cfg: c.Election, log: log, elections: map[string]*Election{}, leases: map[string]*lease{}}
}

// MaxTTL bounds a campaign's lease.
const MaxTTL = 10 * time.Minute

// Election returns the node's election called name, joining it on first
// use.
func (s *Server) Election(name string) (*Election, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.elections[name]; ok {
		return e, nil
	}
	e, err := New(s.node, name, s.cfg)
	if err != nil {
		return nil, err
	}
	s.elections[name] = e
	return e, nil
}

// Handler is the server's HTTP handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/elections/{name}", s.status)
	mux.HandleFunc("GET /v1/elections/{name}/watch", s.watch)
	mux.HandleFunc("POST /v1/elections/{name}/campaign", s.campaign)
	mux.HandleFunc("POST /v1/elections/{name}/keepalive", s.keepalive)
	mux.HandleFunc("DELETE /v1/elections/{name}", s.resign)
	return mux
}

// View is an election as the API reports it.
type View struct {
	Name string `json:"name"`
	Node int    `json:"node"` // the node that answers
	Leadership
}

func (s *Server) view(e *Election) View {
	return View{Name: e.Name(), Node: int(s.node.Self()), Leadership: e.Current()}
}

func (s *Server) election(w http.ResponseWriter, r *http.Request) (*Election, bool) {
	name := r.PathValue("name")
	if err := ValidName(name); err != nil {
		httpapi.Fail(w, http.StatusBadRequest, err.Error())
		return nil, false
	}
	e, err := s.Election(name)
	if err != nil {
		httpapi.Fail(w, http.StatusServiceUnavailable, err.Error())
		return nil, false
	}
	return e, true
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	s.mu.Lock()
	_, known := s.elections[name]
	s.mu.Unlock()
	if ValidName(name) == nil && !known && !s.node.Running("leader/"+name) {
		// Nobody stands in it that this node knows of (a candidate's
		// heartbeats would have started it here): a read creates nothing.
		httpapi.Reply(w, http.StatusOK, View{Name: name, Node: int(s.node.Self()), Leadership: Leadership{Leader: proc.None}})
		return
	}
	if e, ok := s.election(w, r); ok {
		httpapi.Reply(w, http.StatusOK, s.view(e))
	}
}

func (s *Server) watch(w http.ResponseWriter, r *http.Request) {
	e, ok := s.election(w, r)
	if !ok {
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		httpapi.Fail(w, http.StatusInternalServerError, "streaming unsupported")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	for l := range e.Watch(r.Context()) {
		b, _ := json.Marshal(View{Name: e.Name(), Node: int(s.node.Self()), Leadership: l})
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return
		}
		flusher.Flush()
	}
}

func (s *Server) campaign(w http.ResponseWriter, r *http.Request) {
	e, ok := s.election(w, r)
	if !ok {
		return
	}
	ttl := 10 * time.Second
	if v := r.URL.Query().Get("ttl"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Millisecond || d > MaxTTL {
			httpapi.Fail(w, http.StatusBadRequest, fmt.Sprintf("ttl %q: want a duration between 1ms and %v", v, MaxTTL))
			return
		}
		ttl = d
	}
	le := &lease{id: httpapi.NewLeaseID(), ttl: ttl}
	s.mu.Lock()
	if cur := s.leases[e.Name()]; cur != nil {
		s.mu.Unlock()
		httpapi.Fail(w, http.StatusConflict, fmt.Sprintf("election %q: this node already campaigns (lease %s)", e.Name(), cur.id))
		return
	}
	s.leases[e.Name()] = le
	s.mu.Unlock()
	if err := e.Campaign(r.Context()); err != nil {
		s.drop(e.Name(), le)
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return // the client went away; Campaign resigned
		}
		httpapi.Fail(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	s.mu.Lock()
	if s.leases[e.Name()] == le {
		le.timer = time.AfterFunc(ttl, func() { s.expire(e, le) })
	}
	s.mu.Unlock()
	httpapi.Reply(w, http.StatusOK, map[string]any{"name": e.Name(), "leader": e.self, "term": e.Current().Term, "lease": le.id, "ttl_ms": ttl.Milliseconds()})
}

// drop forgets lease le of election name, if it is still the current one.
func (s *Server) drop(name string, le *lease) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.leases[name] != le {
		return false
	}
	delete(s.leases, name)
	if le.timer != nil {
		le.timer.Stop()
	}
	return true
}

// expire resigns for a client that stopped renewing its lease.
func (s *Server) expire(e *Election, le *lease) {
	if s.drop(e.Name(), le) {
		s.log.Warn("campaign lease expired: resigning", "election", e.Name(), "lease", le.id)
		_ = e.Resign()
	}
}

func (s *Server) holder(w http.ResponseWriter, r *http.Request) (*Election, *lease, bool) {
	e, ok := s.election(w, r)
	if !ok {
		return nil, nil, false
	}
	id := r.URL.Query().Get("lease")
	s.mu.Lock()
	le := s.leases[e.Name()]
	s.mu.Unlock()
	if le == nil || le.id != id || le.timer == nil {
		httpapi.Fail(w, http.StatusNotFound, fmt.Sprintf("lease %q of election %q is not held here (expired, resigned, or another node's)", id, e.Name()))
		return nil, nil, false
	}
	return e, le, true
}

func (s *Server) keepalive(w http.ResponseWriter, r *http.Request) {
	e, le, ok := s.holder(w, r)
	if !ok {
		return
	}
	if !le.timer.Reset(le.ttl) {
		httpapi.Fail(w, http.StatusNotFound, fmt.Sprintf("lease %q of election %q expired", le.id, e.Name()))
		return
	}
	v := s.view(e)
	if !v.Self {
		// Still a candidate, but no longer the leader (a higher one came
		// back): the client must stop acting as the leader.
		httpapi.Fail(w, http.StatusConflict, fmt.Sprintf("election %q: this node no longer leads (leader %s)", e.Name(), v.Leader))
		return
	}
	httpapi.Reply(w, http.StatusOK, map[string]any{"name": e.Name(), "lease": le.id, "ttl_ms": le.ttl.Milliseconds()})
}

func (s *Server) resign(w http.ResponseWriter, r *http.Request) {
	e, le, ok := s.holder(w, r)
	if !ok {
		return
	}
	if !s.drop(e.Name(), le) {
		httpapi.Fail(w, http.StatusNotFound, "lease expired")
		return
	}
	if err := e.Resign(); err != nil {
		httpapi.Fail(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	httpapi.Reply(w, http.StatusOK, map[string]any{"name": e.Name(), "resigned": true})
}
