package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/cohort-go/cohort/bench"
	"github.com/cohort-go/cohort/liverpc"
	"github.com/cohort-go/cohort/pool"
	"github.com/cohort-go/cohort/rpc"
	"github.com/spf13/cobra"
)

// Bounds of cohort bench rpc's flags.
const (
	maxRPCCallers    = 1024
	maxBenchRPCCalls = 1_000_000
	maxRPCRuns       = 20
)

func newBenchRPCCmd() *cobra.Command {
	var sems, poolFlag string
	var callers, calls, payload, runs int
	var disk, asJSON bool
	cmd := &cobra.Command{
		Use:   "rpc",
		Short: "Live RPC on loopback: calls per second and p50/p99 latency, per semantics",
		Long: `Two live nodes on 127.0.0.1 over the authenticated TCP transport; node 1
calls an echo procedure on node 0 (package liverpc: the rpc family's stubs
with real timers and storage), --callers at once, --calls calls a run,
--payload bytes echoed. Each semantics runs --runs times; the medians are
printed. --disk keeps the stubs' stable storage in synced files (the
duplicate table of at-most-once and maybe: two fsyncs a call), else in
memory. --pool is the server's worker pool: a size, or auto (self-sized).
The comparison with grpc-go is a test benchmark (BenchmarkRPCLoopback in
package bench), so that grpc-go stays out of the binary.`,
		Example: `  cohort bench rpc --calls 300 --runs 1
  cohort bench rpc --semantics at-most-once --disk --calls 100 --runs 1 --json
  cohort bench rpc --semantics at-least-once --callers 16 --pool 4 --calls 300 --runs 1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var list []rpc.Semantics
			if sems == "all" {
				list = []rpc.Semantics{rpc.Maybe, rpc.AtLeastOnce, rpc.AtMostOnce}
			} else {
				for _, s := range strings.Split(sems, ",") {
					v, err := rpc.ParseSemantics(strings.TrimSpace(s))
					if err != nil {
						return usageErr("--semantics: %v", err)
					}
					list = append(list, v)
				}
			}
			switch {
			case callers < 1 || callers > maxRPCCallers:
				return usageErr("--callers %d: want 1..%d", callers, maxRPCCallers)
			case calls < 1 || calls > maxBenchRPCCalls:
				return usageErr("--calls %d: want 1..%d", calls, maxBenchRPCCalls)
			case payload < 1 || payload > liverpc.MaxPayload:
				return usageErr("--payload %d: want 1..%d bytes", payload, liverpc.MaxPayload)
			case runs < 1 || runs > maxRPCRuns:
				return usageErr("--runs %d: want 1..%d", runs, maxRPCRuns)
			}
			pc := &pool.Config{Auto: true}
			if poolFlag != "auto" {
				n, err := strconv.Atoi(poolFlag)
				if err != nil || n < 0 || n > pool.DefaultMax {
					return usageErr("--pool %q: want auto or a size 0..%d", poolFlag, pool.DefaultMax)
				}
				pc = &pool.Config{Size: n}
			}
			type row struct {
				Semantics string `json:"semantics"`
				bench.RPCResult
			}
			var rows []row
			for _, s := range list {
				var rs []bench.RPCResult
				for range runs {
					r, err := bench.RunRPC(cmd.Context(), bench.RPCConfig{Sem: s, Callers: callers, Calls: calls, Payload: payload, Disk: disk, Pool: pc})
					if err != nil {
						return fmt.Errorf("%s: %w", s, err)
					}
					rs = append(rs, r)
				}
				rows = append(rows, row{Semantics: s.String(), RPCResult: bench.Median(rs)})
			}
			w := cmd.OutOrStdout()
			if asJSON {
				return json.NewEncoder(w).Encode(map[string]any{"callers": callers, "calls": calls, "payload": payload,
					"disk": disk, "runs": runs, "pool": poolFlag, "rows": rows})
			}
			fmt.Fprintf(w, "loopback, %d caller(s), %d calls a run, %d-byte payload, storage %s, median of %d run(s)\n",
				callers, calls, payload, map[bool]string{true: "on disk (synced)", false: "in memory"}[disk], runs)
			fmt.Fprintf(w, "  %-14s %12s %10s %10s %6s\n", "semantics", "calls/s", "p50 µs", "p99 µs", "pool")
			for _, r := range rows {
				fmt.Fprintf(w, "  %-14s %12.0f %10.1f %10.1f %6d\n", r.Semantics, r.PerSec, r.P50us, r.P99us, r.Pool.Size)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&sems, "semantics", "all", "maybe, at-least-once, at-most-once (comma-separated), or all")
	f.IntVar(&callers, "callers", 1, "concurrent callers (1..1024)")
	f.IntVar(&calls, "calls", 2000, "calls per run (1..1000000)")
	f.IntVar(&payload, "payload", 128, "bytes echoed per call")
	f.IntVar(&runs, "runs", 3, "runs per semantics; the medians are printed (1..20)")
	f.BoolVar(&disk, "disk", false, "stable storage in synced files (else in memory)")
	f.StringVar(&poolFlag, "pool", "auto", "the server's worker pool: auto, or a fixed size")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}
