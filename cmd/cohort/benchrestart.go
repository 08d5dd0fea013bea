package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/cohort-go/cohort/bench"
	"github.com/spf13/cobra"
)

func newBenchRestartCmd() *cobra.Command {
	var cfg bench.RestartConfig
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "restart",
		Short: "Kill every node of a cluster at once, start them again, and time the recovery",
		Long: `Start --nodes cohort node processes on 127.0.0.1 (every service on the
replicated log, each node's data on disk), then --runs times: take a lock
and send --messages messages to a group, kill -9 every node at once, start
them all again, and measure from the start of the processes until a new
session holds the lock (its fencing token must exceed every token before
the cut) and until a new message is acknowledged. At the end every node
must deliver every acknowledged message at its acknowledged position.
Prints each run and the median; exits 1 if a token went back or a message
was lost.`,
		Example: `  cohort bench restart
  cohort bench restart --runs 10 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case cfg.Nodes < 3 || cfg.Nodes > 15:
				return usageErr("--nodes %d: want 3 to 15", cfg.Nodes)
			case cfg.Runs < 1 || cfg.Runs > 100:
				return usageErr("--runs %d: want 1 to 100", cfg.Runs)
			case cfg.Messages < 1 || cfg.Runs*(cfg.Messages+1) > 1000:
				return usageErr("--messages %d: want at least 1, and at most 1,000 messages over all runs (--runs × (--messages + 1))", cfg.Messages)
			}
			self, err := os.Executable()
			if err != nil {
				return &exitError{1, err}
			}
			cfg.NodeCommand = func(config string) *exec.Cmd { return exec.Command(self, "node", "--config", config) }
			if p := newProgress(cmd.ErrOrStderr()); p.on {
				cfg.Progress = func(format string, args ...any) { fmt.Fprintf(cmd.ErrOrStderr(), format+"\n", args...) }
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			r, err := bench.RunRestart(ctx, cfg)
			if err != nil {
				return &exitError{1, err}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := json.NewEncoder(out).Encode(r); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(out, "full-cluster restart: %d nodes, kill -9 of all, then all started again\n\n", r.Nodes)
				fmt.Fprintf(out, "  run  grant after  send after  tokens before → after\n")
				for i, run := range r.Runs {
					fmt.Fprintf(out, "  %3d  %8.0f ms  %7.0f ms  %d → %d\n", i+1, run.LockMs, run.GroupMs, run.TokenBefore, run.TokenAfter)
				}
				fmt.Fprintf(out, "\nrecovered (both served): median %.0f ms, slowest %.0f ms\n", r.RecoveredP50Ms, r.RecoveredMaxMs)
				fmt.Fprintf(out, "group: %d messages acknowledged, %d deliveries compared over every node, %d lost\n", r.Acknowledged, r.CheckedAtNodes, r.Lost)
				fmt.Fprintf(out, "anomalies: %d\n", len(r.Anomalies))
				for _, a := range r.Anomalies {
					fmt.Fprintf(out, "  %s\n", a)
				}
			}
			if len(r.Anomalies) > 0 {
				return &exitError{1, errSilent}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&cfg.Nodes, "nodes", 5, "cluster size")
	fl.IntVar(&cfg.Runs, "runs", 5, "how many times to cut and restart the cluster")
	fl.IntVar(&cfg.Messages, "messages", 100, "messages acknowledged before each cut")
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
