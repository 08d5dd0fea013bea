package lab

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/cohort-go/cohort/clock"
	"github.com/cohort-go/cohort/logical"
	"github.com/cohort-go/cohort/trace"
)

// The metrics of physical clock synchronization (Tanenbaum & van Steen
// §6.1), from the clock.Reading outputs of a run. Every process that
// outputs readings counts (an RBS sender outputs none: it does not
// synchronize).
//
// A process's offset is its clock minus true time, C(t) − t. Processes
// output a reading at every corner of their clock's course (clock.keeper),
// so between two readings the offset is a straight line, and the largest
// differences are found by looking at every reading's time, on both sides
// of a step:
//
//	precision π = max over t of max_{p,q} |Cp(t) − Cq(t)|
//	accuracy  α = max over t of max_p |Cp(t) − t|
//
// taken over the steady state: from the later of convergence — the first
// moment at which every process has applied its first correction in full
// (its readings say Synced; a time server is synced from the start) — and
// a quarter of the run, so that filters and estimates that need several
// rounds (NTP's eight samples, RBS's M beacons) have them. A run that
// never converges reports converged_ns = −1 and is measured from a quarter
// of the run all the same.
//
// Accuracy means something only for external synchronization (Cristian,
// NTP, with a server on true time); Berkeley and RBS synchronize
// internally and may agree on a wrong time.

// OffsetSeries is one process's offsets, C − t, at its readings.
type OffsetSeries struct {
	Node int32
	// T are the readings' true times (ns), in order; two readings at the
	// same time are the two sides of a step.
	T []int64
	// Offset[i] is the clock reading at T[i] minus T[i] (ns).
	Offset []int64
	// Break[i] is true when reading i is the first after a crash or a
	// recovery: the line does not join it to the one before.
	Break []bool
	// Synced is the true time of the first reading that says Synced; −1 if
	// none does.
	Synced int64
}

// ClockOffsets returns the offset series of the processes that output
// clock readings, by process id.
func ClockOffsets(t *trace.Trace) []OffsetSeries {
	byNode := map[int32]*OffsetSeries{}
	broken := map[int32]bool{}
	for i := range t.Events {
		e := &t.Events[i]
		switch {
		case e.Kind.Stops() || e.Kind == trace.Recover || e.Kind == trace.Join:
			broken[e.Node] = true
		case e.Kind == trace.Output && e.Type == (clock.Reading{}).Kind():
			var r clock.Reading
			if json.Unmarshal(e.Data, &r) != nil {
				continue
			}
			s := byNode[e.Node]
			if s == nil {
				s = &OffsetSeries{Node: e.Node, Synced: -1}
				byNode[e.Node] = s
			}
			s.T = append(s.T, e.Time)
			s.Offset = append(s.Offset, int64(r.Clock)-e.Time)
			s.Break = append(s.Break, broken[e.Node] && len(s.T) > 1)
			broken[e.Node] = false
			if r.Synced && s.Synced < 0 {
				s.Synced = e.Time
			}
		}
	}
	out := make([]OffsetSeries, 0, len(byNode))
	for _, s := range byNode {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b OffsetSeries) int { return int(a.Node - b.Node) })
	return out
}

// at returns the series' offset at true time t, from the left (just before
// t) or from the right (just after), and whether the series is defined
// there.
func (s *OffsetSeries) at(t int64, right bool) (int64, bool) {
	lo, found := slices.BinarySearch(s.T, t) // the first reading at or after t
	if found {
		hi := lo
		for hi+1 < len(s.T) && s.T[hi+1] == t {
			hi++
		}
		if right {
			return s.Offset[hi], true
		}
		return s.Offset[lo], true
	}
	if lo == 0 || lo == len(s.T) || s.Break[lo] {
		return 0, false
	}
	a, b := lo-1, lo
	f := float64(t-s.T[a]) / float64(s.T[b]-s.T[a])
	return s.Offset[a] + int64(math.Round(f*float64(s.Offset[b]-s.Offset[a]))), true
}

