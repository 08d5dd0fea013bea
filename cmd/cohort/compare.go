package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/cohort-go/cohort/lab"
	"github.com/cohort-go/cohort/trace"
	"github.com/cohort-go/cohort/viewer"
	"github.com/spf13/cobra"
)

func newCompareCmd() *cobra.Command {
	var nodesFlag string
	var seed uint64
	var asJSON bool
	var plotOut, htmlOut, listen string
	var view bool
	var proximity string
	cmd := &cobra.Command{
		Use:   "compare FAMILY",
		Short: "Measure every algorithm of a family in constructed situations, beside the textbooks' formulas",
		Long: `Run every algorithm of FAMILY for each process count in constructed
situations — "uncontended" (requests far apart) and "saturated" (every
process asks again as soon as it leaves) — and print each measured figure
beside the theory's, with a note where they differ and why. Delays are in
units of the (constant, 1 ms) one-way latency.

--html FILE writes the figures as charts, one per metric and case, each
algorithm measured (solid) beside its theory (dashed) against the number
of processes, in one self-contained page; --view serves that page.`,
		Example: `  cohort compare mutex --nodes 4,8,16,32
  cohort compare mutex --nodes 8 --json
  cohort compare deadlock --nodes 5
  cohort compare synchronizer --nodes 16,64

  cohort compare rpc --nodes 4 --plot rpc.svg
  cohort compare mutex --nodes 4,8,16 --html mutex.html`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeFamilies,
		RunE: func(cmd *cobra.Command, args []string) error {
			var nodes []int
			for _, s := range strings.Split(nodesFlag, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(s))
				if limit := lab.CompareMaxNodes(args[0]); err != nil || n < 1 || n > limit {
					return usageErr("--nodes: %q is not a process count between 1 and %d", s, limit)
				}
				nodes = append(nodes, n)
			}
			if plotOut != "" && args[0] != "rpc" {
				return usageErr("--plot: only the rpc family's comparison has a chart")
			}
			if cmd.Flags().Changed("proximity") && proximity != "on" && proximity != "off" {
				return usageErr("--proximity %q: want on or off", proximity)
			}
			rows, runs, err := lab.CompareWith(args[0], nodes, seed, lab.CompareOptions{Proximity: proximity})
			if err != nil {
				return usageErr("%v", err)
			}
			out := cmd.OutOrStdout()
			failed := false
			for _, r := range runs {
				failed = failed || len(r.Failed) > 0
			}
			if asJSON {
				if err := json.NewEncoder(out).Encode(map[string]any{"rows": rows, "runs": runs}); err != nil {
					return err
				}
			} else if args[0] == "rpc" {
				printRPCCompare(out, rows, runs, nodes)
			} else {
				printCompare(out, rows, runs, nodes)
			}
			if htmlOut != "" || view {
				if err := showCharts(cmd, args[0], rows, htmlOut, view, listen); err != nil {
					return err
				}
			}
			if plotOut != "" {
				if err := writeFile(plotOut, func(w io.Writer) error { return trace.WriteLinePlot(w, rpcPlot(rows, nodes[0])) }); err != nil {
					return usageErr("--plot: %v", err)
				}
			}
			if failed {
				return errChecksFailed
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&nodesFlag, "nodes", "4,8,16", "comma-separated process counts")
	cmd.Flags().StringVar(&htmlOut, "html", "", "write the figures as charts (measured beside theory, against the number of processes) to this self-contained HTML file")
	cmd.Flags().BoolVar(&view, "view", false, "serve the charts in the browser until Ctrl-C")
	cmd.Flags().StringVar(&listen, "view-listen", "127.0.0.1:0", "address to serve --view on")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "random seed")
	cmd.Flags().StringVar(&plotOut, "plot", "", "rpc: write a chart (SVG) of executions per call and failed calls against the loss rate, per semantics, to this file")
	cmd.Flags().StringVar(&proximity, "proximity", "", "overlay: on: only the cases whose Pastry tables are chosen by proximity; off: only those whose tables are not (default: both)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: {\"rows\":[{algo,nodes,case,metric,measured,theory,note}], \"runs\":[...]}")
	return cmd
}

