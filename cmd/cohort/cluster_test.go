package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildCohort builds the command once per test binary.
var buildOnce struct {
	sync.Once
	path string
	err  error
}

func cohortBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "cohort-bin-")
		if err != nil {
			buildOnce.err = err
			return
		}
		buildOnce.path = filepath.Join(dir, "cohort")
		out, err := exec.Command("go", "build", "-o", buildOnce.path, ".").CombinedOutput()
		if err != nil {
			buildOnce.err = err
			t.Logf("%s", out)
		}
	})
	if buildOnce.err != nil {
		t.Fatal(buildOnce.err)
	}
	return buildOnce.path
}

// startCluster runs "cohort cluster up" and returns its endpoints; the
// cluster is stopped (SIGTERM) when the test ends.
func startCluster(t *testing.T, args ...string) []string {
	t.Helper()
	eps, _ := startClusterPids(t, args...)
	return eps
}

// startClusterPids is startCluster that also returns the nodes' pids.
func startClusterPids(t *testing.T, args ...string) ([]string, []int) {
	t.Helper()
	bin := cohortBinary(t)
	cmd := exec.Command(bin, append([]string{"cluster", "up", "--json"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("cluster did not stop cleanly: %v", err)
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("cluster did not stop within 20s of SIGTERM")
		}
	}
	var once sync.Once
	clusters.Lock()
	clusters.stop = append(clusters.stop, func() { once.Do(stop) })
	clusters.Unlock()
	t.Cleanup(func() { once.Do(stop) })
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case line := <-lines:
		var up struct {
			Endpoints []string `json:"endpoints"`
			Pids      []int    `json:"pids"`
		}
		if err := json.Unmarshal([]byte(line), &up); err != nil || len(up.Endpoints) == 0 {
			t.Fatalf("first line %q is not the announcement: %v", line, err)
		}
		return up.Endpoints, up.Pids
	case <-time.After(30 * time.Second):
		t.Fatal("the cluster did not come up within 30s")
	}
	return nil, nil
}

// Concurrent "cohort lock" processes increment a counter file: with mutual
// exclusion none of the read-modify-write cycles is lost, and the fencing
// tokens they saw rise in the order of the critical sections.
func testLockedCounter(t *testing.T, endpoints []string) {
	bin := cohortBinary(t)
	dir := t.TempDir()
	counter := filepath.Join(dir, "counter")
	tokens := filepath.Join(dir, "tokens")
	os.WriteFile(counter, []byte("0"), 0o644)
	// Read, think, write: a lost update shows if two run at once.
	script := `n=$(cat "$1"); sleep 0.01; echo $((n+1)) > "$1"; echo "$COHORT_FENCING_TOKEN" >> "$2"`
	const workers, rounds = 4, 5
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ep := endpoints[w%len(endpoints)]
			for r := 0; r < rounds; r++ {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				out, err := exec.CommandContext(ctx, bin, "lock", "counter", "--endpoints", ep, "--ttl", "5s", "--",
					"sh", "-c", script, "sh", counter, tokens).CombinedOutput()
				cancel()
				if err != nil {
					t.Errorf("cohort lock: %v\n%s", err, out)
					return
				}
			}
		}()
	}
	wg.Wait()
	b, _ := os.ReadFile(counter)
	if got := strings.TrimSpace(string(b)); got != strconv.Itoa(workers*rounds) {
		t.Fatalf("counter = %s after %d locked increments: updates were lost", got, workers*rounds)
	}
	b, _ = os.ReadFile(tokens)
	var last uint64
	for i, line := range strings.Fields(string(b)) {
		tok, err := strconv.ParseUint(line, 10, 64)
		if err != nil || tok <= last {
			t.Fatalf("token %d is %q after %d: fencing tokens must rise", i, line, last)
		}
		last = tok
	}
}

