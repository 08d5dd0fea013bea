package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cohort-go/cohort/election"
	"github.com/cohort-go/cohort/group"
	"github.com/cohort-go/cohort/leader"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/livetest"
	"github.com/cohort-go/cohort/lock"
	"github.com/cohort-go/cohort/registry"
)

// A node's API checks the bearer token once, for every service and the
// health probe alike; the metrics stay open for a scraper.
func TestAPIChecksTheTokenForEveryService(t *testing.T) {
	ra, _ := registry.Find("mutex", "ricart-agrawala")
	galgo, _ := group.Algorithm(group.DefaultAlgorithm)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	nodes := livetest.Start(t, 1, live.Config{Resolve: anyOf(lock.Resolver(ra), group.Resolver(galgo), leader.Resolver(election.DefaultLeader))})
	h := apiHandler(nodes[0], 0, 1, ra, leader.NewServer(nodes[0], election.DefaultLeader, log), group.NewServer(nodes[0], galgo, log), "s3cret", log)
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/health"}, {"GET", "/v1/locks/jobs"}, {"GET", "/v1/elections/sched"}, {"POST", "/v1/groups/g/messages"},
	} {
		for _, token := range []string{"", "wrong", "s3cret"} {
			req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader("hello"))
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if refused := resp.StatusCode == http.StatusUnauthorized; refused != (token != "s3cret") {
				t.Errorf("%s %s with token %q: %d", c.method, c.path, token, resp.StatusCode)
			}
		}
	}
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("/metrics without a token: %v %v", err, resp.Status)
	}
	resp.Body.Close()
}
