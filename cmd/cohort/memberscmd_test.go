package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cohort-go/cohort/members"
)

// TestNodeJoinsARunningCluster: three `cohort node` processes started by
// `cluster up --members`; a fourth, configured with nothing but one
// member's address (--join) and the cluster's secret, joins them without
// a restart of anyone. A key written through the newcomer is read
// through a founder; every member lists four alive; the newcomer killed
// with SIGKILL is declared dead at every founder. A node with the wrong
// secret never appears.
func TestNodeJoinsARunningCluster(t *testing.T) {
	bin := cohortBinary(t)
	dir := t.TempDir()
	eps := startCluster(t, "--nodes", "3", "--members", "--algo", "mutex/ricart-agrawala", "--dir", dir)

	founder, ports := founderAndPorts(t, dir, 4)
	joiner := func(id int, secret, listen, api string) *exec.Cmd {
		cfg := fmt.Sprintf("id: %d\nlisten: %s\napi: %s\nsecret: %s\ngossip_period: 50ms\n", id, listen, api, secret)
		path := filepath.Join(dir, fmt.Sprintf("joiner%d.yaml", id))
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		c := exec.Command(bin, "node", "--config", path, "--join", "0@"+founder.Peers[0])
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		return c
	}
	newcomer := joiner(7, founder.Secret, ports[0], ports[1])
	waitAPI(t, ports[1])
	joiner(8, strings.Repeat("x", 32), ports[2], ports[3]) // a stranger: the wrong secret

	// holding is whether ep holds the members want in state st.
	holding := func(ep, st string, want ...int) func() bool {
		return func() bool {
			code, out, _ := cli(t, "members", "--endpoints", ep, "--json")
			var ms []struct {
				ID    int    `json:"id"`
				State string `json:"state"`
			}
			if code != 0 || json.Unmarshal([]byte(out), &ms) != nil {
				return false
			}
			got := map[int]string{}
			for _, m := range ms {
				got[m.ID] = m.State
			}
			if _, ok := got[8]; ok {
				t.Fatalf("%s lists the stranger: %v", ep, got)
			}
			for _, id := range want {
				if got[id] != st {
					return false
				}
			}
			return true
		}
	}
	alive := func(ep string, want ...int) func() bool { return holding(ep, "alive", want...) }
	for _, ep := range append(eps, ports[1]) {
		waitUntil(t, ep+" to list four alive", alive(ep, 0, 1, 2, 7))
	}

	waitUntil(t, "the gauges", func() bool {
		return metricsHas(eps[0], func(l string) bool { return l == `cohort_members{state="alive"} 4` })
	})
	if code, out, errs := cli(t, "kv", "put", "color", "blue", "--endpoints", ports[1]); code != 0 {
		t.Fatalf("kv put: %d %s %s", code, out, errs)
	}
	waitUntil(t, "the key at a founder", func() bool {
		code, out, _ := cli(t, "kv", "get", "color", "--endpoints", eps[2])
		return code == 0 && strings.TrimSpace(out) == "blue"
	})
	// Readings and their aggregates: each node sets its own, any node
	// answers for all four.
	for i, ep := range append(eps, ports[1]) {
		if code, out, errs := cli(t, "aggregate", "set", "load", strconv.Itoa(i+1), "--endpoints", ep); code != 0 {
			t.Fatalf("aggregate set at %s: %d %s %s", ep, code, out, errs)
		}
	}
	for agg, want := range map[string]float64{"sum": 10, "count": 4, "average": 2.5} {
		code, out, errs := cli(t, "aggregate", agg, "load", "--endpoints", ports[1], "--json")
		var e members.Estimate
		if code != 0 || json.Unmarshal([]byte(out), &e) != nil || e.None || math.Abs(e.Value-want) > 0.01*want {
			t.Errorf("aggregate %s load: exit %d, %q %s; want %g ± 1%%", agg, code, out, errs, want)
		}
	}
	// The newcomer runs no locks, and says so.
	if code, _, errs := cli(t, "lock", "x", "--endpoints", ports[1], "--timeout", "5s", "--", "true"); code == 0 || !strings.Contains(errs, "joined the running cluster") {
		t.Errorf("a lock through the newcomer: exit %d, %s", code, errs)
	}

	if err := newcomer.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for _, ep := range eps {
		waitUntil(t, ep+" to declare p7 dead", holding(ep, "dead", 7))
	}
}