func TestClusterOfProcessesLocks(t *testing.T) {
	traces := t.TempDir()
	endpoints := startCluster(t, "--nodes", "3", "--algo", "mutex/ricart-agrawala", "--trace-dir", traces)
	testLockedCounter(t, endpoints)
	// Node 0 holds two locks at once: the trace's events name their lock,
	// and the checkers judge each lock apart (ME1 was reported broken).
	bin := cohortBinary(t)
	if out, err := exec.Command(bin, "lock", "a", "--endpoints", endpoints[0], "--",
		bin, "lock", "b", "--endpoints", endpoints[0], "--", "true").CombinedOutput(); err != nil {
		t.Fatalf("nested locks: %v\n%s", err, out)
	}
	// Files read while the nodes write them: an election's heartbeats
	// never stop, so a receipt's send may not be in its sender's file yet;
	// --cut merges their largest consistent cut, which passes the checkers.
	if out, err := exec.Command(bin, "elect", "demo", "--campaign", "--endpoints", strings.Join(endpoints, ","), "--", "true").CombinedOutput(); err != nil {
		t.Fatalf("elect --campaign: %v\n%s", err, out)
	}
	t.Run("merged while it runs, cut to a consistent cut", func(t *testing.T) {
		now := filepath.Join(t.TempDir(), "now.jsonl")
		args := []string{"trace", "merge", "--cut", "-o", now}
		for i := range 3 {
			args = append(args, filepath.Join(traces, "node"+strconv.Itoa(i), "leader.jsonl"))
		}
		for round := range 3 {
			if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
				t.Fatalf("merge --cut: %v\n%s", err, out)
			}
			out, err := exec.Command(bin, "trace", "check", now).CombinedOutput()
			if err != nil || !regexp.MustCompile(`integrity\s+ok`).Match(out) {
				t.Fatalf("round %d: trace check of the running cluster's cut: %v\n%s", round, err, out)
			}
		}
	})
	t.Run("its merged trace passes the checkers", func(t *testing.T) {
		stopClusters(t)
		merged := filepath.Join(t.TempDir(), "run.jsonl")
		args := []string{"trace", "merge", "-o", merged}
		for i := 0; i < 3; i++ {
			args = append(args, filepath.Join(traces, "node"+strconv.Itoa(i)+".jsonl"))
		}
		if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
			t.Fatalf("merge: %v\n%s", err, out)
		}
		out, err := exec.Command(bin, "trace", "check", merged).CombinedOutput()
		if err != nil || !regexp.MustCompile(`ME1\s+ok`).Match(out) {
			t.Fatalf("trace check of the live run: %v\n%s", err, out)
		}
		if !bytesContain(merged, `"svc":"lock/a"`) || !bytesContain(merged, `"svc":"lock/b"`) {
			t.Error("the trace's events do not name their locks")
		}
		// The nodes recorded Ricart–Agrawala's states with their events
		// (trace_states defaults to on), and the viewer shows them.
		t.Run("the viewer shows its states", func(t *testing.T) {
			ctx := browser(t)
			tr, err := readTrace(merged)
			if err != nil {
				t.Fatal(err)
			}
			held, states := -1, 0
			for i, e := range tr.Events {
				if e.State == nil {
					continue
				}
				states++
				if held < 0 && stateField(t, e, "state") == "HELD" {
					held = i
				}
			}
			if held < 0 {
				t.Fatalf("the live trace records no HELD state (%d states)", states)
			}
			openPage(t, ctx, "view", merged)
			if s := eval[int](t, ctx, `window.cohortViewer.stats().states`); s != states {
				t.Errorf("the page counts %d described states, the trace has %d", s, states)
			}
			eval[int](t, ctx, `window.cohortViewer.jump(`+itoa(held)+`)`)
			if got := text(t, ctx, "#state"); !strings.Contains(got, "stateHELD") || !strings.Contains(got, "request"+stateField(t, tr.Events[held], "request")) {
				t.Errorf("at #%d the state panel shows %q; want HELD and its request", held, got)
			}
			screenshot(t, ctx, "viewer-live-state.png")
		})
	})
}

func TestClusterInProcLocks(t *testing.T) {
	endpoints := startCluster(t, "--nodes", "3", "--inproc", "--algo", "mutex/lamport")
	testLockedCounter(t, endpoints)
}

