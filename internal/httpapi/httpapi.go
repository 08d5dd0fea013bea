// Package httpapi holds what the HTTP APIs of Cohort's services (locks,
// elections, groups) share: JSON replies and errors, bearer tokens, lease
// ids and endpoint addresses.
package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// ErrorReply is the body of every error reply: {"error": "..."}.
type ErrorReply struct {
	Error string `json:"error"`
}

// Reply writes body as JSON with status code.
func Reply(w http.ResponseWriter, code int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

// Fail writes an error reply.
func Fail(w http.ResponseWriter, code int, msg string) {
	Reply(w, code, ErrorReply{Error: Clip(msg)})
}

// MaxEcho bounds an error message that echoes what it was given.
const MaxEcho = 1000

// Clip cuts the middle out of a message longer than MaxEcho (a huge bad
// value it quotes), saying how much: the start and the end, which say
// what was wrong and what was wanted, stay.
func Clip(msg string) string {
	if len(msg) <= MaxEcho {
		return msg
	}
	head, tail := msg[:MaxEcho/2], msg[len(msg)-MaxEcho/2:]
	return fmt.Sprintf("%s…[%d bytes cut]…%s", strings.ToValidUTF8(head, ""), len(msg)-MaxEcho, strings.ToValidUTF8(tail, ""))
}

// RequireToken lets through only requests that carry "Authorization:
// Bearer token"; with no token, every request.
func RequireToken(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			Fail(w, http.StatusUnauthorized, "missing or wrong bearer token")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// NewLeaseID returns a random lease id.
func NewLeaseID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// BaseURL turns an endpoint, "host:port" or a URL, into a base URL without
// a trailing slash.
func BaseURL(ep string) (string, error) {
	if !strings.Contains(ep, "://") {
		ep = "http://" + ep
	}
	u, err := url.Parse(ep)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("endpoint %q: want host:port or a URL", ep)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

// BaseURLs is BaseURL of each endpoint, in order; no endpoint is an
// error.
func BaseURLs(endpoints []string) ([]string, error) {
	if len(endpoints) == 0 {
		return nil, errors.New("no endpoints")
	}
	bases := make([]string, len(endpoints))
	for i, ep := range endpoints {
		b, err := BaseURL(ep)
		if err != nil {
			return nil, err
		}
		bases[i] = b
	}
	return bases, nil
}

// ErrorMessage reads an error reply's message (or, failing that, its text)
// from the first MiB of r.
func ErrorMessage(r io.Reader) string {
	body, _ := io.ReadAll(io.LimitReader(r, 1<<20))
	var e ErrorReply
	if json.Unmarshal(body, &e) != nil || e.Error == "" {
		return strings.TrimSpace(string(body))
	}
	return e.Error
}

// Client sends requests to a cluster's nodes: the first endpoint that
// answers serves a call. The services' Go clients (lock, leader, group)
// are built on it.
type Client struct {
	Endpoints []string
	Token     string       // bearer token, if the nodes require one
	HTTP      *http.Client // nil: http.DefaultClient
	// Header, if set, is given the header of every reply (Open, Call).
	Header func(http.Header)
}

// First runs call with the base URL of each endpoint in turn until one
// answers 200. A node that answers with an error ends the search — the
// answer is about the request, and another node would give the same — as
// does the end of ctx; a node that cannot be reached is skipped.
func (c *Client) First(ctx context.Context, call func(base string) (code int, msg string, err error)) error {
	if len(c.Endpoints) == 0 {
		return errors.New("no endpoints")
	}
	var errs []error
	for _, ep := range c.Endpoints {
		base, err := BaseURL(ep)
		if err != nil {
			return err
		}
		code, msg, err := call(base)
		if err == nil && code == http.StatusOK {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil {
			return fmt.Errorf("%s: HTTP %d: %s", ep, code, msg)
		}
		errs = append(errs, fmt.Errorf("%s: %w", ep, err))
	}
	return fmt.Errorf("no endpoint answered: %w", errors.Join(errs...))
}

// Open sends a request and, on a 200 reply, returns it unread (the caller
// closes its body); otherwise the reply's status code and the node's
// message. err is a failure to talk to the node.
func (c *Client) Open(ctx context.Context, method, u string, body []byte) (resp *http.Response, code int, msg string, err error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, 0, "", err
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err = hc.Do(req)
	if err != nil {
		return nil, 0, "", err
	}
	if c.Header != nil {
		c.Header(resp.Header)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, resp.StatusCode, ErrorMessage(resp.Body), nil
	}
	return resp, http.StatusOK, "", nil
}

// Call sends a request and decodes a 200 reply's JSON into out (nil:
// ignore it); otherwise it returns the status code and the node's message.
// err is a failure to talk to the node or a reply that is not JSON.
func (c *Client) Call(ctx context.Context, method, u string, body []byte, out any) (code int, msg string, err error) {
	resp, code, msg, err := c.Open(ctx, method, u, body)
	if resp == nil {
		return code, msg, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, "", err
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return code, "", fmt.Errorf("bad reply: %w", err)
		}
	}
	return code, "", nil
}

// ValidName checks the name of a lock, an election or a group (what names
// it: "lock", "election", "group"): 1 to 128 of A-Z a-z 0-9 . _ -, and not
// "." or "..", so that a name is safe in a URL path and a file name. Every
// service checks its names with it.
func ValidName(what, name string) error {
	// Checked on every request and every multicast: a loop, not a regexp.
	if !validNameChars(name) || name == "." || name == ".." {
		return fmt.Errorf("%s name %q: want 1 to 128 of A-Z a-z 0-9 . _ - (not . or ..)", what, name)
	}
	return nil
}

// validNameChars: 1 to 128 of A-Z a-z 0-9 . _ -
func validNameChars(name string) bool {
	if len(name) == 0 || len(name) > 128 {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// NotVoterHeader is set ("1") on a 503 from a node that does not vote in
// the replicated log behind the request (removed from its voters, or
// joined and not yet added): asked again, it gives the same answer until
// an operator adds it, so a client passes over it for the rest of a call.
const NotVoterHeader = "Cohort-Not-Voter"
