package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/lab"
	"github.com/cohort-go/cohort/trace"
	"github.com/cohort-go/cohort/viewer"
	"github.com/spf13/cobra"
)

func newViewCmd() *cobra.Command {
	var htmlOut, listen, reportFile, title string
	cmd := &cobra.Command{
		Use:   "view FILE.jsonl [OTHER.jsonl]",
		Short: "Open a trace in the interactive viewer (in the browser), or write it as one HTML file",
		Long: `Serve the interactive viewer of a JSONL trace on 127.0.0.1 (a free port
unless --listen names one; the URL is printed) until Ctrl-C, or with --html
write the same viewer as one self-contained HTML file that opens from disk
with no server and no network.

The viewer draws the space-time diagram (zoom with the wheel, pan by
dragging, true time or Lamport time), filters by process and by message
type, steps through the events (← and →) showing each one's vector clock
and data, highlights the causal past and future of the event clicked, and
lists the checkers' results: clicking a violation marks every event of its
counterexample. The checkers are those of the algorithm the trace names
(as cohort trace check runs them), or the verdicts and fault periods of
--report, the JSON report of the run (cohort sim --json).

Given two traces, the viewer shows them one above the other on one time
scale, zoomed and panned together, each run's processes named after it
(A:p0, B:p0) and its checks too (A: ME1): two algorithms on the same
workload, or one before and after a change.

A link can say what to show: ra.html#check=ME3 opens on that violation,
#event=185 on that event with its causal past and future, and
#layout=lamport in Lamport time.`,
		Example: `  cohort sim mutex --algo ricart-agrawala --trace ra.jsonl && cohort view ra.jsonl
  cohort view ra.jsonl --html ra.html
  cohort view ra.jsonl --listen 127.0.0.1:8080
  cohort sim mutex --algo ricart-agrawala --fault "pause 2 from 5ms to 9ms" --json --trace ra.jsonl > ra.json
  cohort view ra.jsonl --report ra.json --html ra.html
  cohort view basic.jsonl total.jsonl --html both.html
  cohort sim mutex --algo ricart-agrawala --view`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 2 {
				if reportFile != "" {
					return usageErr("--report %s: one report for one trace; with two traces the checkers run on each", reportFile)
				}
				var pages [2]*viewer.Page
				for k, file := range args {
					t, err := readTrace(file)
					if err != nil {
						return err
					}
					if pages[k], err = checkedPage(t, file); err != nil {
						return err
					}
				}
				page, err := viewer.Pair(pages[0], pages[1])
				if err != nil {
					return usageErr("%v", err)
				}
				if title != "" {
					page.Title = title
				}
				return showPage(cmd, page, htmlOut, listen)
			}
			t, err := readTrace(args[0])
			if err != nil {
				return err
			}
			if title == "" {
				title = args[0]
			}
			if reportFile == "" {
				page, err := checkedPage(t, title)
				if err != nil {
					return err
				}
				return showPage(cmd, page, htmlOut, listen)
			}
			r, err := readReport(reportFile)
			if err != nil {
				return err
			}
			page := &viewer.Page{Title: title, Trace: t, Checks: reportChecks(r), Shades: reportShades(r)}
			return showPage(cmd, page, htmlOut, listen)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&htmlOut, "html", "", "write the viewer as one self-contained HTML file instead of serving it")
	fl.StringVar(&listen, "listen", "127.0.0.1:0", "address to serve the viewer on")
	fl.StringVar(&reportFile, "report", "", "the run's JSON report (cohort sim --json): its checks and fault periods")
	fl.StringVar(&title, "title", "", "the page's title (default: the file name)")
	return cmd
}

// checkedPage is the viewer's page of a trace with the verdicts of the
// checkers of the algorithm it names (as cohort trace check runs them).
func checkedPage(t *trace.Trace, title string) (*viewer.Page, error) {
	results, err := check.Run(t, checkersFor(t)...)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	page := &viewer.Page{Title: title, Trace: t}
	breaks := unpromised(t)
	for _, r := range results {
		page.Checks = append(page.Checks, viewer.Check{Name: r.Name, OK: r.OK(), Status: r.Status.String(),
			Promised: !slices.Contains(breaks, r.Name), Detail: r.Detail, Events: r.Events, Edges: r.Edges})
	}
	return page, nil
}

