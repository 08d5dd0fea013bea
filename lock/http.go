package lock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/cohort-go/cohort/internal/httpapi"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/proc"
)

// The HTTP API of a node's locks (JSON bodies):
//
//	POST   /v1/locks/{name}?ttl=10s         wait for the lock (long poll); 200 {"name","token","lease","ttl_ms"}
//	POST   /v1/locks/{name}/keepalive?lease=ID   renew the lease; 404 if it expired
//	DELETE /v1/locks/{name}?lease=ID        release; 404 if the lease is unknown
//	GET    /v1/locks/{name}                 {"name","held","token"} as this node sees it
//
// A lock taken over HTTP is a lease: unless the client renews it within
// its ttl, the node releases it, so a client that dies cannot keep it for
// ever. The node serving the API checks the bearer token, for every
// service at once (httpapi.RequireToken).

// Server serves the locks of one node.
type Server struct {
	node *live.Node
	algo proc.Algorithm
	log  *slog.Logger

	rep *replicatedAPI // nil: the textbook algorithm's locks

	mu     sync.Mutex
	locks  map[string]*Lock
	leases map[string]*lease // by lock name: the lease of the HTTP holder
	users  map[string]int    // by lock name: requests being served
	idle   time.Duration     // see ServerConfig.Idle
	maxTTL time.Duration     // see ServerConfig.MaxTTL
}

type lease struct {
	id    string
	ttl   time.Duration
	timer *time.Timer
}

// ServerConfig configures a Server.
type ServerConfig struct {
	Node      *live.Node
	Algorithm proc.Algorithm // the mutex algorithm behind every lock
	// Replicated, if set, is the backend instead of Algorithm: the lock
	// service on a replicated log, with sessions (see sessions.go).
	Replicated *Replicated
	Logger     *slog.Logger
	// Idle is how long a lock that nobody on this node holds, waits for or
	// is being served a request about may stay idle before the node stops
	// its service (live.Node.Reap), if its algorithm rejoins after a
	// restart (Ricart–Agrawala, Lamport's, the central server); the next
	// request or message for it starts it again from its stable storage.
	// 0 means DefaultIdle; a negative Idle keeps every lock.
	Idle time.Duration
	// MaxTTL bounds the lease (or session) a client may ask for; a
	// longer one is refused with 400, naming the bound. 0 means MaxTTL.
	// A central-failover coordinator newly in charge waits this long for
	// a silent process before it grants (mutex.FailoverConfig.MaxHold),
	// so a lower bound shortens that failover.
	MaxTTL time.Duration
}

// DefaultIdle is ServerConfig.Idle's default.
const DefaultIdle = time.Minute

// NewServer returns the lock API of a node. (The lock, leader and group
// services have this one shape: NewServer(ServerConfig{Node, the algorithm
// or its settings, Logger}), Handler, and a Resolver for live.Config.)
func NewServer(c ServerConfig) *Server {
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Server{node: c.Node, algo: c.Algorithm, log: log,
		locks: map[string]*Lock{}, leases: map[string]*lease{}, users: map[string]int{}, idle: c.Idle, maxTTL: c.MaxTTL}
	if s.maxTTL <= 0 || s.maxTTL > MaxTTL {
		s.maxTTL = MaxTTL
	}
	if c.Replicated != nil {
		s.rep = &replicatedAPI{r: c.Replicated, sessions: map[uint64]*Session{}, maxTTL: s.maxTTL}
		return s
	}
	if s.idle == 0 {
		s.idle = DefaultIdle
	}
	if s.idle > 0 {
		go s.reapEvery(max(s.idle/4, time.Millisecond))
	}
	return s
}

// reapEvery reaps idle locks every period until the node closes.
func (s *Server) reapEvery(period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.reap()
		case <-s.node.Done():
			return
		}
	}
}

// reap stops the service of every lock of the node (those started by a
// peer's message among them) that has been idle for s.idle and that
// nobody here holds, waits for or asks about. A lock held here is never
// reaped, however long its holder stays quiet.
func (s *Server) reap() {
	for _, svc := range s.node.Names("lock/") {
		name := strings.TrimPrefix(svc, "lock/")
		s.mu.Lock()
		if l := s.locks[name]; s.users[name] == 0 && s.leases[name] == nil && (l == nil || !l.inUse()) &&
			s.node.Reap(svc, s.idle) {
			delete(s.locks, name)
		}
		s.mu.Unlock()
	}
}

// MaxTTL bounds a lease; a node may set a lower bound (ServerConfig.MaxTTL).
const MaxTTL = 10 * time.Minute

// Handler is the server's HTTP handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	if s.rep != nil {
		s.rep.routes(mux)
		return mux
	}
	mux.HandleFunc("POST /v1/locks/{name}", s.acquire)
	mux.HandleFunc("POST /v1/locks/{name}/keepalive", s.keepalive)
	mux.HandleFunc("DELETE /v1/locks/{name}", s.release)
	mux.HandleFunc("GET /v1/locks/{name}", s.status)
	return mux
}

