package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/lab"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/scenario"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
	"github.com/spf13/cobra"
)

type simFlags struct {
	algo, scenario, latency, vc string
	nodes                       int
	seed                        uint64
	fifo                        bool
	loss, dup, reorder          float64
	deadline                    time.Duration
	traceOut, svgOut, shivizOut string
	gossip                      *epidemic.Params // the gossip flags, if any were given
	plotOut                     string
	json, noCheck, hash         bool
	states                      bool   // record each process's described state (proc.Describer)
	view                        bool   // serve the run in the viewer (view.go)
	viewListen                  string // where
	faults                      []string
	order, demo                 string // the multicast family's (simmulticast.go)
	schedule                    string // a schedule written by cohort explore (explore.go)
}

func newSimCmd() *cobra.Command {
	var f simFlags
	cmd := &cobra.Command{
		Use:   "sim FAMILY",
		Short: "Run algorithms of a family in the deterministic simulator and check them",
		Long: `Run one algorithm of FAMILY (--algo), or every one of them, in the
simulator, check the run against the algorithm's properties and report.
FAMILY is clocks, mutex, election, multicast, gossip, overlay, snapshot, deadlock, synchronizer, rpc, consensus or position; cohort sim FAMILY
--help lists its algorithms, their assumptions and the flags that apply.

Settings come from the algorithm's default scenario, then --scenario FILE,
then the flags. The same seed and settings always give the same trace;
its SHA-256 is in the report.`,
		Example: `  cohort sim clocks
  cohort sim clocks --algo lamport-figure --svg figure.svg
  cohort sim multicast --demo bank --shiviz bank.log
  cohort sim clocks --algo lamport --nodes 8 --seed 3 --latency exp:2ms --json
  cohort sim snapshot --algo chandy-lamport --nodes 5 --svg snapshot.svg
  cohort sim deadlock --algo cmh --nodes 5 --seed 1 --svg deadlock.svg
  cohort sim deadlock --algo timeout --wait 20ms --contention 0.9 --json
  cohort sim synchronizer --algo alpha --topology ring --nodes 16 --json
  cohort sim synchronizer --algo gamma --gamma-k 3 --topology random --degree 3 --nodes 64
  cohort sim rpc --algo plain --semantics at-most-once --calls 2000 --loss 0.3 --dup 0.1 --server-crash-every 50ms --json
  cohort sim rpc --algo expiration --semantics at-least-once --client-crash-every 100ms
  cohort sim mutex --schedule maekawa.sched --svg maekawa.svg
  cohort sim overlay --algo scribe --nodes 64 --json
  cohort sim overlay --algo esm --nodes 64 --json
  cohort sim mutex --algo ricart-agrawala --view`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeFamilies,
		RunE:              func(cmd *cobra.Command, args []string) error { return runSim(cmd, args[0], &f) },
	}
	installSimHelp(cmd) // cohort sim FAMILY --help: the family's algorithms and flags
	fl := cmd.Flags()
	fl.StringVar(&f.algo, "algo", "", "algorithm to run (default: every algorithm of the family)")
	fl.IntVar(&f.nodes, "nodes", 0, "number of processes (default: the scenario's)")
	fl.Uint64Var(&f.seed, "seed", 1, "random seed")
	fl.StringVar(&f.scenario, "scenario", "", "scenario file (YAML): nodes, network, faults, inputs")
	fl.StringVar(&f.latency, "latency", "", "one-way latency: 1ms, uniform:1ms,3ms, exp:2ms, normal:5ms,1ms, lognormal:5ms,0.5")
	fl.BoolVar(&f.fifo, "fifo", false, "FIFO channels")
	fl.Float64Var(&f.loss, "loss", 0, "probability that a message is lost")
	fl.Float64Var(&f.dup, "dup", 0, "probability that a message is delivered twice")
	fl.Float64Var(&f.reorder, "reorder", 0, "probability that a message is held back and overtaken")
	fl.StringArrayVar(&f.faults, "fault", nil, `add a fault, repeatable: "crash 3 at 10ms", "recover 3 at 50ms", "partition {0,1} | {2,3} from 20ms to 40ms", "pause 2 from 5ms to 9ms", "slow 1 by 2ms from 0ms to 1s", "join 7 at 10ms", "leave 2 at 30ms", "churn join 2/s fail 1/s leave 1/s to 10s"`)
	fl.DurationVar(&f.deadline, "deadline", 0, "stop at this virtual time (default: the scenario's, or when nothing is left to do)")
	fl.StringVar(&f.vc, "vc", "auto", "vector timestamps in the trace: on, off, or auto (on up to 64 nodes)")
	fl.StringVar(&f.traceOut, "trace", "", "write the trace as JSON Lines to this file")
	fl.StringVar(&f.svgOut, "svg", "", "write a space-time diagram (SVG) to this file")
	fl.StringVar(&f.shivizOut, "shiviz", "", "write a ShiViz log to this file")
	fl.StringVar(&f.plotOut, "plot", "", "write a chart (SVG) to this file: every clock's offset from true time (clock synchronization runs), the susceptible fraction per round over the theory's (gossip runs), or the hop histogram (overlay runs)")
	fl.BoolVar(&f.json, "json", false, "print one JSON object per run")
	fl.BoolVar(&f.states, "states", false, "record in the trace each process's own description of its state after every step (the viewer shows it; --view turns it on); the trace and its hash change")
	fl.BoolVar(&f.view, "view", false, "serve the run in the interactive viewer (as cohort view does; for position, charts and maps of the run) until Ctrl-C")
	fl.StringVar(&f.viewListen, "view-listen", "127.0.0.1:0", "address to serve --view on")
	fl.BoolVar(&f.noCheck, "no-check", false, "skip the checkers and keep no trace in memory (for very large runs)")
	fl.BoolVar(&f.hash, "hash", false, "compute the trace's SHA-256 even in a run that keeps no trace by default (a gossip or overlay run past 10⁴ nodes)")
	fl.StringVar(&f.order, "order", "", "multicast family: the ordering algorithm to run (another name for --algo)")
	fl.StringVar(&f.demo, "demo", "", `multicast family: run a demonstration ("bank": the replicated bank account of Tanenbaum & van Steen §6.2, under basic multicast and under --order, default total-sequencer)`)
	fl.StringVar(&f.schedule, "schedule", "", "replay a schedule written by cohort explore --schedule, event for event (with --svg, --trace, --json)")
	addPositionFlags(cmd)     // position.go
	addGossipFlags(cmd)       // simgossip.go
	addOverlayFlags(cmd)      // simoverlay.go
	addSnapshotFlags(cmd)     // simsnapshot.go
	addDeadlockFlags(cmd)     // simdeadlock.go
	addSynchronizerFlags(cmd) // simsynchronizer.go
	addRPCFlags(cmd)          // simrpc.go
	cmd.RegisterFlagCompletionFunc("algo", completeAlgos)
	cmd.RegisterFlagCompletionFunc("order", completeAlgos)
	return cmd
}

