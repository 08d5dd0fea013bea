package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cohort-go/cohort/lock"
	"github.com/cohort-go/cohort/node"
	"github.com/cohort-go/cohort/queue/queuetest"
)

// TestClusterAddAndRemoveVoters: three `cohort node` processes started by
// `cluster up --members`, and a fourth that joins them. Before it is added
// a lock or a queue through it is refused, naming the command that adds
// it; `cluster add 3` through a founder adds it to the logs of the locks,
// groups and queues, and it grants a lock with a fencing token above every
// earlier one and serves the queues. SIGKILL and restart of the added
// node, then of a founder, lose nothing: each follows the configuration
// its log holds, which no node.yaml lists. `cluster remove 0` takes a
// founder out; the three voters left grant and serve the queues, and node
// 0 says why it no longer does. A producer and a consumer of a replicated
// queue run through all of it: every acknowledged put is delivered, none
// again once its ack was answered. Bad ids exit 2; an unknown node, 1
// with the 404.
func TestClusterAddAndRemoveVoters(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	bin := cohortBinary(t)
	dir := t.TempDir()
	eps, pids := startClusterPids(t, "--nodes", "3", "--members", "--dir", dir)
	h := queuetest.Start("work", "", eps...)
	t.Cleanup(h.Stop)
	progress := func(what string) {
		t.Helper()
		want := h.Acknowledged() + 10
		waitUntil(t, "10 more puts acknowledged "+what+" ("+h.Summary()+")", func() bool { return h.Acknowledged() >= want })
	}
	progress("by the founders")
	founder, ports := founderAndPorts(t, dir, 2)
	joinerCfg := filepath.Join(dir, "joiner3.yaml")
	cfg := fmt.Sprintf("id: 3\nlisten: %s\napi: %s\nsecret: %s\ngossip_period: 50ms\ndata_dir: %s\n",
		ports[0], ports[1], founder.Secret, filepath.Join(dir, "joiner3"))
	if err := os.WriteFile(joinerCfg, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var procs []*exec.Cmd
	t.Cleanup(func() {
		for _, c := range procs {
			c.Process.Kill()
			c.Wait()
		}
	})
	start := func(args ...string) int {
		t.Helper()
		c := exec.Command(bin, args...)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, c)
		return c.Process.Pid
	}
	kill := func(pid int) {
		t.Helper()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "the killed node to exit", func() bool { return exited(pid) })
	}
	joiner := start("node", "--config", joinerCfg, "--join", "0@"+founder.Peers[0])
	waitAPI(t, ports[1])

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var last uint64
	lockAt := func(ep string) {
		t.Helper()
		h, err := (&lock.Client{Endpoints: []string{ep}}).Acquire(ctx, "jobs", 5*time.Second)
		if err != nil {
			t.Fatalf("lock through %s: %v", ep, err)
		}
		if h.Token <= last {
			t.Fatalf("token %d through %s after %d", h.Token, ep, last)
		}
		last = h.Token
		if err := h.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	voters := func(ep string) []int {
		code, out, _ := cli(t, "cluster", "voters", "--endpoints", ep, "--json")
		var vs node.Voters
		if code != 0 || json.Unmarshal([]byte(out), &vs) != nil || len(vs.Logs) != 3 {
			return nil
		}
		for _, l := range vs.Logs {
			if !l.Committed || !slices.Equal(l.Voters, vs.Logs[0].Voters) {
				return nil
			}
		}
		return vs.Logs[0].Voters
	}
	lockAt(eps[0])

	waitUntil(t, "node 3 alive at node 1", func() bool {
		code, out, _ := cli(t, "members", "--endpoints", eps[1], "--json")
		return code == 0 && strings.Contains(out, `"id": 3`) && !strings.Contains(out, `"suspect"`)
	})
	// Its data_dir and kinds are known: it may be added.
	waitUntil(t, "node 3 listed with its data_dir and kinds at node 1", func() bool {
		code, out, _ := cli(t, "members", "--endpoints", eps[1])
		return code == 0 && regexp.MustCompile(`(?m)^3\s+\S+\s+alive\s+\d+\s+yes\s+group=\S+ lock=raft-lock queues=replicated\s*$`).MatchString(out)
	})
	if code, _, errs := cli(t, "lock", "x", "--endpoints", ports[1], "--timeout", "3s", "--", "true"); code == 0 || !strings.Contains(errs, "cohort cluster add 3") {
		t.Errorf("a lock through node 3 before it is added: exit %d, %s", code, errs)
	}
	if code, _, errs := cli(t, "queue", "poll", "work", "--endpoints", ports[1], "--timeout", "3s"); code != 1 || !strings.Contains(errs, "HTTP 503") || !strings.Contains(errs, "queues") || !strings.Contains(errs, "cohort cluster add 3") {
		t.Errorf("a queue through node 3 before it is added: exit %d, %s", code, errs)
	}
	for _, bad := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"cluster", "add", "three", "--endpoints", eps[0]}, 2, "want a number"},
		{[]string{"cluster", "add", "--endpoints", eps[0]}, 2, "want one node id"},
		{[]string{"cluster", "add", "3"}, 2, "--endpoints"},
		{[]string{"cluster", "add", "9", "--endpoints", eps[0]}, 1, "HTTP 404: not a member: node 9 has not joined the cluster"},
		{[]string{"cluster", "remove", "9", "--endpoints", eps[0]}, 1, "HTTP 404: not a member: node 9 is not a voter"},
		{[]string{"cluster", "add", "2", "--endpoints", eps[0]}, 1, "HTTP 409: refused: node 2 is a voter already"},
	} {
		if code, _, errs := cli(t, bad.args...); code != bad.code || !strings.Contains(errs, bad.says) {
			t.Errorf("cohort %s: exit %d, %q; want %d naming %q", strings.Join(bad.args, " "), code, errs, bad.code, bad.says)
		}
	}
	if code, out, errs := cli(t, "cluster", "add", "3", "--endpoints", eps[1]); code != 0 || strings.Count(out, "0,1,2,3") != 3 {
		t.Fatalf("cluster add 3: exit %d, %s %s; want it in the logs of the locks, groups and queues", code, out, errs)
	}
	lockAt(ports[1])
	if err := h.Put(ctx, ports[1]); err != nil {
		t.Fatalf("a put through the added node 3: %v", err)
	}
	h.Use(append(slices.Clone(eps), ports[1])...)
	progress("through four voters")

	kill(joiner)
	joiner = start("node", "--config", joinerCfg, "--join", "0@"+founder.Peers[0])
	waitAPI(t, ports[1])
	waitUntil(t, "the restarted node 3 to follow [0 1 2 3]", func() bool { return slices.Equal(voters(ports[1]), []int{0, 1, 2, 3}) })
	lockAt(ports[1])
	progress("after SIGKILL and restart of node 3")

	kill(pids[1])
	lockAt(ports[1]) // three of four voters up
	pids[1] = start("node", "--config", filepath.Join(dir, "node1.yaml"))
	waitAPI(t, eps[1])
	waitUntil(t, "the restarted node 1 to follow [0 1 2 3]", func() bool { return slices.Equal(voters(eps[1]), []int{0, 1, 2, 3}) })
	lockAt(eps[1])
	progress("after SIGKILL and restart of node 1")

	if code, out, errs := cli(t, "cluster", "remove", "0", "--endpoints", ports[1]); code != 0 || strings.Count(out, "1,2,3") != 3 || strings.Contains(out, "0,1,2,3") {
		t.Fatalf("cluster remove 0: exit %d, %s %s; want it out of the logs of the locks, groups and queues", code, out, errs)
	}
	h.Use(ports[1], eps[1], eps[2])
	for _, ep := range []string{ports[1], eps[1], eps[2]} {
		lockAt(ep)
	}
	waitUntil(t, "node 0 to say it was removed", func() bool {
		code, _, errs := cli(t, "lock", "x", "--endpoints", eps[0], "--timeout", "3s", "--", "true")
		return code != 0 && strings.Contains(errs, "was removed")
	})
	waitUntil(t, "node 0 to say it no longer serves the queues", func() bool {
		code, _, errs := cli(t, "queue", "poll", "work", "--endpoints", eps[0], "--timeout", "3s")
		return code == 1 && strings.Contains(errs, "HTTP 503") && strings.Contains(errs, "was removed") && strings.Contains(errs, "queues")
	})
	progress("after node 0 was removed")
	if err := h.Drain(ctx); err != nil {
		t.Fatalf("%v (%s)", err, h.Summary())
	}
	if err := h.Check(); err != nil {
		t.Fatalf("%v (%s)", err, h.Summary())
	}
	t.Log(h.Summary())
}

