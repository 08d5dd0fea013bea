package members

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/cohort-go/cohort/internal/httpapi"
)

// Handler serves the HTTP API:
//
//	GET    /v1/members            the member list as this node holds it
//	GET    /v1/watch              server-sent events: every change observed here
//	GET    /v1/kv                 the map (without deleted keys)
//	GET    /v1/kv/KEY             one key: 404 if this node holds none
//	PUT    /v1/kv/KEY             write the body (at most MaxValue bytes)
//	DELETE /v1/kv/KEY             delete
//	PUT    /v1/readings/NAME      this node's own reading (the body: a number)
//	GET    /v1/aggregate/NAME?agg=average|sum|count
//	                              the aggregate of every member's reading
//	PUT    /v1/resources/NAME     advertise a resource (body: {"attrs": {...}})
//	DELETE /v1/resources/NAME     withdraw it
//	GET    /v1/resources/NAME?k=K the K holders nearest this node
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	s.aggregateRoutes(mux)
	s.resourceRoutes(mux)
	mux.HandleFunc("GET /v1/members", func(w http.ResponseWriter, r *http.Request) {
		ms, err := s.Members()
		if err != nil {
			httpapi.Fail(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		httpapi.Reply(w, http.StatusOK, ms)
	})
	mux.HandleFunc("GET /v1/kv", func(w http.ResponseWriter, r *http.Request) {
		es, err := s.Entries()
		if err != nil {
			httpapi.Fail(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		httpapi.Reply(w, http.StatusOK, es)
	})
	mux.HandleFunc("GET /v1/kv/{key}", func(w http.ResponseWriter, r *http.Request) {
		e, ok, err := s.Get(r.PathValue("key"))
		switch {
		case err != nil:
			httpapi.Fail(w, status(err), err.Error())
		case !ok:
			httpapi.Fail(w, http.StatusNotFound, "no key "+r.PathValue("key")+" at this node")
		default:
			httpapi.Reply(w, http.StatusOK, e)
		}
	})
	mux.HandleFunc("PUT /v1/kv/{key}", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxValue+1))
		if err != nil {
			httpapi.Fail(w, http.StatusBadRequest, err.Error())
			return
		}
		e, err := s.Put(r.PathValue("key"), string(body))
		if err != nil {
			httpapi.Fail(w, status(err), err.Error())
			return
		}
		httpapi.Reply(w, http.StatusOK, e)
	})
	mux.HandleFunc("DELETE /v1/kv/{key}", func(w http.ResponseWriter, r *http.Request) {
		e, err := s.Delete(r.PathValue("key"))
		if err != nil {
			httpapi.Fail(w, status(err), err.Error())
			return
		}
		httpapi.Reply(w, http.StatusOK, e)
	})
	mux.HandleFunc("GET /v1/watch", s.watch)
	return mux
}

func status(err error) int {
	switch {
	case errors.Is(err, ErrTooBig):
		return http.StatusInsufficientStorage
	case strings.HasPrefix(err.Error(), "key ") || strings.HasPrefix(err.Error(), "value "):
		return http.StatusBadRequest
	}
	return http.StatusServiceUnavailable
}

// watchBacklog bounds the events a watch stream holds for a slow reader;
// beyond it the stream ends with an error event (the reader reconnects
// and reads the list or the map again).
const watchBacklog = 1024

func (s *Server) watch(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	events := make(chan Event, watchBacklog)
	behind := make(chan struct{})
	go s.Watch(ctx, func(e Event) {
		select {
		case events <- e:
		default:
			select {
			case <-behind:
			default:
				close(behind)
			}
		}
	})
	httpapi.Stream(ctx, w, s.svc.Done(), behind, events)
}

// Client reads and writes through the HTTP API of a cluster's nodes.
type Client struct {
	// Endpoints are nodes' API addresses, "host:port" or URLs; a call uses
	// the first that answers.
	Endpoints []string
	Token     string
	HTTP      *http.Client
}

func (c *Client) api() *httpapi.Client {
	return &httpapi.Client{Endpoints: c.Endpoints, Token: c.Token, HTTP: c.HTTP}
}

// Members is the member list as the first node that answers holds it.
func (c *Client) Members(ctx context.Context) ([]Member, error) {
	var ms []Member
	err := c.api().First(ctx, func(base string) (int, string, error) {
		return c.api().Call(ctx, http.MethodGet, base+"/v1/members", nil, &ms)
	})
	return ms, err
}

// Entries is the map at the first node that answers.
func (c *Client) Entries(ctx context.Context) ([]Entry, error) {
	var es []Entry
	err := c.api().First(ctx, func(base string) (int, string, error) {
		return c.api().Call(ctx, http.MethodGet, base+"/v1/kv", nil, &es)
	})
	return es, err
}

// Get is key's entry at the first node that answers; ok is false if that
// node holds none.
func (c *Client) Get(ctx context.Context, key string) (e Entry, ok bool, err error) {
	if err := ValidKey(key); err != nil {
		return Entry{}, false, err
	}
	missing := false
	err = c.api().First(ctx, func(base string) (int, string, error) {
		code, msg, err := c.api().Call(ctx, http.MethodGet, base+"/v1/kv/"+url.PathEscape(key), nil, &e)
		if code == http.StatusNotFound {
			missing = true
			return http.StatusOK, "", nil
		}
		return code, msg, err
	})
	return e, err == nil && !missing, err
}

// Put writes value under key through the first node that answers.
func (c *Client) Put(ctx context.Context, key, value string) (Entry, error) {
	return c.write(ctx, http.MethodPut, key, []byte(value))
}

// Delete deletes key through the first node that answers.
func (c *Client) Delete(ctx context.Context, key string) (Entry, error) {
	return c.write(ctx, http.MethodDelete, key, nil)
}

func (c *Client) write(ctx context.Context, method, key string, body []byte) (Entry, error) {
	if err := ValidKey(key); err != nil {
		return Entry{}, err
	}
	var e Entry
	err := c.api().First(ctx, func(base string) (int, string, error) {
		if body == nil {
			body = []byte{}
		}
		return c.api().Call(ctx, method, base+"/v1/kv/"+url.PathEscape(key), body, &e)
	})
	return e, err
}

// Watch streams the changes the first node that answers observes, to f,
// until ctx ends or the stream breaks.
func (c *Client) Watch(ctx context.Context, f func(Event)) error {
	return c.api().First(ctx, func(base string) (int, string, error) {
		resp, code, msg, err := c.api().Open(ctx, http.MethodGet, base+"/v1/watch", nil)
		if resp == nil {
			return code, msg, err
		}
		defer resp.Body.Close()
		err = httpapi.ReadEvents(resp.Body, 64<<10, func(data []byte) {
			var e Event
			if json.Unmarshal(data, &e) == nil {
				f(e)
			}
		})
		if ctx.Err() != nil {
			return http.StatusOK, "", nil
		}
		return 0, "", fmt.Errorf("watch: %w", err)
	})
}
