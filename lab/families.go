// Package lab is the simulation harness of every family. It runs one
// registered algorithm in the simulator the way the CLI, the tests and the
// benchmarks all do (Sim: settings from the algorithm's default scenario, a
// scenario file and flags, in that order; the trace kept for the checkers
// and hashed; a Report in the JSON contract of `cohort sim --json`; whether
// the run is outside the algorithm's assumptions), and adds to the
// registry's families what their simulated runs need and report: default
// workloads, metrics, diagrams, the comparisons with the sources' figures,
// demonstrations and Monte Carlo estimates. The CLI's sim, compare and
// theory commands and the benchmarks are built on it; the live runtime is
// not (it looks algorithms up in package registry).
package lab

import (
	"fmt"
	"strings"
	"time"

	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/mutex"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/registry"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

// Family is a family of algorithms (its registry entry) and what its
// simulated runs need and report.
type Family struct {
	registry.Family
	Metrics MetricsFunc
	// Workload makes the default workload of a run whose scenario scripts
	// none; React makes what answers outputs in every run. Either may be nil.
	Workload func() sim.Workload
	React    func() sim.Workload
	// Workloads overrides Workload for the algorithms it names.
	Workloads map[string]func() sim.Workload
	// Diagram says how the family's runs are best drawn: which outputs are
	// bookkeeping, which pairs of outputs delimit intervals.
	Diagram trace.SVGOptions
	// Graphs, if set, computes from a run's trace the wait-for graphs its
	// diagram draws (Diagram.Graphs).
	Graphs func(*trace.Trace) []trace.WaitForGraph
	// Streamed: Metrics reads the workload and the result only, never the
	// trace (see Options.Streamed).
	Streamed bool
	// Wrap, if set, returns the algorithm a run with workload w runs: a
	// with its processes instrumented for that run (the gossip family
	// meters the bytes they send). Options applies it.
	Wrap func(a proc.Algorithm, w sim.Workload) proc.Algorithm
}

// Options returns run options for algorithm a of the family, with the
// family's metrics and workloads in place.
func (f Family) Options(a proc.Algorithm) Options {
	o := Options{Algo: a, Metrics: f.Metrics, Streamed: f.Streamed}
	if w, ok := f.Workloads[a.Name]; ok {
		o.Workload = w()
	} else if f.Workload != nil {
		o.Workload = f.Workload()
	}
	if f.React != nil {
		o.React = f.React()
	}
	if f.Wrap != nil {
		o.Algo = f.Wrap(a, o.Workload)
	}
	return o
}

// families is filled in init: the families' metrics look their
// algorithms' theory up in it.
var families []Family

func init() {
	families = []Family{
		{Family: registered("clocks"), Metrics: clockMetrics},
		{
			Family:   withApps(registered("mutex")), // the workload tells: ME3's application messages
			Metrics:  mutexMetrics,
			Workload: func() sim.Workload { return DefaultMutexLoad() },
			React:    func() sim.Workload { return MutexHold{Hold: time.Millisecond} },
			Diagram: trace.SVGOptions{
				Quiet: []string{"waiting", "lent", "told"},
				Spans: []trace.Span{{Open: "enter", Close: "exit", Label: "critical section"}},
			},
		},
		{Family: registered("election"), Metrics: electionMetrics, Workload: electAtStart},
		{
			Family:   registered("multicast"),
			Metrics:  multicastMetrics,
			Workload: DefaultMulticastLoad,
			Diagram:  trace.SVGOptions{Quiet: []string{"holdback"}},
		},
		{
			Family:   registered("gossip"),
			Metrics:  gossipMetrics,
			Streamed: true,
			Wrap:     meterGossip,
			Workload: func() sim.Workload { return NewGossipLoad(epidemic.Params{}) },
			Workloads: map[string]func() sim.Workload{
				"push-sum":  func() sim.Workload { return NewPushSumLoad(epidemic.Params{}) },
				"swim":      func() sim.Workload { return NewSwimLoad(epidemic.Params{}) },
				"discovery": func() sim.Workload { return NewDiscoveryLoad(epidemic.Params{}) },
			},
			Diagram: trace.SVGOptions{Quiet: []string{"state", "infective"}},
		},
		{
			Family:   registered("overlay"),
			Metrics:  overlayMetrics,
			Streamed: true,
			Wrap:     keepOverlay,
			Workload: func() sim.Workload { return NewOverlayLoad("pastry") },
			Workloads: map[string]func() sim.Workload{
				"circular": func() sim.Workload { return NewOverlayLoad("circular") },
				"scribe":   func() sim.Workload { return NewScribeLoad() },
				"esm":      func() sim.Workload { return NewESMLoad() },
			},
			Diagram: trace.SVGOptions{Quiet: []string{"joined"}},
		},
		{
			Family:   registered("snapshot"),
			Metrics:  snapshotMetrics,
			Workload: func() sim.Workload { return &SnapshotLoad{} },
			Diagram:  trace.SVGOptions{Quiet: []string{"cut", "recorded", "opened"}, Cut: "cut"},
		},
		{
			Family:    registered("deadlock"),
			Metrics:   deadlockMetrics,
			Workload:  func() sim.Workload { return &DeadlockLoad{} },
			Workloads: map[string]func() sim.Workload{"cmh-or": func() sim.Workload { return &DeadlockORLoad{} }},
			Graphs:    deadlockGraphs,
			Diagram:   trace.SVGOptions{Quiet: []string{"detector", "txn", "granted", "freed", "withdrawn", "acquired", "released", "answered"}, Declared: "deadlock"},
		},
		{
			Family:   registered("rpc"),
			Metrics:  rpcMetrics,
			Streamed: true,
			Wrap:     RPCAlgo,
			Workload: func() sim.Workload { return &RPCLoad{} },
			Workloads: map[string]func() sim.Workload{
				"extermination": rpcWithClientCrashes,
				"reincarnation": rpcWithClientCrashes,
				"expiration":    rpcWithClientCrashes,
			},
			Diagram: trace.SVGOptions{Quiet: []string{"incarnation"}, Spans: []trace.Span{{Open: "exec", Close: "done", Label: "procedure"}}},
		},
		{
			Family:    registered("consensus"),
			Metrics:   consensusMetrics,
			Workload:  DefaultKVClients,
			Workloads: map[string]func() sim.Workload{"raft-lock": DefaultLockClients, "raft-group": DefaultGroupSenders},
			Diagram:   trace.SVGOptions{Quiet: []string{"applied", "kept-alive"}},
		},
		{
			Family:  registered("synchronizer"),
			Metrics: synchronizerMetrics,
			Diagram: trace.SVGOptions{Quiet: []string{"layout"}},
		},
	}
}

func registered(name string) registry.Family {
	f, err := registry.Lookup(name)
	if err != nil {
		panic(err)
	}
	return f
}

// withApps gives the simulator's mutex runs the application's messages
// beside every algorithm (mutex.WithApp).
func withApps(f registry.Family) registry.Family {
	f.Algorithms = mutex.WithApps(f.Algorithms)
	return f
}

// DiagramOf is how the family draws the run of trace t: Diagram, with
// the wait-for graphs Graphs finds in t.
func (f Family) DiagramOf(t *trace.Trace) trace.SVGOptions {
	opt := f.Diagram
	if f.Graphs != nil && t != nil {
		opt.Graphs = f.Graphs(t)
	}
	return opt
}

// Families lists the families in the order of the textbooks' chapters.
func Families() []Family { return families }

// Lookup finds a family by name; the error lists the known ones.
func Lookup(family string) (Family, error) {
	for _, f := range families {
		if f.Name == family {
			return f, nil
		}
	}
	var names []string
	for _, f := range families {
		names = append(names, f.Name)
	}
	return Family{}, fmt.Errorf("unknown family %q (known: %s)", family, strings.Join(names, ", "))
}

// clockMetrics counts the timestamps the processes reported, and measures
// the synchronization of physical clocks.
func clockMetrics(r Finished) (map[string]float64, map[string]*float64) {
	t := r.Trace
	m := map[string]float64{}
	var stamps float64
	for i := range t.Events {
		e := &t.Events[i]
		if e.Kind == trace.Output && (e.Type == "stamp" || e.Type == "vstamp") {
			stamps++
		}
	}
	m["stamps"] = stamps
	addSyncMetrics(r, m) // clocksync.go: the physical clocks' precision and accuracy
	return m, nil
}

// theoryOf is what algorithm algo of family says a run of n processes
// costs, for each of the metrics (nil where its source gives no figure).
// The figures are the algorithm's own (proc.Algorithm.Theory).
func theoryOf(family, algo string, n int, metrics ...string) map[string]*float64 {
	out := map[string]*float64{}
	for _, m := range metrics {
		out[m] = nil
	}
	f, err := Lookup(family)
	if err != nil {
		return out
	}
	a, err := f.Algorithm(algo)
	if err != nil || a.Theory == nil {
		return out
	}
	for m, v := range a.Theory(n) {
		if _, ok := out[m]; ok {
			v := v
			out[m] = &v
		}
	}
	return out
}
