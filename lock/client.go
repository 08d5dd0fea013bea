package lock

import (
	"context"
	"errors"
	"fmt"
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
