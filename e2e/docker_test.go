package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/lock"
	"github.com/cohort-go/cohort/trace"
)

const nodes = 5

// project names the running test's containers and network, one per test
// (up sets it): two runs on one machine (two checkouts, a test and a CI
// job) do not collide, and neither does a test with what an earlier one
// could not remove; apiPorts are the host's loopback ports of the nodes'
// APIs, free when the run began and the same through container restarts.
var (
	project   = fmt.Sprintf("cohorte2e%d", os.Getpid())
	imageName = "cohort:" + project
	apiPorts  = freePorts(nodes)
	projects  int // the tests that called up so far
)

// container is node i's container.
func container(i int) string { return fmt.Sprintf("%s-node%d", project, i) }

// freePorts returns n loopback ports nobody listens on, below the
// kernel's range of ephemeral ports (32768 and up on Linux): docker binds
// them only when the cluster starts, and a port the kernel could hand to
// another test's listener meanwhile would collide. Two runs pick at
// random among 12,000.
func freePorts(n int) []int {
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(time.Now().UnixNano())))
	var ps []int
	for len(ps) < n {
		p := 20000 + rng.IntN(12000)
		if slices.Contains(ps, p) {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue // taken
		}
		ln.Close()
		ps = append(ps, p)
	}
	return ps
}

func run(t *testing.T, timeout time.Duration, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func repoRoot(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(wd)
}

// apiToken is the container cluster's API token: the API listens on every
// interface of its container, which a node allows only with a token.
const apiToken = "e2e-api-token-0123456789"

// bearer adds the token to every request.
type bearer struct{ base http.RoundTripper }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+apiToken)
	return b.base.RoundTrip(r)
}

// api is an HTTP client of the cluster's API.
var api = &http.Client{Transport: bearer{&http.Transport{DisableCompression: true}}}

func endpoints() []string {
	var eps []string
	for i := 0; i < nodes; i++ {
		eps = append(eps, fmt.Sprintf("127.0.0.1:%d", apiPorts[i]))
	}
	return eps
}

// up builds the image, writes the nodes' configuration and starts the
// cluster; it is taken down when the test ends.
func up(t *testing.T, extra string) (compose func(args ...string) string) {
	projects++
	project = fmt.Sprintf("cohorte2e%dt%d", os.Getpid(), projects)
	imageName = "cohort:" + project
	root := repoRoot(t)
	build := t.TempDir()
	run(t, 10*time.Minute, []string{"CGO_ENABLED=0"}, "go", "build", "-C", root, "-o", filepath.Join(build, "cohort"), "./cmd/cohort") // a cold static build on a loaded machine took over 3 minutes
	df, err := os.ReadFile(filepath.Join(root, "deploy", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(build, "Dockerfile"), df, 0o644)
	run(t, 3*time.Minute, nil, "docker", "build", "-q", "-t", imageName, build)

	cfg := t.TempDir()
	os.Chmod(cfg, 0o755)
	var peers []string
	for i := 0; i < nodes; i++ {
		peers = append(peers, fmt.Sprintf("  %d: node%d:7000", i, i))
	}
	for i := 0; i < nodes; i++ {
		// The node's state lives on the writable mount, so that it
		// survives the container's restart.
		y := fmt.Sprintf("id: %d\nlisten: 0.0.0.0:7000\napi: 0.0.0.0:7100\napi_token: %s\nsecret: e2e-cluster-secret-0123456789\ndata_dir: /traces/data%d\npeers:\n%s\n%s",
			i, apiToken, i, strings.Join(peers, "\n"), strings.ReplaceAll(extra, "{id}", fmt.Sprint(i)))
		if err := os.WriteFile(filepath.Join(cfg, fmt.Sprintf("node%d.yaml", i)), []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	traceDir = t.TempDir()
	os.Chmod(traceDir, 0o777)
	file := filepath.Join(root, "deploy", "compose.yaml")
	env := []string{"COHORT_CONFIG_DIR=" + cfg, "COHORT_TRACE_DIR=" + traceDir, "COHORT_PROJECT=" + project, "COHORT_IMAGE=" + imageName}
	for i, p := range apiPorts {
		env = append(env, fmt.Sprintf("COHORT_API%d=%d", i, p))
	}
	compose = func(args ...string) string {
		return run(t, 2*time.Minute, env, "docker-compose", append([]string{"-p", project, "-f", file}, args...)...)
	}
	down(t, env, file)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(compose("logs", "--tail", "40"))
		}
		down(t, env, file, "-t", "10")
		_ = exec.Command("docker", "rmi", "-f", imageName).Run() // this run's own tag
	})
	compose("up", "-d")
	waitHealthy(t, endpoints()...)
	return compose
}

