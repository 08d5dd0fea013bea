// Package httpapi holds what the HTTP APIs of Cohort's services (locks,
// elections, groups) share: JSON replies and errors, bearer tokens, lease
// ids and endpoint addresses.
package httpapi

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
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
	Reply(w, code, ErrorReply{Error: msg})
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