// TestJoinerOfOtherKindsExits2: a node that joins a `cluster up
// --members` cluster (replicated queues, the default) with queues: local
// in its node.yaml is refused as it starts — exit 2, naming both kinds —
// rather than joined, to be half added by `cluster add` later; the
// founders list it in none of their logs.
func TestJoinerOfOtherKindsExits2(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	dir := t.TempDir()
	eps := startCluster(t, "--nodes", "3", "--members", "--dir", dir)
	founder, ports := founderAndPorts(t, dir, 2)
	path := filepath.Join(dir, "joiner3.yaml")
	cfg := fmt.Sprintf("id: 3\nlisten: %s\napi: %s\nsecret: %s\ngossip_period: 50ms\ndata_dir: %s\nqueues: local\n",
		ports[0], ports[1], founder.Secret, filepath.Join(dir, "joiner3"))
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := cli(t, "node", "--config", path, "--join", "0@"+founder.Peers[0])
	if code != 2 || !strings.Contains(errs, "queues: local at node 3, replicated at node 0") {
		t.Fatalf("a joiner with queues: local: exit %d, %s; want 2 naming both kinds of queues", code, errs)
	}
	code, out, _ := cli(t, "cluster", "voters", "--endpoints", eps[0], "--json")
	var vs node.Voters
	if code != 0 || json.Unmarshal([]byte(out), &vs) != nil || len(vs.Logs) != 3 {
		t.Fatalf("cluster voters: exit %d, %s", code, out)
	}
	for _, l := range vs.Logs {
		if !slices.Equal(l.Voters, []int{0, 1, 2}) {
			t.Errorf("%s: voters %v; want the founders", l.Service, l.Voters)
		}
	}
}

