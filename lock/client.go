package lock

import (
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
	if len(c.Endpoints) == 0 {
		return nil, errors.New("no endpoints")
	}
	var errs []error
	for _, ep := range c.Endpoints {
		base, err := httpapi.BaseURL(ep)
		if err != nil {
			return nil, err
		}
		var out struct {
			Name  string `json:"name"`
			Token uint64 `json:"token"`
			Lease string `json:"lease"`
			TTLms int64  `json:"ttl_ms"`
		}
		u := fmt.Sprintf("%s/v1/locks/%s?ttl=%s", base, url.PathEscape(name), ttl)
		code, msg, err := c.do(ctx, http.MethodPost, u, &out)
		if err == nil && code == http.StatusOK {
			return &Held{Name: out.Name, Token: out.Token, Lease: out.Lease, TTL: time.Duration(out.TTLms) * time.Millisecond, base: base, c: c}, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err == nil {
			// The node answered: the answer is about the request, and
			// another node would give the same.
			return nil, fmt.Errorf("%s: HTTP %d: %s", ep, code, msg)
		}
		errs = append(errs, fmt.Errorf("%s: %w", ep, err))
	}
	return nil, fmt.Errorf("no endpoint answered: %w", errors.Join(errs...))
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
	code, msg, err := h.c.do(ctx, method, u, nil)
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

// do sends a request and returns the reply's status code and, for an
// error reply, the node's message; err is a failure to talk to the node.
func (c *Client) do(ctx context.Context, method, u string, out any) (code int, msg string, err error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return 0, "", err
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, "", err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(body, &e)
		return resp.StatusCode, e.Error, nil
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			return resp.StatusCode, "", fmt.Errorf("bad reply: %w", err)
		}
	}
	return resp.StatusCode, "", nil
}
