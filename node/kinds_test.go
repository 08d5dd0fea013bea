package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/group"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/lock"
	"github.com/cohort-go/cohort/members"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/registry"
)

func TestKindsDiffer(t *testing.T) {
	raft := Kinds{"lock": "raft-lock", "group": "raft-group", "queues": "replicated", "queue_limits": "messages:1"}
	for _, c := range []struct {
		name   string
		theirs Kinds
		says   []string // each in the error; none: they agree
	}{
		{"alike", Kinds{"lock": "raft-lock", "group": "raft-group", "queues": "replicated", "queue_limits": "messages:1"}, nil},
		{"local queues", Kinds{"lock": "raft-lock", "group": "raft-group", "queues": "local"},
			[]string{"queues: local at node 3, replicated at node 0"}},
		{"other limits", Kinds{"lock": "raft-lock", "group": "raft-group", "queues": "replicated", "queue_limits": "messages:2"},
			[]string{"queue_limits: messages:2 at node 3, messages:1 at node 0"}},
		{"textbook group", Kinds{"lock": "raft-lock", "group": "total-sequencer", "queues": "replicated", "queue_limits": "messages:1"},
			[]string{"group: total-sequencer at node 3, raft-group at node 0"}},
		{"none announced", Kinds{}, []string{"lock: none at node 3, raft-lock at node 0", "queues: none at node 3"}},
	} {
		err := differ(3, c.theirs, "node 0", raft)
		if c.says == nil {
			if err != nil {
				t.Errorf("%s: %v; want none", c.name, err)
			}
			continue
		}
		if !errors.Is(err, ErrKinds) {
			t.Errorf("%s: %v; want ErrKinds", c.name, err)
			continue
		}
		for _, s := range c.says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %v; want it to say %q", c.name, err, s)
			}
		}
		if c.name == "local queues" && strings.Contains(err.Error(), "queue_limits") {
			t.Errorf("%s: %v: names the limits of queues one side does not run", c.name, err)
		}
	}
	if k := ParseKinds(raft.String()); fmt.Sprint(k) != fmt.Sprint(raft) {
		t.Errorf("ParseKinds(%q) = %v", raft.String(), k)
	}
}

