package dht

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cohort-go/cohort/internal/httpapi"
)

// Handler serves the HTTP API:
//
//	PUT  /v1/dht/KEY               store the body (at most MaxValue bytes) under KEY
//	GET  /v1/dht/KEY               the value under KEY: 404 if there is none
//	POST /v1/scribe/GROUP          multicast the body (at most MaxMessage bytes)
//	GET  /v1/scribe/GROUP          join GROUP and stream its multicasts
//	                               (server-sent events); leaving when the reader goes
//	POST /v1/scribe/GROUP/join     make this node a member of GROUP
//	POST /v1/scribe/GROUP/leave    undo a join
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /v1/dht/{key}", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxValue+1))
		if err != nil {
			httpapi.Fail(w, http.StatusBadRequest, err.Error())
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), APITimeout)
		defer cancel()
		res, err := s.Put(ctx, r.PathValue("key"), string(body))
		if err != nil {
			httpapi.Fail(w, status(err), err.Error())
			return
		}
		httpapi.Reply(w, http.StatusOK, res)
	})
	mux.HandleFunc("GET /v1/dht/{key}", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), APITimeout)
		defer cancel()
		res, err := s.Get(ctx, r.PathValue("key"))
		switch {
		case err != nil:
			httpapi.Fail(w, status(err), err.Error())
		case !res.Found:
			httpapi.Fail(w, http.StatusNotFound, "no value under key "+r.PathValue("key"))
		default:
			httpapi.Reply(w, http.StatusOK, res)
		}
	})
	mux.HandleFunc("POST /v1/scribe/{group}", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxMessage+1))
		if err != nil {
			httpapi.Fail(w, http.StatusBadRequest, err.Error())
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), APITimeout)
		defer cancel()
		id, err := s.Publish(ctx, r.PathValue("group"), string(body))
		if err != nil {
			httpapi.Fail(w, status(err), err.Error())
			return
		}
		httpapi.Reply(w, http.StatusOK, Published{ID: id})
	})
	mux.HandleFunc("POST /v1/scribe/{group}/join", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), APITimeout)
		defer cancel()
		if err := s.JoinGroup(ctx, r.PathValue("group")); err != nil {
			httpapi.Fail(w, status(err), err.Error())
			return
		}
		httpapi.Reply(w, http.StatusOK, struct{}{})
	})
	mux.HandleFunc("POST /v1/scribe/{group}/leave", func(w http.ResponseWriter, r *http.Request) {
		if err := s.LeaveGroup(r.PathValue("group")); err != nil {
			httpapi.Fail(w, status(err), err.Error())
			return
		}
		httpapi.Reply(w, http.StatusOK, struct{}{})
	})
	mux.HandleFunc("GET /v1/scribe/{group}", s.listen)
	return mux
}

// APITimeout bounds how long a request of the HTTP API waits for its
// answer (a node still joining the overlay, a key whose replicas are all
// gone quiet): past it the reply is 504.
const APITimeout = 30 * time.Second

// Published answers a multicast: its id.
type Published struct {
	ID uint64 `json:"id"`
}

func status(err error) int {
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "key "), strings.HasPrefix(msg, "value "),
		strings.HasPrefix(msg, "group name "), strings.HasPrefix(msg, "message "):
		return http.StatusBadRequest
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return http.StatusGatewayTimeout
	}
	return http.StatusServiceUnavailable
}

// listenBacklog bounds the multicasts a stream holds for a slow reader;
// beyond it the stream ends with an error event.
const listenBacklog = 1024

func (s *Server) listen(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	msgs := make(chan Message, listenBacklog)
	behind := make(chan struct{})
	stop, err := s.Listen(ctx, r.PathValue("group"), func(m Message) {
		select {
		case msgs <- m:
		default:
			select {
			case <-behind:
			default:
				close(behind)
			}
		}
	})
	if err != nil {
		httpapi.Fail(w, status(err), err.Error())
		return
	}
	defer stop()
	httpapi.Stream(ctx, w, s.svc.Done(), behind, msgs)
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

// Put stores value under key through the first node that answers.
func (c *Client) Put(ctx context.Context, key, value string) (Result, error) {
	if err := ValidKey(key); err != nil {
		return Result{}, err
	}
	var res Result
	err := c.api().First(ctx, func(base string) (int, string, error) {
		return c.api().Call(ctx, http.MethodPut, base+"/v1/dht/"+url.PathEscape(key), []byte(value), &res)
	})
	return res, err
}

// Get reads the value under key through the first node that answers;
// Found is false if there is none.
func (c *Client) Get(ctx context.Context, key string) (Result, error) {
	if err := ValidKey(key); err != nil {
		return Result{}, err
	}
	var res Result
	err := c.api().First(ctx, func(base string) (int, string, error) {
		code, msg, err := c.api().Call(ctx, http.MethodGet, base+"/v1/dht/"+url.PathEscape(key), nil, &res)
		if code == http.StatusNotFound {
			res = Result{Key: key}
			return http.StatusOK, "", nil
		}
		return code, msg, err
	})
	return res, err
}

// Publish multicasts body to group through the first node that answers.
func (c *Client) Publish(ctx context.Context, group, body string) (uint64, error) {
	if err := httpapi.ValidName("group", group); err != nil {
		return 0, err
	}
	var p Published
	err := c.api().First(ctx, func(base string) (int, string, error) {
		return c.api().Call(ctx, http.MethodPost, base+"/v1/scribe/"+group, []byte(body), &p)
	})
	return p.ID, err
}

// JoinGroup makes the first node that answers a member of group.
func (c *Client) JoinGroup(ctx context.Context, group string) error {
	return c.post(ctx, group, "join")
}

// LeaveGroup undoes a JoinGroup at the first node that answers.
func (c *Client) LeaveGroup(ctx context.Context, group string) error {
	return c.post(ctx, group, "leave")
}

func (c *Client) post(ctx context.Context, group, what string) error {
	if err := httpapi.ValidName("group", group); err != nil {
		return err
	}
	return c.api().First(ctx, func(base string) (int, string, error) {
		return c.api().Call(ctx, http.MethodPost, base+"/v1/scribe/"+group+"/"+what, []byte{}, nil)
	})
}

// Listen joins group at the first node that answers and streams its
// multicasts to f, until ctx ends or the stream breaks.
func (c *Client) Listen(ctx context.Context, group string, f func(Message)) error {
	if err := httpapi.ValidName("group", group); err != nil {
		return err
	}
	return c.api().First(ctx, func(base string) (int, string, error) {
		resp, code, msg, err := c.api().Open(ctx, http.MethodGet, base+"/v1/scribe/"+group, nil)
		if resp == nil {
			return code, msg, err
		}
		defer resp.Body.Close()
		err = httpapi.ReadEvents(resp.Body, 8*MaxMessage, func(data []byte) {
			var m Message
			if json.Unmarshal(data, &m) == nil {
				f(m)
			}
		})
		if ctx.Err() != nil {
			return http.StatusOK, "", nil
		}
		return 0, "", fmt.Errorf("listen: %w", err)
	})
}
