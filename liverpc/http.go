package liverpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cohort-go/cohort/internal/httpapi"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/rpc"
)

// The HTTP API of a node's endpoint: a client outside the cluster calls
// a procedure on any member through any other node, which makes the call
// with its own client stub (the semantics chosen per request;
// at-most-once by default; a call of the node itself is refused, 400):
//
//	POST /v1/rpc/{server}/{proc}[?semantics=maybe|at-least-once|at-most-once]
//	     body: the packed arguments (JSON), at most MaxPayload bytes
//	     200: the packed result; 422 {"error"}: the procedure's error;
//	     503: not run (too many calls under way here, the endpoint closed);
//	     504: no result — the procedure may have run (timeout, crash, kill)
//
// With the header Cohort-Request-Id (1 to 128 of A-Z a-z 0-9 . _ -),
// the id is the call's identity at the server member's duplicate table
// (rpc.Request.Key), which is on its stable storage and synced before a
// reply leaves: a request that repeats an id — through this node or any
// other, before or after either restarts — gets the first one's answer,
// waiting for it if it still runs, and never runs the procedure again
// (if the server crashed while it ran: 504, it may have run). The call
// runs on even if its client leaves, so that the repeat can have its
// result. The server remembers the last rpc.Config.Keys ended ids,
// within rpc.Config.KeyBytes of results; a repeat after its id was
// forgotten is another call. The node checks the bearer token.

// HTTPConfig bounds the API. Zero fields take the defaults.
type HTTPConfig struct {
	// Calls bounds the calls under way through this API at once; beyond,
	// 503 (default 256).
	Calls int
	// CallTimeout bounds a call made under a request id, which outlives
	// its request (default 1 minute).
	CallTimeout time.Duration
}

type httpAPI struct {
	e     *Endpoint
	cfg   HTTPConfig
	calls chan struct{}
}

