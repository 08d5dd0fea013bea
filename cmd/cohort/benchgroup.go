package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/cohort-go/cohort/bench"
	"github.com/cohort-go/cohort/group"
	"github.com/spf13/cobra"
)

func newBenchMulticastCmd() *cobra.Command {
	var algos []string
	var cfg bench.GroupConfig
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "multicast",
		Short: "Totally ordered multicast on a five-node loopback cluster: throughput and latency",
		Long: `Run a five-node Cohort cluster inside this process (TCP transport on
127.0.0.1, the group API) for each --algo and --window: every node
multicasts in a closed loop with --window of its own messages in flight
(or, with --rate, offers its share of --rate messages per second, within
the window).
Reported: messages delivered at every member per second, the latency
from the Multicast call to the last member's delivery (p50, p99), and the
process's CPU time (all five nodes and the benchmark) per message
delivered at every member.`,
		Example: `  cohort bench multicast
  cohort bench multicast --algo raft --window 64,256 --duration 5s
  cohort bench multicast --algo total-isis --window 1,64 --duration 10s --json
  cohort bench multicast --algo raft --window 256 --rate 20000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, name := range algos {
				a, err := groupAlgorithm(name)
				if err != nil {
					return usageErr("--algo: %v", err)
				}
				cfg.Algorithms = append(cfg.Algorithms, a)
			}
			for _, w := range cfg.Windows {
				if w < 1 || w > 4096 {
					return usageErr("--window %d: want 1 to 4096", w)
				}
			}
			if cfg.Duration <= 0 {
				return usageErr("--duration %v: want more than 0", cfg.Duration)
			}
			if cfg.Size < 0 || cfg.Size > group.MaxBody {
				return usageErr("--size %d: want 0 to %d", cfg.Size, group.MaxBody)
			}
			if cfg.Rate < 0 {
				return usageErr("--rate %v: want 0 (closed loop) or more messages per second", cfg.Rate)
			}
			cfg.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelError}))
			if newProgress(cmd.ErrOrStderr()).on {
				cfg.Progress = cmd.ErrOrStderr()
			}
			tuneGC() // as each of its nodes would
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			points, err := bench.RunGroup(ctx, cfg)
			if err != nil {
				return &exitError{1, err}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return json.NewEncoder(out).Encode(points)
			}
			fmt.Fprintf(out, "total-order multicast, %d nodes (TCP on loopback), %d-byte messages, %v per configuration\n\n", bench.GroupNodes, cfg.Size, cfg.Duration)
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
			if cfg.Rate > 0 {
				fmt.Fprintf(out, "offered: %.0f messages per second\n\n", cfg.Rate)
			}
			fmt.Fprintln(tw, "algorithm\twindow\tdelivered/s\tlatency p50\tlatency p99\tCPU/msg\tmissed\t")
			for _, p := range points {
				fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.3f ms\t%.3f ms\t%.1f µs\t%d\t\n", p.Algorithm, p.Window, p.PerSecond, p.LatencyP50Ms, p.LatencyP99Ms, p.CPUPerMsgUs, p.Missed)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, p := range points {
				if len(p.Stages) == 0 {
					continue
				}
				fmt.Fprintf(out, "\n%s, window %d: where the latency goes (from the Multicast call; step: from the row above)\n", p.Algorithm, p.Window)
				tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
				fmt.Fprintln(tw, "stage\tmessages\tp50\tp99\tstep p50\tstep p99\t")
				for _, s := range p.Stages {
					fmt.Fprintf(tw, "%s\t%d\t%.3f ms\t%.3f ms\t%.3f ms\t%.3f ms\t\n", s.Stage, s.Messages, s.P50Ms, s.P99Ms, s.StepP50Ms, s.StepP99Ms)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&algos, "algo", []string{"raft", "total-sequencer", "total-isis"}, "what to measure: raft (the replicated log, fsync on) and multicast algorithms")
	fl.IntSliceVar(&cfg.Windows, "window", []int{1, 16}, "messages each node keeps in flight, one configuration per value")
	fl.DurationVar(&cfg.Duration, "duration", 3*time.Second, "how long each configuration is measured (after a warm-up)")
	fl.IntVar(&cfg.Size, "size", 64, "payload bytes")
	fl.Float64Var(&cfg.Rate, "rate", 0, "messages per second offered by all the nodes together, each send within the window (0: a closed loop)")
	fl.BoolVar(&cfg.Stages, "stages", false, "raft: follow each message through the log's stages (append, send, sync, acknowledge, commit, apply, deliver) and report where the latency goes")
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
