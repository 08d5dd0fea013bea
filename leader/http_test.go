package leader

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/internal/httpapi"
	"github.com/cohort-go/cohort/proc"
)

func servers(t *testing.T, n int) ([]*Server, []string) {
	t.Helper()
	nodes := cluster(t, n)
	var ss []*Server
	var urls []string
	for _, node := range nodes {
		s := NewServer(ServerConfig{Node: node, Election: fast})
		h := httptest.NewServer(s.Handler())
		t.Cleanup(h.Close)
		ss = append(ss, s)
		urls = append(urls, h.URL)
	}
	return ss, urls
}

// Over HTTP: a client campaigns through node 2 and wins, a watcher on node
// 0 sees it; a second campaign on the same node is refused; a lease that is
// not renewed expires and the node resigns, handing over to node 1's
// candidate.
func TestHTTPCampaignWatchLease(t *testing.T) {
	_, urls := servers(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	watcher := &Client{Endpoints: []string{urls[0]}}
	views, stop, err := watcher.Watch(ctx, "db")
	if err != nil {
		t.Fatal(err)
	}
	if v := <-views; v.Leader != proc.None || v.Node != 0 || v.Name != "db" {
		t.Fatalf("first view %+v", v)
	}

	c2 := &Client{Endpoints: []string{"127.0.0.1:1", urls[2]}} // the first endpoint is down
	term, err := c2.Campaign(ctx, "db", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if term.Node != 2 {
		t.Fatalf("term %+v", term)
	}
	for v := range views {
		if v.Leader == 2 {
			break
		}
	}
	if _, err := c2.Campaign(ctx, "db", time.Second); err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("second campaign on node 2: %v, want 409", err)
	}
	if err := term.KeepAlive(ctx); err != nil {
		t.Fatal(err)
	}

	// Node 1's candidate waits under node 2; node 2's lease runs out.
	c1 := &Client{Endpoints: []string{urls[1]}}
	won := make(chan error, 1)
	go func() {
		t1, err := c1.Campaign(ctx, "db", 5*time.Second)
		if err == nil && t1.Node != 1 {
			err = fmt.Errorf("term %+v", t1)
		}
		won <- err
	}()
	if err := <-won; err != nil {
		t.Fatal(err)
	}
	for v := range views {
		if v.Leader == 1 {
			break
		}
	}
	if err := term.KeepAlive(ctx); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("keepalive after expiry: %v, want ErrLeaseLost", err)
	}
	// Node 2 learns of node 1's leadership a message later.
	for start := time.Now(); ; time.Sleep(5 * time.Millisecond) {
		v, err := (&Client{Endpoints: []string{urls[2]}}).Get(ctx, "db")
		if err == nil && v.Leader == 1 && !v.Self {
			break
		}
		if time.Since(start) > 2*time.Second {
			t.Fatalf("node 2's view %+v, %v", v, err)
		}
	}
	cancel()
	if err := stop(); err != nil {
		t.Fatalf("watch ended with %v", err)
	}
}