var metricNames = map[string]string{
	"messages_per_entry":      "messages per entry",
	"client_delay_msgs":       "client delay (msgs)",
	"sync_delay_msgs":         "sync delay (msgs)",
	"throughput_per_s":        "entries per second",
	"messages":                "messages",
	"turnaround_msgs":         "turnaround (msgs)",
	"messages_per_multicast":  "messages per multicast",
	"latency_msgs":            "latency (msgs)",
	"holdback_max":            "largest hold-back queue",
	"rounds_to_all":           "rounds to all",
	"pull_ratio":              "Σpᵢ₊₁/Σpᵢ²",
	"push_tail_ratio":         "tail pᵢ₊₁/pᵢ",
	"messages_per_node":       "messages per node",
	"bytes_per_node":          "bytes per node",
	"residue":                 "residue",
	"updates_per_node":        "updates per node",
	"max_error":               "largest relative error",
	"rounds_to_1e-2":          "rounds to largest error 10⁻²",
	"rounds_to_1e-4":          "rounds to largest error 10⁻⁴",
	"rounds_to_1e-6":          "rounds to largest error 10⁻⁶",
	"rounds_to_1e-2_mean":     "rounds to mean error 10⁻²",
	"rounds_to_1e-4_mean":     "rounds to mean error 10⁻⁴",
	"rounds_to_1e-6_mean":     "rounds to mean error 10⁻⁶",
	"messages_per_node_round": "messages per node and round",

	"first_detection_periods":        "first detection (periods)",
	"first_declared_periods":         "first declared dead (periods)",
	"messages_per_member_per_period": "messages per member and period",
	"false_positives":                "false positives",

	"rounds_to_findable": "rounds to findable everywhere",
	"nearest_first":      "truly nearest holder found first",
	"nearest_in_k":       "truly nearest among the k found",
	"precision_at_k":     "precision@k against the true k nearest",
	"random_precision":   "precision@k of a random pick",
	"stretch":            "stretch (true RTT, first found / nearest)",
	"rtt_error":          "median relative error of estimated RTTs",

	"hops_mean":                 "hops (mean)",
	"hops_p99":                  "hops (99th percentile)",
	"delivered_fraction":        "lookups delivered",
	"state_entries_per_node":    "state entries per node",
	"hops_mean_before":          "hops before the failure",
	"hops_mean_failed":          "hops right after it",
	"hops_mean_repaired":        "hops after repair",
	"correct_fraction_failed":   "at the live home, right after",
	"correct_fraction_repaired": "at the live home, after repair",
	"received_fraction":         "multicasts received",
	"depth_mean":                "tree depth (mean)",
	"depth_max":                 "tree depth (most)",
	"rdp_mean":                  "delay penalty (mean)",
	"rdp_p90":                   "delay penalty (90th percentile)",
	"rdp_root_mean":             "delay penalty from the root (mean)",
	"stress_mean":               "link stress (mean)",
	"stress_max":                "link stress (most)",
	"unicast_stress_mean":       "naive unicast's link stress (mean)",
	"unicast_stress_max":        "naive unicast's link stress (most)",
	"stream_rate_mean":          "stream rate received, Mbit/s (mean)",
	"stream_rate_min":           "stream rate received, Mbit/s (least)",
	"full_rate_fraction":        "members receiving the whole stream",

	"executions_per_call":        "executions/call",
	"executions_per_call_max":    "most executions",
	"duplicate_executions":       "calls run twice+",
	"failed_calls":               "failed calls",
	"calls":                      "calls",
	"orphans":                    "orphans",
	"orphans_left":               "left at the end",
	"orphan_life_ms_max":         "longest after crash (ms)",
	"orphan_after_reboot_ms_max": "longest after reboot (ms)",

	"markers_per_channel": "markers per channel and snapshot",
	"diameter":            "diameter",
	"complete_delays":     "complete (delays)",

	"deadlocks_formed":       "deadlocks formed",
	"deadlocks_detected":     "deadlocks detected",
	"phantom_detections":     "phantom detections",
	"aborts":                 "aborts",
	"probe_messages":         "probe messages",
	"query_messages":         "query messages",
	"reply_messages":         "reply messages",
	"edges_per_detection":    "edges reached per detection (e)",
	"messages_per_detection": "detection messages per declaration",
	"detection_latency_ms":   "detection latency (ms, median)",
	"control_per_round":      "synchronizer messages per round",
	"acks_per_round":         "acks per round",
	"round_time_delays":      "time per round (largest delays)",
	"height":                 "tree height",
	"clusters":               "clusters",
	"elected_round":          "elected in round",
}

