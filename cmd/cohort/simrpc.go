package main

import (
	"time"

	"github.com/cohort-go/cohort/lab"
	"github.com/cohort-go/cohort/rpc"
	"github.com/spf13/cobra"
)

// The rpc family's flags of `cohort sim`: the calls' semantics and
// number, the procedure's duration, and crash-restarts of the server and
// the clients.
var rpcOnlyFlags = []string{"semantics", "calls", "work", "server-crash-every", "client-crash-every", "downtime", "no-throttle"}

// Bounds of the rpc flags. The workload counts each call's executions
// (a byte per call) and the crash schedule holds two faults per crash.
const (
	maxRPCCalls   = 10_000_000
	maxRPCWork    = time.Minute
	minCrashEvery = time.Millisecond
	maxDowntime   = time.Minute
	// rpcTraceLimit is the largest number of calls a run keeps its trace
	// for by default: a million calls make about ten million events.
	rpcTraceLimit = 100_000
)

func addRPCFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.String("semantics", "at-most-once", "rpc: the calls' semantics — maybe, at-least-once or at-most-once")
	fl.Int("calls", 200, "rpc: calls made in all, one at a time per client (every process but 0, the server)")
	fl.Duration("work", 0, "rpc: how long each call's procedure runs at the server (default 5ms; 40ms for the orphan remedies)")
	fl.Duration("server-crash-every", 0, "rpc: mean time between crash-restarts of the server (0: none)")
	fl.Duration("client-crash-every", 0, "rpc: mean time between crash-restarts of each client (0: none; 100ms for the orphan remedies)")
	fl.Duration("downtime", 10*time.Millisecond, "rpc: how long a crashed server or client stays down")
	fl.Bool("no-throttle", false, "rpc: no retry throttle: every call gets its five attempts (default: gRPC's token bucket, maxTokens 10, tokenRatio 0.1)")
	for _, name := range rpcOnlyFlags {
		familyOnlyFlags[name] = "rpc"
	}
}

// rpcSettings reads the rpc flags into a function that applies them to
// a run's workload (nil if none was given), and says whether the run is
// too large to keep its trace by default. For another family, any of
// them is a usage error.
func rpcSettings(cmd *cobra.Command, family string) (func(*lab.RPCLoad), bool, error) {
	fl := cmd.Flags()
	var given []string
	for _, name := range rpcOnlyFlags {
		if fl.Changed(name) {
			if family != "rpc" {
				return nil, false, usageErr("--%s is a flag of the rpc family, not of %s", name, family)
			}
			given = append(given, name)
		}
	}
	if len(given) == 0 {
		return nil, false, nil
	}
	semName, _ := fl.GetString("semantics")
	sem, err := rpc.ParseSemantics(semName)
	if err != nil {
		return nil, false, usageErr("--semantics %q: want maybe, at-least-once or at-most-once", semName)
	}
	calls, _ := fl.GetInt("calls")
	if calls < 1 || calls > maxRPCCalls {
		return nil, false, usageErr("--calls %d: want 1..%d", calls, maxRPCCalls)
	}
	work, _ := fl.GetDuration("work")
	if work < 0 || work > maxRPCWork {
		return nil, false, usageErr("--work %v: want 0..%v", work, maxRPCWork)
	}
	var every [2]time.Duration
	for i, name := range []string{"server-crash-every", "client-crash-every"} {
		every[i], _ = fl.GetDuration(name)
		if every[i] != 0 && (every[i] < minCrashEvery || every[i] > 24*time.Hour) {
			return nil, false, usageErr("--%s %v: want 0 (no crashes) or %v..24h", name, every[i], minCrashEvery)
		}
	}
	down, _ := fl.GetDuration("downtime")
	if down < time.Microsecond || down > maxDowntime {
		return nil, false, usageErr("--downtime %v: want 1µs..%v", down, maxDowntime)
	}
	noThrottle, _ := fl.GetBool("no-throttle")
	apply := func(w *lab.RPCLoad) {
		for _, name := range given {
			switch name {
			case "semantics":
				w.Sem = sem
			case "calls":
				w.Calls = calls
			case "work":
				w.Work = work
			case "server-crash-every":
				w.ServerCrashEvery = every[0]
			case "client-crash-every":
				w.ClientCrashEvery = every[1]
			case "downtime":
				w.Downtime = down
			case "no-throttle":
				w.NoThrottle = noThrottle
			}
		}
	}
	return apply, calls > rpcTraceLimit, nil
}

// configureRPC applies the rpc flags to the run's workload, and the
// workload to the algorithm.
func configureRPC(apply func(*lab.RPCLoad), o *lab.Options) {
	if w, ok := o.Workload.(*lab.RPCLoad); ok && apply != nil {
		apply(w)
		o.Algo = lab.RPCAlgo(o.Algo, w)
	}
}
