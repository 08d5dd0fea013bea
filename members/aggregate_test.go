package members_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/members"
	"github.com/cohort-go/cohort/proc"
)

// TestAggregateOverALiveCluster: five nodes, one of which joined, each
// with its own reading; any node answers the average, sum and count of
// the readings by push-sum over TCP, through the Go API and over HTTP.
func TestAggregateOverALiveCluster(t *testing.T) {
	c := newCluster(t, 4)
	c.Join(4, 2)
	c.eventually("every member knows every other", holds(map[int]string{0: "alive", 1: "alive", 2: "alive", 3: "alive", 4: "alive"}))
	for id, s := range c.servers {
		if err := s.SetReading("load", float64(id)*10); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	want := map[string]float64{"average": 20, "sum": 100, "count": 5}
	for agg, w := range want {
		e, err := c.servers[proc.ID(len(agg)%5)].Aggregate(ctx, "load", agg)
		if err != nil {
			t.Fatal(err)
		}
		if e.None || math.Abs(e.Value-w) > 0.01*w {
			t.Errorf("%s of load = %+v, want %g ± 1%%", agg, e, w)
		}
	}
	srv := httptest.NewServer(c.servers[3].Handler())
	defer srv.Close()
	client := &members.Client{Endpoints: []string{srv.URL}}
	if err := client.SetReading(ctx, "load", 60); err != nil { // node 3: 30 → 60
		t.Fatal(err)
	}
	e, err := client.Aggregate(ctx, "load", "sum")
	if err != nil || e.None || math.Abs(e.Value-130) > 1.3 {
		t.Errorf("sum over HTTP after node 3's new reading = %+v, %v; want 130 ± 1%%", e, err)
	}
	if e, err := client.Aggregate(ctx, "nobody-reads-this", "average"); err != nil || !e.None {
		t.Errorf("average of a reading nobody has = %+v, %v; want none", e, err)
	}
	if _, err := client.Aggregate(ctx, "load", "median"); err == nil {
		t.Error("a median was accepted")
	}
	if err := c.servers[0].SetReading("bad/name", 1); !errors.Is(err, members.ErrBadReading) {
		t.Errorf("SetReading(bad/name) = %v, want ErrBadReading", err)
	}
	if err := c.servers[0].SetReading("load", math.Inf(1)); !errors.Is(err, members.ErrBadReading) {
		t.Errorf("SetReading(+Inf) = %v, want ErrBadReading", err)
	}
}

// TestWatchOverHTTP: a watch stream over HTTP carries the map's changes
// as they happen, among the membership's.
func TestWatchOverHTTP(t *testing.T) {
	c := newCluster(t, 2)
	c.eventually("both alive", holds(map[int]string{0: "alive", 1: "alive"}))
	srv := httptest.NewServer(c.servers[0].Handler())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := make(chan members.Event, 16)
	go (&members.Client{Endpoints: []string{srv.URL}}).Watch(ctx, func(e members.Event) { got <- e })
	for {
		// The stream may open after a first put: put until one is seen.
		if _, err := c.servers[1].Put("color", "blue"); err != nil {
			t.Fatal(err)
		}
		select {
		case e := <-got:
			if e.Member != nil && e.Key == "" && slices.Contains([]string{"alive", "suspect", "dead", "left"}, e.Type) {
				continue // the membership's changes share the stream (a busy machine's suspicions)
			}
			if e.Type != "put" || e.Key != "color" || e.Value != "blue" {
				t.Fatalf("first event of the map %+v, want put color=blue", e)
			}
			return
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("no event on the watch stream")
		}
	}
}

// TestAggregateAPIFlood: readings and queries past a node's bounds are
// refused with a status that says why — not acknowledged and dropped, not
// left hanging — and the node answers as before once the flood is over.
func TestAggregateAPIFlood(t *testing.T) {
	c := newCluster(t, 2)
	c.eventually("both members know each other", holds(map[int]string{0: "alive", 1: "alive"}))
	srv := httptest.NewServer(c.servers[0].Handler())
	defer srv.Close()
	put := func(name, body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPut, srv.URL+"/v1/readings/"+name, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for i := range epidemic.MaxReadings {
		if code, body := put(fmt.Sprintf("r%d", i), "1"); code != http.StatusOK {
			t.Fatalf("reading %d of %d: %d %s", i+1, epidemic.MaxReadings, code, body)
		}
	}
	if code, body := put("one-too-many", "1"); code != http.StatusInsufficientStorage || !strings.Contains(body, fmt.Sprint(epidemic.MaxReadings)) {
		t.Errorf("reading %d: %d %s, want 507 naming the bound", epidemic.MaxReadings+1, code, body)
	}
	if code, body := put("r0", "2"); code != http.StatusOK {
		t.Errorf("a reading held already, set again: %d %s", code, body)
	}
	if err := c.servers[0].SetReading("r0", math.NaN()); err != nil {
		t.Fatal(err)
	}
	if code, body := put("one-too-many", "1"); code != http.StatusOK {
		t.Errorf("a new reading once one was deleted: %d %s", code, body)
	}

	// 4×MaxQueries queries at once: each is answered or refused with 429.
	const queries = 4 * epidemic.MaxQueries
	codes := make(chan int, queries)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := range queries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/v1/aggregate/r%d?agg=sum", srv.URL, 1+i%8), nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	wg.Wait()
	close(codes)
	count := map[int]int{}
	for code := range codes {
		count[code]++
	}
	if count[http.StatusOK] == 0 || count[http.StatusTooManyRequests] == 0 || count[http.StatusOK]+count[http.StatusTooManyRequests] != queries {
		t.Errorf("%d queries at once: %v by status; want answers (200) and refusals (429) only", queries, count)
	}
	e, err := c.servers[0].Aggregate(ctx, "r1", "count")
	if err != nil || math.Abs(e.Value-1) > 0.01 {
		t.Errorf("after the flood, count of r1 = %+v, %v; want 1", e, err)
	}
}