// TestWipedJoinerExits2: a node that joined a `cluster up --members`
// cluster, was added to the voters and granted a lock, and comes back
// with its data_dir emptied is refused as it starts — exit 2, naming its
// directory and the remedy — rather than rejoining as a voter that has
// forgotten its vote and its log. Restarted from its directory restored,
// it grants again.
func TestWipedJoinerExits2(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	bin := cohortBinary(t)
	dir := t.TempDir()
	eps := startCluster(t, "--nodes", "3", "--members", "--dir", dir)
	founder, ports := founderAndPorts(t, dir, 2)
	data := filepath.Join(dir, "joiner3")
	path := filepath.Join(dir, "joiner3.yaml")
	cfg := fmt.Sprintf("id: 3\nlisten: %s\napi: %s\nsecret: %s\ngossip_period: 50ms\ndata_dir: %s\n",
		ports[0], ports[1], founder.Secret, data)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	join := func() *exec.Cmd {
		t.Helper()
		c := exec.CommandContext(ctx, bin, "node", "--config", path, "--join", "0@"+founder.Peers[0])
		var errb strings.Builder
		c.Stderr = &errb
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			c.Process.Kill()
			c.Wait()
		})
		return c
	}
	lockAt := func(ep string) {
		t.Helper()
		h, err := (&lock.Client{Endpoints: []string{ep}}).Acquire(ctx, "jobs", 5*time.Second)
		if err != nil {
			t.Fatalf("lock through %s: %v", ep, err)
		}
		if err := h.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	joiner := join()
	waitAPI(t, ports[1])
	waitUntil(t, "node 3 listed with its data_dir at node 1", func() bool {
		code, out, _ := cli(t, "members", "--endpoints", eps[1])
		return code == 0 && regexp.MustCompile(`(?m)^3\s+\S+\s+alive\s+\d+\s+yes\s`).MatchString(out)
	})
	if code, out, errs := cli(t, "cluster", "add", "3", "--endpoints", eps[1]); code != 0 {
		t.Fatalf("cluster add 3: exit %d, %s %s", code, out, errs)
	}
	lockAt(ports[1])
	// Each founder records, in its data_dir/storage, the nodes it heard
	// with state: a record "ID time" (framed by length and checksum, the
	// text as it is).
	waitUntil(t, "node 3 recorded with state by every founder", func() bool {
		for i := range 3 {
			b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprint("node", i), "storage", "founders-with-state"))
			if !regexp.MustCompile(`3 \d{4}-\d\d-\d\dT`).Match(b) {
				return false
			}
		}
		return true
	})

	if err := joiner.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	joiner.Wait()
	backup := filepath.Join(t.TempDir(), "backup")
	if err := os.Rename(data, backup); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	wiped := join()
	done := make(chan error, 1)
	go func() { done <- wiped.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		errs := wiped.Stderr.(*strings.Builder).String()
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Fatalf("the wiped joiner: %v, %s; want exit 2", err, errs)
		}
		for _, says := range []string{"node 3 may not join", "lost its state", filepath.Join(data, "storage") + " holds none", "restore the directory", "cohort cluster remove 3"} {
			if !strings.Contains(errs, says) {
				t.Errorf("the wiped joiner says %q; want it to say %q", errs, says)
			}
		}
	case <-time.After(30 * time.Second):
		t.Fatal("node 3, which joined, runs with its data_dir emptied")
	}
	lockAt(eps[0]) // three of the four voters

	if err := os.RemoveAll(data); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(backup, data); err != nil {
		t.Fatal(err)
	}
	join()
	waitAPI(t, ports[1])
	lockAt(ports[1])
}
