package lock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
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

	// Of the replicated service's answers (see follow).
	mu    sync.Mutex
	nodes map[int]int       // node ID -> the endpoint that last answered as that node
	down  map[int]time.Time // endpoints whose last request failed, and when
}

// avoidFor is how long follow passes over an endpoint after a request to
// it failed: a node that is down or paused costs a client one request's
// bound at most this often, and a node back after a blip (no leader for
// an election) is followed again after it.
var avoidFor = 10 * time.Second

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
	good  int // the endpoint to ask next (see Client.follow)
}

// ErrNoSessions: the nodes run a textbook algorithm, whose locks are
// leases of their own (Acquire), not sessions.
var ErrNoSessions = errors.New("the cluster's locks have no sessions (a textbook algorithm: use Acquire)")

// OpenSession opens a session of ttl; it counts from the sending of the
// request that opened it. A node that does not answer within the bound of one request (see
// ClientSession) is passed over for the next; if it had opened a session
// all the same, that session holds nothing and expires after ttl.
//
// It keeps asking until ctx ends while any node can be reached: a
// cluster just started, or one electing a new leader, answers 503 or
// not at all for a while, and opens the session once its log has a
// leader. It gives up at once when a whole round reaches no node (every
// connection refused: nothing listens at the endpoints).
func (c *Client) OpenSession(ctx context.Context, ttl time.Duration) (*ClientSession, error) {
	var out struct {
		Session uint64 `json:"session"`
		Validms int64  `json:"valid_ms"`
	}
	good, sent, err := c.rotate(ctx, 0, attemptBound(ttl), whileReached, http.MethodPost, "/v1/sessions?ttl="+ttl.String(), 0, &out)
	switch {
	case errors.Is(err, errNotFound) || errors.Is(err, errNotAllowed):
		return nil, ErrNoSessions
	case err != nil:
		return nil, err
	}
	return &ClientSession{c: c, ID: out.Session, TTL: ttl, seq: uint64(time.Now().UnixNano()), good: good,
		until: sent.Add(time.Duration(out.Validms) * time.Millisecond)}, nil
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

// Do sends a request about the session (path: "/v1/...") and decodes its
// reply into out; 404 is ErrLeaseLost. Services built on the lock table
// (elections) use it.
func (s *ClientSession) Do(ctx context.Context, method, path string, out any) error {
	return s.call(ctx, method, path, 0, out)
}

// Poll is Do for a long poll (an acquire: path names its seq): the
// request carries wait= and is sent again, with the same number, while the
// node answers 202 (still waiting), to another node if it stops answering.
func (s *ClientSession) Poll(ctx context.Context, method, path string, out any) error {
	return s.call(ctx, method, path, attemptBound(s.TTL), out)
}

func (s *ClientSession) next() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return s.seq
}

// call sends a request about the session, numbered or idempotent, to the
// nodes in turn (see rotate), from the one that last answered; wait > 0
// makes it a long poll. 404 is ErrLeaseLost.
func (s *ClientSession) call(ctx context.Context, method, path string, wait time.Duration, out any) error {
	s.mu.Lock()
	start := s.good
	s.mu.Unlock()
	good, _, err := s.c.rotate(ctx, start, attemptBound(s.TTL), 2, method, path, wait, out)
	if errors.Is(err, errNotFound) {
		return ErrLeaseLost
	}
	if err == nil {
		s.mu.Lock()
		s.good = good
		s.mu.Unlock()
	}
	return err
}

// KeepAlive renews the session and returns its new reckoning.
// ErrLeaseLost: the session is over. A node that does not answer within
// an eighth of the TTL (paused, or cut off) is passed over for the next;
// each node is asked once.
func (s *ClientSession) KeepAlive(ctx context.Context) (time.Time, error) {
	var out struct {
		Validms int64 `json:"valid_ms"`
	}
	s.mu.Lock()
	start := s.good
	s.mu.Unlock()
	good, sent, err := s.c.rotate(ctx, start, s.TTL/8, 1, http.MethodPost, fmt.Sprintf("/v1/sessions/%d/keepalive", s.ID), 0, &out)
	switch {
	case errors.Is(err, errNotFound):
		return s.Until(), ErrLeaseLost
	case err != nil:
		return s.Until(), err
	}
	s.mu.Lock()
	s.good = good
	if u := sent.Add(time.Duration(out.Validms) * time.Millisecond); u.After(s.until) {
		s.until = u
	}
	s.mu.Unlock()
	return s.Until(), nil
}

