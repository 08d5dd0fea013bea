package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"runtime/pprof"

	"github.com/cohort-go/cohort/bench"
	"github.com/spf13/cobra"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure Cohort's performance",
	}
	// --cpuprofile writes the CPU profile of the whole benchmark (every
	// node of an in-process cluster, and the benchmark's own work) for
	// `go tool pprof`: where a message's or a handoff's CPU goes.
	var profile string
	var profiling *os.File
	cmd.PersistentFlags().StringVar(&profile, "cpuprofile", "", "write a CPU profile of the benchmark to this file (for go tool pprof)")
	cmd.PersistentPreRunE = func(*cobra.Command, []string) error {
		if profile == "" {
			return nil
		}
		f, err := os.Create(profile)
		if err != nil {
			return usageErr("--cpuprofile %q: %v", profile, err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		profiling = f
		return nil
	}
	cmd.PersistentPostRunE = func(*cobra.Command, []string) error {
		if profiling == nil {
			return nil
		}
		pprof.StopCPUProfile()
		return profiling.Close()
	}
	cmd.AddCommand(newBenchSimCmd(), newBenchLockCmd(), newBenchElectCmd(), newBenchMulticastCmd(), newBenchNemesisCmd(), newBenchRestartCmd(), newBenchGossipCmd(), newBenchRPCCmd())
	return cmd
}

func newBenchSimCmd() *cobra.Command {
	var nodes, messages int
	var seed uint64
	var workload string
	var asJSON bool
	var gcPercent int
	phold := bench.DefaultPHOLD()
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Simulator throughput and scale: deliveries per second, peak memory",
		Long: `flood: every node sends --messages messages to random peers at start
(exponential 1ms latency, no tracing); the default is the scale run of a
million nodes sending ten messages each. ping-pong: two nodes bounce one
message --messages times (per-event cost with a short queue). phold: the
standard benchmark of discrete-event simulators (Fujimoto 1990): --nodes
logical processes start with --messages events each; every event, on
arrival, schedules one more to a random process (--remote of the time;
otherwise to itself) --lookahead plus exp(--mean) later, so the population
stays constant; the run stops after --deliveries (default: four per event
of the population, so that the start is a small part of the run).`,
		Example: `  cohort bench sim --json
  cohort bench sim --workload ping-pong --messages 20000000
  cohort bench sim --workload phold --nodes 100000 --messages 10`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if gcPercent != 0 {
				debug.SetGCPercent(gcPercent)
			}
			var r bench.SimResult
			var err error
			switch workload {
			case "flood":
				if nodes < 1 || messages < 0 {
					return usageErr("--nodes %d --messages %d: need at least one node and no negative count", nodes, messages)
				}
				r, err = bench.Flood(nodes, messages, seed)
			case "ping-pong":
				if messages < 1 {
					return usageErr("--messages %d: need at least 1", messages)
				}
				r, err = bench.PingPong(int64(messages), seed)
			case "phold":
				phold.Processes, phold.Events, phold.Seed = nodes, messages, seed
				if !cmd.Flags().Changed("nodes") {
					phold.Processes = bench.DefaultPHOLD().Processes
				}
				r, err = phold.Run()
			default:
				return usageErr("--workload %q: want flood, ping-pong or phold", workload)
			}
			if err != nil {
				return usageErr("%v", err)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return json.NewEncoder(out).Encode(r)
			}
			fmt.Fprintf(out, "%s: %d nodes, %d deliveries in %.2fs = %.3g deliveries/s, peak RSS %.1f MiB\n",
				r.Workload, r.Nodes, r.Deliveries, r.WallS, r.DeliveriesPerS, float64(r.PeakRSSBytes)/(1<<20))
			return nil
		},
	}
	cmd.Flags().StringVar(&workload, "workload", "flood", "flood, ping-pong or phold")
	cmd.Flags().IntVar(&nodes, "nodes", 1_000_000, "processes (flood; phold's default is 100000)")
	cmd.Flags().IntVar(&messages, "messages", 10, "messages per node (flood), events per process (phold) or messages in all (ping-pong)")
	cmd.Flags().Int64Var(&phold.Deliveries, "deliveries", 0, "phold: stop after this many deliveries (0: four per event of the population)")
	cmd.Flags().Float64Var(&phold.Remote, "remote", phold.Remote, "phold: probability that an event goes to a random process rather than its own")
	cmd.Flags().DurationVar(&phold.Lookahead, "lookahead", phold.Lookahead, "phold: minimum delay of an event")
	cmd.Flags().DurationVar(&phold.Mean, "mean", phold.Mean, "phold: mean of the exponential part of an event's delay")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "random seed")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().IntVar(&gcPercent, "gc-percent", 0, "set the garbage collector's GOGC for the run (0 keeps the default)")
	return cmd
}
