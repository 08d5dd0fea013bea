package dht_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cohort-go/cohort/dht"
)

// TestHTTPAPI: a key put through one node's API is read through
// another's; a missing key is 404, a bad key or group 400 naming it; a
// listener's stream delivers what a publisher multicasts.
func TestHTTPAPI(t *testing.T) {
	c := newCluster(t, 3)
	var urls []string
	for _, id := range c.ids() {
		<-c.servers[id].Ready()
		srv := httptest.NewServer(c.servers[id].Handler())
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := func(i int) *dht.Client { return &dht.Client{Endpoints: []string{urls[i]}} }
	if _, err := cl(0).Put(ctx, "color", "blue"); err != nil {
		t.Fatal(err)
	}
	r, err := cl(2).Get(ctx, "color")
	if err != nil || !r.Found || r.Value != "blue" {
		t.Fatalf("get color through another node: %+v, %v", r, err)
	}
	if r, err := cl(1).Get(ctx, "nothing"); err != nil || r.Found {
		t.Errorf("get of a missing key: %+v, %v; want not found", r, err)
	}
	for _, bad := range []struct{ method, path, want string }{
		{http.MethodPut, "/v1/dht/a%20b", `key \"a b\"`},
		{http.MethodPut, "/v1/dht/" + strings.Repeat("k", 300), "256"},
		{http.MethodPost, "/v1/scribe/a%20b", `group name \"a b\"`},
	} {
		req, _ := http.NewRequest(bad.method, urls[0]+bad.path, strings.NewReader("x"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		buf := make([]byte, 512)
		n, _ := resp.Body.Read(buf)
		b.Write(buf[:n])
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(b.String(), bad.want) {
			t.Errorf("%s %s: %d %s; want 400 naming %s", bad.method, bad.path, resp.StatusCode, b.String(), bad.want)
		}
	}
	req, _ := http.NewRequest(http.MethodPut, urls[0]+"/v1/dht/big", strings.NewReader(strings.Repeat("v", dht.MaxValue+1)))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a value past MaxValue: %v %v; want 400", resp.StatusCode, err)
	}

	var mu sync.Mutex
	got := map[string]int{}
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	go cl(1).Listen(lctx, "news", func(m dht.Message) {
		mu.Lock()
		got[m.Body]++
		mu.Unlock()
	})
	seen := func(body string) int { mu.Lock(); defer mu.Unlock(); return got[body] }
	waitFor(t, "a multicast through the API reaches the listener", 30*time.Second, func() error {
		if _, err := cl(2).Publish(ctx, "news", "hello"); err != nil {
			return err
		}
		for range 25 {
			if seen("hello") > 0 {
				return nil
			}
			time.Sleep(20 * time.Millisecond)
		}
		return context.DeadlineExceeded
	})
	if _, err := cl(0).Publish(ctx, "news", "once"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the second multicast, once", 10*time.Second, func() error {
		if n := seen("once"); n != 1 {
			return context.DeadlineExceeded
		}
		return nil
	})
}
