package lock

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/internal/httpapi"
	"github.com/cohort-go/cohort/proc"
)

// The HTTP API of the replicated lock service (JSON bodies):
//
//	POST   /v1/sessions?ttl=10s                    open a session: 200 {"session","ttl_ms","valid_ms"}
//	POST   /v1/sessions/{id}/keepalive             renew it: 200 {"session","valid_ms"}; 404 gone; 503 no leader
//	DELETE /v1/sessions/{id}                       close it, releasing its locks
//	POST   /v1/locks/{name}?session=ID&seq=N       wait for the lock (long poll): 200 {"name","token","session"}
//	       ...&wait=5s                             wait at most 5s: 202 {"name","session","pending":true} if not granted by then
//	DELETE /v1/locks/{name}?session=ID&seq=N       release it, or withdraw the request
//
// A client counts on its session until the send time of its last renewal
// answered 200 (or of the open) plus valid_ms, and stops using its locks
// before then. seq numbers the session's lock operations (each above the
// last; a retry repeats its number), so a request that reaches the log
// twice is applied once; without it the node numbers them from its clock.
//
// A long poll with wait= ends after that long with 202 if the lock is
// not granted yet; the request stays in the queue, and the client asks
// again with the same seq — through this node, or through another if this
// one stops answering (a paused or cut-off node holds no client for
// longer than one wait). A numbered request asked again is answered again:
// granted with the same token if its session holds the lock.
//
// Every answer carries Cohort-Node (the node answering) and, if it knows
// one, Cohort-Leader (the log's leader, as it last read it): a client
// given several nodes' endpoints sends its next requests to the leader's
// (lock.Client does), where a grant is answered as it commits.
//
// The lease API of the textbook algorithms (POST /v1/locks/{name}?ttl=,
// keepalive?lease=, DELETE ?lease=) works too: the node opens a session
// for the lease, whose id is the lease's.

type sessionReply struct {
	Session uint64 `json:"session"`
	TTLms   int64  `json:"ttl_ms,omitempty"`
	Validms int64  `json:"valid_ms"`
}

type grantReply struct {
	Name    string `json:"name"`
	Token   uint64 `json:"token"`
	Session uint64 `json:"session"`
}

// replicatedAPI serves the replicated backend.
type replicatedAPI struct {
	r      *Replicated
	maxTTL time.Duration // see ServerConfig.MaxTTL

	mu       sync.Mutex
	sessions map[uint64]*Session // opened or used through this node
}

// maxAttached bounds the sessions a node remembers for its HTTP clients.
const maxAttached = 1 << 16

func (a *replicatedAPI) routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/sessions", a.hinted(a.open))
	mux.HandleFunc("POST /v1/sessions/{id}/keepalive", a.hinted(a.keepalive))
	mux.HandleFunc("DELETE /v1/sessions/{id}", a.hinted(a.close))
	mux.HandleFunc("POST /v1/locks/{name}", a.hinted(a.acquire))
	mux.HandleFunc("POST /v1/locks/{name}/keepalive", a.hinted(a.leaseKeepalive))
	mux.HandleFunc("DELETE /v1/locks/{name}", a.hinted(a.release))
	mux.HandleFunc("GET /v1/locks/{name}", a.hinted(a.status))
}

// Every answer names the node that gives it (NodeHeader) and the leader
// of the log as that node knows it (LeaderHeader, absent if none), so
// that a client given several nodes' endpoints can send its requests to
// the leader (lock.Client does): a grant is then answered where it
// commits, without the hop that brings the commit's news to a follower.
const (
	NodeHeader   = "Cohort-Node"
	LeaderHeader = "Cohort-Leader"
)

// hinted sets the headers that name this node and the leader.
func (a *replicatedAPI) hinted(h http.HandlerFunc) http.HandlerFunc {
	self := strconv.Itoa(int(a.r.Self()))
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(NodeHeader, self)
		if l := a.r.LeaderHint(); l != proc.None {
			w.Header().Set(LeaderHeader, strconv.Itoa(int(l)))
		}
		h(w, r)
	}
}

func (a *replicatedAPI) ttlParam(w http.ResponseWriter, r *http.Request) (time.Duration, bool) {
	ttl := min(10*time.Second, a.maxTTL)
	if v := r.URL.Query().Get("ttl"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 100*time.Millisecond || d > a.maxTTL {
			httpapi.Fail(w, http.StatusBadRequest, fmt.Sprintf("ttl %q: want a duration between 100ms and %v", v, a.maxTTL))
			return 0, false
		}
		ttl = d
	}
	return ttl, true
}