// A node that joins with other kinds than the cluster's — queues: local
// beside replicated queues, a textbook group beside the replicated one,
// other limits of the replicated queues — is refused when it starts,
// naming both values; and `cluster add` refuses a member that announces
// other kinds (one that joined through a member of an older release,
// which announces none, so it could not check). Nothing is half added:
// the voters stay the founders in every log.
func TestJoinerOfOtherKindsIsRefused(t *testing.T) {
	c := newJoinCluster(t, 3)
	c.votersAre(0, 1, 2)
	seq, err := group.Algorithm("total-sequencer")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []struct {
		tweak func(*Config)
		says  string
	}{
		{func(cfg *Config) { cfg.LocalQueues = true }, "queues: local at node 3, replicated at node 0"},
		{func(cfg *Config) { cfg.QueueLimits.Messages = 7 }, "queue_limits: messages:7,"},
		{func(cfg *Config) { cfg.Group = seq }, "group: total-sequencer at node 3, raft-group at node 0"},
	} {
		c.tweak[3] = b.tweak
		err := c.tryStart(3, c.listen(3))
		if !errors.Is(err, ErrKinds) || !strings.Contains(err.Error(), b.says) {
			t.Fatalf("a joiner of other kinds started: %v; want ErrKinds naming %q", err, b.says)
		}
		t.Logf("refused: %v", err)
	}

	// Node 4 joins as a release that announces no kinds; node 3, with
	// local queues, joins through it, and cannot check.
	ln := c.listen(4)
	tr, contact := c.transport(4, ln)
	old, err := live.NewNode(live.Config{Self: 4, N: c.founders, Transport: tr, IDs: MaxIDs,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { old.Close() })
	if err := old.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := members.NewServer(members.Config{Node: old, Contact: contact, Durable: true,
		Params: epidemic.Params{Period: 20 * time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	c.eventually("node 4 alive at node 1", func() error {
		if err := c.nodes[1].mayVote(context.Background(), 4); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "announces no kinds") {
			return fmt.Errorf("still: %v", err)
		}
		return nil
	})
	c.tweak[3] = func(cfg *Config) { cfg.LocalQueues = true }
	c.contact[3] = 4
	c.start(3, c.listen(3))
	c.eventually("adding node 3 refused, naming both kinds of queues", func() error {
		if code, msg := c.status(1, "PUT", "/v1/cluster/voters/3", c.token); code != http.StatusConflict || !strings.Contains(msg, "queues: local at node 3, replicated at node 1") {
			return fmt.Errorf("%d %s; want 409 naming both kinds of queues", code, msg)
		}
		return nil
	})
	// Refused for its kinds once node 1 holds it alive (on a loaded
	// machine its gossip may leave it suspect for a while: refused too,
	// but for that).
	c.eventually("adding node 4 refused, naming its missing kinds", func() error {
		if code, msg := c.status(1, "PUT", "/v1/cluster/voters/4", c.token); code != http.StatusConflict || !strings.Contains(msg, "announces no kinds") {
			return fmt.Errorf("adding node 4, which announces no kinds: %d %s; want 409 naming that", code, msg)
		}
		return nil
	})
	c.votersAre(0, 1, 2)
	// The founders still grant.
	c.lockAt(2, "jobs")
}

// Founders that disagree on their kinds are held to the majority's: of
// three started at once with one lock algorithm twice and another once,
// the odd one refuses (ErrKinds, naming both values and both sets) and
// the others start; of two that differ, both refuse; a founder started
// beside running founders of other kinds refuses, as does one whose
// queues differ beside replicated ones. Founders that agree all start.
func TestFoundersOfOtherKindsRefuse(t *testing.T) {
	ra, _ := registry.Find("mutex", "ricart-agrawala")
	central, _ := registry.Find("mutex", "central")
	seq, _ := group.Algorithm(group.DefaultAlgorithm)
	raft := lock.ReplicatedAlgorithm(consensus.DefaultConfig)
	for _, c := range []struct {
		name    string
		lock    []proc.Algorithm
		local   []bool // LocalQueues
		late    int    // the founders from this one on start once the others run
		refused map[int]string
	}{
		{"alike", []proc.Algorithm{ra, ra, ra}, nil, 3, nil},
		{"one of three", []proc.Algorithm{ra, ra, central}, nil, 3,
			map[int]string{2: "lock: central at node 2, ricart-agrawala at node 0"}},
		{"one of two", []proc.Algorithm{ra, central}, nil, 2,
			map[int]string{0: "lock: ricart-agrawala at node 0, central at node 1", 1: "lock: central at node 1, ricart-agrawala at node 0"}},
		{"late", []proc.Algorithm{ra, ra, central}, nil, 2,
			map[int]string{2: "lock: central at node 2, ricart-agrawala at node 0"}},
		{"local queues", []proc.Algorithm{raft, raft, raft}, []bool{false, false, true}, 2,
			map[int]string{2: "queues: local at node 2, replicated at node 0"}},
		{"queue limits", []proc.Algorithm{raft, raft, raft}, nil, 3,
			map[int]string{2: "queue_limits: messages:7,"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := len(c.lock)
			net, err := transport.NewInProc(n, transport.InProcConfig{})
			if err != nil {
				t.Fatal(err)
			}
			errs := make([]error, n)
			startAll := func(from, to int) {
				var wg sync.WaitGroup
				for i := from; i < to; i++ {
					wg.Go(func() {
						ep, _ := net.Endpoint(proc.ID(i))
						cfg := Config{ID: proc.ID(i), N: n, Transport: ep, Lock: c.lock[i], Group: seq,
							Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
						if c.local != nil {
							cfg.LocalQueues = c.local[i]
						}
						if c.name == "queue limits" && i == 2 {
							cfg.QueueLimits.Messages = 7
						}
						nd, err := New(cfg)
						if errs[i] = err; err == nil {
							t.Cleanup(func() { nd.Close() })
						}
					})
				}
				wg.Wait()
			}
			startAll(0, min(c.late, n))
			startAll(c.late, n)
			for i, err := range errs {
				says, refused := c.refused[i]
				switch {
				case !refused && err != nil:
					t.Errorf("node %d: %v; want it started", i, err)
				case refused && (!errors.Is(err, ErrKinds) || !strings.Contains(err.Error(), says)):
					t.Errorf("node %d: %v; want ErrKinds naming %q", i, err, says)
				case refused:
					// Both sets, whole.
					ours := Config{Lock: c.lock[i], Group: seq}
					if c.local != nil {
						ours.LocalQueues = c.local[i]
					}
					if c.name == "queue limits" {
						ours.QueueLimits.Messages = 7
					}
					if !strings.Contains(err.Error(), "runs "+ours.kinds().String()) {
						t.Errorf("node %d: %v; want it to name its kinds %q", i, err, ours.kinds())
					}
					t.Logf("node %d refused: %v", i, err)
				}
			}
		})
	}
}

// A founder restarted alone from a data directory in which the founders'
// agreement on its kinds is recorded starts at once: it does not wait
// FoundersWait to hear founders that are down. Restarted with other
// kinds, it has no such record and waits to hear them as before.
func TestRestartedFounderStartsAtOnce(t *testing.T) {
	ra, _ := registry.Find("mutex", "ricart-agrawala")
	central, _ := registry.Find("mutex", "central")
	seq, _ := group.Algorithm(group.DefaultAlgorithm)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	config := func(net *transport.Network, i int, lk proc.Algorithm, wait time.Duration) Config {
		ep, _ := net.Endpoint(proc.ID(i))
		return Config{ID: proc.ID(i), N: 3, Transport: ep, Lock: lk, Group: seq, DataDir: dirs[i],
			FoundersWait: wait, Logger: quiet}
	}
	// The founders start together and agree.
	net, err := transport.NewInProc(3, transport.InProcConfig{})
	if err != nil {
		t.Fatal(err)
	}
	nodes := make([]*Node, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() { nodes[i], errs[i] = New(config(net, i, ra, time.Minute)) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
		nodes[i].Close()
	}
	// Node 0 alone, with the same kinds: at once, though it would wait
	// an hour to hear the others.
	startAlone := func(lk proc.Algorithm, wait time.Duration) (time.Duration, error) {
		net, err := transport.NewInProc(3, transport.InProcConfig{})
		if err != nil {
			t.Fatal(err)
		}
		type result struct {
			nd  *Node
			err error
		}
		done := make(chan result, 1)
		begin := time.Now()
		go func() {
			nd, err := New(config(net, 0, lk, wait))
			done <- result{nd, err}
		}()
		select {
		case r := <-done:
			if r.err == nil {
				r.nd.Close()
			}
			return time.Since(begin), r.err
		case <-time.After(30 * time.Second):
			t.Fatalf("a founder restarted alone with %s was not started after 30 s (FoundersWait %v)", lk.Name, wait)
		}
		return 0, nil
	}
	if _, err := startAlone(ra, time.Hour); err != nil {
		t.Fatalf("restarted with the agreed kinds: %v", err)
	}
	// With other kinds there is no record of them: it waits out
	// FoundersWait (it hears nobody against them) before it starts.
	const wait = 300 * time.Millisecond
	took, err := startAlone(central, wait)
	if err != nil {
		t.Fatalf("restarted with other kinds: %v", err)
	}
	if took < wait {
		t.Errorf("restarted with other kinds than agreed, it started after %v, before FoundersWait (%v)", took, wait)
	}
}