func runSim(cmd *cobra.Command, family string, f *simFlags) error {
	if f.schedule != "" {
		return simSchedule(cmd, family, f) // explore.go
	}
	if handled, err := simPosition(cmd, family, f); handled { // position.go
		return err
	}
	if handled, err := simMulticast(cmd, family, f); handled { // simmulticast.go
		return err
	}
	params, err := gossipParams(cmd, family) // simgossip.go
	if err != nil {
		return err
	}
	f.gossip = params
	overlay, err := overlayFlags(cmd, family, f.algo) // simoverlay.go
	if err != nil {
		return err
	}
	topology, takes, err := snapshotSettings(cmd, family) // simsnapshot.go
	if err != nil {
		return err
	}
	syncK, syncDegree, err := synchronizerSettings(cmd, family, f.algo, topology) // simsynchronizer.go
	if err != nil {
		return err
	}
	rpcLoad, rpcLarge, err := rpcSettings(cmd, family) // simrpc.go
	if err != nil {
		return err
	}
	fam, err := lab.Lookup(family)
	if err != nil {
		return usageErr("%v", err)
	}
	configureDeadlock, err := deadlockSettings(cmd, family, f.nodes) // simdeadlock.go
	if err != nil {
		return err
	}
	base := lab.Options{Metrics: fam.Metrics, NoCheck: f.noCheck}
	algoName := f.algo
	if f.scenario != "" {
		sc, err := scenario.Load(f.scenario)
		if err != nil {
			return usageErr("--scenario: %v", err)
		}
		// A scenario names the family it was written for, and may name the
		// algorithm: the family must match; --algo overrides the algorithm.
		if sc.Family != "" && sc.Family != family {
			return usageErr("--scenario %s is written for the %s family (family: %s), not %s: run cohort sim %s --scenario %s",
				f.scenario, sc.Family, sc.Family, family, sc.Family, f.scenario)
		}
		if algoName == "" {
			algoName = sc.Algo
		}
		base.Scenario = sc
	}
	algos := fam.Algorithms
	if algoName != "" {
		a, err := fam.Algorithm(algoName)
		if err != nil {
			if f.algo == "" {
				return usageErr("--scenario %s: algo: %v", f.scenario, err)
			}
			return usageErr("--algo: %v", err)
		}
		algos = []proc.Algorithm{a}
	}
	fl := cmd.Flags()
	if fl.Changed("nodes") {
		if f.nodes < 1 || f.nodes > scenario.MaxNodes {
			// Past MaxNodes no algorithm fits: a whole-family run would
			// otherwise note that for each and run them at their own sizes.
			return usageErr("--nodes %d: want 1..%d", f.nodes, scenario.MaxNodes)
		}
		base.Nodes = f.nodes
	}
	if fl.Changed("seed") || base.Scenario == nil {
		seed := f.seed
		base.Seed = &seed
	}
	if f.latency != "" {
		d, err := sim.ParseDist(f.latency)
		if err != nil {
			return usageErr("--latency: %v", err)
		}
		base.Network.Latency = d
	}
	if fl.Changed("fifo") {
		base.Network.FIFO = &f.fifo
	}
	for _, p := range []struct {
		name string
		v    *float64
		dst  **float64
	}{{"loss", &f.loss, &base.Network.Loss}, {"dup", &f.dup, &base.Network.Duplicate}, {"reorder", &f.reorder, &base.Network.Reorder}} {
		if fl.Changed(p.name) {
			if !(*p.v >= 0 && *p.v <= 1) {
				return usageErr("--%s %v: want a probability between 0 and 1", p.name, *p.v)
			}
			*p.dst = p.v
		}
	}
	if f.deadline < 0 {
		return usageErr("--deadline %v: must not be negative", f.deadline)
	}
	base.Deadline = f.deadline
	base.Faults = f.faults
	base.States = f.states || f.view
	switch f.vc {
	case "auto":
	case "on":
		base.VectorClocks = lab.On
	case "off":
		base.VectorClocks = lab.Off
	default:
		return usageErr("--vc %q: want on, off or auto", f.vc)
	}
	// A family whose metrics need no trace (gossip) runs past
	// streamedTraceLimit processes without one unless told otherwise: a
	// million-node dissemination's trace would not fit in memory.
	if fam.Streamed && base.Nodes > streamedTraceLimit && !fl.Changed("no-check") &&
		f.svgOut == "" && f.shivizOut == "" && f.plotOut == "" && !f.view {
		base.NoCheck, base.NoHash = true, !f.hash
		fmt.Fprintf(cmd.ErrOrStderr(), "note: %d nodes: the run keeps no trace and is not checked (as with --no-check; --no-check=false to keep it), nor hashed unless --hash; its metrics do not need one\n", base.Nodes)
	}
	// So does an rpc run of more than rpcTraceLimit calls: its metrics
	// are counted as the outputs happen.
	if rpcLarge && !fl.Changed("no-check") && f.svgOut == "" && f.shivizOut == "" && f.plotOut == "" && !f.view {
		base.NoCheck, base.NoHash = true, !f.hash
		fmt.Fprintf(cmd.ErrOrStderr(), "note: more than %d calls: the run keeps no trace and is not checked (as with --no-check; --no-check=false to keep it), nor hashed unless --hash; its metrics do not need one\n", rpcTraceLimit)
	}
	if f.noCheck && (f.svgOut != "" || f.shivizOut != "" || f.plotOut != "" || f.view) {
		return usageErr("--svg, --shiviz, --plot and --view need the trace in memory: drop --no-check")
	}
	if f.view && len(algos) > 1 {
		return usageErr("--view shows one run: name its algorithm with --algo")
	}

	out := cmd.OutOrStdout()
	var reports []*lab.Report
	var viewed *trace.Trace // the run --view serves
	failed := false
	for _, a := range algos {
		o := base
		fo := fam.Options(a)
		o.Algo, o.Workload, o.React, o.Streamed = fo.Algo, fo.Workload, fo.React, fo.Streamed
		if params != nil {
			if err := configureGossip(fam, a, params, &o); err != nil {
				return err
			}
		}
		configureOverlay(overlay, &o)
		configureSnapshot(topology, takes, &o)
		configureSynchronizer(syncK, syncDegree, &o)
		if err := configureDeadlock(&o); err != nil {
			return err
		}
		configureRPC(rpcLoad, &o)
		var closers []func() error
		if f.traceOut != "" {
			file, err := os.Create(perAlgo(f.traceOut, a.Name, len(algos)))
			if err != nil {
				return usageErr("--trace: %v", err)
			}
			o.Trace = file
			closers = append(closers, file.Close)
		}
		prog := newProgress(cmd.ErrOrStderr())
		o.Progress = prog.update
		r, tr, err := lab.Sim(o)
		if err != nil && errors.Is(err, lab.ErrInput) && o.Nodes > 0 && len(algos) > 1 && o.Scenario == nil {
			// A whole-family run: --nodes applies where it fits; an
			// algorithm it does not fit (a fixed-size demonstration, a
			// square-only grid) runs at its own size, and says so.
			why := strings.TrimPrefix(err.Error(), lab.ErrInput.Error()+": ")
			fmt.Fprintf(cmd.ErrOrStderr(), "note: --nodes %d does not fit %s (%s); it runs with its own number of nodes\n",
				o.Nodes, a.Name, why)
			o.Nodes = 0
			r, tr, err = lab.Sim(o)
		}
		prog.done()
		for _, c := range closers {
			if cerr := c(); cerr != nil && err == nil {
				err = cerr
			}
		}
		if err != nil {
			if errors.Is(err, lab.ErrInput) {
				return usageErr("%s: %v", a.Name, err)
			}
			return &exitError{1, fmt.Errorf("%s: %w", a.Name, err)}
		}
		if err := writeRenderings(tr, r, f, a.Name, len(algos), fam.DiagramOf(tr), cmd.ErrOrStderr()); err != nil {
			return err
		}
		failed = failed || r.Failed()
		reports = append(reports, r)
		viewed = tr
		if f.json {
			enc := json.NewEncoder(out)
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
	}
	if !f.json {
		if len(reports) == 1 {
			printReport(out, reports[0], tracesOf(f))
		} else {
			printTable(out, fam, reports, f.scenario)
			for _, file := range tracesOf(f) {
				for _, r := range reports {
					fmt.Fprintf(out, "wrote %s\n", perAlgo(file, r.Algo, len(reports)))
				}
			}
		}
	}
	if f.view && viewed != nil {
		if err := viewRun(cmd, viewed, reports[0], f.viewListen); err != nil {
			return err
		}
	}
	if failed {
		return errChecksFailed
	}
	return nil
}

// streamedTraceLimit is the largest run of a streamed family
// (lab.Family.Streamed) that keeps its trace for the checkers by default
// (a variable, for the tests).
var streamedTraceLimit = 10_000

func tracesOf(f *simFlags) []string {
	var files []string
	for _, s := range []string{f.traceOut, f.svgOut, f.shivizOut, f.plotOut} {
		if s != "" {
			files = append(files, s)
		}
	}
	return files
}

// perAlgo names the output file of one algorithm when several run:
// out.svg becomes out-lamport.svg.
func perAlgo(path, algo string, runs int) string {
	if runs == 1 {
		return path
	}
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "-" + algo + ext
}

func writeRenderings(tr *trace.Trace, r *lab.Report, f *simFlags, algo string, runs int, diagram trace.SVGOptions, stderr io.Writer) error {
	if tr == nil {
		return nil
	}
	if f.svgOut != "" {
		title := fmt.Sprintf("%s/%s — %d nodes, seed %d", r.Family, r.Algo, r.Nodes, r.Seed)
		if err := writeFile(perAlgo(f.svgOut, algo, runs), func(w io.Writer) error {
			opt := diagram
			opt.Violations, opt.Shades, opt.Title = reportViolations(r), reportShades(r), title
			return trace.WriteSVG(w, tr, opt)
		}); err != nil {
			return usageErr("--svg: %v", err)
		}
	}
	if f.plotOut != "" {
		if err := writePlot(tr, r, perAlgo(f.plotOut, algo, runs), runs, f.gossip); err != nil { // plot.go
			return err
		}
	}
	if f.shivizOut != "" {
		if err := writeShiViz(perAlgo(f.shivizOut, algo, runs), stderr, tr); err != nil {
			return err
		}
	}
	return nil
}

// reportViolations are the failed checks of a run, for the diagram: a
// property the algorithm does not promise is drawn softer.
func reportViolations(r *lab.Report) []trace.Violation {
	var out []trace.Violation
	for _, c := range r.Checks {
		if !c.OK && len(c.Events) > 0 {
			out = append(out, trace.Violation{Name: c.Name, Events: c.Events, Unpromised: !c.Guaranteed, Edges: c.Edges})
		}
	}
	return out
}

// reportShades are the partitions and pauses of a run, for the diagram.
func reportShades(r *lab.Report) []trace.Shade {
	var out []trace.Shade
	for _, p := range r.Periods {
		s := trace.Shade{Kind: p.Kind, From: p.FromNS, To: p.ToNS, Label: p.Label}
		for _, n := range p.Nodes {
			s.Nodes = append(s.Nodes, int32(n))
		}
		out = append(out, s)
	}
	return out
}

// shivizWarnEvents is the size of a ShiViz log past which ShiViz, which
// lays out every event in the browser, becomes slow to open it.
const shivizWarnEvents = 10_000

// writeShiViz writes a trace's ShiViz log, warning on stderr when the log
// is large enough for ShiViz to be slow.
func writeShiViz(path string, stderr io.Writer, traces ...*trace.Trace) error {
	n := 0
	if err := writeFile(path, func(w io.Writer) error {
		var err error
		n, err = trace.WriteShiVizExecutions(w, traces...)
		return err
	}); err != nil {
		return usageErr("--shiviz: %v", err)
	}
	if n > shivizWarnEvents && stderr != nil {
		fmt.Fprintf(stderr, "warning: %s holds %d events; ShiViz lays out every event in the browser and is slow past about %d (open part of the run: cohort sim --deadline, or fewer --nodes)\n",
			path, n, shivizWarnEvents)
	}
	return nil
}

func writeFile(path string, write func(io.Writer) error) error {
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(file); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}

func printReport(w io.Writer, r *lab.Report, files []string) {
	fmt.Fprintf(w, "%s/%s   %d nodes   seed %d   %s\n", r.Family, r.Algo, r.Nodes, r.Seed, r.Network)
	fmt.Fprintf(w, "  assumes      %s\n", r.Assumption)
	for i, o := range r.Outside {
		label := "outside"
		if i > 0 {
			label = ""
		}
		fmt.Fprintf(w, "  %-12s %s\n", label, o)
	}
	if len(r.Outside) > 0 {
		fmt.Fprintf(w, "  %-12s so this run is outside %s's assumptions: a violation below is expected, not a bug\n", "", r.Algo)
	}
	// The trace's events are what the diagram and the ShiViz log draw;
	// the simulator's steps are fewer (a step's sends and outputs are
	// events of the trace too).
	if r.TraceEvents > 0 {
		fmt.Fprintf(w, "  events       %d in the trace (%d simulator steps) in %s of virtual time (stopped: %s)\n", r.TraceEvents, r.Events, trace.FormatNS(r.VirtualNS), r.Stop)
	} else {
		fmt.Fprintf(w, "  events       %d simulator steps in %s of virtual time (stopped: %s)\n", r.Events, trace.FormatNS(r.VirtualNS), r.Stop)
	}
	fmt.Fprintf(w, "  messages     %d%s", r.Messages.Total, byType(r.Messages.ByType))
	if r.Messages.Dropped > 0 || r.Messages.Duplicated > 0 {
		fmt.Fprintf(w, ", %d dropped, %d duplicated", r.Messages.Dropped, r.Messages.Duplicated)
	}
	fmt.Fprintln(w)
	if len(r.Outputs) > 0 {
		fmt.Fprintf(w, "  outputs      %s\n", strings.Trim(byType(r.Outputs), " ()"))
	}
	if len(r.Metrics) > 0 {
		fmt.Fprintf(w, "  metrics      %s\n", metrics(r))
	}
	if len(r.Checks) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  CHECK\tRESULT")
		for _, c := range r.Checks {
			fmt.Fprintf(tw, "  %s\t%s\n", c.Name, verdict(r, c))
		}
		tw.Flush()
		for _, c := range r.Checks {
			if !c.OK && c.Counterexample != "" {
				fmt.Fprintf(w, "\n%s\n", indent(c.Counterexample))
			}
		}
	}
	if r.TraceSHA != "" {
		fmt.Fprintf(w, "\n  trace sha256 %s\n", r.TraceSHA)
	} else {
		fmt.Fprintf(w, "\n  trace sha256 not computed (--hash to compute it)\n")
	}
	for _, f := range files {
		fmt.Fprintf(w, "  wrote        %s\n", f)
	}
}

