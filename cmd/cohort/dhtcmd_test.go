package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestDHTAndScribeCommands: four `cohort node` processes started by
// `cluster up --members --dht`, and a fifth that joins them (--join, dht:
// true). Keys put through some nodes are read through others; two
// `scribe listen` processes receive every multicast published through a
// third node once; then a founder is killed with SIGKILL, and every key
// is still read, and multicasts still reach both listeners.
func TestDHTAndScribeCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("starts five node processes")
	}
	bin := cohortBinary(t)
	dir := t.TempDir()
	eps, pids := startClusterPids(t, "--nodes", "4", "--members", "--dht", "--algo", "mutex/ricart-agrawala", "--dir", dir)

	founder, ports := founderAndPorts(t, dir, 2)
	cfg := fmt.Sprintf("id: 7\nlisten: %s\napi: %s\nsecret: %s\ngossip_period: 50ms\ndht: true\n", ports[0], ports[1], founder.Secret)
	path := filepath.Join(dir, "joiner7.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	joiner := exec.Command(bin, "node", "--config", path, "--join", "0@"+founder.Peers[0])
	if err := joiner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { joiner.Process.Kill(); joiner.Wait() })
	waitAPI(t, ports[1])
	all := append(append([]string{}, eps...), ports[1])

	// The first put through the newcomer waits for its join.
	waitUntil(t, "a put through the newcomer", func() bool {
		code, _, _ := cli(t, "dht", "put", "color", "blue", "--endpoints", ports[1])
		return code == 0
	})
	const keys = 10
	for k := range keys {
		ep := all[k%len(all)]
		if code, out, errs := cli(t, "dht", "put", fmt.Sprintf("key-%d", k), fmt.Sprintf("value-%d", k), "--endpoints", ep); code != 0 {
			t.Fatalf("dht put key-%d at %s: exit %d %s %s", k, ep, code, out, errs)
		}
	}
	readAll := func(eps []string) func() bool {
		return func() bool {
			for k := range keys {
				code, out, _ := cli(t, "dht", "get", fmt.Sprintf("key-%d", k), "--endpoints", eps[(k+1)%len(eps)])
				if code != 0 || strings.TrimSpace(out) != fmt.Sprintf("value-%d", k) {
					return false
				}
			}
			return true
		}
	}
	if !readAll(all)() {
		t.Fatal("a key put was not read through another node")
	}
	if code, out, errs := cli(t, "dht", "get", "color", "--endpoints", eps[2], "--json"); code != 0 || !strings.Contains(out, `"value": "blue"`) {
		t.Errorf("dht get color --json: exit %d %s %s", code, out, errs)
	}
	if code, _, errs := cli(t, "dht", "get", "nothing-here", "--endpoints", eps[1]); code != 1 || !strings.Contains(errs, "nothing-here") {
		t.Errorf("dht get of a missing key: exit %d %s; want 1 naming the key", code, errs)
	}

	// Two listeners: the newcomer and founder 3.
	type listener struct {
		mu    sync.Mutex
		lines []string
	}
	listen := func(ep string) *listener {
		l := &listener{}
		c := exec.Command(bin, "scribe", "listen", "news", "--endpoints", ep)
		out, err := c.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				l.mu.Lock()
				l.lines = append(l.lines, sc.Text())
				l.mu.Unlock()
			}
		}()
		return l
	}
	count := func(l *listener, line string) int {
		l.mu.Lock()
		defer l.mu.Unlock()
		n := 0
		for _, x := range l.lines {
			if x == line {
				n++
			}
		}
		return n
	}
	ls := []*listener{listen(ports[1]), listen(eps[3])}
	probe := 0
	treeUp := func(via string) func() bool {
		return func() bool {
			probe++
			body := fmt.Sprintf("probe-%d", probe)
			if code, _, _ := cli(t, "scribe", "publish", "news", body, "--endpoints", via); code != 0 {
				return false
			}
			for range 50 {
				if count(ls[0], body) > 0 && count(ls[1], body) > 0 {
					return true
				}
				time.Sleep(20 * time.Millisecond)
			}
			return false
		}
	}
	multicast := func(via, round string) {
		t.Helper()
		waitUntil(t, "the group's tree", treeUp(via))
		for i := range 3 {
			if code, _, errs := cli(t, "scribe", "publish", "news", fmt.Sprintf("%s-%d", round, i), "--endpoints", via); code != 0 {
				t.Fatalf("scribe publish: exit %d %s", code, errs)
			}
		}
		waitUntil(t, "every listener delivers each multicast once", func() bool {
			for _, l := range ls {
				for i := range 3 {
					if count(l, fmt.Sprintf("%s-%d", round, i)) != 1 {
						return false
					}
				}
			}
			return true
		})
	}
	multicast(eps[2], "before")

	if err := syscall.Kill(pids[1], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	survivors := []string{eps[0], eps[2], eps[3], ports[1]}
	waitUntil(t, "every key read after the kill", readAll(survivors))
	multicast(eps[2], "after")
}

// TestDHTBadInputExitsTwo: bad keys, groups, values and verbs are
// refused before any request, naming the value.
func TestDHTBadInputExitsTwo(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"dht", "get", "a b"}, `"a b"`},
		{[]string{"dht", "get", strings.Repeat("k", 300)}, "256"},
		{[]string{"dht", "put", "k"}, "want 2 argument(s)"},
		{[]string{"dht", "frob", "k"}, `"frob"`},
		{[]string{"dht", "put", "k", strings.Repeat("v", 70000)}, "at most 65536"},
		{[]string{"scribe", "publish", "bad/group", "x"}, `"bad/group"`},
		{[]string{"scribe", "frob", "g"}, `"frob"`},
		{[]string{"scribe", "listen", "g", "--count", "-1"}, "--count -1"},
		{[]string{"dht", "get", "k"}, "--endpoints"},
	} {
		code, _, errs := cli(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("cohort %s: exit %d, %q; want 2 naming %s", strings.Join(c.args, " ")[:min(60, len(strings.Join(c.args, " ")))], code, errs, c.want)
		}
	}
}
