package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/explore"
	"github.com/cohort-go/cohort/lab"
	"github.com/cohort-go/cohort/trace"
	"github.com/spf13/cobra"
)

type exploreFlags struct {
	algo, inputs, faults, timing, strategy string
	nodes, maxStates, depth                int
	checks                                 []string
	por, json, symmetry, replay, cycles    bool
	scheduleOut, svgOut                    string
}

// Bounds of the explorer's flags: no input can exhaust memory (a state
// costs under 200 bytes, its fingerprint and path; breadth first holds the
// runs of at most 65,536 states; --cycles keeps the state graph, a few
// hundred bytes a state).
const (
	maxExploreStates = 20_000_000
	maxExploreDepth  = 10_000
)

func newExploreCmd() *cobra.Command {
	var f exploreFlags
	cmd := &cobra.Command{
		Use:   "explore FAMILY --algo NAME",
		Short: "Explore every schedule of an algorithm within bounds and check its properties in every state",
		Long: `Drive the simulator through every order of deliveries, timer firings,
inputs and chosen faults (crash, loss, duplication) within bounds, prune
states seen before by their fingerprints, and check the algorithm's
properties: the safety ones in every state, all of them in every terminal
state (nothing left to do). Exit 0 if they hold everywhere, 1 with a
counterexample (with breadth-first search, a shortest one) that
--schedule writes for cohort sim FAMILY --schedule FILE to replay.

By default every process gets the family's usual input once (mutex: one
acquire each; election: an elect at p0; deadlock, cmh-or: the two highest
processes wait for each other, a knot, and the others for the highest).
FAMILY is any family of cohort
sim, or commit (two-phase commit, for comparing state counts with other
model checkers).`,
		Example: `  cohort explore mutex --algo ricart-agrawala --nodes 3
  cohort explore mutex --algo maekawa --nodes 4 --inputs 0:acquire,1:acquire,2:acquire --check ME2 --schedule maekawa.sched --svg maekawa.svg
  cohort explore mutex --algo ricart-agrawala-jr --inputs 0:acquire,1:acquire,0:acquire --check ME3
  cohort explore election --algo bully --nodes 3 --timing async
  cohort explore deadlock --algo cmh-or --nodes 3
  cohort explore commit --algo two-phase-commit --nodes 4 --json
  cohort explore commit --algo two-phase-commit --nodes 6 --symmetry
  cohort explore mutex --algo ricart-agrawala --nodes 2 --cycles
  cohort explore mutex --algo central --faults crash=1 --strategy dfs`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runExplore(cmd, args[0], &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.algo, "algo", "", "algorithm to explore (required)")
	fl.IntVar(&f.nodes, "nodes", 3, fmt.Sprintf("number of processes (1 to %d)", explore.MaxNodes))
	fl.StringVar(&f.inputs, "inputs", "", `inputs, comma separated, as node:input ("0:acquire,1:acquire"); default: the family's usual input at every process`)
	fl.StringVar(&f.faults, "faults", "", `faults the explorer may choose on each path, as "crash=1,loss=1,dup=1" (default none)`)
	fl.StringVar(&f.timing, "timing", "", "sync (timers fire only after the messages due before them) or async (timers may fire early); default: sync for synchronous algorithms and deadlock detectors")
	fl.StringVar(&f.strategy, "strategy", "bfs", "bfs (shortest counterexamples) or dfs (with --por)")
	fl.BoolVar(&f.por, "por", true, "partial-order reduction with sleep sets (dfs only)")
	fl.IntVar(&f.maxStates, "max-states", 1_000_000, fmt.Sprintf("stop after this many unique states (at most %d)", maxExploreStates))
	fl.IntVar(&f.depth, "depth", 200, fmt.Sprintf("longest path explored (at most %d)", maxExploreDepth))
	fl.StringArrayVar(&f.checks, "check", nil, "property to check, repeatable (default: those the algorithm guarantees)")
	fl.BoolVar(&f.symmetry, "symmetry", false, "merge states that differ by a renaming of interchangeable processes (commit: the resource managers)")
	fl.BoolVar(&f.cycles, "cycles", false, "mutex: also judge liveness in cycles — a fair cycle (weak fairness) in which a process that asked never enters breaks ME2 (breadth first; keeps the state graph)")
	fl.BoolVar(&f.replay, "replay", false, "reach every state by replaying its path from the start (the stateless engine), not by saving and restoring runs")
	fl.BoolVar(&f.json, "json", false, "print one JSON object")
	fl.StringVar(&f.scheduleOut, "schedule", "", "write the counterexample's schedule to this file")
	fl.StringVar(&f.svgOut, "svg", "", "write the counterexample's space-time diagram (SVG) to this file")
	return cmd
}

type exploreReport struct {
	Family        string           `json:"family"`
	Algo          string           `json:"algo"`
	Nodes         int              `json:"nodes"`
	Inputs        []string         `json:"inputs"`
	Timing        string           `json:"timing"`
	Faults        string           `json:"faults"`
	Strategy      string           `json:"strategy"`
	Engine        string           `json:"engine"`
	Symmetry      bool             `json:"symmetry"`
	Cycles        bool             `json:"cycles"`
	States        int64            `json:"states"`
	Transitions   int64            `json:"transitions"`
	Terminal      int64            `json:"terminal"`
	MaxDepth      int              `json:"max_depth"`
	Exhausted     bool             `json:"exhausted"`
	ElapsedMS     float64          `json:"elapsed_ms"`
	StatesPerS    float64          `json:"states_per_s"`
	BytesPerState float64          `json:"bytes_per_state"`
	Omission      float64          `json:"omission_probability"` // two states sharing a fingerprint: at most states²/2⁶⁵
	Checks        []string         `json:"checks"`
	Unknown       int64            `json:"unknown"`
	Violation     *exploreViolated `json:"violation,omitempty"`
}

type exploreViolated struct {
	check.Result
	Steps          int    `json:"steps"`
	Terminal       bool   `json:"terminal"`
	TraceSHA       string `json:"trace_sha256"`
	Counterexample string `json:"counterexample"`
	Cycle          int    `json:"cycle,omitempty"` // the schedule's last steps, repeated forever
}

func runExplore(cmd *cobra.Command, family string, f *exploreFlags) error {
	if f.algo == "" {
		return usageErr("--algo: required (cohort sim %s --help lists the algorithms)", family)
	}
	if f.nodes < 1 || f.nodes > explore.MaxNodes {
		return usageErr("--nodes %d: want 1 to %d", f.nodes, explore.MaxNodes)
	}
	if f.maxStates < 1 || f.maxStates > maxExploreStates {
		return usageErr("--max-states %d: want 1 to %d", f.maxStates, maxExploreStates)
	}
	if f.depth < 1 || f.depth > maxExploreDepth {
		return usageErr("--depth %d: want 1 to %d", f.depth, maxExploreDepth)
	}
	var inputs []string
	if f.inputs != "" {
		inputs = strings.Split(f.inputs, ",")
	}
	cfg, err := explore.Setup(family, f.algo, f.nodes, inputs)
	if err != nil {
		return usageErr("%v", err)
	}
	if f.timing != "" {
		if cfg.Timing, err = explore.ParseTiming(f.timing); err != nil {
			return usageErr("--timing: %v", err)
		}
	}
	switch f.strategy {
	case "bfs":
		cfg.Strategy = explore.BFS
	case "dfs":
		cfg.Strategy, cfg.POR = explore.DFS, f.por
	default:
		return usageErr("--strategy %q: want bfs or dfs", f.strategy)
	}
	if f.faults != "" {
		for _, kv := range strings.Split(f.faults, ",") {
			k, v, _ := strings.Cut(kv, "=")
			var n int
			if _, err := fmt.Sscanf(v, "%d", &n); err != nil || n < 0 || n > 8 {
				return usageErr("--faults %q: %q wants a count from 0 to 8, as crash=1", f.faults, kv)
			}
			switch k {
			case "crash":
				cfg.Crashes = n
			case "loss":
				cfg.Losses = n
			case "dup":
				cfg.Dups = n
			default:
				return usageErr("--faults %q: unknown fault %q (want crash, loss or dup)", f.faults, k)
			}
		}
	}
	if len(f.checks) > 0 {
		for _, name := range f.checks {
			if _, ok := check.Lookup(name); !ok {
				return usageErr("--check %q: no such checker", name)
			}
		}
		cfg.Checks = slices.Clone(f.checks)
		cfg.Safety = explore.SafetyOf(cfg.Checks)
	}
	cfg.MaxStates, cfg.MaxDepth = f.maxStates, f.depth
	cfg.Replay = f.replay
	if f.cycles {
		if family != "mutex" || cfg.Strategy != explore.BFS {
			return usageErr("--cycles: judged for the mutex family, breadth first (not %s, --strategy %s)", family, f.strategy)
		}
		cfg.Cycles = true
	}
	if f.symmetry {
		if len(cfg.Symmetric) < 2 {
			return usageErr("--symmetry: %s/%s with %d nodes has no interchangeable processes (only commit's resource managers are)", family, f.algo, f.nodes)
		}
		cfg.Symmetry = true
	}
	if os.Getenv("GOGC") == "" {
		// The search's live heap is small (fingerprints, the path) and
		// its garbage large (a copied process per step, a forked run per
		// state breadth first holds): collecting less often buys states
		// per CPU second.
		defer debug.SetGCPercent(debug.SetGCPercent(400))
		if os.Getenv("GOMEMLIMIT") == "" {
			// But not five times a live heap that breadth first's held
			// runs grow to their bound (1 GiB): past 3 GiB the collector
			// works as often as it must.
			defer debug.SetMemoryLimit(debug.SetMemoryLimit(3 << 30))
		}
	}
	res, err := explore.Explore(cfg)
	if err != nil {
		return &exitError{1, fmt.Errorf("%s: %w", f.algo, err)}
	}
	rep := exploreReport{
		Family: family, Algo: f.algo, Nodes: f.nodes, Timing: cfg.Timing.String(),
		Faults:   fmt.Sprintf("crash=%d,loss=%d,dup=%d", cfg.Crashes, cfg.Losses, cfg.Dups),
		Strategy: cfg.Strategy.String(), Engine: res.Engine, Symmetry: cfg.Symmetry, Cycles: cfg.Cycles, States: res.States, Transitions: res.Transitions,
		Terminal: res.Terminal, MaxDepth: res.MaxDepth, Exhausted: res.Exhausted,
		ElapsedMS: float64(res.Elapsed) / float64(time.Millisecond), BytesPerState: res.BytesPerState, Omission: res.Omission,
		Checks: cfg.Checks, Unknown: res.Unknown, Inputs: []string{},
	}
	for _, in := range cfg.Inputs {
		rep.Inputs = append(rep.Inputs, in.Text)
	}
	if res.Elapsed > 0 {
		rep.StatesPerS = float64(res.States) / res.Elapsed.Seconds()
	}
	if v := res.Violation; v != nil {
		rep.Violation = &exploreViolated{Result: v.Check, Steps: len(v.Schedule.Steps), Terminal: v.Terminal,
			TraceSHA: traceSHA(v.Trace), Counterexample: v.Counterexample(), Cycle: v.Cycle}
		if f.scheduleOut != "" {
			if err := writeFile(f.scheduleOut, v.Schedule.Write); err != nil {
				return usageErr("--schedule: %v", err)
			}
		}
		if f.svgOut != "" {
			if err := writeScheduleSVG(f.svgOut, family, v.Trace, v.Check.Events, fmt.Sprintf("%s/%s — counterexample to %s, %d steps", family, f.algo, v.Check.Name, len(v.Schedule.Steps))); err != nil {
				return err
			}
		}
	}
	out := cmd.OutOrStdout()
	if f.json {
		if err := json.NewEncoder(out).Encode(rep); err != nil {
			return err
		}
	} else {
		printExplore(out, &rep, f)
	}
	if res.Violation != nil {
		return errChecksFailed
	}
	return nil
}

func printExplore(w io.Writer, r *exploreReport, f *exploreFlags) {
	sym := ""
	if r.Symmetry {
		sym = ", symmetry"
	}
	fmt.Fprintf(w, "%s/%s, %d nodes, inputs %s, timing %s, faults %s, %s%s, engine %s\n", r.Family, r.Algo, r.Nodes,
		strings.Join(r.Inputs, ","), r.Timing, r.Faults, r.Strategy, sym, r.Engine)
	verdict := "exhausted"
	if !r.Exhausted {
		verdict = "not exhausted (a bound was hit, or a violation found)"
	}
	fmt.Fprintf(w, "states %d (%s), transitions %d, terminal %d, depth %d, %.0f ms (%.0f states/s, %.1f bytes/state, fingerprint collision ≤ %.1e)\n",
		r.States, verdict, r.Transitions, r.Terminal, r.MaxDepth, r.ElapsedMS, r.StatesPerS, r.BytesPerState, r.Omission)
	fmt.Fprintf(w, "checked: %s\n", strings.Join(r.Checks, ", "))
	if r.Unknown > 0 {
		fmt.Fprintf(w, "undecided: %d verdicts unknown\n", r.Unknown)
	}
	if v := r.Violation; v != nil {
		fmt.Fprintf(w, "VIOLATED in %d steps (trace sha256 %s):\n%s\n", v.Steps, v.TraceSHA, indent(v.Counterexample))
		for _, file := range []string{f.scheduleOut, f.svgOut} {
			if file != "" {
				fmt.Fprintf(w, "wrote %s\n", file)
			}
		}
	} else {
		fmt.Fprintf(w, "all hold in every state reached\n")
	}
}

func traceSHA(t *trace.Trace) string {
	h := trace.NewHasher(t.Header)
	for i := range t.Events {
		h.Record(&t.Events[i])
	}
	return h.Sum()
}

func writeScheduleSVG(path, family string, t *trace.Trace, mark []int, title string) error {
	var opt trace.SVGOptions
	if fam, err := lab.Lookup(family); err == nil {
		opt = fam.DiagramOf(t)
	}
	opt.Mark, opt.Title = mark, title
	if err := writeFile(path, func(w io.Writer) error { return trace.WriteSVG(w, t, opt) }); err != nil {
		return usageErr("--svg: %v", err)
	}
	return nil
}

// simSchedule replays a schedule written by cohort explore: the same run,
// event for event (its trace's SHA-256 is the one explore printed).
func simSchedule(cmd *cobra.Command, family string, f *simFlags) error {
	file, err := os.Open(f.schedule)
	if err != nil {
		return usageErr("--schedule: %v", err)
	}
	s, err := explore.ParseSchedule(file)
	file.Close()
	if err != nil {
		return usageErr("--schedule %s: %v", f.schedule, err)
	}
	if s.Family != family {
		return usageErr("--schedule %s is a schedule of the %s family, not %s", f.schedule, s.Family, family)
	}
	if f.algo != "" && f.algo != s.Algo {
		return usageErr("--schedule %s is a schedule of %s, not --algo %s", f.schedule, s.Algo, f.algo)
	}
	cfg, err := s.Config()
	if err != nil {
		return usageErr("--schedule %s: %v", f.schedule, err)
	}
	tr, err := explore.Replay(s)
	if err != nil {
		return usageErr("--schedule %s: %v", f.schedule, err)
	}
	results, err := check.Run(tr, cfg.Checks...)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	failed := false
	var mark []int
	type jsonCheck struct {
		check.Result
		Counterexample string `json:"counterexample,omitempty"`
	}
	var checks []jsonCheck
	for _, r := range results {
		c := jsonCheck{Result: r}
		if !r.OK() {
			// A schedule may end mid-run: only a safety property's
			// violation is a failure there, or one of a property the
			// explorer was told to check (the schedule ends where it
			// found the violation).
			failed = failed || (r.Status == check.Violated && (slices.Contains(cfg.Safety, r.Name) || slices.Contains(s.Checks, r.Name)))
			mark = append(mark, r.Events...)
			c.Counterexample = r.Counterexample(tr)
		}
		checks = append(checks, c)
	}
	if f.svgOut != "" {
		if err := writeScheduleSVG(f.svgOut, family, tr, mark, fmt.Sprintf("%s/%s — schedule %s", family, s.Algo, f.schedule)); err != nil {
			return err
		}
	}
	if f.traceOut != "" {
		if err := writeFile(f.traceOut, func(w io.Writer) error {
			tw := trace.NewWriter(w, tr.Header)
			for i := range tr.Events {
				tw.Record(&tr.Events[i])
			}
			return tw.Flush()
		}); err != nil {
			return usageErr("--trace: %v", err)
		}
	}
	sha := traceSHA(tr)
	if f.json {
		if err := json.NewEncoder(out).Encode(map[string]any{"family": family, "algo": s.Algo, "nodes": s.Nodes,
			"steps": len(s.Steps), "events": len(tr.Events), "checks": checks, "trace_sha256": sha}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(out, "%s/%s, %d nodes: schedule %s replayed, %d steps, %d events, trace sha256 %s\n",
			family, s.Algo, s.Nodes, f.schedule, len(s.Steps), len(tr.Events), sha)
		for _, c := range checks {
			if c.OK() {
				fmt.Fprintf(out, "  %s: ok\n", c.Name)
			} else {
				fmt.Fprintf(out, "%s\n", indent(c.Counterexample))
			}
		}
		for _, file := range []string{f.svgOut, f.traceOut} {
			if file != "" {
				fmt.Fprintf(out, "wrote %s\n", file)
			}
		}
	}
	if f.view {
		if err := viewSchedule(cmd, tr, results, fmt.Sprintf("%s/%s — schedule %s", family, s.Algo, f.schedule), f.viewListen); err != nil {
			return err
		}
	}
	if failed {
		return errChecksFailed
	}
	return nil
}
