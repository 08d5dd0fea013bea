package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/cohort-go/cohort/bench"
	"github.com/spf13/cobra"
)

func newBenchGossipCmd() *cobra.Command {
	var sizes []int
	var cfg bench.GossipConfig
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "gossip",
		Short: "The membership service on loopback: joins, a broadcast's spread, failure detection, traffic",
		Long: `Run Cohort's membership and key-value service (members) with --members
members inside this process, each on its own TCP transport on 127.0.0.1,
every one joining through the first. Reported: the time until every member
lists every other alive; the time a 64-byte write at one member takes to
reach every member (median of --broadcasts); messages and bytes each member
sends per second while idle; the time from a member's crash (its node
closed without a word) until every other holds it dead; and, until the
crash, the false verdicts: the times a member came to suspect, or declared
dead, a member that had not failed (counted at every member that did),
and how many distinct members were so wronged.

hashicorp/memberlist, measured the same way in the same run:
go test -run TestGossipBesideMemberlist -v ./bench
and with Debian's serf agents (processes), plus false positives while one
member of each is stopped for 2 s (SIGSTOP):
go test -run '^$' -bench GossipBesideSerf -benchtime 1x ./bench`,
		Example: `  cohort bench gossip
  cohort bench gossip --members 32,64 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, n := range sizes {
				if n < 3 || n > 1024 {
					return usageErr("--members %d: want 3 to 1024", n)
				}
			}
			if cfg.Period != 0 && (cfg.Period < 10*time.Millisecond || cfg.Period > time.Minute) {
				return usageErr("--period %v: want 10ms to 1m", cfg.Period)
			}
			if cfg.Broadcasts < 1 || cfg.Broadcasts > 1000 {
				return usageErr("--broadcasts %d: want 1 to 1000", cfg.Broadcasts)
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			var results []bench.GossipResult
			for _, n := range sizes {
				c := cfg
				c.Members = n
				r, err := bench.Gossip(ctx, c)
				if err != nil {
					return &exitError{1, fmt.Errorf("%d members: %w", n, err)}
				}
				results = append(results, r)
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(results)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "members\tformed\tbroadcast to all (median)\tcrash to dead everywhere\tmsgs/member/s idle\tbytes/member/s idle\tfalse suspicions (members)\tfalse deaths (members)")
			for _, r := range results {
				fmt.Fprintf(tw, "%d\t%v\t%v\t%v\t%.1f\t%.0f\t%d (%d)\t%d (%d)\n", r.Members, r.Formed.Round(time.Millisecond), r.Broadcast.Round(100*time.Microsecond),
					r.Detected.Round(time.Millisecond), r.MessagesPerSecond, r.BytesPerSecond, r.Suspicions, r.Suspected, r.FalseDead, r.Dead)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().IntSliceVar(&sizes, "members", []int{32}, "cluster sizes, comma-separated")
	cmd.Flags().DurationVar(&cfg.Period, "period", 0, "SWIM's protocol period (default 400ms)")
	cmd.Flags().IntVar(&cfg.Broadcasts, "broadcasts", 5, "broadcasts timed per size")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