func printCompare(w io.Writer, rows []lab.CompareRow, runs []lab.CompareRun, nodes []int) {
	fmt.Fprintln(w, "measured (theory); delays in one-way message times; — where the textbooks give no single figure")
	var algos []string
	for _, r := range rows {
		if len(algos) == 0 || algos[len(algos)-1] != r.Algo {
			algos = append(algos, r.Algo)
		}
	}
	for _, r := range runs { // an algorithm whose every run was skipped says why
		if r.Skip != "" && !slices.Contains(algos, r.Algo) {
			algos = append(algos, r.Algo)
		}
	}
	for _, algo := range algos {
		fmt.Fprintf(w, "\n%s\n", algo)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprint(tw, "  \t")
		for _, n := range nodes {
			fmt.Fprintf(tw, "N=%d\t", n)
		}
		fmt.Fprintln(tw)
		type key struct{ c, m string }
		var order []key
		cells := map[key]map[int]string{}
		notes := map[string]bool{}
		var noteList []string
		for _, r := range rows {
			if r.Algo != algo {
				continue
			}
			k := key{r.Case, r.Metric}
			if cells[k] == nil {
				cells[k] = map[int]string{}
				order = append(order, k)
			}
			cells[k][r.Nodes] = fmt.Sprintf("%s (%s)", num(r.Measured), num(r.Theory))
			if r.Note != "" && !notes[r.Note] {
				notes[r.Note] = true
				noteList = append(noteList, metricNames[r.Metric]+": "+r.Note)
			}
		}
		for _, k := range order {
			fmt.Fprintf(tw, "  %s, %s\t", metricNames[k.m], k.c)
			for _, n := range nodes {
				c := cells[k][n]
				if c == "" {
					c = "n/a"
				}
				fmt.Fprintf(tw, "%s\t", c)
			}
			fmt.Fprintln(tw)
		}
		tw.Flush()
		skipped := map[string]bool{}
		for _, r := range runs {
			if r.Algo == algo && len(r.Failed) > 0 {
				fmt.Fprintf(w, "  CHECKS FAILED with N=%d, %s: %s\n", r.Nodes, r.Case, strings.Join(r.Failed, ", "))
			}
			if r.Algo == algo && len(r.Broken) > 0 {
				fmt.Fprintf(w, "  N=%d, %s: %s violated (not guaranteed)\n", r.Nodes, r.Case, strings.Join(r.Broken, ", "))
			}
			if why := fmt.Sprintf("N=%d: %s", r.Nodes, r.Skip); r.Algo == algo && r.Skip != "" && !skipped[why] {
				skipped[why] = true // once, though it skips every case
				fmt.Fprintf(w, "  skipped %s\n", why)
			}
		}
		for _, n := range noteList {
			fmt.Fprintf(w, "  · %s\n", n)
		}
	}
}

func num(p *float64) string {
	if p == nil {
		return "—"
	}
	v := *p
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v == float64(int64(v)):
		return strconv.FormatInt(int64(v), 10)
	case v > -0.1 && v < 0.1: // a residue, an error: significant digits, not 0.00
		return strconv.FormatFloat(v, 'g', 2, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// showCharts writes the comparison's charts to htmlOut and, with view,
// serves them until interrupted.
func showCharts(cmd *cobra.Command, family string, rows []lab.CompareRow, htmlOut string, view bool, listen string) error {
	c := &viewer.Charts{Title: "cohort compare " + family}
	for _, r := range rows {
		c.Rows = append(c.Rows, viewer.ChartRow{Algo: r.Algo, Nodes: r.Nodes, Case: r.Case, Metric: r.Metric, Measured: r.Measured, Theory: r.Theory, Note: r.Note})
	}
	return serveCharts(cmd, c, htmlOut, view, listen)
}

// serveCharts writes a page of charts to htmlOut and, with view, serves
// it until interrupted.
func serveCharts(cmd *cobra.Command, c *viewer.Charts, htmlOut string, view bool, listen string) error {
	page, err := viewer.RenderCharts(c)
	if err != nil {
		return err
	}
	out := cmd.ErrOrStderr()
	if htmlOut != "" {
		if err := writeFile(htmlOut, func(w io.Writer) error { _, err := w.Write(page); return err }); err != nil {
			return usageErr("--html: %v", err)
		}
		fmt.Fprintln(out, "wrote", htmlOut)
	}
	if !view {
		return nil
	}
	ctx, stop := viewContext()
	defer stop()
	err = viewer.ServePage(ctx, listen, page, func(url string) {
		fmt.Fprintf(cmd.OutOrStdout(), "viewer: %s (charts; Ctrl-C to stop)\n", url)
	})
	if err != nil {
		return usageErr("--view-listen %s: %v", listen, err)
	}
	return nil
}