// fail answers an error of the replicated service.
func fail(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, ErrSessionGone):
		httpapi.Fail(w, http.StatusNotFound, err.Error())
	case errors.Is(err, ErrNotHeld):
		httpapi.Fail(w, http.StatusNotFound, err.Error())
	case errors.Is(err, context.Canceled):
		// The client went away.
	default:
		httpapi.Fail(w, http.StatusServiceUnavailable, err.Error())
	}
}

func (a *replicatedAPI) remember(s *Session) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.sessions) >= maxAttached {
		for id := range a.sessions { // forget one; it can be attached again
			delete(a.sessions, id)
			break
		}
	}
	a.sessions[s.ID] = s
}

// session finds the session a request names (?session=, ?lease=, or the
// path's {id}), attaching it here if it was opened elsewhere.
func (a *replicatedAPI) session(w http.ResponseWriter, r *http.Request, v string) (*Session, bool) {
	id, seq, err := SessionParams(v, r.URL.Query().Get("seq"))
	if err != nil {
		httpapi.Fail(w, http.StatusBadRequest, err.Error())
		return nil, false
	}
	if seq > 0 {
		// The client numbers its operations: this request's is seq, and
		// if its wait fails the client retries or withdraws it.
		return a.r.AttachNumbered(id, seq), true
	}
	a.mu.Lock()
	s := a.sessions[id]
	a.mu.Unlock()
	if s == nil {
		s = a.r.Attach(id, 0, 0)
		a.remember(s)
	}
	return s, true
}

// SessionParams parses a request's session id and operation number (""
// for none: 0), naming a bad value in the error.
func SessionParams(id, seq string) (uint64, uint64, error) {
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil || n == 0 {
		return 0, 0, fmt.Errorf("session %q: want a session id (a positive integer)", id)
	}
	var q uint64
	if seq != "" {
		if q, err = strconv.ParseUint(seq, 10, 64); err != nil || q == 0 {
			return 0, 0, fmt.Errorf("seq %q: want a positive integer", seq)
		}
	}
	return n, q, nil
}

func (a *replicatedAPI) open(w http.ResponseWriter, r *http.Request) {
	ttl, ok := a.ttlParam(w, r)
	if !ok {
		return
	}
	s, err := a.r.Open(r.Context(), ttl)
	if err != nil {
		fail(w, err)
		return
	}
	a.remember(s)
	httpapi.Reply(w, http.StatusOK, sessionReply{Session: s.ID, TTLms: ttl.Milliseconds(), Validms: consensus.ValidFor(ttl, a.r.cfg.MaxDrift).Milliseconds()})
}

func (a *replicatedAPI) keepalive(w http.ResponseWriter, r *http.Request) {
	s, ok := a.session(w, r, r.PathValue("id"))
	if !ok {
		return
	}
	a.renew(w, r, s)
}

func (a *replicatedAPI) renew(w http.ResponseWriter, r *http.Request, s *Session) {
	sent := time.Now()
	until, err := s.KeepAlive(r.Context())
	if err != nil {
		fail(w, err)
		return
	}
	httpapi.Reply(w, http.StatusOK, sessionReply{Session: s.ID, Validms: until.Sub(sent).Milliseconds()})
}

func (a *replicatedAPI) close(w http.ResponseWriter, r *http.Request) {
	s, ok := a.session(w, r, r.PathValue("id"))
	if !ok {
		return
	}
	if err := s.Close(r.Context()); err != nil {
		fail(w, err)
		return
	}
	a.mu.Lock()
	delete(a.sessions, s.ID)
	a.mu.Unlock()
	httpapi.Reply(w, http.StatusOK, struct {
		Session uint64 `json:"session"`
		Closed  bool   `json:"closed"`
	}{s.ID, true})
}

