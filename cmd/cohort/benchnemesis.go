package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/cohort-go/cohort/bench"
	"github.com/spf13/cobra"
)

func newBenchNemesisCmd() *cobra.Command {
	var cfg bench.NemesisConfig
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "nemesis",
		Short: "Injure a cluster of node processes at random while clients lock and multicast, then check the histories",
		Long: `Start --nodes cohort node processes on 127.0.0.1 (every service on the
replicated log) and, for --duration, run lock clients (each under a session
it renews, taking one lock again and again), candidates (leading one
election and resigning, again and again) and group senders, while a
nemesis seeded by --seed kills nodes with SIGKILL and restarts them, and
pauses them with SIGSTOP and resumes them, never more than a minority at
once. Then check the histories: no two clients held the lock at once by
their own reckoning and fencing tokens rose with the grants; the lock
clients' operations are linearizable (Porcupine, against a sequential
lock with fencing tokens); no two
candidates led at once and terms rose; every acknowledged message was
delivered at every node, once, at its acknowledged position. Prints the counts; exits 1 on any anomaly.`,
		Example: `  cohort bench nemesis --duration 10m
  cohort bench nemesis --duration 30s --seed 7 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case cfg.Nodes < 3 || cfg.Nodes > 15:
				return usageErr("--nodes %d: want 3 to 15", cfg.Nodes)
			case cfg.Duration < time.Second:
				return usageErr("--duration %v: want at least 1s", cfg.Duration)
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
			r, err := bench.RunNemesis(ctx, cfg)
			if err != nil {
				return &exitError{1, err}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := json.NewEncoder(out).Encode(r); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(out, "nemesis: %d nodes, %.0f s, seed %d: %d kills (kill -9, then restart), %d pauses (SIGSTOP, SIGCONT)\n",
					r.Nodes, r.Seconds, r.Seed, r.Kills, r.Pauses)
				fmt.Fprintf(out, "lock:  %d grants checked; leader: %d leaderships checked (%d operations failed and were retried)\n", r.Grants, r.Terms, r.LockErrors)
				fmt.Fprintf(out, "lock:  %d operations, linearizable: %s\n", r.LockOps, r.Linearizable)
				fmt.Fprintf(out, "group: %d messages acknowledged; %d deliveries followed on every node through the faults (%d positions compacted while a node was down), %d compared at the end\n",
					r.Sent, r.Listened, r.Skipped, r.Checked)
				if r.Interrupted {
					fmt.Fprintf(out, "interrupted after %.0f s: the histories so far were checked, the group's deliveries not compared at the end\n", r.Seconds)
				}
				fmt.Fprintf(out, "anomalies: %d\n", len(r.Anomalies))
				for _, a := range r.Anomalies {
					fmt.Fprintf(out, "  %s\n", a)
				}
			}
			switch {
			case len(r.Anomalies) > 0:
				return &exitError{1, errSilent}
			case r.Interrupted:
				return &exitError{1, fmt.Errorf("bench nemesis: interrupted after %.0f s, before the end of its run", r.Seconds)}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&cfg.Nodes, "nodes", 5, "cluster size")
	fl.DurationVar(&cfg.Duration, "duration", 30*time.Second, "how long the clients and the nemesis run")
	fl.Uint64Var(&cfg.Seed, "seed", 1, "the faults' schedule")
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
