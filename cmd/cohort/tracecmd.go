package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/lab"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/trace"
	"github.com/spf13/cobra"
)

func newTraceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trace",
		Short: "Render or check a recorded JSONL trace (from the simulator or a live cluster)",
	}
	cmd.AddCommand(newTraceRenderCmd(), newTraceCheckCmd(), newTraceMergeCmd(),
		newTracePredicateCmd("possibly"), newTracePredicateCmd("definitely"), newTraceLatticeCmd())
	return cmd
}

func readTrace(path string) (*trace.Trace, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, usageErr("%v", err)
		}
		defer f.Close()
		r = f
	}
	t, err := trace.Read(r)
	if err != nil {
		return nil, usageErr("%s: %v", path, err)
	}
	return t, nil
}

// readNodeTrace reads a node's trace file up to its last whole line: a
// node still writing it, or killed while it wrote, leaves a torn one.
func readNodeTrace(path string) (*trace.Trace, error) {
	if path == "-" {
		return readTrace(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	defer f.Close()
	end, err := wholeLines(f)
	if err != nil {
		return nil, usageErr("%s: %v", path, err)
	}
	t, err := trace.Read(io.NewSectionReader(f, 0, end))
	if err != nil {
		return nil, usageErr("%s: %v", path, err)
	}
	return t, nil
}

// wholeLines returns the length of f up to the end of its last whole
// line, reading back from its end.
func wholeLines(f *os.File) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	buf := make([]byte, 64<<10)
	for end := st.Size(); end > 0; {
		start := max(end-int64(len(buf)), 0)
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && err != io.EOF {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}

func newTraceRenderCmd() *cobra.Command {
	var svgOut, shivizOut, title string
	var mark bool
	cmd := &cobra.Command{
		Use:   "render FILE",
		Short: "Render a trace as an SVG space-time diagram and/or a ShiViz log",
		Example: `  cohort trace render run.jsonl --svg run.svg
  cohort trace render run.jsonl --shiviz run.log --mark`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if svgOut == "" && shivizOut == "" {
				return usageErr("nothing to do: give --svg FILE and/or --shiviz FILE")
			}
			t, err := readTrace(args[0])
			if err != nil {
				return err
			}
			if svgOut != "" {
				var violations []trace.Violation
				if mark {
					results, err := check.Run(t, checkersFor(t)...)
					if err != nil {
						return usageErr("%v", err)
					}
					breaks := unpromised(t)
					for _, r := range results {
						if !r.OK() && len(r.Events) > 0 {
							violations = append(violations, trace.Violation{Name: r.Name, Events: r.Events, Unpromised: slices.Contains(breaks, r.Name), Edges: r.Edges})
						}
					}
				}
				if title == "" {
					title = args[0]
				}
				var opt trace.SVGOptions
				if f, err := lab.Lookup(t.Header.Family); err == nil {
					opt = f.DiagramOf(t)
				}
				opt.Violations, opt.Title = violations, title
				if err := writeFile(svgOut, func(w io.Writer) error {
					return trace.WriteSVG(w, t, opt)
				}); err != nil {
					return usageErr("--svg: %v", err)
				}
				fmt.Fprintln(cmd.OutOrStdout(), "wrote", svgOut)
			}
			if shivizOut != "" {
				if err := writeShiViz(shivizOut, cmd.ErrOrStderr(), t); err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), "wrote", shivizOut)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&svgOut, "svg", "", "write a space-time diagram (SVG) to this file")
	cmd.Flags().StringVar(&shivizOut, "shiviz", "", "write a ShiViz log to this file")
	cmd.Flags().StringVar(&title, "title", "", "diagram title (default: the file name)")
	cmd.Flags().BoolVar(&mark, "mark", false, "run the checkers and mark violating events in red")
	return cmd
}

// checkersFor is the checkers of the algorithm named in the trace's header,
// or the generic ones when it names none Cohort knows.
func checkersFor(t *trace.Trace) []string {
	if f, err := lab.Lookup(t.Header.Family); err == nil {
		if a, err := f.Algorithm(t.Header.Algo); err == nil {
			return a.Checks
		}
	}
	return []string{"integrity", "no-duplicates", "clock-condition"}
}

// unpromised is the checkers whose property the algorithm named in the
// trace's header does not promise.
func unpromised(t *trace.Trace) []string {
	if f, err := lab.Lookup(t.Header.Family); err == nil {
		if a, err := f.Algorithm(t.Header.Algo); err == nil {
			return a.Breaks
		}
	}
	return nil
}

func newTraceCheckCmd() *cobra.Command {
	var names string
	var asJSON, lattice bool
	cmd := &cobra.Command{
		Use:   "check FILE",
		Short: "Run property checkers over a trace and print counterexamples",
		Long: `Run the checkers of the algorithm named in the trace's header (or the
generic ones: integrity, no-duplicates, clock-condition), or those named
with --checks. Exit status 1 if any property is violated. FILE may be - for
standard input.

--lattice also judges, for each checker that has one, its version over
every consistent global state of the run rather than the observed
interleaving only: ME1-lattice beside ME1 (no consistent global state has
two processes in the critical section).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := readTrace(args[0])
			if err != nil {
				return err
			}
			list := checkersFor(t)
			if names != "" {
				list = strings.Split(names, ",")
			}
			if lattice {
				var with []string
				for _, name := range list {
					with = append(with, name)
					if every, ok := check.EveryState(name); ok && !slices.Contains(list, every) {
						with = append(with, every)
					}
				}
				list = with
			}
			results, err := check.Run(t, list...)
			if err != nil {
				return usageErr("--checks: %v", err)
			}
			out := cmd.OutOrStdout()
			failed := false
			for _, r := range results {
				failed = failed || !r.OK()
			}
			if asJSON {
				type item struct {
					check.Result
					OK bool `json:"ok"`
				}
				var items []item
				for _, r := range results {
					items = append(items, item{r, r.OK()})
				}
				if err := json.NewEncoder(out).Encode(map[string]any{"file": args[0], "events": len(t.Events), "checks": items}); err != nil {
					return err
				}
			} else {
				tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
				fmt.Fprintf(tw, "CHECK\tRESULT\t(%d events, %d nodes)\n", len(t.Events), t.Header.Nodes)
				for _, r := range results {
					fmt.Fprintf(tw, "%s\t%s\t\n", r.Name, r.Status)
				}
				tw.Flush()
				for _, r := range results {
					if !r.OK() {
						fmt.Fprintf(out, "\n%s\n", r.Counterexample(t))
					}
				}
			}
			if failed {
				return errChecksFailed
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&names, "checks", "", "comma-separated checker names (see cohort list --checkers)")
	cmd.RegisterFlagCompletionFunc("checks", completeCheckers)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&lattice, "lattice", false, "also judge each property that has a version over every consistent global state (ME1-lattice)")
	return cmd
}

func newTraceMergeCmd() *cobra.Command {
	var out, listen string
	var view, cut bool
	cmd := &cobra.Command{
		Use:   "merge -o OUT NODE.jsonl...",
		Short: "Merge the traces of a live cluster's nodes into one",
		Long: `Merge the JSONL traces that the nodes of a live cluster wrote (node.yaml's
trace, cluster up --trace-dir) into one trace, ordered by the nodes' clocks,
for cohort trace check and render; --view serves the merged trace in the
viewer (as cohort view does).

Files read while their nodes still write them end at different moments,
so one may hold the receipt of a message whose send its sender's file
does not hold yet; merge says how many events follow such sends, and
--cut leaves them out: the merged trace is then the files' largest
consistent cut.`,
		Example: `  cohort trace merge -o run.jsonl node0.jsonl node1.jsonl node2.jsonl
  cohort trace merge -o run.jsonl --view traces/*.jsonl
  cohort trace merge -o now.jsonl --cut traces/*.jsonl    # while the cluster runs`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageErr("-o: missing (the merged trace's file)")
			}
			var ts []*trace.Trace
			for _, f := range args {
				t, err := readNodeTrace(f)
				if err != nil {
					return err
				}
				ts = append(ts, t)
			}
			kept, beyond := live.ConsistentCut(ts)
			if cut {
				ts = kept
			}
			m, err := live.Merge(ts...)
			if err != nil {
				return usageErr("%v", err)
			}
			switch {
			case beyond > 0 && cut:
				fmt.Fprintf(cmd.ErrOrStderr(), "cut %d events that follow sends the files do not hold (the largest consistent cut)\n", beyond)
			case beyond > 0:
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %d events follow sends the files do not hold: files still being written (--cut leaves them out), or a node killed in the middle of a step\n", beyond)
			}
			if err := writeFile(out, func(w io.Writer) error { return trace.Write(w, m) }); err != nil {
				return usageErr("-o: %v", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %d events from %d nodes\n", out, len(m.Events), len(ts))
			if view {
				page, err := checkedPage(m, out)
				if err != nil {
					return err
				}
				return showPage(cmd, page, "", listen) // view.go
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "the merged trace")
	cmd.Flags().BoolVar(&view, "view", false, "serve the merged trace in the interactive viewer until Ctrl-C")
	cmd.Flags().BoolVar(&cut, "cut", false, "leave out the events that follow sends the files do not hold yet (the largest consistent cut)")
	cmd.Flags().StringVar(&listen, "view-listen", "127.0.0.1:0", "address to serve --view on")
	return cmd
}
