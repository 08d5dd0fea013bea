package main

import (
	"fmt"
	"io"

	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/lab"
	"github.com/cohort-go/cohort/trace"
)

// writeGossipPlot writes the chart of `cohort sim gossip --plot`: the
// susceptible fraction per round over the notes' curve for the algorithm
// (lab.GossipPlot). A run without a per-round series is an error when it
// is the only run, and an empty chart that says so when the whole family
// runs. params are the run's gossip flags (nil: the defaults).
func writeGossipPlot(r *lab.Report, path string, runs int, params *epidemic.Params) error {
	var p epidemic.Params
	if params != nil {
		p = *params
	}
	what := "susceptible fraction per round"
	if r.Algo == "push-sum" {
		what = "largest relative error per round"
	}
	title := fmt.Sprintf("%s/%s — %s, %d nodes, seed %d", r.Family, r.Algo, what, r.Nodes, r.Seed)
	pl, ok := lab.GossipPlot(r, p, title)
	if !ok && runs == 1 {
		return usageErr("--plot: %s/%s has no per-round series (push, pull, push-pull, rumor, push-sum and members do)", r.Family, r.Algo)
	}
	if err := writeFile(path, func(w io.Writer) error { return trace.WriteLinePlot(w, pl) }); err != nil {
		return usageErr("--plot: %v", err)
	}
	return nil
}