// down takes the cluster down. Docker releases a removed container's
// network endpoint asynchronously, and on a busy machine the network's
// removal can come first and fail ("has active endpoints"): the leftover
// endpoints are then disconnected by force and the removal tried again,
// within a deadline. If only the network is left then — Docker keeping an
// endpoint of a container that is gone — it is reported and left: the
// next test uses a project, and a network, of its own.
func down(t *testing.T, env []string, file string, args ...string) {
	t.Helper()
	network := project + "_cohortnet"
	deadline := time.Now().Add(2 * time.Minute)
	for wait := 250 * time.Millisecond; ; wait = min(2*wait, 4*time.Second) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, "docker-compose", append([]string{"-p", project, "-f", file, "down", "-v", "--remove-orphans"}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		cancel()
		if err == nil {
			return
		}
		if !strings.Contains(string(out), "has active endpoints") {
			t.Fatalf("docker-compose down: %v\n%s", err, out)
		}
		if time.Now().After(deadline) {
			left, _ := exec.Command("docker", "ps", "-aq", "--filter", "label=com.docker.compose.project="+project).Output()
			if len(bytes.TrimSpace(left)) > 0 {
				t.Fatalf("docker-compose down: %v\n%s\ncontainers left: %s", err, out, left)
			}
			t.Logf("docker-compose down: every container is gone, but Docker would not remove the network %s (%s); left to Docker", network, strings.TrimSpace(string(out)))
			return
		}
		names, _ := exec.Command("docker", "network", "inspect", "-f", "{{range .Containers}}{{.Name}} {{end}}", network).Output()
		for _, name := range strings.Fields(string(names)) {
			_ = exec.Command("docker", "network", "disconnect", "-f", network, name).Run()
		}
		time.Sleep(wait) // Docker's cleanup has no event to wait on; bounded by the deadline
	}
}

// traceDir holds the nodes' traces (one file per node, continued across
// restarts).
var traceDir string

// checkTraces merges the nodes' traces so far and runs the lock's checkers
// over them.
func checkTraces(t *testing.T, step string) {
	t.Helper()
	var ts []*trace.Trace
	for i := 0; i < nodes; i++ {
		data, err := os.ReadFile(filepath.Join(traceDir, fmt.Sprintf("node%d.jsonl", i)))
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		end := bytes.LastIndexByte(data, '\n') + 1 // a node may be mid-write
		tr, err := trace.Read(bytes.NewReader(data[:end]))
		if err != nil {
			t.Fatalf("%s: node %d's trace: %v", step, i, err)
		}
		ts = append(ts, tr)
	}
	merged, err := live.Merge(ts...)
	if err != nil {
		t.Fatal(err)
	}
	res, err := check.Run(merged, "integrity", "no-duplicates", "clock-condition", "ME1", "ME2", "ME3")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if !r.OK() {
			t.Errorf("%s: %s", step, r.Counterexample(merged))
		}
	}
	t.Logf("%s: the checkers hold on %d recorded events", step, len(merged.Events))
}

// peerMetric reads the value of node ep's metric name for peer.
func peerMetric(ep, name string, peer int) (float64, error) {
	resp, err := api.Get("http://" + ep + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	prefix := fmt.Sprintf("%s{peer=\"%d\"} ", name, peer)
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, fmt.Errorf("%s: no %s for peer %d", ep, name, peer)
}

// waitPeerMetric waits until node ep's metric name for peer satisfies ok.
func waitPeerMetric(t *testing.T, ep, name string, peer int, ok func(float64) bool, timeout time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		v, err := peerMetric(ep, name, peer)
		if err == nil && ok(v) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting %v until %s: %s = %v (%v)", timeout, what, name, v, err)
		}
		time.Sleep(100 * time.Millisecond) // polling the node's metrics
	}
}

// waitHealthy waits, up to 60 s in all, until every node at eps answers
// /v1/health (see healthy).
func waitHealthy(t *testing.T, eps ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, ep := range eps {
		if err := healthy(ctx, ep); err != nil {
			t.Fatal(err)
		}
	}
}

