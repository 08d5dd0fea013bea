package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/cohort-go/cohort/bench"
	"github.com/spf13/cobra"
)

func newBenchLockCmd() *cobra.Command {
	var clients []int
	var duration time.Duration
	var algo string
	var withEtcd, asJSON bool
	cmd := &cobra.Command{
		Use:   "lock",
		Short: "Lock handoffs through the HTTP API, side by side with etcd",
		Long: `Measure lock handoffs on a five-node Cohort cluster inside this process
(TCP transport and lock HTTP API on 127.0.0.1) and, in the same run, on a
single-node etcd started for it (` + bench.EtcdPath + `, through its v3 JSON
gateway). For each --clients count, that many clients loop on one lock —
acquire, release at once, repeat — for --duration; Cohort's clients spread
over the nodes. Reported per system: acquisitions per second and the
handoff latency the clients see, from one holder starting its release to
the next holder's acquire returning (p50, p99).

Also measured, without HTTP: Ricart–Agrawala's handoff between two nodes
(one node's Unlock to the waiting node's Lock returning) and the one-way
latency of the TCP transport on loopback (half a ping-pong round trip).

etcd comes from Debian's etcd-server package (apt-get install etcd-server);
--etcd=false runs without it.`,
		Example: `  cohort bench lock
  cohort bench lock --clients 4 --duration 10s --json
  cohort bench lock --algo ricart-agrawala --etcd=false`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			name, _ := strings.CutPrefix(algo, "mutex/")
			a, err := lockAlgorithm(name)
			if err != nil {
				return usageErr("--algo: %v", err)
			}
			for _, c := range clients {
				if c < 1 || c > 1024 {
					return usageErr("--clients %d: want 1 to 1024", c)
				}
			}
			if len(clients) == 0 {
				return usageErr("--clients: want at least one count")
			}
			if duration <= 0 {
				return usageErr("--duration %v: want more than 0", duration)
			}
			cfg := bench.LockConfig{Clients: clients, Duration: duration, Algorithm: a,
				Logger: slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))}
			if withEtcd {
				if cfg.Etcd, err = bench.FindEtcd(); err != nil {
					return &exitError{1, fmt.Errorf("%v, or run without it: cohort bench lock --etcd=false", err)}
				}
			}
			if newProgress(cmd.ErrOrStderr()).on {
				cfg.Progress = cmd.ErrOrStderr()
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			r, err := bench.RunLock(ctx, cfg)
			if err != nil {
				return &exitError{1, err}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return json.NewEncoder(out).Encode(r)
			}
			printLockBench(out, r, cfg)
			return nil
		},
	}
	cmd.Flags().IntSliceVar(&clients, "clients", []int{1, 4, 16}, "contending clients, one configuration per count")
	cmd.Flags().DurationVar(&duration, "duration", 5*time.Second, "how long each configuration runs")
	cmd.Flags().StringVar(&algo, "algo", "raft", "behind Cohort's locks: raft (the replicated log, fsync on), or a mutex algorithm")
	cmd.Flags().BoolVar(&withEtcd, "etcd", true, "compare with etcd")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printLockBench(out io.Writer, r bench.LockResult, cfg bench.LockConfig) {
	fmt.Fprintf(out, "lock handoffs, %v per configuration: cohort = %d nodes (%s, TCP on loopback, HTTP API)",
		cfg.Duration, bench.LockNodes, cfg.Algorithm.Name)
	if cfg.Etcd != "" {
		fmt.Fprint(out, ", etcd = one node (v3 JSON gateway)")
	}
	fmt.Fprint(out, "\n\n")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "clients\tsystem\tacquisitions/s\thandoff p50\thandoff p99\tcohort/etcd\t")
	for i, c := range r.Cohort {
		ratio := ""
		if i < len(r.Ratio) {
			ratio = fmt.Sprintf("%.1fx", r.Ratio[i].AcqRatio)
		}
		fmt.Fprintf(tw, "%d\tcohort\t%.1f\t%.3f ms\t%.3f ms\t%s\t\n", c.Clients, c.AcquisitionsPerS, c.HandoffP50Ms, c.HandoffP99Ms, ratio)
		if i < len(r.Etcd) {
			e := r.Etcd[i]
			fmt.Fprintf(tw, "%d\tetcd\t%.1f\t%.3f ms\t%.3f ms\t\t\n", e.Clients, e.AcquisitionsPerS, e.HandoffP50Ms, e.HandoffP99Ms)
		}
	}
	tw.Flush()
	if r.DiskSyncP50us > 0 {
		fmt.Fprintf(out, "\nthe disk under the logs: append+fdatasync p50 %.0f µs with %d writers at once, %.0f µs with one alone (a commit waits for the leader's and a majority's)\n",
			r.DiskSyncP50us, bench.LockNodes, r.DiskSyncOneP50us)
	}
	fmt.Fprintf(out, "\nnode to node, no HTTP: Ricart–Agrawala handoff p50 %.1f µs against TCP one-way p50 %.1f µs, back to back (ratio %.2f);\n",
		r.RAHandoffP50us, r.OneWayP50us, r.HandoffOverOneWay)
	fmt.Fprintf(out, "to a node idle for 1 ms: handoff p50 %.1f µs against one-way p50 %.1f µs (ratio %.2f)\n",
		r.RAIdleHandoffP50us, r.OneWayIdleP50us, r.IdleHandoffOverIdleOneWay)
}
