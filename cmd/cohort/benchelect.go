package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/cohort-go/cohort/bench"
	"github.com/spf13/cobra"
)

func newBenchElectCmd() *cobra.Command {
	var cfg bench.ElectConfig
	var withEtcd, asJSON bool
	var backend string
	var soak time.Duration
	cmd := &cobra.Command{
		Use:   "elect",
		Short: "Leader failover after kill -9 on a cluster of node processes, side by side with etcd",
		Long: `Start a cluster of --nodes Cohort node processes on 127.0.0.1, each standing
in one election, and measure failover --runs times: kill -9 the leader's
process and take the time until every survivor reports a new leader
(through watch streams opened on each survivor before the kill), then
restart the killed node.

--backend raft (the default): the elections on the replicated log, each
node holding its candidacy by a session of --timeout (300ms) renewed every
quarter of it; the killed node, restarted, follows the new leader.
--backend bully-fd: the bully algorithm driven by a heartbeat failure
detector; the killed node, restarted, leads again before the next run.

In the same run, etcd (` + bench.EtcdPath + `, one node on loopback) with as
many campaigners, each on its own lease (--etcd-ttl) kept alive every third
of it; its failover is the time from the leader's keep-alives stopping
without a revoke (what etcd sees of a dead process) to the next
campaigner's campaign call returning.

--soak D instead watches a healthy cluster for D and counts leader changes
(there should be none: no false suspicions).`,
		Example: `  cohort bench elect
  cohort bench elect --runs 20 --json
  cohort bench elect --backend bully-fd --phi 8 --etcd=false
  cohort bench elect --soak 10m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			self, err := os.Executable()
			if err != nil {
				return &exitError{1, err}
			}
			cfg.NodeCommand = func(config string) *exec.Cmd { return exec.Command(self, "node", "--config", config) }
			switch backend {
			case "raft":
				cfg.Replicated = true
			case "bully-fd":
			default:
				return usageErr("--backend %q: want raft or bully-fd", backend)
			}
			switch {
			case cfg.Nodes < 2 || cfg.Nodes > 64:
				return usageErr("--nodes %d: want 2 to 64", cfg.Nodes)
			case cfg.Runs < 1:
				return usageErr("--runs %d: want at least 1", cfg.Runs)
			case cfg.Heartbeat < 0 || cfg.Timeout < 0 || cfg.Phi < 0:
				return usageErr("--heartbeat, --timeout and --phi must not be negative")
			case soak < 0:
				return usageErr("--soak %v: want a positive duration", soak)
			}
			if withEtcd && soak == 0 {
				if cfg.Etcd, err = bench.FindEtcd(); err != nil {
					return &exitError{1, fmt.Errorf("%v, or run without it: cohort bench elect --etcd=false", err)}
				}
			}
			if newProgress(cmd.ErrOrStderr()).on {
				cfg.Progress = cmd.ErrOrStderr()
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			out := cmd.OutOrStdout()
			if soak > 0 {
				r, err := bench.RunSoak(ctx, cfg, soak)
				if err != nil {
					return &exitError{1, err}
				}
				if asJSON {
					if err := json.NewEncoder(out).Encode(r); err != nil {
						return err
					}
				} else {
					fmt.Fprintf(out, "idle soak of %d nodes for %.0f s: leader %d, %d leader changes seen\n", r.Nodes, r.Seconds, r.Leader, r.Changes)
				}
				if r.Changes > 0 || r.StreamErr != "" {
					return &exitError{1, fmt.Errorf("the leader changed %d times in a healthy cluster %s", r.Changes, r.StreamErr)}
				}
				return nil
			}
			r, err := bench.RunElect(ctx, cfg)
			if err != nil {
				return &exitError{1, err}
			}
			if asJSON {
				return json.NewEncoder(out).Encode(r)
			}
			printElectBench(out, r)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&cfg.Nodes, "nodes", 5, "cluster size")
	fl.IntVar(&cfg.Runs, "runs", 10, "failovers per system")
	fl.DurationVar(&cfg.Heartbeat, "heartbeat", 0, "heartbeat interval (0: the default, 50ms)")
	fl.DurationVar(&cfg.Timeout, "timeout", 0, "failure detector timeout (0: the default, 6 heartbeats)")
	fl.Float64Var(&cfg.Phi, "phi", 0, "phi-accrual threshold (0: the plain timeout)")
	fl.DurationVar(&cfg.EtcdTTL, "etcd-ttl", 2*time.Second, "etcd campaigners' lease")
	fl.BoolVar(&withEtcd, "etcd", true, "compare with etcd")
	fl.StringVar(&backend, "backend", "raft", "the elections' backend: raft (the replicated log) or bully-fd")
	fl.DurationVar(&soak, "soak", 0, "instead of failovers, watch a healthy cluster this long and count leader changes")
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printElectBench(out io.Writer, r bench.ElectResult) {
	if r.Backend == "raft" {
		fmt.Fprintf(out, "leader failover after kill -9, %d nodes, %d runs: cohort = the replicated log (sessions of %.0f ms)",
			r.Nodes, r.Cohort.Runs, r.TimeoutMs)
	} else {
		fmt.Fprintf(out, "leader failover after kill -9, %d nodes, %d runs: cohort = bully-fd (heartbeat %.0f ms, timeout %.0f ms",
			r.Nodes, r.Cohort.Runs, r.HeartbeatMs, r.TimeoutMs)
		if r.Phi > 0 {
			fmt.Fprintf(out, ", phi %g", r.Phi)
		}
		fmt.Fprint(out, ")")
	}
	if r.Etcd != nil {
		fmt.Fprintf(out, ", etcd = election on %.0f ms leases", r.EtcdTTLms)
	}
	fmt.Fprintf(out, "\n\ncohort  median %7.1f ms  min %7.1f ms  max %7.1f ms\n", r.Cohort.MedianMs, r.Cohort.MinMs, r.Cohort.MaxMs)
	if r.Etcd != nil {
		fmt.Fprintf(out, "etcd    median %7.1f ms  min %7.1f ms  max %7.1f ms\n", r.Etcd.MedianMs, r.Etcd.MinMs, r.Etcd.MaxMs)
		fmt.Fprintf(out, "\netcd's median failover is %.1fx Cohort's\n", r.EtcdOverCohort)
	}
}
