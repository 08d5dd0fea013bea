package members_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/members"
	"github.com/cohort-go/cohort/proc"
)

// holdersAt is the IDs of the holders of name that s finds.
func holdersAt(s *members.Server, name string) ([]int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hs, err := s.Find(ctx, name, 0)
	if err != nil {
		return nil, err
	}
	var ids []int
	for _, h := range hs {
		ids = append(ids, h.ID)
	}
	slices.Sort(ids)
	return ids, nil
}

func findsExactly(name string, want ...int) func(proc.ID, *members.Server) error {
	return func(_ proc.ID, s *members.Server) error {
		got, err := holdersAt(s, name)
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("finds %s at %v, want %v", name, got, want)
		}
		return nil
	}
}

// TestDiscoveryOverALiveCluster: over TCP, two nodes advertise a
// resource and every node finds both, with their attributes and
// estimated round-trip times; one withdraws and disappears everywhere;
// the other is killed and disappears once SWIM holds it dead. Over HTTP
// too, where bad input is refused naming the value.
func TestDiscoveryOverALiveCluster(t *testing.T) {
	c := newCluster(t, 4)
	c.Join(4, 1)
	c.eventually("every member knows every other", holds(map[int]string{0: "alive", 1: "alive", 2: "alive", 3: "alive", 4: "alive"}))
	if err := c.servers[1].Advertise("db", map[string]string{"port": "5432"}); err != nil {
		t.Fatal(err)
	}
	if err := c.servers[4].Advertise("db", nil); err != nil {
		t.Fatal(err)
	}
	c.eventually("both holders findable everywhere", findsExactly("db", 1, 4))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hs, err := c.servers[1].Find(ctx, "db", 1)
	if err != nil || len(hs) != 1 || hs[0].ID != 1 || !hs[0].Self || hs[0].RTT != 0 || hs[0].Attrs["port"] != "5432" {
		t.Fatalf("p1's nearest holder of db = %+v, %v; want itself, at 0 ms, port 5432", hs, err)
	}
	for _, e := range mustEntries(t, c.servers[0]) {
		if strings.Contains(e.Key, "db") {
			t.Errorf("an advertisement shows in the map: %+v", e)
		}
	}

	srv := httptest.NewServer(c.servers[4].Handler())
	defer srv.Close()
	client := &members.Client{Endpoints: []string{srv.URL}}
	if err := client.Withdraw(ctx, "db"); err != nil {
		t.Fatal(err)
	}
	c.eventually("the withdrawn holder gone everywhere", findsExactly("db", 1))
	if err := client.Advertise(ctx, "cache", map[string]string{"zone": "a"}); err != nil {
		t.Fatal(err)
	}
	c.eventually("the new advertisement findable everywhere", findsExactly("cache", 4))
	got, err := client.Find(ctx, "cache", 3)
	if err != nil || len(got) != 1 || got[0].Attrs["zone"] != "a" {
		t.Errorf("find cache over HTTP = %+v, %v", got, err)
	}
	for _, bad := range []struct{ method, path, body, want string }{
		{"GET", "/v1/resources/db?k=-1", "", `k "-1"`},
		{"GET", "/v1/resources/db?k=many", "", `k "many"`},
		{"PUT", "/v1/resources/a@b", "", `name "a@b"`},
		{"PUT", "/v1/resources/db", "{not json", `advertisement "{not json"`},
		{"PUT", "/v1/resources/db", `{"attrs":{"a=b":"c"}}`, `attribute "a=b"`},
	} {
		req, _ := http.NewRequest(bad.method, srv.URL+bad.path, strings.NewReader(bad.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Error string }
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(e.Error, bad.want) {
			t.Errorf("%s %s: %d %q; want 400 naming %s", bad.method, bad.path, resp.StatusCode, e.Error, bad.want)
		}
	}
	if _, err := c.servers[0].Find(ctx, "db", members.MaxFind+1); !errors.Is(err, members.ErrBadResource) {
		t.Errorf("a find of k beyond the bound: %v", err)
	}
	if _, err := c.servers[0].Put("cohort.res.db@1", "x"); err == nil {
		t.Error("a write to an advertisement's key was accepted")
	}

	for i := range epidemic.MaxAdverts {
		if err := c.servers[2].Advertise(fmt.Sprintf("r%d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	c.eventually("p2's advertisements held at p2", func(id proc.ID, s *members.Server) error {
		if id != 2 {
			return nil
		}
		hs, err := holdersAt(s, fmt.Sprintf("r%d", epidemic.MaxAdverts-1))
		if err == nil && len(hs) == 0 {
			err = errors.New("not yet")
		}
		return err
	})
	if err := c.servers[2].Advertise("one-too-many", nil); !errors.Is(err, members.ErrBadResource) {
		t.Errorf("advertisement %d of one node: %v, want ErrBadResource", epidemic.MaxAdverts+1, err)
	}
	if err := c.servers[2].Advertise("r0", map[string]string{"again": "yes"}); err != nil {
		t.Errorf("re-advertising r0 at the bound: %v", err)
	}

	c.kill(1)
	c.eventually("the killed holder gone everywhere", findsExactly("db"))
}

func mustEntries(t *testing.T, s *members.Server) []members.Entry {
	t.Helper()
	es, err := s.Entries()
	if err != nil {
		t.Fatal(err)
	}
	return es
}