// TestBadJoinExitsTwo: a bad join value, or a joiner that also lists
// peers, is refused before anything starts, naming the value.
func TestBadJoinExitsTwo(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "n.yaml")
	os.WriteFile(path, []byte("id: 5\nlisten: 127.0.0.1:0\napi: 127.0.0.1:0\nsecret: 0123456789abcdef0123\n"), 0o600)
	for _, c := range []struct{ join, want string }{
		{"nohost", `"nohost"`},
		{"x@127.0.0.1:1", `"x@127.0.0.1:1"`},
		{"5@127.0.0.1:1", "names this node itself"},
		{"0@127.0.0.1", "missing port"},
	} {
		code, _, errs := cli(t, "node", "--config", path, "--join", c.join)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("--join %s: exit %d, %q; want 2 naming %s", c.join, code, errs, c.want)
		}
	}
	os.WriteFile(path, []byte("id: 0\nlisten: 127.0.0.1:0\napi: 127.0.0.1:0\nsecret: 0123456789abcdef0123\njoin: 1@127.0.0.1:9\n"), 0o600)
	if code, _, errs := cli(t, "node", "--config", path); code != 2 || !strings.Contains(errs, "id: 0") {
		t.Errorf("a joiner with id 0: exit %d, %q", code, errs)
	}
	for _, args := range [][]string{{"kv", "nope"}, {"kv", "get"}, {"kv", "get", "a/b"}, {"kv", "put", "k", strings.Repeat("v", 5000)},
		{"aggregate", "median", "load"}, {"aggregate", "set", "load"}, {"aggregate", "set", "load", "NaN"}, {"aggregate", "sum", "a/b"}, {"aggregate", "sum", "load", "3"}} {
		if code, _, errs := cli(t, append(args, "--endpoints", "127.0.0.1:1")...); code != 2 {
			t.Errorf("%v: exit %d, %q; want 2", args, code, errs)
		}
	}
}

// TestRuntimeFailuresExitOne: good usage with no node to answer is a
// failure at run time, exit status 1, not bad usage (2).
func TestRuntimeFailuresExitOne(t *testing.T) {
	for _, args := range [][]string{{"members"}, {"kv", "get", "k"}, {"kv", "put", "k", "v"}, {"kv", "list"}, {"aggregate", "sum", "load"},
		{"queue", "put", "jobs", "x"}, {"queue", "list"}, {"discover", "find", "gpu"}} {
		if code, _, errs := cli(t, append(args, "--endpoints", deadAPI(t), "--timeout", "2s")...); code != 1 || errs == "" {
			t.Errorf("%v with no node answering: exit %d, %q; want 1", args, code, errs)
		}
	}
}

// deadAPI is a loopback address where nothing listens.
func deadAPI(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestBenchGossip runs the membership benchmark small — its table
// counts the false verdicts and the distinct members they wronged — and
// refuses bad sizes with exit 2.
func TestBenchGossip(t *testing.T) {
	code, out, errs := cli(t, "bench", "gossip", "--members", "3", "--broadcasts", "1")
	if code != 0 || !strings.Contains(out, "false suspicions (members)") || !strings.Contains(out, "false deaths (members)") {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	if row := strings.Fields(strings.Split(strings.TrimSpace(out), "\n")[1]); len(row) != 10 || row[7][0] != '(' || row[9][0] != '(' {
		t.Fatalf("want a count and (distinct members) for each verdict: %q", row)
	}
	code, out, errs = cli(t, "bench", "gossip", "--members", "4", "--broadcasts", "2", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rs []struct {
		Members   int     `json:"members"`
		Broadcast int64   `json:"broadcast_ns"`
		Detected  int64   `json:"detected_ns"`
		Bytes     float64 `json:"bytes_per_member_per_s"`
	}
	if err := json.Unmarshal([]byte(out), &rs); err != nil || len(rs) != 1 || rs[0].Members != 4 || rs[0].Broadcast <= 0 || rs[0].Detected <= 0 || rs[0].Bytes <= 0 {
		t.Fatalf("%v: %s", err, out)
	}
	for _, args := range [][]string{{"--members", "2"}, {"--members", "5000"}, {"--period", "1ms"}, {"--broadcasts", "0"}} {
		if code, _, errs := cli(t, append([]string{"bench", "gossip"}, args...)...); code != 2 || !strings.Contains(errs, args[1]) {
			t.Errorf("%v: exit %d, %q", args, code, errs)
		}
	}
}