// readReport reads a report cohort sim --json printed (the first one, if
// the file holds several).
func readReport(path string) (*lab.Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usageErr("--report: %v", err)
	}
	defer f.Close()
	var r lab.Report
	if err := json.NewDecoder(io.LimitReader(f, 64<<20)).Decode(&r); err != nil {
		return nil, usageErr("--report %s: not a cohort sim --json report: %v", path, err)
	}
	return &r, nil
}

// reportChecks are a report's verdicts as the viewer lists them.
func reportChecks(r *lab.Report) []viewer.Check {
	var out []viewer.Check
	for _, c := range r.Checks {
		out = append(out, viewer.Check{Name: c.Name, OK: c.OK, Status: c.Status, Promised: c.Guaranteed, Detail: c.Detail, Events: c.Events, Edges: c.Edges})
	}
	return out
}

// viewContext is how long a served viewer runs: until Ctrl-C (a variable,
// so that the tests can stop it).
var viewContext = func() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// showPage writes the viewer to htmlOut, or else serves it on listen until
// interrupted.
func showPage(cmd *cobra.Command, page *viewer.Page, htmlOut, listen string) error {
	if n := len(page.Trace.Events); n > viewer.MaxEvents {
		return usageErr("the trace has %d events; the viewer opens at most %d (cut the run short: --deadline, or fewer --nodes)", n, viewer.MaxEvents)
	}
	if f, err := lab.Lookup(page.Trace.Header.Family); err == nil && page.Graphs == nil && page.Runs == nil {
		page.Graphs = f.DiagramOf(page.Trace).Graphs
	}
	if page.Figures == nil && page.Runs == nil {
		page.Figures = figuresOf(page.Trace)
	}
	out := cmd.OutOrStdout()
	if htmlOut != "" {
		if err := writeFile(htmlOut, func(w io.Writer) error { return viewer.WriteHTML(w, page) }); err != nil {
			return usageErr("--html: %v", err)
		}
		fmt.Fprintln(out, "wrote", htmlOut)
		return nil
	}
	ctx, stop := viewContext()
	defer stop()
	err := viewer.Serve(ctx, listen, page, func(url string) {
		fmt.Fprintf(out, "viewer: %s (%d events; Ctrl-C to stop)\n", url, len(page.Trace.Events))
	})
	if err != nil {
		return usageErr("--listen %s: %v", listen, err)
	}
	return nil
}

// figuresOf are the charts the viewer shows beside a run: the clock
// offsets of a run whose processes read their clocks (a clock
// synchronization run), with its accuracy and precision marked, as cohort
// sim --plot draws them.
func figuresOf(tr *trace.Trace) []viewer.Figure {
	h := tr.Header
	title := fmt.Sprintf("%s/%s — clock offsets, %d nodes, seed %d", h.Family, h.Algo, len(tr.Lanes()), h.Seed)
	p, ok := lab.OffsetPlot(tr, title, 0)
	if !ok {
		return nil
	}
	var b strings.Builder
	if err := trace.WriteLinePlot(&b, p); err != nil {
		return nil
	}
	return []viewer.Figure{{Title: "clock offsets, accuracy α and precision π", SVG: b.String()}}
}

// viewRun serves the viewer of a run just simulated (cohort sim --view).
func viewRun(cmd *cobra.Command, tr *trace.Trace, r *lab.Report, listen string) error {
	page := &viewer.Page{
		Title:  fmt.Sprintf("%s/%s — %d nodes, seed %d", r.Family, r.Algo, r.Nodes, r.Seed),
		Trace:  tr,
		Checks: reportChecks(r),
		Shades: reportShades(r),
	}
	return showPage(cmd, page, "", listen)
}

// viewSchedule serves the viewer of a replayed schedule (cohort sim
// --schedule --view) with its checkers' verdicts.
func viewSchedule(cmd *cobra.Command, tr *trace.Trace, results []check.Result, title, listen string) error {
	page := &viewer.Page{Title: title, Trace: tr}
	breaks := unpromised(tr)
	for _, r := range results {
		page.Checks = append(page.Checks, viewer.Check{Name: r.Name, OK: r.OK(), Status: r.Status.String(),
			Promised: !slices.Contains(breaks, r.Name), Detail: r.Detail, Events: r.Events, Edges: r.Edges})
	}
	return showPage(cmd, page, "", listen)
}