// lockRound has a client on every node take the lock three times: every
// grant must come, none may overlap another, and the fencing tokens must
// rise in the order of the grants.
func lockRound(t *testing.T, step string, eps []string) {
	t.Helper()
	var mu sync.Mutex
	var tokens []uint64
	inside := 0
	var wg sync.WaitGroup
	for _, ep := range eps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &lock.Client{Endpoints: []string{ep}, Token: apiToken}
			for r := 0; r < 3; r++ {
				ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
				h, err := c.Acquire(ctx, "e2e", 10*time.Second)
				cancel()
				if err != nil {
					t.Errorf("%s: acquire via %s: %v", step, ep, err)
					return
				}
				mu.Lock()
				inside++
				if inside > 1 {
					t.Errorf("%s: two holders at once", step)
				}
				tokens = append(tokens, h.Token)
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
				mu.Lock()
				inside--
				mu.Unlock()
				if err := h.Release(context.Background()); err != nil {
					t.Errorf("%s: release via %s: %v", step, ep, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			t.Errorf("%s: token %d after %d", step, tokens[i], tokens[i-1])
		}
	}
	if len(tokens) != 3*len(eps) && !t.Failed() {
		t.Errorf("%s: %d grants, want %d", step, len(tokens), 3*len(eps))
	}
}

func TestDockerCluster(t *testing.T) {
	if _, err := exec.LookPath("docker-compose"); err != nil {
		t.Skip("docker-compose is not installed")
	}
	compose := up(t, "lock: ricart-agrawala\ngroup: total-sequencer\ntrace: /traces/node{id}.jsonl\n") // the textbook services only: their traces go quiet between steps
	eps := endpoints()
	lockRound(t, "healthy cluster", eps)
	checkTraces(t, "healthy cluster")

	// kill -9 a node and restart it: it comes back with fresh state.
	run(t, time.Minute, nil, "docker", "kill", "-s", "KILL", container(3))
	compose("start", "node3")
	waitHealthy(t, eps[3])
	lockRound(t, "after kill -9 and restart of node3", eps)
	checkTraces(t, "after kill -9 and restart of node3")

	// Cut node4 off the network: Ricart–Agrawala needs every process's
	// reply, so nobody gets the lock; reconnect it and everyone does.
	net := project + "_cohortnet"
	run(t, time.Minute, nil, "docker", "network", "disconnect", net, container(4))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	_, err := (&lock.Client{Endpoints: eps[:1], Token: apiToken}).Acquire(ctx, "partitioned", 10*time.Second)
	cancel()
	if err == nil {
		t.Error("a lock was granted while node4 was cut off: Ricart-Agrawala needs its reply")
	}
	run(t, time.Minute, nil, "docker", "network", "connect", "--alias", "node4", net, container(4))
	// The request made during the partition was not lost: once node4 is
	// back, that lock too is granted (and given back, its caller having
	// left), so another node gets it.
	ctx, cancel = context.WithTimeout(context.Background(), 45*time.Second)
	h, err := (&lock.Client{Endpoints: eps[1:2], Token: apiToken}).Acquire(ctx, "partitioned", 10*time.Second)
	cancel()
	if err != nil {
		t.Errorf("after the partition healed, the lock requested during it is stuck: %v", err)
	} else {
		h.Release(context.Background())
	}
	lockRound(t, "after node4 is reconnected", eps)
	checkTraces(t, "after the partition")

	// Cut node4 off for longer than the transport's idle timeout (5 s),
	// so that the connections to and from it are closed, with node0's
	// Ricart-Agrawala request to node4 in the kernel buffer of the dead
	// one. The transport keeps what node4 has not acknowledged and
	// resends it on the next connection, so once node4 is back, the
	// lock requested during the partition is granted.
	run(t, time.Minute, nil, "docker", "network", "disconnect", net, container(4))
	reconnects, err := peerMetric(eps[0], "cohort_peer_reconnects_total", 4)
	if err != nil {
		t.Fatal(err)
	}
	type acquired struct {
		h   *lock.Held
		err error
	}
	got := make(chan acquired, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		h, err := (&lock.Client{Endpoints: eps[:1], Token: apiToken}).Acquire(ctx, "long-partition", 10*time.Second)
		got <- acquired{h, err}
	}()
	waitPeerMetric(t, eps[0], "cohort_peer_connected", 4, func(v float64) bool { return v == 0 }, 30*time.Second,
		"node0's connection to node4 is closed by the idle timeout")
	select {
	case r := <-got:
		t.Errorf("the lock was granted (or failed: %v) while node4 was cut off", r.err)
	default:
	}
	run(t, time.Minute, nil, "docker", "network", "connect", "--alias", "node4", net, container(4))
	waitPeerMetric(t, eps[0], "cohort_peer_reconnects_total", 4, func(v float64) bool { return v > reconnects }, 30*time.Second,
		"node0 reconnects to node4")
	if r := <-got; r.err != nil {
		t.Errorf("after a partition longer than the idle timeout, the lock requested during it is stuck: %v", r.err)
	} else {
		r.h.Release(context.Background())
	}
	lockRound(t, "after a partition longer than the idle timeout", eps)
	checkTraces(t, "after the long partition")

	// Restart the whole cluster.
	compose("restart", "-t", "10")
	waitHealthy(t, eps...)
	lockRound(t, "after restarting the cluster", eps)
	checkTraces(t, "after restarting the cluster")
}
