package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/cohort-go/cohort/group"
	"github.com/cohort-go/cohort/internal/httpapi"
	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/node"
	"github.com/cohort-go/cohort/proc"
	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
)

func newClusterCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "cluster", Short: "Run a local Cohort cluster; add and remove the voters of a running one"}
	cmd.AddCommand(newClusterUpCmd(), newClusterVoterCmd("add"), newClusterVoterCmd("remove"), newClusterVotersCmd())
	return cmd
}

func newClusterUpCmd() *cobra.Command {
	var nodes int
	var algo, groupAlgo, dir, traceDir string
	var runs []string
	var inproc, asJSON, withMembers, withDHT bool
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start N nodes on 127.0.0.1 and run until interrupted",
		Long: `Start a cluster of N nodes on 127.0.0.1: N processes running
"cohort node" (or, with --inproc, N nodes inside this process over an
in-process transport), with a fresh cluster secret. Print how to reach them
— with --json, a first line {"endpoints":[...],"pids":[...]} — and run until
SIGINT or SIGTERM, then stop every node cleanly.`,
		Example: `  cohort cluster up --nodes 5 --dir ./cluster
  cohort cluster up --nodes 3 --algo mutex/ricart-agrawala
  cohort lock demo --endpoints 127.0.0.1:PORT -- sleep 1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if nodes < 1 || nodes > 64 {
				return usageErr("--nodes %d: want 1 to 64", nodes)
			}
			fam, name, ok := strings.Cut(algo, "/")
			if !ok || (fam != "mutex" && algo != "consensus/raft-lock") {
				return usageErr("--algo %q: want consensus/raft-lock (the replicated log) or mutex/NAME, the algorithm behind the locks (elections run bully-fd, groups total-sequencer)", algo)
			}
			if fam == "consensus" {
				name = "raft"
			}
			a, err := lockAlgorithm(name)
			if err != nil {
				return usageErr("--algo: %v", err)
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if withDHT && inproc {
				return usageErr("--dht: processes only")
			}
			if groupAlgo != "" {
				if _, err := groupAlgorithm(groupAlgo); err != nil {
					return usageErr("--group: %v", err)
				}
				if inproc {
					return usageErr("--group: processes only")
				}
			}
			if withMembers && inproc {
				return usageErr("--members: processes only (nodes join a cluster of processes)")
			}
			if inproc {
				// Flags the in-process cluster would ignore: its nodes
				// keep nothing on disk and run only the locks.
				for _, f := range []string{"dir", "trace-dir", "run"} {
					if cmd.Flags().Changed(f) {
						return usageErr("--%s: processes only (not with --inproc)", f)
					}
				}
				return clusterInProc(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), nodes, a, asJSON)
			}
			return clusterProcs(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), clusterSpec{nodes: nodes, lock: name, group: groupAlgo, dir: dir, traceDir: traceDir,
				runs: runs, members: withMembers, dht: withDHT}, asJSON)
		},
	}
	cmd.Flags().IntVar(&nodes, "nodes", 3, "number of nodes")
	cmd.Flags().StringVar(&algo, "algo", "consensus/raft-lock", "FAMILY/NAME of the algorithm behind the locks: consensus/raft-lock, or mutex/NAME")
	cmd.Flags().BoolVar(&inproc, "inproc", false, "run every node inside this process")
	cmd.Flags().StringVar(&dir, "dir", "", "directory for the nodes' configuration files and data (node<i>/): a cluster started again on it recovers its state (default: a temporary one)")
	cmd.Flags().StringArrayVar(&runs, "run", nil, "also run this algorithm (FAMILY/NAME) as a service on every node from the start, repeatable (processes only)")
	cmd.Flags().StringVar(&groupAlgo, "group", "", "the algorithm behind the groups: a multicast algorithm (default total-sequencer), or raft (the replicated log) (processes only)")
	cmd.Flags().StringVar(&traceDir, "trace-dir", "", "write each node's trace to DIR/node<i>.jsonl (the --run services, else the locks) and DIR/node<i>/KIND.jsonl (every other kind of service: election, group, dht ...) (processes only); merge a kind's files with cohort trace merge")
	cmd.Flags().BoolVar(&withMembers, "members", false, "also run the membership and key-value service (cohort members, cohort kv): other nodes may then join with cohort node --join")
	cmd.Flags().BoolVar(&withDHT, "dht", false, "also run Pastry's DHT and Scribe (cohort dht, cohort scribe) on every node")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"endpoints":[...],"pids":[...]} as the first line`)
	return cmd
}

