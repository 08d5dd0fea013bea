package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/cohort-go/cohort/lab"
	"github.com/cohort-go/cohort/trace"
)

// The rpc family's comparison is a grid — each semantics under each
// network and crash condition — printed as one table per process count:
// a row per case, a column per metric.
var (
	rpcCallMetrics   = []string{"executions_per_call", "executions_per_call_max", "duplicate_executions", "failed_calls", "calls"}
	rpcOrphanMetrics = []string{"orphans", "orphans_left", "orphan_life_ms_max", "orphan_after_reboot_ms_max"}
)

func printRPCCompare(w io.Writer, rows []lab.CompareRow, runs []lab.CompareRun, nodes []int) {
	type key struct {
		algo, c string
		n       int
	}
	cell := map[key]map[string]string{}
	var cases []key
	for _, r := range rows {
		k := key{r.Algo, r.Case, r.Nodes}
		if cell[k] == nil {
			cell[k] = map[string]string{}
			cases = append(cases, k)
		}
		cell[k][r.Metric] = num(r.Measured)
	}
	table := func(title string, metrics []string, keep func(key) bool, first string) {
		for _, n := range nodes {
			fmt.Fprintf(w, "\n%s, N=%d (a server and %d clients)\n", title, n, n-1)
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintf(tw, "%s\t", first)
			for _, m := range metrics {
				fmt.Fprintf(tw, "%s\t", metricNames[m])
			}
			fmt.Fprintln(tw)
			for _, k := range cases {
				if k.n != n || !keep(k) {
					continue
				}
				label := k.c
				if first == "remedy" {
					label = k.algo
				}
				fmt.Fprintf(tw, "%s\t", label)
				for _, m := range metrics {
					fmt.Fprintf(tw, "%s\t", cmpOr(cell[k][m], "n/a"))
				}
				fmt.Fprintln(tw)
			}
			tw.Flush()
		}
	}
	isCalls := func(k key) bool { return k.algo == "plain" && strings.Contains(k.c, ",") }
	table("calls, by semantics and condition (plain stubs, 1000 calls)", rpcCallMetrics, isCalls, "semantics, condition")
	table("orphans: clients crash every 100ms (down 10ms), 40ms procedures", rpcOrphanMetrics, func(k key) bool { return !isCalls(k) }, "remedy")
	for _, r := range runs {
		if len(r.Failed) > 0 {
			fmt.Fprintf(w, "  CHECKS FAILED: %s with N=%d, %s: %s\n", r.Algo, r.Nodes, r.Case, strings.Join(r.Failed, ", "))
		}
	}
}

func cmpOr(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}

// rpcPlot draws executions per call and the failed fraction of the calls
// against the loss rate, one line per semantics, at the first process
// count: the loss-only cases of the comparison.
func rpcPlot(rows []lab.CompareRow, n int) trace.LinePlot {
	p := trace.LinePlot{Title: fmt.Sprintf("rpc: executions per call and failed calls against message loss (%d nodes, 1000 calls)", n),
		XLabel: "message loss rate", YLabel: "per call"}
	for _, sem := range []string{"maybe", "at-least-once", "at-most-once"} {
		execs := trace.Series{Name: sem + ": executions per call"}
		failed := trace.Series{Name: sem + ": failed calls (fraction)"}
		byCase := map[string]map[string]float64{}
		for _, r := range rows {
			if r.Nodes != n || r.Algo != "plain" || r.Measured == nil {
				continue
			}
			if byCase[r.Case] == nil {
				byCase[r.Case] = map[string]float64{}
			}
			byCase[r.Case][r.Metric] = *r.Measured
		}
		for _, loss := range []int{0, 10, 20, 30} {
			c := sem + ", clean"
			if loss > 0 {
				c = fmt.Sprintf("%s, loss %d%%", sem, loss)
			}
			m, ok := byCase[c]
			if !ok || m["calls"] == 0 {
				continue
			}
			execs.X, execs.Y = append(execs.X, float64(loss)/100), append(execs.Y, m["executions_per_call"])
			failed.X, failed.Y = append(failed.X, float64(loss)/100), append(failed.Y, m["failed_calls"]/m["calls"])
		}
		p.Series = append(p.Series, execs, failed)
	}
	p.Series = slices.DeleteFunc(p.Series, func(s trace.Series) bool { return len(s.X) == 0 })
	return p
}