func (a *replicatedAPI) acquire(w http.ResponseWriter, r *http.Request) {
	name, ok := lockName(w, r)
	if !ok {
		return
	}
	var s *Session
	q := r.URL.Query()
	if v := q.Get("session"); v != "" {
		if s, ok = a.session(w, r, v); !ok {
			return
		}
	} else { // the lease API: a session for this lease
		ttl, ok := a.ttlParam(w, r)
		if !ok {
			return
		}
		var err error
		if s, err = a.r.Open(r.Context(), ttl); err != nil {
			fail(w, err)
			return
		}
		a.remember(s)
		token, err := s.Lock(r.Context(), name)
		if err != nil {
			_ = s.Close(context.Background())
			fail(w, err)
			return
		}
		httpapi.Reply(w, http.StatusOK, leaseReply{Name: name, Token: token, Lease: strconv.FormatUint(s.ID, 10), TTLms: ttl.Milliseconds()})
		return
	}
	ctx, cancel, ok := PollContext(w, r)
	if !ok {
		return
	}
	defer cancel()
	token, err := s.Lock(ctx, name)
	switch {
	case Pending(r, err):
		httpapi.Reply(w, http.StatusAccepted, pendingReply{Name: name, Session: s.ID, Pending: true})
	case err != nil:
		fail(w, err)
	default:
		httpapi.Reply(w, http.StatusOK, grantReply{Name: name, Token: token, Session: s.ID})
	}
}

// pendingReply answers a long poll whose wait ended first (202).
type pendingReply struct {
	Name    string `json:"name"`
	Session uint64 `json:"session"`
	Pending bool   `json:"pending"`
}

// MaxWait bounds a long poll's wait=.
const MaxWait = 10 * time.Minute

// PollContext is the context of a long poll (a lock's or an election's
// acquire): the request's, ended after ?wait= if the request has one. A
// wait needs a numbered request (?seq=), which the client resumes with the
// same number; a bad value is answered 400, naming it (ok false).
func PollContext(w http.ResponseWriter, r *http.Request) (ctx context.Context, cancel context.CancelFunc, ok bool) {
	q := r.URL.Query()
	v := q.Get("wait")
	if v == "" {
		ctx, cancel = context.WithCancel(r.Context())
		return ctx, cancel, true
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil || d < time.Millisecond || d > MaxWait:
		httpapi.Fail(w, http.StatusBadRequest, fmt.Sprintf("wait %q: want a duration between 1ms and %v", httpapi.Clip(v), MaxWait))
		return nil, nil, false
	case q.Get("seq") == "":
		httpapi.Fail(w, http.StatusBadRequest, fmt.Sprintf("wait %q needs seq (a numbered request, resumed with the same number)", v))
		return nil, nil, false
	}
	ctx, cancel = context.WithTimeout(r.Context(), d)
	return ctx, cancel, true
}

// Pending reports whether err ended a long poll because its wait did
// (answer 202: still waiting), not because of the request or its client.
func Pending(r *http.Request, err error) bool {
	return errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil
}

func (a *replicatedAPI) leaseKeepalive(w http.ResponseWriter, r *http.Request) {
	if _, ok := lockName(w, r); !ok {
		return
	}
	s, ok := a.session(w, r, r.URL.Query().Get("lease"))
	if !ok {
		return
	}
	a.renew(w, r, s)
}

func (a *replicatedAPI) release(w http.ResponseWriter, r *http.Request) {
	name, ok := lockName(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	if v := q.Get("session"); v != "" {
		s, ok := a.session(w, r, v)
		if !ok {
			return
		}
		if err := s.Unlock(r.Context(), name); err != nil {
			fail(w, err)
			return
		}
		httpapi.Reply(w, http.StatusOK, released{Name: name, Released: true})
		return
	}
	s, ok := a.session(w, r, q.Get("lease")) // the lease API: release, and end the lease
	if !ok {
		return
	}
	if err := s.Close(r.Context()); err != nil {
		fail(w, err)
		return
	}
	a.mu.Lock()
	delete(a.sessions, s.ID)
	a.mu.Unlock()
	httpapi.Reply(w, http.StatusOK, released{Name: name, Released: true})
}

func (a *replicatedAPI) status(w http.ResponseWriter, r *http.Request) {
	name, ok := lockName(w, r)
	if !ok {
		return
	}
	session, token := a.r.Holder(name)
	httpapi.Reply(w, http.StatusOK, struct {
		Name    string `json:"name"`
		Held    bool   `json:"held"`
		Token   uint64 `json:"token"`
		Session uint64 `json:"session,omitempty"`
	}{name, session != 0, token, session})
}