func TestLockPassesTheExitStatus(t *testing.T) {
	endpoints := startCluster(t, "--nodes", "2", "--inproc")
	bin := cohortBinary(t)
	cmd := exec.Command(bin, "lock", "x", "--endpoints", strings.Join(endpoints, ","), "--", "sh", "-c", "exit 7")
	err := cmd.Run()
	var ee *exec.ExitError
	if !errorsAs(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("exit %v, want the command's status 7", err)
	}
	out, err := exec.Command(bin, "lock", "x", "--endpoints", "127.0.0.1:1", "--timeout", "2s", "--", "true").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "127.0.0.1:1") {
		t.Errorf("unreachable endpoint: %v %s, want an error naming it", err, out)
	}
}

func errorsAs(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	if ok {
		*target = e
	}
	return ok
}

// clusters stops the clusters a test started before its end, so that
// their nodes flush their traces.
var clusters struct {
	sync.Mutex
	stop []func()
}

func stopClusters(t *testing.T) {
	clusters.Lock()
	defer clusters.Unlock()
	for _, f := range clusters.stop {
		f()
	}
	clusters.stop = nil
}

// The clocks family on a cluster of five processes: Lamport's correction
// holds the clock condition on the merged live trace.
func TestClusterOfProcessesRunsClocks(t *testing.T) {
	traces := t.TempDir()
	startCluster(t, "--nodes", "5", "--run", "clocks/lamport", "--trace-dir", traces)
	// The demonstration ticks 20 times, a millisecond apart, and falls
	// silent: wait until every node's trace stops growing.
	deadline := time.Now().Add(20 * time.Second)
	last := int64(-1)
	for {
		var size int64
		for i := 0; i < 5; i++ {
			if st, err := os.Stat(filepath.Join(traces, "node"+strconv.Itoa(i)+".jsonl")); err == nil {
				size += st.Size()
			}
		}
		if size == last && size > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the traces did not settle")
		}
		last = size
		time.Sleep(300 * time.Millisecond)
	}
	stopClusters(t)
	bin := cohortBinary(t)
	merged := filepath.Join(t.TempDir(), "clocks.jsonl")
	args := []string{"trace", "merge", "-o", merged}
	for i := 0; i < 5; i++ {
		args = append(args, filepath.Join(traces, "node"+strconv.Itoa(i)+".jsonl"))
	}
	if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		t.Fatalf("merge: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "trace", "check", merged).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "clock-condition  ok") {
		t.Fatalf("trace check of the live clocks run: %v\n%s", err, out)
	}
	if !bytesContain(merged, `"type":"stamp"`) {
		t.Fatal("the live run recorded no stamps: the clocks never ran")
	}
}

func bytesContain(path, s string) bool {
	b, _ := os.ReadFile(path)
	return strings.Contains(string(b), s)
}

// TestTextbookLockWarns: on a cluster whose locks run a textbook
// algorithm, cohort lock says so before it acts, naming the algorithm and
// what it does not survive; the command still runs.
func TestTextbookLockWarns(t *testing.T) {
	endpoints := startCluster(t, "--nodes", "2", "--inproc", "--algo", "mutex/lamport")
	bin := cohortBinary(t)
	var stderr strings.Builder
	cmd := exec.Command(bin, "lock", "x", "--endpoints", strings.Join(endpoints, ","), "--", "true")
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("cohort lock: %v\n%s", err, stderr.String())
	}
	if want := "warning: the cluster's locks run on lamport, a textbook algorithm: a restarted node rejoins, but while a node is down or cut off the lock waits for it"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
}

// cluster up --group names the algorithm behind the groups: a multicast
// algorithm or raft; anything else, or with --inproc, is bad usage.
func TestClusterUpChecksTheGroupAlgorithm(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--group", "nope"}, `--group: `},
		{[]string{"--group", "raft", "--inproc"}, `--group: processes only`},
		{[]string{"--inproc", "--dir", "d"}, `--dir: processes only`},
		{[]string{"--inproc", "--trace-dir", "d"}, `--trace-dir: processes only`},
		{[]string{"--inproc", "--run", "clocks/lamport"}, `--run: processes only`},
		{[]string{"--inproc", "--members"}, `--members: processes only`},
	} {
		code, _, errs := cli(t, append([]string{"cluster", "up"}, c.args...)...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("cluster up %s: exit %d, %q; want exit 2 and %q", strings.Join(c.args, " "), code, errs, c.want)
		}
	}
}

