package lock

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/cohort-go/cohort/internal/httpapi"
)

// Client takes locks through the HTTP API of a cluster's nodes.
type Client struct {
	// Endpoints are nodes' API addresses, "host:port" or URLs; Acquire uses
	// the first that answers.
	Endpoints []string
	// Token is the bearer token the nodes require, if any.
	Token string
	// HTTP is the client to use; nil means one without a timeout (Acquire
	// waits as long as its context allows).
	HTTP *http.Client
}

// Held is a lock this client holds: its fencing token and its lease.
type Held struct {
	Name  string
	Token uint64
	Lease string
	TTL   time.Duration
	base  string
	c     *Client
}

// ErrLeaseLost is returned when a lease expired or is unknown to the node.
var ErrLeaseLost = errors.New("lease lost")

// Acquire waits until the lock called name is held for this client, with a
// lease of ttl that KeepAlive must renew.
func (c *Client) Acquire(ctx context.Context, name string, ttl time.Duration) (*Held, error) {
	var h *Held
	err := c.api().First(ctx, func(base string) (int, string, error) {
		var out struct {
			Name  string `json:"name"`
			Token uint64 `json:"token"`
			Lease string `json:"lease"`
			TTLms int64  `json:"ttl_ms"`
		}
		u := fmt.Sprintf("%s/v1/locks/%s?ttl=%s", base, url.PathEscape(name), ttl)
		code, msg, err := c.api().Call(ctx, http.MethodPost, u, nil, &out)
		if err == nil && code == http.StatusOK {
			h = &Held{Name: out.Name, Token: out.Token, Lease: out.Lease, TTL: time.Duration(out.TTLms) * time.Millisecond, base: base, c: c}
		}
		return code, msg, err
	})
	return h, err
}

func (c *Client) api() *httpapi.Client {
	return &httpapi.Client{Endpoints: c.Endpoints, Token: c.Token, HTTP: c.HTTP}
}

// KeepAlive renews the lease; ErrLeaseLost means the lock was released.
func (h *Held) KeepAlive(ctx context.Context) error {
	return h.lease(ctx, http.MethodPost, "/keepalive", "keepalive")
}

// Release gives the lock back.
func (h *Held) Release(ctx context.Context) error {
	return h.lease(ctx, http.MethodDelete, "", "release")
}

// lease sends a request about the held lease to the node that granted it.
func (h *Held) lease(ctx context.Context, method, suffix, what string) error {
	u := fmt.Sprintf("%s/v1/locks/%s%s?lease=%s", h.base, url.PathEscape(h.Name), suffix, url.QueryEscape(h.Lease))
	code, msg, err := h.c.api().Call(ctx, method, u, nil, nil)
	switch {
	case err != nil:
		return err
	case code == http.StatusNotFound:
		return ErrLeaseLost
	case code != http.StatusOK:
		return fmt.Errorf("%s: HTTP %d: %s", what, code, msg)
	}
	return nil
}

// ClientSession is a session of the replicated lock service, held by
// this client through the HTTP API: a lease it renews, under which it
// takes locks. Until says how long the client may count on it.
type ClientSession struct {
	c   *Client
	ID  uint64
	TTL time.Duration

	mu    sync.Mutex
	seq   uint64
	until time.Time
	good  int // the endpoint that last renewed the session
}

// ErrNoSessions: the nodes run a textbook algorithm, whose locks are
// leases of their own (Acquire), not sessions.
var ErrNoSessions = errors.New("the cluster's locks have no sessions (a textbook algorithm: use Acquire)")

// OpenSession opens a session of ttl; it counts from the moment of the
// call.
func (c *Client) OpenSession(ctx context.Context, ttl time.Duration) (*ClientSession, error) {
	sent := time.Now()
	var s *ClientSession
	err := c.api().First(ctx, func(base string) (int, string, error) {
		var out struct {
			Session uint64 `json:"session"`
			Validms int64  `json:"valid_ms"`
		}
		code, msg, err := c.api().Call(ctx, http.MethodPost, fmt.Sprintf("%s/v1/sessions?ttl=%s", base, ttl), nil, &out)
		if err == nil && code == http.StatusOK {
			s = &ClientSession{c: c, ID: out.Session, TTL: ttl, seq: uint64(time.Now().UnixNano()),
				until: sent.Add(time.Duration(out.Validms) * time.Millisecond)}
		}
		if code == http.StatusNotFound || code == http.StatusMethodNotAllowed {
			return code, msg, ErrNoSessions
		}
		return code, msg, err
	})
	if errors.Is(err, ErrNoSessions) {
		return nil, ErrNoSessions
	}
	return s, err
}

