package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The profiles are served to the token's holder only, and by no node
// without a token: a goroutine dump or a heap profile shows what the
// process holds.
func TestProfilesNeedTheToken(t *testing.T) {
	get := func(h http.Handler, path, token string) (int, []byte) {
		t.Helper()
		req := httptest.NewRequest("GET", path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		body, _ := io.ReadAll(w.Result().Body)
		return w.Code, body
	}
	h := Profiles("/debug/pprof/", "s3cret")
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/goroutine?debug=2", "/debug/pprof/profile?seconds=1"} {
		for _, token := range []string{"", "wrong"} {
			if code, _ := get(h, path, token); code != http.StatusUnauthorized {
				t.Errorf("GET %s with token %q: %d, want 401", path, token, code)
			}
		}
		if code, _ := get(Profiles("/debug/pprof/", ""), path, ""); code != http.StatusForbidden {
			t.Errorf("GET %s from a node without a token: %d, want 403", path, code)
		}
	}
	code, body := get(h, "/debug/pprof/heap?gc=1", "s3cret")
	if code != http.StatusOK || !bytes.HasPrefix(body, []byte{0x1f, 0x8b}) {
		t.Errorf("GET heap with the token: %d, %d bytes, want 200 and a gzipped profile", code, len(body))
	}
	code, body = get(h, "/debug/pprof/heap?debug=1", "s3cret")
	if code != http.StatusOK || !strings.Contains(string(body), "# HeapInuse = ") {
		t.Errorf("GET heap?debug=1 with the token: %d, want 200 and the text with the runtime's memory statistics", code)
	}
	code, body = get(h, "/debug/pprof/", "s3cret")
	if code != http.StatusOK || !strings.Contains(string(body), "goroutine") {
		t.Errorf("GET the index with the token: %d %q", code, body)
	}
	if code, _ := get(h, "/debug/pprof/nosuch", "s3cret"); code != http.StatusNotFound {
		t.Errorf("GET an unknown profile: %d, want 404", code)
	}
	if code, _ := get(h, "/debug/pprof/profile?seconds=100000", "s3cret"); code != http.StatusBadRequest {
		t.Errorf("a CPU profile of 100000 s: %d, want 400", code)
	}
}