// A leader that is overtaken by a higher candidate learns it from
// KeepAlive; Resign hands over.
func TestHTTPKeepAliveNotLeaderAndResign(t *testing.T) {
	_, urls := servers(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	low, err := (&Client{Endpoints: []string{urls[0]}}).Campaign(ctx, "x", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	high, err := (&Client{Endpoints: []string{urls[2]}}).Campaign(ctx, "x", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Node 0 learns of node 2's leadership a message later.
	for start := time.Now(); ; time.Sleep(5 * time.Millisecond) {
		err := low.KeepAlive(ctx)
		if errors.Is(err, ErrNotLeader) {
			break
		}
		if time.Since(start) > 2*time.Second {
			t.Fatalf("keepalive of an overtaken leader: %v, want ErrNotLeader", err)
		}
	}
	if err := high.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for low.KeepAlive(ctx) != nil {
		if time.Now().After(deadline) {
			t.Fatal("node 0 did not lead again after node 2 resigned")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := high.Resign(ctx); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("second resign: %v", err)
	}
}

func TestHTTPBadInput(t *testing.T) {
	_, urls := servers(t, 1)
	for _, c := range []struct{ method, path, want string }{
		{"GET", "/v1/elections/a%20b", "election name"},
		{"POST", "/v1/elections/x/campaign?ttl=forever", `ttl "forever"`},
		{"POST", "/v1/elections/x/campaign?ttl=1h", `ttl "1h"`},
		{"POST", "/v1/elections/x/keepalive?lease=nope", `lease "nope"`},
		{"DELETE", "/v1/elections/x?lease=nope", `lease "nope"`},
	} {
		req, _ := http.NewRequest(c.method, urls[0]+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		msg := httpapi.ErrorMessage(resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 400 || !strings.Contains(msg, c.want) {
			t.Errorf("%s %s: %d %q, want an error naming %s", c.method, c.path, resp.StatusCode, msg, c.want)
		}
	}
}

func TestReadEvents(t *testing.T) {
	in := ": comment\nevent: view\ndata: {\"name\":\"a\",\"node\":1,\"leader\":3,\"changes\":2}\n\ndata:{\"name\":\"a\",\"leader\":-1}\n\n"
	var got []View
	if err := ReadEvents(strings.NewReader(in), func(v View) bool { got = append(got, v); return true }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Leader != 3 || got[0].Node != 1 || got[0].Changes != 2 || got[1].Leader != proc.None {
		t.Fatalf("got %+v", got)
	}
	err := ReadEvents(strings.NewReader("data: {nope\n"), func(View) bool { return true })
	if err == nil || !strings.Contains(err.Error(), "{nope") {
		t.Fatalf("bad event: %v", err)
	}
	long := "data: " + strings.Repeat("x", MaxEvent+1) + "\n"
	if err := ReadEvents(strings.NewReader(long), func(View) bool { return true }); err == nil {
		t.Fatal("an over-long event was accepted")
	}
}

// ReadEvents never panics, and reads back every view it is given.
func FuzzReadEvents(f *testing.F) {
	f.Add([]byte("data: {\"leader\":1}\n\n"))
	f.Add([]byte(": x\ndata:\n\ndata: null\n"))
	f.Add([]byte("data: {\"since\":\"x\"}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = ReadEvents(bytes.NewReader(b), func(View) bool { return true })
		var v View
		if json.Unmarshal(b, &v) == nil {
			enc, _ := json.Marshal(v)
			var got []View
			if err := ReadEvents(strings.NewReader("data: "+string(enc)+"\n\n"), func(v View) bool { got = append(got, v); return true }); err != nil || len(got) != 1 {
				t.Fatalf("round trip of %s: %v %v", enc, got, err)
			}
		}
	})
}

// TestReadsCreateNothing: asking about an election nobody stands in
// answers "no leader" and starts nothing, on any node; once a candidate
// stands, every node answers with its view.
func TestReadsCreateNothing(t *testing.T) {
	ss, urls := servers(t, 3)
	for i := range 50 {
		resp, err := http.Get(fmt.Sprintf("%s/v1/elections/nobody-%d", urls[i%3], i))
		if err != nil {
			t.Fatal(err)
		}
		var v View
		json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || v.Leader != proc.None {
			t.Fatalf("GET of an unknown election: HTTP %d %+v, want 200 and no leader", resp.StatusCode, v)
		}
	}
	for i, s := range ss {
		s.mu.Lock()
		started := len(s.elections)
		s.mu.Unlock()
		if s.node.Running("leader/nobody-0") || started != 0 {
			t.Fatalf("node %d: reads started elections", i)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e, err := ss[1].Election("sched")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(urls[0] + "/v1/elections/sched")
		if err != nil {
			t.Fatal(err)
		}
		var v View
		json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if v.Leader == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node 0 never reported node 1's leadership: %+v", v)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
