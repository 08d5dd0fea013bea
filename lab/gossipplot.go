package lab

import (
	"math"

	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/trace"
)

// SusceptibleTheory is the notes' susceptible fraction pᵢ after each round
// of anti-entropy algorithm algo (push, pull or push-pull) over n nodes
// with fanout f, from p₀ = 1 − 1/n (one node has the update): a
// susceptible node stays so if the f nodes it pulls from are susceptible
// (pull: pᵢ₊₁ = pᵢ·pᵢ^f, the notes' pᵢ² for f = 1) and if none of the
// f·n(1 − pᵢ) pushes of the infective nodes reach it (push: pᵢ₊₁ =
// pᵢ(1 − 1/n)^{f·n(1−pᵢ)} ≈ pᵢ/e^f in the tail); push-pull needs both.
// The series has rounds+1 elements, or ends at the first below one node
// (pᵢ < 1/n); nil for another algorithm.
func SusceptibleTheory(algo string, n, f, rounds int) []float64 {
	if n < 1 {
		return nil
	}
	N, F := float64(n), float64(max(f, 1))
	next := map[string]func(p float64) float64{
		"pull":      func(p float64) float64 { return p * math.Pow(p, F) },
		"push":      func(p float64) float64 { return p * math.Pow(1-1/N, F*N*(1-p)) },
		"push-pull": func(p float64) float64 { return p * math.Pow(p, F) * math.Pow(1-1/N, F*N*(1-p)) },
	}[algo]
	if next == nil {
		return nil
	}
	p := 1 - 1/N
	out := []float64{p}
	for len(out) <= rounds && p >= 1/N {
		p = next(p)
		out = append(out, p)
	}
	return out
}

// GossipPlot is the line chart of a gossip run's series per round, on a
// log₁₀ scale: the susceptible fraction pᵢ beside SusceptibleTheory for
// push, pull and push-pull, or beside the notes' residue
// s = e^{−(k+1)(1−s)} (the report's theory) for rumor mongering; push-sum's
// largest relative error. p holds the run's fanout; false if the run has
// no series to draw.
func GossipPlot(r *Report, p epidemic.Params, title string) (trace.LinePlot, bool) {
	pl := trace.LinePlot{Title: title, XLabel: "round i"}
	name, measured := "susceptible", "measured pᵢ"
	pl.YLabel = "log₁₀ susceptible fraction pᵢ (0 not drawn)"
	if r.Algo == "push-sum" {
		name, measured = "max_error", "measured max error"
		pl.YLabel = "log₁₀ largest relative error (0 not drawn)"
	}
	s, ok := r.Series[name]
	if !ok || len(s) == 0 {
		pl.Note = "no per-round series in this run"
		return pl, false
	}
	pl.Series = append(pl.Series, log10Series(measured, s))
	if th := SusceptibleTheory(r.Algo, r.Nodes, fanout(p), len(s)-1); th != nil {
		pl.Series = append(pl.Series, log10Series("theory", th))
	}
	if res := r.Theory["residue"]; r.Algo == "rumor" && res != nil && *res > 0 {
		label := "theory residue s = e^{−(k+1)(1−s)}"
		if p.Counter {
			label = "theory residue (Demers et al., table 1)"
		}
		y := math.Log10(*res)
		pl.Marks = append(pl.Marks, trace.Mark{Label: label, X0: math.Inf(-1), Y0: y, X1: math.Inf(1), Y1: y})
	}
	return pl, true
}

// log10Series is the series (i, log₁₀ v[i]); a zero is a gap.
func log10Series(name string, v []float64) trace.Series {
	s := trace.Series{Name: name, X: make([]float64, len(v)), Y: make([]float64, len(v))}
	for i, y := range v {
		s.X[i], s.Y[i] = float64(i), math.Log10(y)
	}
	return s
}
