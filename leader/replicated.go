package leader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/internal/httpapi"
	"github.com/cohort-go/cohort/lock"
	"github.com/cohort-go/cohort/proc"
)

// Elections on the replicated lock table (lock.Replicated): a leadership
// is the key "election/NAME" held by a session, its term the index of the
// entry that granted it — so terms strictly increase for ever, across
// restarts — and the leader is the node the session was opened through.
// A leadership ends when its session does (its holder resigns, or stops
// renewing it for a TTL); the next candidate in line is granted in the
// same entry. A leader that cannot renew its session stops acting before
// the session could expire anywhere (see lock.Session.Until), so two
// leaders never act at once, given clocks that drift less than the bound.
//
// The HTTP API is the one of the bully elections (see Server), with
// sessions: POST /v1/elections/{name}/campaign?session=ID&seq=N campaigns
// under a session the client opened (POST /v1/sessions) and renews (with
// &wait=, a long poll that answers 202 when the wait ends first, as a
// lock's does: see lock.PollContext); with ?ttl= instead, the node opens
// one and its id is the lease.

// ElectionKey is an election's key in the table.
func ElectionKey(name string) string { return "election/" + name }

// maxViews bounds the elections a node keeps views of.
const maxViews = 1 << 16

// Replicated serves elections on the table.
type Replicated struct {
	r    *lock.Replicated
	self proc.ID
	log  *slog.Logger

	mu    sync.Mutex
	views map[string]*replicatedView
}

type replicatedView struct {
	cur     Leadership
	changed chan struct{} // closed and replaced at every change
}

// NewReplicated serves the elections of node self on table r.
func NewReplicated(r *lock.Replicated, self proc.ID, log *slog.Logger) *Replicated {
	if log == nil {
		log = slog.Default()
	}
	e := &Replicated{r: r, self: self, log: log, views: map[string]*replicatedView{}}
	r.OnHolder(e.changed)
	return e
}