// HTTPHandler serves e's procedures over HTTP (see above).
func HTTPHandler(e *Endpoint, c HTTPConfig) http.Handler {
	if c.Calls <= 0 {
		c.Calls = 256
	}
	if c.CallTimeout <= 0 {
		c.CallTimeout = time.Minute
	}
	a := &httpAPI{e: e, cfg: c, calls: make(chan struct{}, c.Calls)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/rpc/{server}/{proc}", a.serve)
	return mux
}

var semantics = map[string]rpc.Semantics{"maybe": rpc.Maybe, "at-least-once": rpc.AtLeastOnce, "at-most-once": rpc.AtMostOnce}

func (a *httpAPI) serve(w http.ResponseWriter, r *http.Request) {
	sv := r.PathValue("server")
	server, err := strconv.Atoi(sv)
	if err != nil || server < 0 || server >= a.e.node.N() {
		httpapi.Fail(w, http.StatusBadRequest, fmt.Sprintf("server %q: want a member's id, 0 to %d", sv, a.e.node.N()-1))
		return
	}
	name := r.PathValue("proc")
	if err := httpapi.ValidName("procedure", name); err != nil {
		httpapi.Fail(w, http.StatusBadRequest, err.Error())
		return
	}
	sem := rpc.AtMostOnce
	if v := r.URL.Query().Get("semantics"); v != "" {
		s, ok := semantics[v]
		if !ok {
			httpapi.Fail(w, http.StatusBadRequest, fmt.Sprintf("semantics %q: want maybe, at-least-once or at-most-once", v))
			return
		}
		sem = s
	}
	id := r.Header.Get("Cohort-Request-Id")
	if id != "" {
		if err := httpapi.ValidName("Cohort-Request-Id", id); err != nil {
			httpapi.Fail(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	args, err := io.ReadAll(io.LimitReader(r.Body, MaxPayload+1))
	if err != nil {
		httpapi.Fail(w, http.StatusBadRequest, err.Error())
		return
	}
	if len(args) > MaxPayload {
		httpapi.Fail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("arguments of more than %d bytes", MaxPayload))
		return
	}
	if server == int(a.e.node.Self()) {
		httpapi.Fail(w, http.StatusBadRequest, fmt.Sprintf("server %d is this node: send the call through another member", server))
		return
	}
	select {
	case a.calls <- struct{}{}:
	default:
		httpapi.Fail(w, http.StatusServiceUnavailable, fmt.Sprintf("%d calls under way through this node, the most it takes", a.cfg.Calls))
		return
	}
	o := Options{Sem: sem, Key: id}
	if id == "" {
		data, err := a.e.Invoke(r.Context(), proc.ID(server), name, args, o)
		<-a.calls
		if r.Context().Err() != nil {
			return // the client left
		}
		answer(w, data, err)
		return
	}
	// A call under an id runs on if its client leaves (a cancelled call
	// would be killed at the server, and its repeat told so).
	type outcome struct {
		data []byte
		err  error
	}
	done := make(chan outcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(a.e.base, a.cfg.CallTimeout)
		data, err := a.e.Invoke(ctx, proc.ID(server), name, args, o)
		cancel()
		<-a.calls
		done <- outcome{data, err}
	}()
	select {
	case out := <-done:
		answer(w, out.data, out.err)
	case <-r.Context().Done():
	}
}

func answer(w http.ResponseWriter, data []byte, err error) {
	var re *RemoteError
	switch {
	case err == nil:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.Write(data)
	case errors.As(err, &re):
		httpapi.Fail(w, http.StatusUnprocessableEntity, re.Error())
	case errors.Is(err, ErrClosed):
		httpapi.Fail(w, http.StatusServiceUnavailable, err.Error())
	default: // a timeout, a crash, a kill: the procedure may have run
		httpapi.Fail(w, http.StatusGatewayTimeout, err.Error()+" (the procedure may have run)")
	}
}

// Client calls procedures over a node's HTTP API (HTTPHandler), from
// outside the cluster.
type Client struct {
	Endpoints []string // nodes' APIs: host:port or URLs
	Token     string
	// Semantics of the calls; 0: the node's default, at-most-once.
	Semantics rpc.Semantics
	HTTP      *http.Client // nil: http.DefaultClient
}

// StatusError is a node's answer to a call that did not give the
// procedure's result nor its error: Code 503, the call did not run; 504,
// it may have run (no result: a timeout, a crash, a kill); 400 or 413, a
// bad request (Msg names the value).
type StatusError struct {
	Endpoint string
	Code     int
	Msg      string
}

func (e *StatusError) Error() string {
	what := map[int]string{http.StatusServiceUnavailable: "not run", http.StatusGatewayTimeout: "no result",
		http.StatusBadRequest: "bad request", http.StatusRequestEntityTooLarge: "too large"}[e.Code]
	if what == "" {
		what = http.StatusText(e.Code)
	}
	return fmt.Sprintf("%s: HTTP %d (%s): %s", e.Endpoint, e.Code, what, e.Msg)
}

// Call calls procedure name at member server with packed arguments and
// returns its packed result. With a request id (1 to 128 of A-Z a-z 0-9
// . _ -) a call that got no answer — the connection broke, the node is
// down — is sent again, with the same id, to the next endpoint in turn,
// until ctx ends: the server runs it at most once, whichever node
// forwards it, and answers every repeat with the first's result.
// Without one, the call is sent once, to the first endpoint. A
// procedure's error is a *RemoteError, a node's refusal a *StatusError;
// after an error that is neither, or a StatusError of 504, the
// procedure may have run.
func (c *Client) Call(ctx context.Context, server proc.ID, name, requestID string, args []byte) ([]byte, error) {
	bases, err := httpapi.BaseURLs(c.Endpoints)
	if err != nil {
		return nil, fmt.Errorf("liverpc: %w", err)
	}
	if requestID != "" {
		if err := httpapi.ValidName("Cohort-Request-Id", requestID); err != nil {
			return nil, err
		}
	}
	query := ""
	if c.Semantics != 0 {
		if c.Semantics > rpc.AtMostOnce {
			return nil, fmt.Errorf("liverpc: semantics %d: unknown", c.Semantics)
		}
		query = "?semantics=" + c.Semantics.String()
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	wait := 10 * time.Millisecond
	for i := 0; ; i++ {
		ep := c.Endpoints[i%len(bases)]
		u := fmt.Sprintf("%s/v1/rpc/%d/%s%s", bases[i%len(bases)], server, url.PathEscape(name), query)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(args))
		if err != nil {
			return nil, err
		}
		if c.Token != "" {
			req.Header.Set("Authorization", "Bearer "+c.Token)
		}
		if requestID != "" {
			req.Header.Set("Cohort-Request-Id", requestID)
		}
		resp, err := hc.Do(req)
		if err == nil {
			defer resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return io.ReadAll(io.LimitReader(resp.Body, MaxPayload+1))
			}
			msg := httpapi.ErrorMessage(resp.Body)
			if resp.StatusCode == http.StatusUnprocessableEntity {
				return nil, &RemoteError{Proc: name, Msg: strings.TrimPrefix(msg, name+": ")}
			}
			return nil, &StatusError{Endpoint: ep, Code: resp.StatusCode, Msg: msg}
		}
		if requestID == "" || ctx.Err() != nil {
			return nil, err
		}
		if (i+1)%len(bases) != 0 {
			continue // the next node, at once
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}