// lock returns the lock called name, starting it if need be, and counts
// a user of it, whom done uncounts: a lock is not reaped while in use.
func (s *Server) lock(name string) (l *Lock, done func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.locks[name]
	if !ok {
		if l, err = New(s.node, name, s.algo); err != nil {
			return nil, nil, err
		}
		s.locks[name] = l
	}
	s.users[name]++
	return l, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.users[name]--; s.users[name] == 0 {
			delete(s.users, name)
		}
	}, nil
}

func (s *Server) acquire(w http.ResponseWriter, r *http.Request) {
	name, ok := lockName(w, r)
	if !ok {
		return
	}
	ttl := min(10*time.Second, s.maxTTL)
	if v := r.URL.Query().Get("ttl"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Millisecond || d > s.maxTTL {
			httpapi.Fail(w, http.StatusBadRequest, fmt.Sprintf("ttl %q: want a duration between 1ms and %v", v, s.maxTTL))
			return
		}
		ttl = d
	}
	l, done, err := s.lock(name)
	if err != nil { // the node cannot start the lock's service (too many)
		httpapi.Fail(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	defer done()
	token, err := l.LockFor(r.Context(), ttl)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return // the client went away; the grant, if it comes, is given back
		}
		httpapi.Fail(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	le := &lease{id: httpapi.NewLeaseID(), ttl: ttl}
	s.mu.Lock()
	s.leases[name] = le
	le.timer = time.AfterFunc(ttl, func() { s.expire(name, le) })
	s.mu.Unlock()
	httpapi.Reply(w, http.StatusOK, leaseReply{Name: name, Token: token, Lease: le.id, TTLms: ttl.Milliseconds()})
}

// expire releases a lock whose holder stopped renewing its lease.
func (s *Server) expire(name string, le *lease) {
	s.mu.Lock()
	cur := s.leases[name]
	if cur != le {
		s.mu.Unlock()
		return
	}
	delete(s.leases, name)
	l := s.locks[name]
	s.mu.Unlock()
	s.log.Warn("lease expired: releasing the lock", "lock", name, "lease", le.id)
	_ = l.Unlock()
}

func (s *Server) holder(w http.ResponseWriter, r *http.Request) (string, *lease, bool) {
	name, ok := lockName(w, r)
	if !ok {
		return "", nil, false
	}
	id := r.URL.Query().Get("lease")
	s.mu.Lock()
	le := s.leases[name]
	s.mu.Unlock()
	if le == nil || le.id != id {
		httpapi.Fail(w, http.StatusNotFound, fmt.Sprintf("lease %q of lock %q is not held here (expired, released, or another node's)", id, name))
		return "", nil, false
	}
	return name, le, true
}

func (s *Server) keepalive(w http.ResponseWriter, r *http.Request) {
	name, le, ok := s.holder(w, r)
	if !ok {
		return
	}
	if !le.timer.Reset(le.ttl) {
		// It fired already: the lock is being released.
		httpapi.Fail(w, http.StatusNotFound, fmt.Sprintf("lease %q of lock %q expired", le.id, name))
		return
	}
	httpapi.Reply(w, http.StatusOK, renewed{Name: name, Lease: le.id, TTLms: le.ttl.Milliseconds()})
}

func (s *Server) release(w http.ResponseWriter, r *http.Request) {
	name, le, ok := s.holder(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	if s.leases[name] != le {
		s.mu.Unlock()
		httpapi.Fail(w, http.StatusNotFound, "lease expired")
		return
	}
	le.timer.Stop()
	delete(s.leases, name)
	l := s.locks[name]
	s.mu.Unlock()
	if err := l.Unlock(); err != nil {
		httpapi.Fail(w, http.StatusConflict, err.Error())
		return
	}
	httpapi.Reply(w, http.StatusOK, released{Name: name, Released: true})
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	name, ok := lockName(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	l := s.locks[name]
	s.mu.Unlock()
	held, token := false, uint64(0)
	if l != nil {
		held, token = l.Held()
	}
	httpapi.Reply(w, http.StatusOK, lockStatus{Name: name, Held: held, Token: token})
}

func lockName(w http.ResponseWriter, r *http.Request) (string, bool) {
	name := r.PathValue("name")
	if err := ValidName(name); err != nil {
		httpapi.Fail(w, http.StatusBadRequest, err.Error())
		return "", false
	}
	return name, true
}

// The bodies of the replies (structs, which encode faster than maps).
type (
	leaseReply struct {
		Name  string `json:"name"`
		Token uint64 `json:"token"`
		Lease string `json:"lease"`
		TTLms int64  `json:"ttl_ms"`
	}
	renewed struct {
		Name  string `json:"name"`
		Lease string `json:"lease"`
		TTLms int64  `json:"ttl_ms"`
	}
	released struct {
		Name     string `json:"name"`
		Released bool   `json:"released"`
	}
	lockStatus struct {
		Name  string `json:"name"`
		Held  bool   `json:"held"`
		Token uint64 `json:"token"`
	}
)
