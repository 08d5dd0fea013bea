package main

import (
	"fmt"
	"io"

	"github.com/cohort-go/cohort/lab"
	"github.com/cohort-go/cohort/trace"
)

// writeOverlayPlot writes the chart of `cohort sim overlay --plot`: the
// hop histogram of the delivered lookups (the fraction of them per hop
// count, Rowstron & Druschel 2001, figure 5), with their mean hops and
// the theory's (Pastry: log₁₆ N; circular routing: N/4l) marked. A run
// without lookups is an error when it is the only run, and an empty chart
// that says so when the whole family runs.
func writeOverlayPlot(r *lab.Report, path string, runs int) error {
	hist := r.Series["hops"]
	var n float64
	for _, c := range hist {
		n += c
	}
	p := overlayHopPlot(r, hist, n)
	if n == 0 {
		if runs == 1 {
			if r.Algo == "pastry" || r.Algo == "circular" {
				return usageErr("--plot: %s/%s delivered no lookups: give --lookups N (N > 0) to draw their hops", r.Family, r.Algo)
			}
			return usageErr("--plot: %s/%s routes no lookups (the hop histogram is drawn for pastry and circular, with --lookups N)", r.Family, r.Algo)
		}
		p.Note = "no lookups delivered (the hop histogram is drawn for pastry and circular)"
	}
	if err := writeFile(path, func(w io.Writer) error { return trace.WriteLinePlot(w, p) }); err != nil {
		return usageErr("--plot: %v", err)
	}
	return nil
}

// overlayHopPlot is the hop histogram hist (delivered lookups per hop
// count, n in all) as fractions, with the measured mean and the theory's
// as vertical marks, the theory's lower so that the labels stay apart.
func overlayHopPlot(r *lab.Report, hist []float64, n float64) trace.LinePlot {
	what := "lookups"
	if r.Metrics["failed_nodes"] > 0 {
		what = "lookups before the failure"
	}
	p := trace.LinePlot{
		Title:  fmt.Sprintf("%s/%s — hops of %.0f %s, %d nodes, seed %d", r.Family, r.Algo, n, what, r.Nodes, r.Seed),
		XLabel: "hops",
		YLabel: "fraction of the delivered lookups",
	}
	if n == 0 {
		return p
	}
	s := trace.Series{Name: "measured"}
	peak := 0.0
	for h, c := range hist {
		s.X = append(s.X, float64(h))
		s.Y = append(s.Y, c/n)
		peak = max(peak, c/n)
	}
	p.Series = []trace.Series{s}
	mean := r.Metrics["hops_mean"]
	p.Marks = append(p.Marks, trace.Mark{Label: fmt.Sprintf("mean %.2f", mean), X0: mean, X1: mean, Y0: 0, Y1: peak})
	if th := r.Theory["hops_mean"]; th != nil {
		name := "theory"
		switch r.Algo {
		case "pastry":
			name = "log₁₆N"
		case "circular":
			name = "N/4l"
		}
		p.Marks = append(p.Marks, trace.Mark{Label: fmt.Sprintf("%s %.2f", name, *th), X0: *th, X1: *th, Y0: 0, Y1: peak * 0.6})
	}
	return p
}