// attemptBound is how long one request about a session of ttl may go
// unanswered before the client passes over its node: a quarter of the TTL,
// between 250 ms and 5 s. A long poll's wait is as long, and its request
// is bounded by twice that.
func attemptBound(ttl time.Duration) time.Duration {
	return min(max(ttl/4, 250*time.Millisecond), 5*time.Second)
}

var (
	errNotFound   = errors.New("HTTP 404")
	errNotAllowed = errors.New("HTTP 405")
)

// rotate sends a request (path: "/v1/...") to the endpoints in turn, from
// start, and once one answers 200, with out decoded, returns the index of
// the endpoint to ask next: that one, or the leader's (follow), and when
// the request it answered was sent (a lease it grants or renews counts
// from then, not from an earlier attempt's sending). A node
// that does not answer within bound — paused, cut off — or cannot be
// reached, or answers 503, is passed over for the next; the
// search gives up after rounds rounds without an answer, resting between
// rounds — or, with rounds whileReached, only after a round in which no
// connection could even be made (see reached), or when ctx ends (its
// error then carries the nodes' last answers). A node that answers 503
// with NotVoterHeader (it does not vote in the log: removed, or joined
// and not added) is passed over for the rest of the call, and the call
// ends when every node is. Any other answer ends it: 404 and 405 as errNotFound and
// errNotAllowed, the rest as an error naming the node — the answer is
// about the request, and another node would give the same.
//
// With wait > 0 the request is a long poll: it carries wait=, may take
// wait+bound, and a 202 (still waiting) sends it again, to the same node
// or, if that one knows no leader, to another (waitAgain).
// Only numbered or idempotent requests may be sent again.
func (c *Client) rotate(ctx context.Context, start int, bound time.Duration, rounds int, method, path string, wait time.Duration, out any) (int, time.Time, error) {
	n := len(c.Endpoints)
	if n == 0 {
		return 0, time.Time{}, errors.New("no endpoints")
	}
	if wait > 0 {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + "wait=" + wait.String()
	}
	api := c.api()
	var header http.Header
	api.Header = func(h http.Header) { header = h }
	errs := make([]error, n)  // each node's last failure
	passed := make([]bool, n) // nodes that do not vote in the log: passed over for the rest of the call
	misses := 0               // requests in a row that no node answered
	reachedInRound := false   // whether one of the last misses' round reached its node
	for i := start % n; ; {
		if passed[i] {
			i = (i + 1) % n // another one is not passed: see below
			continue
		}
		ep := c.Endpoints[i]
		base, err := httpapi.BaseURL(ep)
		if err != nil {
			return 0, time.Time{}, err
		}
		actx, cancel := context.WithTimeout(ctx, wait+bound)
		sent := time.Now()
		header = nil
		code, msg, err := api.Call(actx, method, base+path, nil, out)
		cancel()
		switch {
		case ctx.Err() != nil:
			return 0, time.Time{}, ended(ctx, errs)
		case err == nil && code == http.StatusOK:
			return c.follow(i, header), sent, nil
		case err == nil && code == http.StatusAccepted && wait > 0:
			misses = 0
			i = c.waitAgain(i, header) // still waiting: ask again
			continue
		case err == nil && code == http.StatusNotFound:
			return 0, time.Time{}, fmt.Errorf("%w: %s", errNotFound, msg)
		case err == nil && code == http.StatusMethodNotAllowed:
			return 0, time.Time{}, fmt.Errorf("%w: %s", errNotAllowed, msg)
		case err == nil && code != http.StatusServiceUnavailable:
			return 0, time.Time{}, fmt.Errorf("%s: HTTP %d: %s", ep, code, msg)
		case err == nil:
			errs[i] = fmt.Errorf("%s: HTTP %d: %s", ep, code, msg)
			if header.Get(httpapi.NotVoterHeader) != "" {
				// It serves nothing until an operator adds it.
				if passed[i] = true; !slices.Contains(passed, false) {
					return 0, time.Time{}, fmt.Errorf("no endpoint votes in the log: %w", errors.Join(errs...))
				}
			}
		default:
			errs[i] = fmt.Errorf("%s: %w", ep, err)
		}
		c.failed(i)
		misses++
		reachedInRound = reachedInRound || reached(errs[i])
		endOfRound := misses%n == 0
		switch {
		case rounds != whileReached && misses >= rounds*n:
			return 0, time.Time{}, fmt.Errorf("no endpoint answered: %w", errors.Join(errs...))
		case rounds == whileReached && endOfRound && !reachedInRound:
			return 0, time.Time{}, fmt.Errorf("no endpoint could be reached: %w", errors.Join(errs...))
		}
		if i = (i + 1) % n; endOfRound {
			reachedInRound = false
			if rest(ctx, min(time.Duration(misses/n)*100*time.Millisecond, bound)) != nil {
				return 0, time.Time{}, ended(ctx, errs)
			}
		}
	}
}

