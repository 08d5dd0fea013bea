package main

import (
	"fmt"
	"io"

	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/lab"
	"github.com/cohort-go/cohort/trace"
)

// writePlot writes the chart of `cohort sim --plot`: an overlay's hop
// histogram, a gossip run's susceptible fraction per round, or every process's clock
// offset from true time, C(t) − t, against true time. A run whose
// processes output no clock readings is an error when it is the only run,
// and an empty chart that says so when the whole family runs.
func writePlot(tr *trace.Trace, r *lab.Report, path string, runs int, gossip *epidemic.Params) error {
	switch r.Family {
	case "overlay":
		return writeOverlayPlot(r, path, runs) // plot_overlay.go
	case "gossip":
		return writeGossipPlot(r, path, runs, gossip) // plot_gossip.go
	}
	title := fmt.Sprintf("%s/%s — clock offsets, %d nodes, seed %d", r.Family, r.Algo, r.Nodes, r.Seed)
	p, ok := lab.OffsetPlot(tr, title, 0)
	if !ok && runs == 1 {
		return usageErr("--plot: %s/%s outputs no clock readings (the clock synchronization algorithms do: cristian, ntp, berkeley, rbs, hlc)", r.Family, r.Algo)
	}
	if err := writeFile(path, func(w io.Writer) error { return trace.WriteLinePlot(w, p) }); err != nil {
		return usageErr("--plot: %v", err)
	}
	return nil
}