func announce(out io.Writer, endpoints []string, pids []int, asJSON bool) {
	if asJSON {
		_ = json.NewEncoder(out).Encode(map[string]any{"endpoints": endpoints, "pids": pids})
		return
	}
	fmt.Fprintf(out, "%d nodes up; API endpoints:\n", len(endpoints))
	for i, ep := range endpoints {
		fmt.Fprintf(out, "  node %d  http://%s\n", i, ep)
	}
	eps := strings.Join(endpoints, ",")
	fmt.Fprintf(out, "\ntry: COHORT_ENDPOINTS=%s cohort lock demo -- echo held\n", eps)
	fmt.Fprintf(out, "     COHORT_ENDPOINTS=%s cohort elect demo --campaign -- echo leading\n", eps)
	fmt.Fprintf(out, "     COHORT_ENDPOINTS=%s cohort multicast demo --listen   (and --send TEXT)\n", eps)
	fmt.Fprintf(out, "     COHORT_ENDPOINTS=%s cohort queue put jobs hello; cohort queue get jobs\n", endpoints[0])
	fmt.Fprintln(out, "Ctrl-C stops the cluster.")
}

// clusterInProc runs n nodes in this process.
func clusterInProc(ctx context.Context, out, errw io.Writer, n int, a proc.Algorithm, asJSON bool) error {
	galgo, err := group.Algorithm(group.DefaultAlgorithm)
	if err != nil {
		return &exitError{1, err}
	}
	log := slog.New(slog.NewTextHandler(errw, &slog.HandlerOptions{Level: slog.LevelWarn}))
	net, err := transport.NewInProc(n, transport.InProcConfig{})
	if err != nil {
		return &exitError{1, err}
	}
	var endpoints []string
	var servers []*httpapi.Server
	var nodes []*node.Node
	defer func() {
		for _, s := range servers {
			_ = s.Close()
		}
		for _, n := range nodes {
			_ = n.Close()
		}
	}()
	for i := 0; i < n; i++ {
		ep, err := net.Endpoint(proc.ID(i))
		if err != nil {
			return &exitError{1, err}
		}
		nd, err := node.New(node.Config{ID: proc.ID(i), N: n, Transport: ep, Lock: a, Group: galgo, Logger: log,
			FoundersWait: -1}) // one configuration: nothing to check
		if err != nil {
			return &exitError{1, err}
		}
		nodes = append(nodes, nd)
		ln, err := netListen()
		if err != nil {
			return &exitError{1, err}
		}
		srv := httpapi.NewServer(nd.Handler(), httpapi.Limits{})
		servers = append(servers, srv)
		go func() { _ = srv.Serve(ln) }()
		endpoints = append(endpoints, ln.Addr().String())
	}
	announce(out, endpoints, []int{os.Getpid()}, asJSON)
	<-ctx.Done()
	return nil
}

// anyOf asks each resolver in turn.
func anyOf(rs ...func(string) (proc.Algorithm, bool)) func(string) (proc.Algorithm, bool) {
	return func(service string) (proc.Algorithm, bool) {
		for _, r := range rs {
			if a, ok := r(service); ok {
				return a, true
			}
		}
		return proc.Algorithm{}, false
	}
}

func netListen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

// freePorts reserves n distinct loopback ports by listening on each
// until all are chosen, then closing them.
func freePorts(n int) ([]string, error) {
	var addrs []string
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			l.Close()
		}
	}()
	for i := 0; i < n; i++ {
		l, err := netListen()
		if err != nil {
			return nil, err
		}
		lns = append(lns, l)
		addrs = append(addrs, l.Addr().String())
	}
	return addrs, nil
}

// clusterSpec is the cluster of processes cluster up starts: nodes
// nodes, their lock and group algorithms (node.yaml's lock: and group:;
// "" for group's default), the services to run at boot, and the rest of
// the flags.
type clusterSpec struct {
	nodes         int
	lock, group   string
	dir, traceDir string
	runs          []string
	members, dht  bool
}