// TestClusterUpRefusesADirInUse (found by hand): a second cluster up on
// the directory of a running one rewrote the running nodes' configuration
// (new ports, a new secret) and then waited 15 s for nodes that could not
// start. It exits 2 at once, naming the directory, and leaves the
// configuration alone; the running cluster still serves.
func TestClusterUpRefusesADirInUse(t *testing.T) {
	dir := t.TempDir()
	endpoints := startCluster(t, "--nodes", "3", "--dir", dir)
	before, err := os.ReadFile(filepath.Join(dir, "node0.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	code, _, stderr := binCLI(t, "cluster", "up", "--nodes", "3", "--dir", dir)
	if code != 2 || !strings.Contains(stderr, "--dir "+dir) || !strings.Contains(stderr, "in use") {
		t.Fatalf("second cluster up: exit %d, %q; want 2 naming %s in use", code, stderr, dir)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "node0.yaml")); string(after) != string(before) {
		t.Errorf("the running node's configuration was rewritten:\n%s\nnow\n%s", before, after)
	}
	code, out, stderr := binCLI(t, "lock", "x", "--endpoints", strings.Join(endpoints, ","), "--", "echo", "ran")
	if code != 0 || !strings.Contains(out, "ran") {
		t.Errorf("lock on the running cluster: exit %d, %q %q", code, out, stderr)
	}
}

// TestClusterUpKilledStopsItsNodes (found by hand): cluster up killed
// with SIGKILL left its nodes running, orphaned, holding their ports and
// data directories. They now stop with it.
func TestClusterUpKilledStopsItsNodes(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the kernel signals a child at its parent's death on Linux only")
	}
	cmd := exec.Command(cohortBinary(t), "cluster", "up", "--json", "--nodes", "3", "--dir", t.TempDir())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var up struct{ Pids []int }
	if err := json.NewDecoder(stdout).Decode(&up); err != nil || len(up.Pids) != 3 {
		cmd.Process.Kill()
		t.Fatalf("cluster up printed no pids: %v", err)
	}
	t.Cleanup(func() {
		for _, pid := range up.Pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range up.Pids {
		for running(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("node %d still runs 30 s after its cluster up was killed", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// running says whether process pid exists and has not exited (a zombie,
// exited and not yet reaped, has not).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// TestClusterUpEndsWhenANodeCannotStart: a node that exits while the
// cluster comes up (here its data directory is a file) ends cluster up at
// once with exit 1, naming the node, rather than after the wait for the
// nodes' health (15 s) with no word of why.
func TestClusterUpEndsWhenANodeCannotStart(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "node1"), []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := binCLI(t, "cluster", "up", "--nodes", "3", "--dir", dir)
	if code != 1 || !strings.Contains(stderr, "node 1 exited") || strings.Contains(stderr, "did not come up") {
		t.Fatalf("exit %d, %q; want 1 and node 1 exited", code, stderr)
	}
}

// Two founders started with other locks behind the service: neither has
// a majority that agrees with it, so both refuse to start, exit 2, naming
// both values.
func TestFoundersOfOtherKindsExitTwo(t *testing.T) {
	dir := t.TempDir()
	var addrs [2]string
	for i := range addrs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs[i] = ln.Addr().String()
		ln.Close()
	}
	algos := [2]string{"ricart-agrawala", "central"}
	var wg sync.WaitGroup
	codes, errs := [2]int{}, [2]string{}
	for i := range 2 {
		p := filepath.Join(dir, fmt.Sprintf("node%d.yaml", i))
		yaml := fmt.Sprintf("id: %d\nlisten: %s\napi: 127.0.0.1:0\npeers: {0: %s, 1: %s}\nsecret: 0123456789abcdef\nlock: %s\ngroup: total-sequencer\n",
			i, addrs[i], addrs[0], addrs[1], algos[i])
		if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { codes[i], _, errs[i] = binCLI(t, "node", "--config", p) })
	}
	wg.Wait()
	for i := range 2 {
		want := fmt.Sprintf("lock: %s at node %d, %s at node %d", algos[i], i, algos[1-i], 1-i)
		if codes[i] != 2 || !strings.Contains(errs[i], want) {
			t.Errorf("node %d: exit %d, %q; want 2 naming %q", i, codes[i], errs[i], want)
		}
		t.Logf("node %d: exit %d: %s", i, codes[i], errs[i])
	}
}