// SyncQuality is how well a run's clocks agree.
type SyncQuality struct {
	// Converged is the true time (ns) from which every process is synced;
	// −1 if that never happens.
	Converged int64
	// From is where the steady state begins: the later of Converged and a
	// quarter of the run (the last reading's time).
	From int64
	// Precision and Accuracy are the largest |Cp − Cq| and |Cp − t| (ns)
	// from From on.
	Precision, Accuracy int64
	// Times are the instants measured, with the precision and accuracy at
	// each (the larger of the two sides of a step).
	Times, PrecisionAt, AccuracyAt []int64
}

// MeanPrecision and MeanAccuracy average the precision and accuracy over
// the instants measured: a steadier figure than the maxima, which one
// unlucky exchange decides.
func (q SyncQuality) MeanPrecision() float64 { return meanInt(q.PrecisionAt) }
func (q SyncQuality) MeanAccuracy() float64  { return meanInt(q.AccuracyAt) }

func meanInt(xs []int64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += float64(x)
	}
	return s / float64(len(xs))
}

// MeasureSync computes precision and accuracy over the offset series (each
// with at least one reading).
func MeasureSync(series []OffsetSeries) SyncQuality {
	q := SyncQuality{Converged: -1}
	if len(series) == 0 {
		return q
	}
	var conv, end int64
	for _, s := range series {
		end = max(end, s.T[len(s.T)-1])
		if s.Synced < 0 || conv < 0 {
			conv = -1
			continue
		}
		conv = max(conv, s.Synced)
	}
	q.Converged = conv
	q.From = max(conv, end/4)
	from := q.From
	var times []int64
	for _, s := range series {
		for _, t := range s.T {
			if t >= from {
				times = append(times, t)
			}
		}
	}
	slices.Sort(times)
	times = slices.Compact(times)
	for _, t := range times {
		var prec, acc int64
		for _, right := range []bool{false, true} {
			lo, hi, n := int64(math.MaxInt64), int64(math.MinInt64), 0
			for i := range series {
				v, ok := series[i].at(t, right)
				if !ok {
					continue
				}
				n++
				lo, hi = min(lo, v), max(hi, v)
				acc = max(acc, v, -v)
			}
			if n >= 2 {
				prec = max(prec, hi-lo)
			}
		}
		q.Times = append(q.Times, t)
		q.PrecisionAt = append(q.PrecisionAt, prec)
		q.AccuracyAt = append(q.AccuracyAt, acc)
		q.Precision, q.Accuracy = max(q.Precision, prec), max(q.Accuracy, acc)
	}
	return q
}

// HLCDivergence is how far hybrid clocks ran ahead of their processes'
// physical clocks: the largest l − pt over the hlc outputs (pt is the
// event's local time), and the largest counter c.
func HLCDivergence(t *trace.Trace) (ahead int64, maxC uint32, stamps int) {
	for i := range t.Events {
		e := &t.Events[i]
		if e.Kind != trace.Output || e.Type != (logical.HLCTime{}).Kind() {
			continue
		}
		var ts logical.HLCTime
		if json.Unmarshal(e.Data, &ts) != nil {
			continue
		}
		ahead = max(ahead, int64(ts.L)-e.Local)
		maxC = max(maxC, ts.C)
		stamps++
	}
	return ahead, maxC, stamps
}

// addSyncMetrics adds the clock synchronization metrics to m when the run
// output clock readings: precision_ns, accuracy_ns, converged_ns and
// messages; and for hybrid clocks hlc_ahead_ns (the largest l − pt) and
// hlc_max_c.
func addSyncMetrics(r Finished, m map[string]float64) {
	series := ClockOffsets(r.Trace)
	if len(series) == 0 {
		return
	}
	if m["stamps"] == 0 {
		delete(m, "stamps")
	}
	q := MeasureSync(series)
	m["precision_ns"] = float64(q.Precision)
	m["accuracy_ns"] = float64(q.Accuracy)
	m["converged_ns"] = float64(q.Converged)
	m["messages"] = float64(r.Result.Sent)
	if ahead, maxC, n := HLCDivergence(r.Trace); n > 0 {
		m["hlc_ahead_ns"] = float64(ahead)
		m["hlc_max_c"] = float64(maxC)
	}
}