// changed follows the table: called by r, in its order.
func (e *Replicated) changed(key string, g consensus.Granted, held bool) {
	name, ok := strings.CutPrefix(key, "election/")
	if !ok || name == "" {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	v := e.view(name, consensus.Granted{}, false)
	if v == nil {
		return
	}
	l := Leadership{Leader: proc.None, Since: time.Now(), Changes: v.cur.Changes + 1}
	if held {
		l.Leader, l.Term, l.Self = g.Owner, g.Token, g.Owner == e.self
	}
	v.cur = l
	close(v.changed)
	v.changed = make(chan struct{})
}

// view is election name's view, made on first use from the grant g (if
// held) (nil past maxViews); the caller holds mu. (It must not ask the
// table: the table calls changed with its own lock held.)
func (e *Replicated) view(name string, g consensus.Granted, held bool) *replicatedView {
	if v, ok := e.views[name]; ok {
		return v
	}
	if len(e.views) >= maxViews {
		return nil
	}
	v := &replicatedView{changed: make(chan struct{}), cur: Leadership{Leader: proc.None, Since: time.Now()}}
	if held {
		v.cur.Leader, v.cur.Term, v.cur.Self = g.Owner, g.Token, g.Owner == e.self
	}
	e.views[name] = v
	return v
}

// Current is election name as this node sees it.
func (e *Replicated) Current(name string) (Leadership, <-chan struct{}, error) {
	g, held := e.r.Grant(ElectionKey(name))
	e.mu.Lock()
	defer e.mu.Unlock()
	v := e.view(name, g, held)
	if v == nil {
		return Leadership{}, nil, fmt.Errorf("this node follows %d elections, the most it may", maxViews)
	}
	return v.cur, v.changed, nil
}

// Campaign stands session s in election name and waits until it leads;
// it returns the term.
func (e *Replicated) Campaign(ctx context.Context, s *lock.Session, name string) (uint64, error) {
	if err := ValidName(name); err != nil {
		return 0, err
	}
	return s.LockKey(ctx, ElectionKey(name))
}

// Resign ends session s's leadership of election name, or its candidacy.
func (e *Replicated) Resign(ctx context.Context, s *lock.Session, name string) error {
	return s.UnlockKey(ctx, ElectionKey(name))
}

// Lead campaigns from this node in election name for as long as ctx
// lasts: it opens a session of ttl, renews it every ttl/4, waits to lead,
// and when the session is lost opens another and stands again. This is
// what campaign: in node.yaml does.
func (e *Replicated) Lead(ctx context.Context, name string, ttl time.Duration) {
	for ctx.Err() == nil {
		s, err := e.r.Open(ctx, ttl)
		if err != nil {
			if ctx.Err() == nil {
				e.log.Warn("campaign: opening a session", "election", name, "err", err)
				sleep(ctx, ttl/4)
			}
			continue
		}
		sctx, cancel := context.WithCancel(ctx)
		go func() {
			defer cancel()
			for sctx.Err() == nil {
				if _, err := s.KeepAlive(sctx); errors.Is(err, lock.ErrSessionGone) {
					e.log.Warn("campaign: the session ended; standing again", "election", name)
					return
				}
				sleep(sctx, ttl/4)
			}
		}()
		if _, err := e.Campaign(sctx, s, name); err == nil {
			<-sctx.Done()
		}
		cancel()
		cctx, ccancel := context.WithTimeout(context.Background(), ttl)
		_ = s.Close(cctx)
		ccancel()
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// Handler serves the election API on the table.
func (e *Replicated) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/elections/{name}", e.status)
	mux.HandleFunc("GET /v1/elections/{name}/watch", e.watch)
	mux.HandleFunc("POST /v1/elections/{name}/campaign", e.campaign)
	mux.HandleFunc("POST /v1/elections/{name}/keepalive", e.keepalive)
	mux.HandleFunc("DELETE /v1/elections/{name}", e.resign)
	return mux
}

func (e *Replicated) name(w http.ResponseWriter, r *http.Request) (string, bool) {
	name := r.PathValue("name")
	if err := ValidName(name); err != nil {
		httpapi.Fail(w, http.StatusBadRequest, err.Error())
		return "", false
	}
	return name, true
}

func (e *Replicated) status(w http.ResponseWriter, r *http.Request) {
	name, ok := e.name(w, r)
	if !ok {
		return
	}
	l, _, err := e.Current(name)
	if err != nil {
		httpapi.Fail(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	httpapi.Reply(w, http.StatusOK, View{Name: name, Node: int(e.self), Leadership: l})
}

func (e *Replicated) watch(w http.ResponseWriter, r *http.Request) {
	name, ok := e.name(w, r)
	if !ok {
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		httpapi.Fail(w, http.StatusInternalServerError, "streaming unsupported")
		return
	}
	l, changed, err := e.Current(name)
	if err != nil {
		httpapi.Fail(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	for {
		b, _ := json.Marshal(View{Name: name, Node: int(e.self), Leadership: l})
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return
		}
		flusher.Flush()
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		}
		l, changed, _ = e.Current(name)
	}
}

// session is the session a request names (?session= or ?lease=).
func (e *Replicated) session(w http.ResponseWriter, r *http.Request, v string) (*lock.Session, bool) {
	id, seq, err := lock.SessionParams(v, r.URL.Query().Get("seq"))
	if err != nil {
		httpapi.Fail(w, http.StatusBadRequest, err.Error())
		return nil, false
	}
	if seq > 0 { // the client numbers its operations (see lock.AttachNumbered)
		return e.r.AttachNumbered(id, seq), true
	}
	return e.r.Attach(id, 0, 0), true
}

func (e *Replicated) campaign(w http.ResponseWriter, r *http.Request) {
	name, ok := e.name(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	var s *lock.Session
	var ttl time.Duration
	if v := q.Get("session"); v != "" {
		if s, ok = e.session(w, r, v); !ok {
			return
		}
	} else {
		ttl = 10 * time.Second
		if v := q.Get("ttl"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d < 100*time.Millisecond || d > MaxTTL {
				httpapi.Fail(w, http.StatusBadRequest, fmt.Sprintf("ttl %q: want a duration between 100ms and %v", v, MaxTTL))
				return
			}
			ttl = d
		}
		var err error
		if s, err = e.r.Open(r.Context(), ttl); err != nil {
			httpapi.Fail(w, http.StatusServiceUnavailable, err.Error())
			return
		}
	}
	ctx, cancel, ok := lock.PollContext(w, r)
	if !ok {
		return
	}
	defer cancel()
	term, err := e.Campaign(ctx, s, name)
	if err != nil {
		if q.Get("session") == "" {
			_ = s.Close(context.Background())
		}
		switch {
		case lock.Pending(r, err):
			httpapi.Reply(w, http.StatusAccepted, map[string]any{"name": name, "session": s.ID, "pending": true})
		case errors.Is(err, context.Canceled):
		case errors.Is(err, lock.ErrSessionGone):
			httpapi.Fail(w, http.StatusNotFound, err.Error())
		default:
			httpapi.Fail(w, http.StatusServiceUnavailable, err.Error())
		}
		return
	}
	g, _ := e.r.Grant(ElectionKey(name))
	httpapi.Reply(w, http.StatusOK, struct {
		Name   string `json:"name"`
		Leader int    `json:"leader"`
		Term   uint64 `json:"term"`
		Lease  string `json:"lease"`
		TTLms  int64  `json:"ttl_ms,omitempty"`
	}{name, int(g.Owner), term, strconv.FormatUint(s.ID, 10), ttl.Milliseconds()})
}

func (e *Replicated) keepalive(w http.ResponseWriter, r *http.Request) {
	name, ok := e.name(w, r)
	if !ok {
		return
	}
	s, ok := e.session(w, r, r.URL.Query().Get("lease"))
	if !ok {
		return
	}
	if _, err := s.KeepAlive(r.Context()); err != nil {
		code := http.StatusServiceUnavailable
		if errors.Is(err, lock.ErrSessionGone) {
			code = http.StatusNotFound
		}
		httpapi.Fail(w, code, err.Error())
		return
	}
	if g, ok := e.r.Grant(ElectionKey(name)); !ok || g.Session != s.ID {
		httpapi.Fail(w, http.StatusConflict, fmt.Sprintf("election %q: session %d does not lead", name, s.ID))
		return
	}
	httpapi.Reply(w, http.StatusOK, map[string]any{"name": name, "lease": s.ID})
}

func (e *Replicated) resign(w http.ResponseWriter, r *http.Request) {
	name, ok := e.name(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	v := q.Get("session")
	if v == "" {
		v = q.Get("lease")
	}
	s, ok := e.session(w, r, v)
	if !ok {
		return
	}
	err := e.Resign(r.Context(), s, name)
	if err == nil && q.Get("session") == "" {
		err = s.Close(r.Context()) // the lease's session was the node's
	}
	switch {
	case errors.Is(err, lock.ErrNotHeld), errors.Is(err, lock.ErrSessionGone):
		httpapi.Fail(w, http.StatusNotFound, err.Error())
	case err != nil:
		httpapi.Fail(w, http.StatusServiceUnavailable, err.Error())
	default:
		httpapi.Reply(w, http.StatusOK, map[string]any{"name": name, "resigned": true})
	}
}