// clusterProcs runs the "cohort node" processes of spec.
func clusterProcs(ctx context.Context, out, errw io.Writer, spec clusterSpec, asJSON bool) error {
	n, dir, traceDir := spec.nodes, spec.dir, spec.traceDir
	if dir == "" {
		d, err := os.MkdirTemp("", "cohort-cluster-")
		if err != nil {
			return &exitError{1, err}
		}
		defer os.RemoveAll(d)
		dir = d
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return usageErr("--dir: %v", err)
	} else {
		// Another cluster up on dir would rewrite its nodes' configuration
		// under them (new ports, a new secret) and then fail to start
		// nodes whose data is in use: refuse before touching it.
		unlock, err := lockDir(dir)
		if err != nil {
			return usageErr("--dir %s: %v", dir, err)
		}
		defer unlock()
	}
	// The nodes take relative paths from their data directories.
	var err error
	if dir, err = filepath.Abs(dir); err != nil {
		return usageErr("--dir: %v", err)
	}
	if traceDir != "" {
		if traceDir, err = filepath.Abs(traceDir); err != nil {
			return usageErr("--trace-dir: %v", err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return &exitError{1, err}
	}
	// Every port in one call, all held until all are chosen: ports taken
	// in two calls could repeat one (the first call's, released, given
	// out again), and a node's API would find its port a peer's.
	ports, err := freePorts(2 * n)
	if err != nil {
		return &exitError{1, err}
	}
	peersAddr, apis := ports[:n], ports[n:]
	var secret [24]byte
	_, _ = rand.Read(secret[:])
	peers := map[int]string{}
	for i, a := range peersAddr {
		peers[i] = a
	}
	var children []*exec.Cmd
	var gone []chan struct{}       // closed as each child exits
	exited := make(chan string, n) // why each child exited
	stopAll := func() {
		for _, c := range children {
			_ = c.Process.Signal(syscall.SIGTERM)
		}
		done := make(chan struct{})
		go func() {
			for _, g := range gone {
				<-g
			}
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			for _, c := range children {
				_ = c.Process.Kill()
			}
			<-done
		}
	}
	defer stopAll()
	var pids []int
	for i := 0; i < n; i++ {
		cfg := nodeConfig{ID: i, Listen: peersAddr[i], API: apis[i], Peers: peers, Secret: hex.EncodeToString(secret[:]), Lock: spec.lock, Group: spec.group,
			Run: spec.runs, DataDir: filepath.Join(dir, fmt.Sprintf("node%d", i)), Members: spec.members, DHT: spec.dht}
		if traceDir != "" {
			if err := os.MkdirAll(traceDir, 0o755); err != nil {
				return usageErr("--trace-dir: %v", err)
			}
			// node<i>.jsonl: the run: services, else the locks; node<i>/:
			// a trace for each other kind of service.
			cfg.Trace = filepath.Join(traceDir, fmt.Sprintf("node%d.jsonl", i))
			cfg.TraceDir = filepath.Join(traceDir, fmt.Sprintf("node%d", i))
		}
		b, err := yaml.Marshal(cfg)
		if err != nil {
			return &exitError{1, err}
		}
		path := filepath.Join(dir, fmt.Sprintf("node%d.yaml", i))
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return &exitError{1, err}
		}
		c := exec.Command(self, "node", "--config", path)
		c.Stdout, c.Stderr = errw, errw
		stopWithParent(c)
		if err := c.Start(); err != nil {
			return &exitError{1, err}
		}
		g := make(chan struct{})
		go func() {
			err := c.Wait()
			exited <- fmt.Sprintf("node %d exited (%v)", i, err)
			close(g)
		}()
		children, gone = append(children, c), append(gone, g)
		pids = append(pids, c.Process.Pid)
	}
	// A node that exits while the others come up (its data in use, a
	// port taken meanwhile) ends the wait at once, naming it; its own
	// error is on errw.
	hctx, stopWaiting := context.WithCancel(ctx)
	defer stopWaiting()
	healthy := make(chan error, 1)
	go func() { healthy <- waitHealthy(hctx, apis, 15*time.Second) }()
	select {
	case err := <-healthy:
		if err != nil {
			return &exitError{1, err}
		}
	case why := <-exited:
		return &exitError{1, fmt.Errorf("%s before the cluster was up", why)}
	}
	announce(out, apis, pids, asJSON)
	<-ctx.Done()
	return nil
}

// lockDir takes dir for this process (an exclusive lock on its
// cluster.lock, released when the process ends); unlock gives it back.
func lockDir(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, "cluster.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("in use by another cohort cluster up (%v)", err)
	}
	return func() { f.Close() }, nil
}

// waitHealthy polls every node's /v1/health until all answer.
func waitHealthy(ctx context.Context, apis []string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for _, api := range apis {
		for {
			resp, err := http.Get("http://" + api + "/v1/health")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("node at %s did not come up within %v", api, limit)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

func newCertsCmd() *cobra.Command {
	var nodes int
	var dir string
	cmd := &cobra.Command{
		Use:   "certs --nodes N --dir DIR",
		Short: "Create a development CA and a certificate for each node (mutual TLS)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if nodes < 1 || dir == "" {
				return usageErr("need --nodes N (at least 1) and --dir DIR")
			}
			if err := transport.GenerateCerts(dir, nodes); err != nil {
				return &exitError{1, err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote a CA and %d node certificates to %s (use tls_dir: %s in node.yaml)\n", nodes, dir, dir)
			return nil
		},
	}
	cmd.Flags().IntVar(&nodes, "nodes", 3, "number of nodes")
	cmd.Flags().StringVar(&dir, "dir", "", "output directory")
	return cmd
}
