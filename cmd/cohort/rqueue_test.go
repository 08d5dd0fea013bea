package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cohort-go/cohort/node"
	"github.com/cohort-go/cohort/queue"
)

// The queues of `cohort cluster up` are replicated on the log (R3): a
// message put through node 0 is got through node 2 while node 0 is
// killed with SIGKILL; node 1 is killed too, and puts go on through the
// others; then every node is killed and the cluster started again on its
// data directories. Every acknowledged put is delivered, in order, and
// none acked is delivered again.
func TestReplicatedQueueSurvivesKillAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	bin := cohortBinary(t)
	dir := t.TempDir()
	eps, pids := startClusterPids(t, "--nodes", "3", "--dir", dir)
	var restarted []*exec.Cmd
	t.Cleanup(func() {
		for _, c := range restarted {
			c.Process.Kill()
			c.Wait()
		}
	})
	for _, ep := range eps {
		var h node.Health
		resp, err := http.Get("http://" + ep + "/v1/health")
		if err != nil {
			t.Fatal(err)
		}
		json.NewDecoder(resp.Body).Decode(&h)
		resp.Body.Close()
		if h.Queues != "raft-queue" {
			t.Fatalf("%s: queues %q, want raft-queue (replicated, the default)", ep, h.Queues)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := func(i int) *queue.Client { return &queue.Client{Endpoints: []string{eps[i]}} }
	var put []string
	putN := func(via, n int) {
		t.Helper()
		for range n {
			body := fmt.Sprintf("m%d", len(put))
			if _, err := client(via).Put(ctx, "jobs", []byte(body)); err != nil {
				t.Fatalf("put %s through node %d: %v", body, via, err)
			}
			put = append(put, body)
		}
	}
	var acked []string
	getN := func(via, n int) {
		t.Helper()
		for len(acked) < n {
			ms, err := client(via).Get(ctx, "jobs", queue.GetOptions{Count: n - len(acked), Wait: 20 * time.Second, Visibility: time.Minute})
			if err != nil {
				t.Fatalf("get through node %d: %v", via, err)
			}
			for _, m := range ms {
				acked = append(acked, string(m.Body))
				if err := client(via).AckLease(ctx, "jobs", m.Lease, m.ID); err != nil {
					t.Fatalf("ack through node %d: %v", via, err)
				}
			}
		}
	}
	kill := func(i int) {
		t.Helper()
		if err := syscall.Kill(pids[i], syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "the killed node to exit", func() bool { return exited(pids[i]) })
	}
	restart := func(i int) {
		t.Helper()
		c := exec.Command(bin, "node", "--config", filepath.Join(dir, "node"+strconv.Itoa(i)+".yaml"))
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		restarted = append(restarted, c)
		pids[i] = c.Process.Pid
		waitAPI(t, eps[i])
	}

	putN(0, 30)
	if code, out, errs := cli(t, "queue", "list", "--endpoints", eps[1]); code != 0 || !strings.Contains(out, "replicated") || !strings.Contains(out, "jobs") {
		t.Fatalf("cohort queue list through node 1: %d %q %s", code, out, errs)
	}
	kill(0)
	getN(2, 10) // through another node, with node 0 gone
	restart(0)
	kill(1)
	putN(0, 10) // through the restarted node, with node 1 gone
	restart(1)
	if code, out, errs := cli(t, "queue", "put", "jobs", fmt.Sprintf("m%d", len(put)), "--endpoints", eps[1]); code != 0 {
		t.Fatalf("cohort queue put: %d %s %s", code, out, errs)
	}
	put = append(put, fmt.Sprintf("m%d", len(put)))

	// Every node killed, and the cluster started again.
	for i := range 3 {
		kill(i)
	}
	stopClusters(t)
	eps = startCluster(t, "--nodes", "3", "--dir", dir)
	code, out, errs := cli(t, "queue", "get", "jobs", "--count", "1", "--timeout", "30s", "--endpoints", eps[2])
	if code != 0 {
		t.Fatalf("cohort queue get after the full restart: %d %s", code, errs)
	}
	acked = append(acked, strings.TrimSpace(out))
	getN(1, len(put))
	if !slices.Equal(acked, put) {
		t.Fatalf("got %q\nwant %q", acked, put)
	}
	if ms, err := client(0).Get(ctx, "jobs", queue.GetOptions{NoWait: true}); err != nil || len(ms) != 0 {
		t.Fatalf("after every message was acked: %+v, %v", ms, err)
	}
	t.Logf("%d messages put and got in order through SIGKILLs of nodes 0 and 1 and of the whole cluster", len(put))
}

// queues: in node.yaml: bad values and combinations exit 2 naming them,
// and leave no data_dir behind.
func TestNodeQueuesSettingBadInput(t *testing.T) {
	dir := t.TempDir()
	base := "id: 0\nlisten: x:1\napi: x:2\npeers: {0: a:1}\nsecret: 0123456789abcdef\n"
	data := filepath.Join(dir, "d")
	for text, want := range map[string]string{
		base + "data_dir: d\nqueues: r3\n":                                           `queues: "r3": want replicated`,
		base + "lock: ricart-agrawala\ngroup: total-sequencer\nqueues: replicated\n": "queues: replicated: the queues are replicated on the log of lock: raft",
		base + "data_dir: d\nqueue_limits: {messages: -1}\n":                         "queue_limits.messages: -1: want a positive number",
		base + "data_dir: d\nqueue_limits: {bytes: -1}\n":                            "queue_limits.bytes: -1",
		base + "data_dir: d\nqueue_limits: {queues: -3}\n":                           "queue_limits.queues: -3",
		base + "data_dir: d\nqueue_limits: {state: -1}\n":                            "queue_limits.state: -1",
		base + "data_dir: d\nqueue_limits: {state: 67108864}\n":                      "queue_limits: queue limits: state 67108864 bytes (with 1024 queues) makes snapshots of up to",
		base + "data_dir: d\nqueue_limits: {queues: 1000000}\n":                      "queue_limits: queue limits: queues 1000000: their names alone",
		base + "data_dir: d\nqueues: local\nqueue_limits: {messages: 5}\n":           "queue_limits.messages: 5: bounds replicated queues",
		base + "data_dir: d\nqueue_limits: {sate: 5}\n":                              "sate",
	} {
		text = strings.ReplaceAll(text, "data_dir: d\n", "data_dir: "+data+"\n")
		p := filepath.Join(dir, "node.yaml")
		os.WriteFile(p, []byte(text), 0o644)
		code, _, errs := cli(t, "node", "--config", p)
		if code != 2 || !strings.Contains(errs, want) {
			t.Errorf("%q: exit %d, %q; want 2 and %q", text, code, errs, want)
		}
		if _, err := os.Stat(data); !os.IsNotExist(err) {
			t.Errorf("%q: refused, yet data_dir %s was made (%v)", text, data, err)
			os.Remove(data)
		}
	}
}
