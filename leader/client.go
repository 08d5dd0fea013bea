package leader

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/cohort-go/cohort/internal/httpapi"
)

// Client follows and campaigns in elections through the HTTP API of a
// cluster's nodes.
type Client struct {
	// Endpoints are nodes' API addresses, "host:port" or URLs; a call uses
	// the first that answers.
	Endpoints []string
	// Token is the bearer token the nodes require, if any.
	Token string
	// HTTP is the client to use; nil means one without a timeout.
	HTTP *http.Client
}

// Term is a campaign this client won: it leads while it renews the lease.
type Term struct {
	Name string
	// Term is the leadership's term: higher than every term before it,
	// so a resource can refuse a deposed leader (a fencing token).
	Term  uint64
	Lease string
	TTL   time.Duration
	Node  int // the node that leads on the client's behalf
	base  string
	c     *Client
}

// ErrLeaseLost is returned when a campaign's lease expired or is unknown.
var ErrLeaseLost = errors.New("lease lost")

// ErrNotLeader is returned by KeepAlive when the node is still a candidate
// but no longer leads (a higher candidate came back).
var ErrNotLeader = errors.New("no longer the leader")

// Get returns an election as the first node that answers sees it.
func (c *Client) Get(ctx context.Context, name string) (View, error) {
	var v View
	err := c.api().First(ctx, func(base string) (int, string, error) {
		return c.api().Call(ctx, http.MethodGet, base+"/v1/elections/"+url.PathEscape(name), nil, &v)
	})
	return v, err
}

// Campaign makes a node a candidate on this client's behalf and waits
// until it leads, with a lease of ttl that KeepAlive must renew.
func (c *Client) Campaign(ctx context.Context, name string, ttl time.Duration) (*Term, error) {
	var t *Term
	err := c.api().First(ctx, func(base string) (int, string, error) {
		var out struct {
			Name   string `json:"name"`
			Leader int    `json:"leader"`
			Term   uint64 `json:"term"`
			Lease  string `json:"lease"`
			TTLms  int64  `json:"ttl_ms"`
		}
		u := fmt.Sprintf("%s/v1/elections/%s/campaign?ttl=%s", base, url.PathEscape(name), ttl)
		code, msg, err := c.api().Call(ctx, http.MethodPost, u, nil, &out)
		if err == nil && code == http.StatusOK {
			t = &Term{Name: out.Name, Term: out.Term, Lease: out.Lease, TTL: time.Duration(out.TTLms) * time.Millisecond, Node: out.Leader, base: base, c: c}
		}
		return code, msg, err
	})
	return t, err
}

// Endpoint is the base URL of the node that leads for the client.
func (t *Term) Endpoint() string { return t.base }

// KeepAlive renews the lease: ErrLeaseLost means the node resigned,
// ErrNotLeader that it no longer leads.
func (t *Term) KeepAlive(ctx context.Context) error {
	u := fmt.Sprintf("%s/v1/elections/%s/keepalive?lease=%s", t.base, url.PathEscape(t.Name), url.QueryEscape(t.Lease))
	code, msg, err := t.c.api().Call(ctx, http.MethodPost, u, nil, nil)
	switch {
	case err != nil:
		return err
	case code == http.StatusNotFound:
		return ErrLeaseLost
	case code == http.StatusConflict:
		return fmt.Errorf("%w: %s", ErrNotLeader, msg)
	case code != http.StatusOK:
		return fmt.Errorf("keepalive: HTTP %d: %s", code, msg)
	}
	return nil
}

// Resign gives the leadership (or the candidacy) up.
func (t *Term) Resign(ctx context.Context) error {
	u := fmt.Sprintf("%s/v1/elections/%s?lease=%s", t.base, url.PathEscape(t.Name), url.QueryEscape(t.Lease))
	code, msg, err := t.c.api().Call(ctx, http.MethodDelete, u, nil, nil)
	switch {
	case err != nil:
		return err
	case code == http.StatusNotFound:
		return ErrLeaseLost
	case code != http.StatusOK:
		return fmt.Errorf("resign: HTTP %d: %s", code, msg)
	}
	return nil
}

// Watch streams an election's views from the first node that answers,
// until ctx ends or the stream breaks; then the channel closes and the
// returned function reports why (nil once ctx ended).
func (c *Client) Watch(ctx context.Context, name string) (<-chan View, func() error, error) {
	var resp *http.Response
	err := c.api().First(ctx, func(base string) (int, string, error) {
		r, code, msg, err := c.api().Open(ctx, http.MethodGet, base+"/v1/elections/"+url.PathEscape(name)+"/watch", nil)
		resp = r
		return code, msg, err
	})
	if err != nil {
		return nil, nil, err
	}
	ch := make(chan View)
	errc := make(chan error, 1)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		err := ReadEvents(resp.Body, func(v View) bool {
			select {
			case ch <- v:
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

// MaxEvent bounds one server-sent event's line.
const MaxEvent = 64 << 10

// ReadEvents reads server-sent events of election views from r and hands
// each to f until f returns false or the stream ends (nil error at EOF).
// Lines other than "data:" lines (comments, event names) are skipped; a
// data line that is not a view is an error that quotes it.
func ReadEvents(r io.Reader, f func(View) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), MaxEvent)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:"))
		if !ok {
			continue
		}
		var v View
		if err := json.Unmarshal(bytes.TrimSpace(data), &v); err != nil {
			q := string(data)
			if len(q) > 80 {
				q = q[:80] + "..."
			}
			return fmt.Errorf("bad event %q: %v", q, err)
		}
		if !f(v) {
			return nil
		}
	}
	return sc.Err()
}

func (c *Client) api() *httpapi.Client {
	return &httpapi.Client{Endpoints: c.Endpoints, Token: c.Token, HTTP: c.HTTP}
}
