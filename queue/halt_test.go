package queue_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/internal/httpapi"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/livetest"
	"github.com/cohort-go/cohort/queue"
)

// A committed entry that one node's replica cannot apply (as a node of
// another version cannot read an entry it does not know) halts that
// replica: it applies nothing after it, so it acknowledges nothing more;
// it refuses every request with ErrHalted (503 over HTTP, so a Client
// goes on to another node), says so in its metrics, and logs it once.
// The other nodes apply the entry and every one after, and serve the
// queues. Before, the replica skipped the entry and went on applying the
// later ones to a state the others no longer held.
//
// Once the leader's snapshot covers the entry, the halted replica is
// sent it, restores it and serves again, with every message the others
// hold (before, only a restart ended the halt).
func TestReplicaHaltsAtAnEntryItCannotApply(t *testing.T) {
	nodes, stop, err := livetest.New(3, live.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	var logs livetest.Buffer
	cl := &cluster{nodes: nodes}
	var damage []func([]byte)
	for _, nd := range nodes {
		raft := consensus.DefaultConfig
		raft.CompactEvery = compactEvery
		r, d, err := queue.NewReplicatedDamaging(nd, queue.ReplicatedConfig{Raft: raft, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(httpapi.RequireToken(token, queue.Handler(r)))
		t.Cleanup(srv.Close)
		cl.rs, cl.srvs, cl.eps, damage = append(cl.rs, r), append(cl.srvs, srv), append(cl.eps, srv.URL), append(damage, d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lead := waitLeader(ctx, t, cl.rs)
	odd, third := (lead+1)%3, (lead+2)%3 // odd: a follower, which receives the entry from the leader
	put := func(r *queue.Replicated, body string) {
		t.Helper()
		if _, err := r.PutContext(ctx, "jobs", []byte(body)); err != nil {
			t.Fatalf("put %s: %v", body, err)
		}
	}
	for i := range 5 {
		put(cl.rs[lead], fmt.Sprint("m", i))
	}
	waitUntil(ctx, t, "the puts applied everywhere", func() bool { return ready(cl.rs[odd], "jobs") == 5 })
	damage[odd]([]byte("poison"))
	put(cl.rs[lead], "poison")
	waitUntil(ctx, t, "the replica halted", func() bool { return cl.rs[odd].Halted() != nil })
	if err := cl.rs[odd].Halted(); !errors.Is(err, queue.ErrHalted) || !strings.Contains(err.Error(), "entry") {
		t.Fatalf("Halted: %v, want ErrHalted naming the entry", err)
	}
	if _, err := cl.rs[odd].PutContext(ctx, "jobs", []byte("refused")); !errors.Is(err, queue.ErrHalted) {
		t.Fatalf("a put through the halted replica: %v, want ErrHalted", err)
	}
	// The others go on, through either of them and through a Client that
	// names the halted node first.
	for i := 6; i < 10; i++ {
		put(cl.rs[[]int{lead, third}[i%2]], fmt.Sprint("m", i))
	}
	c := &queue.Client{Endpoints: []string{cl.eps[odd], cl.eps[third]}, Token: token}
	if _, err := c.Put(ctx, "jobs", []byte("m10")); err != nil {
		t.Fatalf("a Client's put, the halted node first: %v", err)
	}
	waitUntil(ctx, t, "every put applied by the others", func() bool {
		return ready(cl.rs[lead], "jobs") == 11 && ready(cl.rs[third], "jobs") == 11
	})
	ms, err := cl.rs[third].PollN("jobs", time.Hour, 20)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range ms {
		if want := fmt.Sprint("m", i); i != 5 && string(m.Body) != want || i == 5 && string(m.Body) != "poison" {
			t.Fatalf("message %d is %s", i, m.Body)
		}
	}
	// Nothing applied at the halted replica after the entry before it.
	if n := ready(cl.rs[odd], "jobs"); n != 5 {
		t.Fatalf("the halted replica holds %d messages, want the 5 put before the entry it cannot apply", n)
	}
	status, msg := get(t, cl.eps[odd], "/v1/queues")
	if status != http.StatusServiceUnavailable || !strings.Contains(msg, "halted") {
		t.Fatalf("GET /v1/queues on the halted node: %d %s, want 503 saying it halted", status, msg)
	}
	haltedMetric(t, "the halted node", cl.rs[odd], 1)
	haltedMetric(t, "the leader", cl.rs[lead], 0)
	if n := strings.Count(logs.String(), "replicated queues halted"); n != 1 {
		t.Fatalf("the halt logged %d times, want once:\n%s", n, logs.String())
	}
	t.Logf("%v", cl.rs[odd].Halted())

	// More entries, until the leader's log is compacted past the entry
	// (at an entry applied once every follower holds the ones before, or
	// else after 4·CompactEvery): the halted replica restores the
	// leader's snapshot and resumes.
	for i := 11; cl.rs[odd].Halted() != nil; i++ {
		if ctx.Err() != nil {
			t.Fatalf("not resumed after %d more puts", i-11)
		}
		put(cl.rs[[]int{lead, third}[i%2]], fmt.Sprint("m", i))
	}
	put(cl.rs[odd], "after")
	waitUntil(ctx, t, "the resumed replica holds what the others hold", func() bool {
		n := ready(cl.rs[lead], "jobs")
		return ready(cl.rs[odd], "jobs") == n && ready(cl.rs[third], "jobs") == n
	})
	if status, msg := get(t, cl.eps[odd], "/v1/queues"); status != http.StatusOK {
		t.Fatalf("GET /v1/queues on the resumed node: %d %s, want 200", status, msg)
	}
	haltedMetric(t, "the resumed node", cl.rs[odd], 0)
	if n := strings.Count(logs.String(), "replicated queues resumed"); n != 1 {
		t.Fatalf("the resume logged %d times, want once:\n%s", n, logs.String())
	}
}

// haltedMetric fails t unless r's metrics say cohort_rqueue_halted want.
func haltedMetric(t *testing.T, who string, r *queue.Replicated, want int) {
	t.Helper()
	var metrics bytes.Buffer
	r.WriteMetrics(&metrics)
	if line := fmt.Sprintf("cohort_rqueue_halted %d\n", want); !strings.Contains(metrics.String(), line) {
		t.Fatalf("metrics of %s:\n%s\nwant %s", who, metrics.String(), line)
	}
}

// compactEvery is the Raft log's compaction interval in the halt test:
// past the entries before its checks of the halt, so that the leader's
// snapshot covers the entry only after them.
const compactEvery = 32

// get sends GET path to base with the token and returns the status and
// the error message or reply.
func get(t *testing.T, base, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return resp.StatusCode, httpapi.ErrorMessage(resp.Body)
}

// A Listen whose stream carries an event that is not a message ends with
// an error naming it, and hands on no message after it; before, the event
// was dropped without a word and the listener went on, one message short.
func TestListenRefusesAnEventItCannotDecode(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"queue\":\"jobs\",\"id\":1,\"body\":\"bTE=\"}\n\n")
		fmt.Fprint(w, "data: {\"queue\":\"jobs\",\"id\":2,\"body\":\n\n")
		fmt.Fprint(w, "data: {\"queue\":\"jobs\",\"id\":3,\"body\":\"bTM=\"}\n\n")
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []uint64
	c := &queue.Client{Endpoints: []string{srv.URL}}
	err := c.Listen(ctx, "jobs", func(m queue.Message) { got = append(got, m.ID) })
	if err == nil || !strings.Contains(err.Error(), `"id\":2`) || len(got) != 1 || got[0] != 1 {
		t.Fatalf("Listen: %v, messages %v; want message 1, then an error naming the event of message 2", err, got)
	}
	t.Log(err)
}
