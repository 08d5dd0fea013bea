package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"
)

func TestRequireToken(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { Reply(w, 200, map[string]bool{"ok": true}) })
	h := RequireToken("s3cret", ok)
	for _, c := range []struct {
		auth string
		code int
	}{{"", 401}, {"Bearer nope", 401}, {"s3cret", 401}, {"Bearer s3cret", 200}} {
		req := httptest.NewRequest("GET", "/", nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.code {
			t.Errorf("Authorization %q: %d, want %d", c.auth, rec.Code, c.code)
		}
		if c.code == 401 && ErrorMessage(rec.Body) != "missing or wrong bearer token" {
			t.Errorf("Authorization %q: body %q", c.auth, rec.Body.String())
		}
	}
	if RequireToken("", ok) == nil {
		t.Error("no token: no handler")
	}
}

func TestBaseURLAndErrors(t *testing.T) {
	for in, want := range map[string]string{"127.0.0.1:7100": "http://127.0.0.1:7100", "https://n1:8/": "https://n1:8"} {
		if got, err := BaseURL(in); err != nil || got != want {
			t.Errorf("BaseURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := BaseURL("http://"); err == nil || !strings.Contains(err.Error(), `"http://"`) {
		t.Errorf("BaseURL(http://): %v", err)
	}
	if got := ErrorMessage(strings.NewReader(`{"error":"boom"}`)); got != "boom" {
		t.Errorf("ErrorMessage = %q", got)
	}
	if got := ErrorMessage(strings.NewReader(" plain text \n")); got != "plain text" {
		t.Errorf("ErrorMessage of text = %q", got)
	}
	if a, b := NewLeaseID(), NewLeaseID(); len(a) != 24 || a == b {
		t.Errorf("lease ids %q %q", a, b)
	}
}

// First skips nodes it cannot reach, stops at the first that answers, and
// stops too at a node that answers with an error, naming it.
func TestClientFirst(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer t" {
			Fail(w, http.StatusUnauthorized, "no token")
			return
		}
		Reply(w, http.StatusOK, map[string]int{"n": 7})
	}))
	defer ok.Close()
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { Fail(w, http.StatusConflict, "taken") }))
	defer bad.Close()
	ctx := context.Background()
	c := &Client{Endpoints: []string{"127.0.0.1:1", ok.URL}, Token: "t"}
	var out struct{ N int }
	if err := c.First(ctx, func(base string) (int, string, error) { return c.Call(ctx, "GET", base, nil, &out) }); err != nil || out.N != 7 {
		t.Fatalf("First: %v, %+v", err, out)
	}
	c.Endpoints = []string{bad.URL, ok.URL}
	err := c.First(ctx, func(base string) (int, string, error) { return c.Call(ctx, "GET", base, nil, nil) })
	if err == nil || !strings.Contains(err.Error(), "HTTP 409: taken") || !strings.Contains(err.Error(), bad.URL) {
		t.Fatalf("an error reply: %v", err)
	}
	c.Endpoints = []string{"127.0.0.1:1"}
	if err := c.First(ctx, func(base string) (int, string, error) { return c.Call(ctx, "GET", base, nil, nil) }); err == nil || !strings.Contains(err.Error(), "no endpoint answered") {
		t.Fatalf("nobody up: %v", err)
	}
}

func TestValidName(t *testing.T) {
	for name, ok := range map[string]bool{
		"jobs": true, "db-migrations.v2_1": true, strings.Repeat("a", 128): true,
		"": false, ".": false, "..": false, "a/b": false, "with space": false, strings.Repeat("a", 129): false, "é": false,
	} {
		err := ValidName("lock", name)
		if (err == nil) != ok {
			t.Errorf("ValidName(%q) = %v, want ok %v", name, err, ok)
		}
		if err != nil && !strings.HasPrefix(err.Error(), fmt.Sprintf("lock name %q", name)) {
			t.Errorf("error %q does not name the lock", err)
		}
	}
}

// TestClip: a message quoting a huge value keeps its start and end and
// says how much was cut; a short one is left alone.
func TestClip(t *testing.T) {
	if got := Clip("lock name \"x\": want 1 to 128"); got != "lock name \"x\": want 1 to 128" {
		t.Errorf("a short message changed: %q", got)
	}
	msg := "lock name \"" + strings.Repeat("é", 5<<20) + "\": want 1 to 128 of A-Z"
	got := Clip(msg)
	if len(got) > MaxEcho+100 || !strings.HasPrefix(got, "lock name \"") || !strings.HasSuffix(got, "want 1 to 128 of A-Z") ||
		!strings.Contains(got, "bytes cut") || !utf8.ValidString(got) {
		t.Errorf("clipped to %d bytes: %.200q…", len(got), got)
	}
}

// TestValidNameMatchesItsPattern: the hand-written check accepts exactly
// the names of the pattern its error states.
func TestValidNameMatchesItsPattern(t *testing.T) {
	pattern := regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)
	rapid.Check(t, func(t *rapid.T) {
		name := rapid.StringOfN(rapid.SampledFrom([]rune("aZ09._-/ é\x00")), 0, 130, -1).Draw(t, "name")
		if got, want := validNameChars(name), pattern.MatchString(name); got != want {
			t.Fatalf("validNameChars(%q) = %v, the pattern says %v", name, got, want)
		}
	})
}