// OffsetPlot is the line chart of every process's offset from true time,
// C(t) − t, against true time, from true time from (ns) on; false if the
// run output no clock readings. The units follow the figures: seconds or
// milliseconds of true time; milliseconds, microseconds or nanoseconds of
// offset.
func OffsetPlot(t *trace.Trace, title string, from int64) (trace.LinePlot, bool) {
	series := ClockOffsets(t)
	for i, s := range series {
		k := 0
		for k < len(s.T) && s.T[k] < from {
			k++
		}
		series[i].T, series[i].Offset, series[i].Break = s.T[k:], s.Offset[k:], s.Break[k:]
	}
	p := trace.LinePlot{Title: title}
	var span, big int64
	for _, s := range series {
		if len(s.T) > 0 {
			span = max(span, s.T[len(s.T)-1])
		}
		for _, o := range s.Offset {
			big = max(big, o, -o)
		}
	}
	xu, xname := unitOf(span)
	yu, yname := unitOf(big)
	p.XLabel = "true time t (" + xname + ")"
	p.YLabel = "offset C(t) − t (" + yname + ")"
	for _, s := range series {
		ps := trace.Series{Name: "p" + strconv.Itoa(int(s.Node))}
		for i := range s.T {
			if s.Break[i] { // no line across a crash
				ps.X = append(ps.X, math.NaN())
				ps.Y = append(ps.Y, math.NaN())
			}
			ps.X = append(ps.X, float64(s.T[i])/xu)
			ps.Y = append(ps.Y, float64(s.Offset[i])/yu)
		}
		p.Series = append(p.Series, ps)
	}
	if len(series) == 0 {
		p.Note = "no clock readings in this run"
	} else {
		markSync(&p, series, xu, yu)
	}
	return p, len(series) > 0
}

// markSync marks a clock plot with the run's accuracy α, as the band
// ±α around true time from the steady state on, and its precision π, as
// the spread of the clocks at the instant it is reached.
func markSync(p *trace.LinePlot, series []OffsetSeries, xu, yu float64) {
	q := MeasureSync(series)
	if len(q.Times) == 0 {
		return
	}
	from := float64(q.From) / xu
	alpha := float64(q.Accuracy) / yu
	p.Marks = append(p.Marks,
		trace.Mark{Label: "+α accuracy " + trace.FormatNS(q.Accuracy), X0: from, Y0: alpha, X1: math.Inf(1), Y1: alpha},
		trace.Mark{Label: "−α", X0: from, Y0: -alpha, X1: math.Inf(1), Y1: -alpha})
	k := slices.Index(q.PrecisionAt, q.Precision)
	if k < 0 || q.Precision == 0 {
		return
	}
	t := q.Times[k]
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, right := range []bool{false, true} {
		a, b := int64(math.MaxInt64), int64(math.MinInt64)
		n := 0
		for i := range series {
			if v, ok := series[i].at(t, right); ok {
				a, b, n = min(a, v), max(b, v), n+1
			}
		}
		if n >= 2 && b-a == q.Precision {
			lo, hi = a, b
		}
	}
	if lo > hi {
		return
	}
	x := float64(t) / xu
	p.Marks = append(p.Marks, trace.Mark{Label: "π precision " + trace.FormatNS(q.Precision), X0: x, Y0: float64(lo) / yu, X1: x, Y1: float64(hi) / yu})
}

// unitOf chooses the unit in which ns values up to v read best.
func unitOf(v int64) (float64, string) {
	switch {
	case v >= 2e9:
		return 1e9, "s"
	case v >= 2e6:
		return 1e6, "ms"
	case v >= 2e3:
		return 1e3, "µs"
	}
	return 1, "ns"
}

// describeSync sums up a run's synchronization in a few words, for test
// logs and figures' titles: "π = 66.4µs, α = 207.8µs".
func describeSync(q SyncQuality) string {
	return fmt.Sprintf("π = %.1fµs, α = %.1fµs", float64(q.Precision)/1e3, float64(q.Accuracy)/1e3)
}