// ended is the error of a call whose context ended while the nodes
// answered errs (nil for a node not asked): the context's, saying what
// the nodes answered while the caller waited.
func ended(ctx context.Context, errs []error) error {
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w (the nodes' last answers: %w)", ctx.Err(), err)
	}
	return ctx.Err()
}

// whileReached, as rotate's rounds, keeps asking until ctx ends while
// any node can be reached.
const whileReached = 0

// reached says whether a failed request got as far as a node: it was
// answered 503, or it was sent and not answered in time (a node paused,
// or too busy). A refused or failed connection is not: nothing may be
// listening there.
func reached(err error) bool {
	var op *net.OpError
	return !(errors.As(err, &op) && op.Op == "dial")
}

// follow is the endpoint to ask next after endpoint i answered with
// header h. A node of the replicated service names itself and the leader
// it knows (NodeHeader, LeaderHeader): a client that sends its requests
// to the leader gets its grants where they commit, and its releases are
// not forwarded. So: the leader's endpoint if an answer has shown which
// it is; else, while the leader is another node, the next endpoint no
// answer has named yet (the next answers will show which it is); else i.
// An endpoint whose last request failed within avoidFor is not chosen
// (rotate passes over it when it must). The hint is never needed for
// safety: every node serves every request.
func (c *Client) follow(i int, h http.Header) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.down, i)
	self, err := strconv.Atoi(h.Get(NodeHeader))
	if err != nil {
		return i // not the replicated service, or an older node
	}
	if c.nodes == nil {
		c.nodes = map[int]int{}
	}
	for id, ep := range c.nodes {
		if ep == i && id != self { // the endpoint now answers as another node
			delete(c.nodes, id)
		}
	}
	c.nodes[self] = i
	leader, err := strconv.Atoi(h.Get(LeaderHeader))
	if err != nil || leader == self {
		return i
	}
	if ep, ok := c.nodes[leader]; ok {
		if c.avoided(ep) {
			return i
		}
		return ep
	}
	named := map[int]bool{}
	for _, ep := range c.nodes {
		named[ep] = true
	}
	for k := 1; k < len(c.Endpoints); k++ {
		if j := (i + k) % len(c.Endpoints); !named[j] && !c.avoided(j) {
			return j
		}
	}
	return i
}

// waitAgain is the endpoint to send a long poll to again after endpoint
// i answered 202 (still waiting) with header h: the same node, unless it
// knows no leader — cut off from a majority, it has stopped leading or
// following (CheckQuorum; an election it cannot win), and the request
// waits there for nothing while the others may grant it — then the next
// endpoint. In a cluster with no leader anywhere the request goes round
// the nodes, one wait at each, until one has a leader.
func (c *Client) waitAgain(i int, h http.Header) int {
	if h.Get(NodeHeader) != "" && h.Get(LeaderHeader) == "" {
		return (i + 1) % len(c.Endpoints)
	}
	return i
}

// avoided reports whether a request to endpoint i failed within
// avoidFor. The caller holds mu.
func (c *Client) avoided(i int) bool {
	t, ok := c.down[i]
	return ok && time.Since(t) < avoidFor
}

// failed notes that a request to endpoint i failed.
func (c *Client) failed(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down == nil {
		c.down = map[int]time.Time{}
	}
	c.down[i] = time.Now()
}

// rest waits d, or until ctx ends.
func rest(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
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
	err := s.call(ctx, http.MethodPost, fmt.Sprintf("/v1/locks/%s?session=%d&seq=%d", url.PathEscape(name), s.ID, s.next()), attemptBound(s.TTL), &out)
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
	return s.call(ctx, http.MethodDelete, fmt.Sprintf("/v1/locks/%s?session=%d&seq=%d", url.PathEscape(name), s.ID, s.next()), 0, nil)
}

// Close ends the session, releasing its locks.
func (s *ClientSession) Close(ctx context.Context) error {
	return s.call(ctx, http.MethodDelete, fmt.Sprintf("/v1/sessions/%d?seq=%d", s.ID, s.next()), 0, nil)
}