func printTable(w io.Writer, fam lab.Family, reports []*lab.Report, scenarioFile string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	// One column per checker any run has; "—" where a run has not that one.
	var names []string
	col := map[string]int{}
	for _, r := range reports {
		for _, c := range r.Checks {
			if _, ok := col[c.Name]; !ok {
				col[c.Name] = len(names)
				names = append(names, c.Name)
			}
		}
	}
	fmt.Fprintf(tw, "ALGORITHM\tNODES\tEVENTS\tMESSAGES\t%s\n", strings.ToUpper(strings.Join(names, "\t")))
	for _, r := range reports {
		cols := make([]string, len(names))
		for i := range cols {
			cols[i] = "—"
		}
		for _, c := range r.Checks {
			cols[col[c.Name]] = verdict(r, c)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", r.Algo, r.Nodes, r.Events, r.Messages.Total, strings.Join(cols, "\t"))
	}
	tw.Flush()
	for _, r := range reports {
		for _, c := range r.Checks {
			if !c.OK {
				fmt.Fprintf(w, "\n%s: %s %s: %s\n", r.Algo, c.Name, verdict(r, c), c.Detail)
			}
		}
	}
	for _, r := range reports {
		if len(r.Outside) > 0 {
			fmt.Fprintf(w, "\n%s runs outside its assumptions (%s): its violations are expected, not bugs\n", r.Algo, strings.Join(r.Outside, "; "))
		}
	}
	setting := "its default scenario"
	if scenarioFile != "" {
		setting = scenarioFile
	}
	fmt.Fprintf(w, "\nOne run per algorithm with %s; --algo NAME for one run in detail.\n", setting)
}

func verdict(r *lab.Report, c lab.Check) string {
	switch {
	case len(r.Outside) > 0 && c.OK:
		return "ok"
	case len(r.Outside) > 0:
		return c.Status + " (outside assumptions)"
	case c.OK && !c.Guaranteed:
		return "ok (not guaranteed)"
	case c.OK:
		return "ok"
	case !c.Guaranteed:
		return c.Status + " (not guaranteed)"
	default:
		return strings.ToUpper(c.Status)
	}
}

func byType(m map[string]int64) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func metrics(r *lab.Report) string {
	keys := make([]string, 0, len(r.Metrics))
	for k := range r.Metrics {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		s := fmt.Sprintf("%s %.4g", k, r.Metrics[k])
		if th := r.Theory[k]; th != nil {
			s += fmt.Sprintf(" (theory %.4g)", *th)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}
