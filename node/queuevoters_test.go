package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/queue"
	"github.com/cohort-go/cohort/queue/queuetest"
)

// leaderOf is the leader of log service as node via knows it, once it
// knows one.
func (c *joinCluster) leaderOf(service string, via proc.ID) proc.ID {
	c.t.Helper()
	lead := proc.None
	c.eventually("a leader of "+service, func() error {
		vs, err := c.nodes[via].Voters()
		if err != nil {
			return err
		}
		i := slices.IndexFunc(vs.Logs, func(l VoterLog) bool { return l.Service == service })
		if i < 0 {
			return fmt.Errorf("node %d has no log %s: %+v", via, service, vs.Logs)
		}
		if vs.Logs[i].Leader < 0 {
			return errors.New("none known yet")
		}
		lead = proc.ID(vs.Logs[i].Leader)
		return nil
	})
	return lead
}

// progress waits until h has 10 more puts acknowledged.
func (c *joinCluster) progress(h *queuetest.History, what string) {
	c.t.Helper()
	want, begin := h.Acknowledged()+10, time.Now()
	c.eventually("puts acknowledged "+what, func() error {
		if n := h.Acknowledged(); n < want {
			return fmt.Errorf("%d of %d (%s)", n, want, h.Summary())
		}
		return nil
	})
	c.t.Logf("10 puts acknowledged %s in %v", what, time.Since(begin).Round(time.Millisecond))
}

// The replicated queues follow the voters, as the locks do: a producer
// and a consumer run through every change while a fourth node joins, is
// added (it then serves the queues: puts and gets through it), restarts
// from its log; the leader of the queues' log is removed (it hands over,
// answers 503 saying it was removed, and ends its listeners' streams) and
// a founder that still votes restarts. Afterwards every acknowledged put was delivered, and none
// again once its ack was answered.
func TestQueuesFollowTheVoters(t *testing.T) {
	c := newJoinCluster(t, 3)
	c.votersAre(0, 1, 2)
	h := queuetest.Start("jobs", c.token, c.ep(0, 1, 2)...)
	t.Cleanup(h.Stop)
	c.progress(h, "by the founders")

	c.start(3, c.listen(3))
	c.eventually("node 3 alive at node 1", func() error { return c.nodes[1].mayVote(context.Background(), 3) })
	var health Health
	if code, msg := c.status(3, "GET", "/v1/health", c.token); code != http.StatusOK || json.Unmarshal([]byte(msg), &health) != nil || health.Queues != "raft-queue" {
		t.Fatalf("the newcomer's health: %d %s; want queues raft-queue", code, msg)
	}
	for _, p := range []string{"/v1/queues/jobs/poll", "/v1/queues"} {
		if code, msg := c.status(3, "GET", p, c.token); code != http.StatusServiceUnavailable || !strings.Contains(msg, "queues") || !strings.Contains(msg, "cohort cluster add 3") {
			t.Fatalf("GET %s at the newcomer before it is added: %d %s", p, code, msg)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if vs, err := c.client(1).Add(ctx, 3); err != nil {
		t.Fatalf("add 3: %v", err)
	} else if len(vs.Logs) != 3 || vs.Logs[2].Service != queue.ServiceName {
		t.Fatalf("add 3 answered %+v; want the locks', groups' and queues' logs", vs)
	}
	c.votersAre(0, 1, 2, 3)
	if err := h.Put(ctx, c.apis[3].URL); err != nil {
		t.Fatalf("a put through the added node: %v", err)
	}
	if _, err := h.Get(ctx, c.apis[3].URL); err != nil {
		t.Fatalf("a get through the added node: %v", err)
	}
	h.Use(c.ep(0, 1, 2, 3)...)
	c.progress(h, "through four voters")

	c.restart(3) // while the producer and the consumer use it
	h.Use(c.ep(0, 1, 2, 3)...)
	c.votersAre(0, 1, 2, 3)
	c.progress(h, "after node 3 restarted")

	gone := c.leaderOf(queue.ServiceName, 3)
	left := slices.DeleteFunc([]proc.ID{0, 1, 2, 3}, func(p proc.ID) bool { return p == gone })
	// A listener at the node to be removed hears puts until then; then
	// its stream ends, saying why, instead of going silent.
	var heard atomic.Int64
	lctx, lcancel := context.WithCancel(ctx)
	defer lcancel()
	listened := make(chan error, 1)
	go func() {
		listened <- (&queue.Client{Endpoints: c.ep(gone), Token: c.token}).Listen(lctx, "jobs", func(queue.Message) { heard.Add(1) })
	}()
	c.eventually(fmt.Sprintf("a listener at node %d to hear puts", gone), func() error {
		if heard.Load() == 0 {
			return errors.New("nothing yet")
		}
		return nil
	})
	if _, err := c.client(left[0]).Remove(ctx, gone); err != nil {
		t.Fatalf("remove node %d, the queues' leader: %v", gone, err)
	}
	h.Use(c.ep(left...)...)
	select {
	case err := <-listened:
		if err == nil || !strings.Contains(err.Error(), "no longer follows the queues' log") {
			t.Errorf("the removed node's listener ended with %v; want it to say why", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the removed node's listener still listens, 20 s after its removal")
	}
	var want []int
	for _, id := range left {
		want = append(want, int(id))
	}
	c.votersAre(want...)
	c.eventually(fmt.Sprintf("node %d to say it no longer serves the queues", gone), func() error {
		if code, msg := c.status(gone, "GET", "/v1/queues/jobs/poll", c.token); code != http.StatusServiceUnavailable || !strings.Contains(msg, "was removed") || !strings.Contains(msg, "queues") {
			return fmt.Errorf("%d %s", code, msg)
		}
		return nil
	})
	c.progress(h, fmt.Sprintf("after node %d, the queues' leader, was removed", gone))

	founder := left[0]
	if founder == 3 {
		founder = left[1]
	}
	c.restart(founder)
	h.Use(c.ep(left...)...)
	c.votersAre(want...)
	c.progress(h, fmt.Sprintf("after founder %d restarted", founder))

	if err := h.Drain(ctx); err != nil {
		t.Fatalf("%v (%s)", err, h.Summary())
	}
	if err := h.Check(); err != nil {
		t.Fatalf("%v (%s)", err, h.Summary())
	}
	t.Logf("node %d, the queues' leader, removed; %s", gone, h.Summary())
}