// Until is the end of the session's reckoning: the client must stop using
// its locks before then unless a renewal moves it.
func (s *ClientSession) Until() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.until
}

// Next numbers the session's next operation (for requests made with Do).
func (s *ClientSession) Next() uint64 { return s.next() }

// Do sends a request about the session (path: "/v1/...") to the first
// node that answers and decodes its reply into out; 404 is ErrLeaseLost.
// Services built on the lock table (elections) use it.
func (s *ClientSession) Do(ctx context.Context, method, path string, out any) error {
	return s.call(ctx, method, path, out)
}

func (s *ClientSession) next() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return s.seq
}

// call sends a request about the session to the first node that answers;
// 404 is ErrLeaseLost.
func (s *ClientSession) call(ctx context.Context, method, path string, out any) error {
	err := s.c.api().First(ctx, func(base string) (int, string, error) {
		code, msg, err := s.c.api().Call(ctx, method, base+path, nil, out)
		if code == http.StatusNotFound {
			return code, msg, ErrLeaseLost
		}
		return code, msg, err
	})
	if errors.Is(err, ErrLeaseLost) {
		return ErrLeaseLost
	}
	return err
}

// KeepAlive renews the session and returns its new reckoning.
// ErrLeaseLost: the session is over. A node that does not answer within
// an eighth of the TTL (paused, or cut off) is passed over for the next.
func (s *ClientSession) KeepAlive(ctx context.Context) (time.Time, error) {
	sent := time.Now()
	var out struct {
		Validms int64 `json:"valid_ms"`
	}
	path := fmt.Sprintf("/v1/sessions/%d/keepalive", s.ID)
	s.mu.Lock()
	good := s.good
	s.mu.Unlock()
	var err error
	for i := range s.c.Endpoints {
		ep := s.c.Endpoints[(good+i)%len(s.c.Endpoints)]
		var base string
		if base, err = httpapi.BaseURL(ep); err != nil {
			return s.Until(), err
		}
		actx, cancel := context.WithTimeout(ctx, s.TTL/8)
		var code int
		var msg string
		code, msg, err = s.c.api().Call(actx, http.MethodPost, base+path, nil, &out)
		cancel()
		switch {
		case err == nil && code == http.StatusOK:
			s.mu.Lock()
			s.good = (good + i) % len(s.c.Endpoints)
			s.mu.Unlock()
		case err == nil && code == http.StatusNotFound:
			return s.Until(), ErrLeaseLost
		case err == nil:
			err = fmt.Errorf("%s: HTTP %d: %s", ep, code, msg)
			continue
		default:
			if ctx.Err() != nil {
				return s.Until(), ctx.Err()
			}
			continue
		}
		break
	}
	if err != nil {
		return s.Until(), err
	}
	s.mu.Lock()
	if u := sent.Add(time.Duration(out.Validms) * time.Millisecond); u.After(s.until) {
		s.until = u
	}
	s.mu.Unlock()
	return s.Until(), nil
}

// Lock waits until the session holds lock name and returns the fencing
// token. ErrLeaseLost: the session ended.
//
// If the wait fails (ctx ends, no node answers), the request may still be
// granted later: Lock withdraws it, as Unlock would, before it returns
// the error. (The nodes leave that to the client: it may be retrying the
// same operation through another node.)
func (s *ClientSession) Lock(ctx context.Context, name string) (uint64, error) {
	var out struct {
		Token uint64 `json:"token"`
	}
	err := s.call(ctx, http.MethodPost, fmt.Sprintf("/v1/locks/%s?session=%d&seq=%d", url.PathEscape(name), s.ID, s.next()), &out)
	if err != nil && !errors.Is(err, ErrLeaseLost) {
		wctx, cancel := context.WithTimeout(context.Background(), withdrawWithin)
		_ = s.Unlock(wctx, name)
		cancel()
	}
	return out.Token, err
}

// withdrawWithin bounds the withdrawal of a lock request that failed.
const withdrawWithin = 2 * time.Second

// Unlock releases lock name (or withdraws the request for it).
func (s *ClientSession) Unlock(ctx context.Context, name string) error {
	return s.call(ctx, http.MethodDelete, fmt.Sprintf("/v1/locks/%s?session=%d&seq=%d", url.PathEscape(name), s.ID, s.next()), nil)
}

// Close ends the session, releasing its locks.
func (s *ClientSession) Close(ctx context.Context) error {
	return s.call(ctx, http.MethodDelete, fmt.Sprintf("/v1/sessions/%d?seq=%d", s.ID, s.next()), nil)
}
