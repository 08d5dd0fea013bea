package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cohort-go/cohort/position"
	"github.com/cohort-go/cohort/viewer"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// `cohort sim position` runs the positioning systems of package position.
// They are numerical methods over a synthetic sky or latency matrix, not
// message-passing state machines, so they have no trace, no checkers and
// no place in the registry; the command shares the sim command's --algo,
// --nodes, --seed, --json and --view flags and adds --clock-error. --view
// serves charts of the run instead of a trace: GPS's position error
// against the timestamps' error beside c·σ·PDOP, the coordinate
// systems' relative error (by round, for Vivaldi), and a map of their
// nodes: each one's coordinates beside its true place on the synthetic
// Internet's plane, coloured by its error.

const positionFamily = "position"

// positionAlgos are the algorithms of `cohort sim position`, in the order
// a whole-family run shows them.
var positionAlgos = []struct{ name, summary string }{
	{"gps", "a receiver's position and clock bias from 4 or more satellites (Gauss–Newton)"},
	{"gnp", "network coordinates from 15 landmarks (GNP)"},
	{"vivaldi", "decentralised network coordinates: springs with an adaptive timestep (Vivaldi)"},
}

// positionOnlyFlags are the flags that only `cohort sim position` reads.
var positionOnlyFlags = []string{"clock-error"}

// positionFlags are the sim flags a position run reads.
var positionFlags = append([]string{"algo", "nodes", "seed", "json", "view", "view-listen"}, positionOnlyFlags...)

// vivaldiRounds is how long a Vivaldi run relaxes: on the default
// 1,000-node matrix the error stops falling after 500 to 1,000 rounds.
const vivaldiRounds = 1000

// gpsSweep is the clock-error sweep every GPS run reports: each noise
// level over gpsSweepTrials skies.
var gpsSweep = []time.Duration{time.Nanosecond, 10 * time.Nanosecond, 100 * time.Nanosecond, time.Microsecond}

const gpsSweepTrials = 200

// addPositionFlags adds the flags of `cohort sim position` to the sim
// command.
func addPositionFlags(cmd *cobra.Command) {
	cmd.Flags().Duration("clock-error", 0, "position gps: standard deviation of each satellite timestamp's error, e.g. 10ns (1 ns = 30 cm of range)")
}

// simPosition runs `cohort sim position` and reports handled; for any
// other family it only refuses the position-only flags.
func simPosition(cmd *cobra.Command, family string, f *simFlags) (handled bool, err error) {
	fl := cmd.Flags()
	if family != positionFamily {
		for _, name := range positionOnlyFlags {
			if fl.Changed(name) {
				return true, usageErr("--%s applies to cohort sim position only", name)
			}
		}
		return false, nil
	}
	var bad []string
	for _, name := range flagNames(cmd) {
		if fl.Changed(name) && !slices.Contains(positionFlags, name) {
			bad = append(bad, "--"+name)
		}
	}
	if len(bad) > 0 {
		return true, usageErr("%s: not for position runs, which take --algo, --nodes, --seed, --json, --view and --clock-error", strings.Join(bad, ", "))
	}
	clockErr, _ := fl.GetDuration("clock-error")
	if clockErr < 0 {
		return true, usageErr("--clock-error %v: must not be negative", clockErr)
	}
	var algos []string
	if f.algo == "" {
		for _, a := range positionAlgos {
			algos = append(algos, a.name)
		}
	} else {
		if !slices.ContainsFunc(positionAlgos, func(a struct{ name, summary string }) bool { return a.name == f.algo }) {
			return true, usageErr("--algo: unknown position algorithm %q (have gps, gnp, vivaldi)", f.algo)
		}
		algos = []string{f.algo}
	}
	if fl.Changed("clock-error") && !slices.Contains(algos, "gps") {
		return true, usageErr("--clock-error applies to --algo gps only")
	}
	if fl.Changed("nodes") && (f.nodes < 1 || f.nodes > position.MaxNodes) {
		return true, usageErr("--nodes %d: want 1 to %d", f.nodes, position.MaxNodes)
	}

	out := cmd.OutOrStdout()
	var reports []*positionReport
	for _, a := range algos {
		o := positionOptions{seed: f.seed, clockError: clockErr, curve: f.view, nodeMap: f.view}
		if fl.Changed("nodes") {
			o.nodes = f.nodes
		}
		r, err := runPosition(a, o)
		if err != nil {
			return true, err
		}
		reports = append(reports, r)
		if f.json {
			if err := json.NewEncoder(out).Encode(r); err != nil {
				return true, err
			}
		}
	}
	if !f.json {
		if len(reports) == 1 {
			printPositionReport(out, reports[0])
		} else {
			printPositionTable(out, reports)
		}
	}
	if f.view {
		return true, serveCharts(cmd, positionCharts(reports), "", true, f.viewListen)
	}
	return true, nil
}

// positionCharts are the charts --view serves: one per run.
func positionCharts(reports []*positionReport) *viewer.Charts {
	c := &viewer.Charts{Title: "cohort sim position"}
	if len(reports) > 0 {
		c.Title += fmt.Sprintf(", seed %d", reports[0].Seed)
	}
	note := func(series string) string { // said once a chart
		if series != "median" {
			return ""
		}
		return "the relative error |predicted − actual| / actual of every pair's RTT; the sources give no theory figure"
	}
	for _, r := range reports {
		switch {
		case r.Algo == "gps":
			for _, s := range r.Sweep {
				c.Rows = append(c.Rows, viewer.ChartRow{Algo: "gps", Nodes: r.Nodes, Metric: "gps: position error (m)",
					Case: fmt.Sprintf("RMS over %d skies of %d satellites", s.Skies, r.Nodes),
					X:    ptr(s.ClockErrorNS), XLabel: "timestamp error σ (ns)", LogY: true,
					Measured: ptr(s.RMSErrorM), Theory: ptr(s.PredictedM),
					Note: "theory: c·σ·PDOP, the range error times the geometry's dilution of precision"})
			}
		case len(r.Curve) > 0:
			for _, q := range r.Curve {
				for _, v := range []struct {
					name string
					err  float64
				}{{"median", q.Median}, {"p90", q.P90}} {
					c.Rows = append(c.Rows, viewer.ChartRow{Algo: r.Algo + " " + v.name, Nodes: r.Nodes,
						Metric: r.Algo + ": relative error of the predicted RTTs", Case: fmt.Sprintf("%d nodes, by round", r.Nodes),
						X: ptr(float64(q.Round)), XLabel: "round (one sample per node)", Measured: ptr(v.err), Note: note(v.name)})
				}
			}
		case r.MedianRelError != nil:
			for _, v := range []struct {
				name string
				err  float64
			}{{"median", *r.MedianRelError}, {"p90", *r.P90RelError}} {
				c.Rows = append(c.Rows, viewer.ChartRow{Algo: r.Algo + " " + v.name, Nodes: r.Nodes,
					Metric: r.Algo + ": relative error of the predicted RTTs", Case: fmt.Sprintf("%d hosts", r.Nodes), XLabel: "hosts",
					Measured: ptr(v.err), Note: note(v.name)})
			}
		}
		if r.Map != nil {
			c.Maps = append(c.Maps, *r.Map)
		}
	}
	return c
}

func flagNames(cmd *cobra.Command) []string {
	var names []string
	cmd.Flags().VisitAll(func(fl *pflag.Flag) { names = append(names, fl.Name) })
	return names
}

type positionOptions struct {
	nodes      int // 0: the algorithm's default
	seed       uint64
	clockError time.Duration
	curve      bool // Vivaldi: measure the error at more rounds (Curve)
	nodeMap    bool // gnp and Vivaldi: draw each node's estimate beside its truth (Map)
}

// positionReport is one position run: the JSON object of --json.
type positionReport struct {
	Family string `json:"family"`
	Algo   string `json:"algo"`
	Nodes  int    `json:"nodes"` // hosts; satellites for gps
	Seed   uint64 `json:"seed"`
	Model  string `json:"model"`
	Method string `json:"method"`

	// gnp and vivaldi
	MedianRelError *float64     `json:"median_rel_error,omitempty"`
	P90RelError    *float64     `json:"p90_rel_error,omitempty"`
	Pairs          int          `json:"pairs,omitempty"`
	ByRound        []roundError `json:"by_round,omitempty"`
	// Curve is Vivaldi's error at more rounds than ByRound, for --view's
	// chart (measuring does not change the run).
	Curve []roundAccuracy `json:"-"`
	// Map is each node's estimate beside its true place, for --view.
	Map *viewer.Map `json:"-"`

	// gps
	PositionErrorM     *float64   `json:"position_error_m,omitempty"`
	ClockErrorNS       *float64   `json:"clock_error_ns,omitempty"`
	ReceiverBiasNS     *float64   `json:"receiver_bias_ns,omitempty"`
	EstimatedBiasNS    *float64   `json:"estimated_bias_ns,omitempty"`
	ErrorIgnoringBiasM *float64   `json:"position_error_ignoring_bias_m,omitempty"`
	GDOP               *float64   `json:"gdop,omitempty"`
	PDOP               *float64   `json:"pdop,omitempty"`
	Sweep              []gpsNoise `json:"sweep,omitempty"`
}

type roundError struct {
	Round          int     `json:"round"`
	MedianRelError float64 `json:"median_rel_error"`
}

type roundAccuracy struct {
	Round       int
	Median, P90 float64
}

type gpsNoise struct {
	ClockErrorNS   float64 `json:"clock_error_ns"`
	RMSErrorM      float64 `json:"rms_position_error_m"`
	PredictedM     float64 `json:"predicted_m"` // c·σ·PDOP
	MeanPDOP       float64 `json:"mean_pdop"`
	Skies          int     `json:"skies"`
	PerNanosecondM float64 `json:"m_per_ns"`
}

func ptr(v float64) *float64 { return &v }

func runPosition(algo string, o positionOptions) (*positionReport, error) {
	switch algo {
	case "gps":
		return runGPS(o)
	default:
		return runCoordinates(algo, o)
	}
}

func runGPS(o positionOptions) (*positionReport, error) {
	cfg := position.DefaultGPS
	cfg.Seed = o.seed
	if o.nodes > 0 {
		cfg.Satellites = o.nodes
	}
	cfg.Noise = o.clockError.Seconds()
	sc, err := position.NewGPSScenario(cfg)
	if err != nil {
		return nil, usageErr("gps: %v", err)
	}
	fix, err := position.Locate(sc.Signals)
	if errors.Is(err, position.ErrTooFewSatellites) {
		return nil, usageErr("--nodes: gps: %v", err)
	}
	if err != nil {
		return nil, &exitError{1, fmt.Errorf("gps, seed %d: %w", o.seed, err)}
	}
	trusting, err := position.LocateWithClock(sc.Signals, 0)
	if err != nil {
		return nil, &exitError{1, fmt.Errorf("gps, seed %d, clock trusted: %w", o.seed, err)}
	}
	r := &positionReport{
		Family: positionFamily, Algo: "gps", Nodes: cfg.Satellites, Seed: o.seed,
		Model: fmt.Sprintf("receiver on the Earth's surface, %d satellites above 10° at %.0f km, receiver clock %v fast, timestamps off by σ = %v",
			cfg.Satellites, position.OrbitRadius/1000, time.Duration(cfg.Bias*1e9), o.clockError),
		Method:             "Gauss–Newton on the pseudoranges for x, y, z and the clock bias, from Bancroft's direct solution",
		PositionErrorM:     ptr(fix.Pos.Sub(sc.Receiver).Norm()),
		ClockErrorNS:       ptr(float64(o.clockError.Nanoseconds())),
		ReceiverBiasNS:     ptr(cfg.Bias * 1e9),
		EstimatedBiasNS:    ptr(fix.Bias * 1e9),
		ErrorIgnoringBiasM: ptr(trusting.Pos.Sub(sc.Receiver).Norm()),
		GDOP:               ptr(fix.GDOP),
		PDOP:               ptr(fix.PDOP),
	}
	noises := make([]float64, len(gpsSweep))
	for i, d := range gpsSweep {
		noises[i] = d.Seconds()
	}
	rows, err := position.GPSErrorVsNoise(cfg, noises, gpsSweepTrials)
	if err != nil {
		return nil, &exitError{1, fmt.Errorf("gps sweep: %w", err)}
	}
	for _, row := range rows {
		ns := row.Noise * 1e9
		r.Sweep = append(r.Sweep, gpsNoise{ClockErrorNS: ns, RMSErrorM: row.RMSError, PredictedM: row.Predicted, MeanPDOP: row.MeanPDOP, Skies: gpsSweepTrials, PerNanosecondM: row.RMSError / ns})
	}
	return r, nil
}

func runCoordinates(algo string, o positionOptions) (*positionReport, error) {
	lc := position.DefaultLatency
	lc.Seed = o.seed
	if o.nodes > 0 {
		lc.Nodes = o.nodes
	}
	m, ground, err := position.SyntheticNetwork(lc)
	if err != nil {
		return nil, usageErr("--nodes: %v", err)
	}
	r := &positionReport{
		Family: positionFamily, Algo: algo, Nodes: lc.Nodes, Seed: o.seed,
		Model: fmt.Sprintf("synthetic RTTs: %d clusters on a %d-D plane (%.0f ms wide, %.0f ms spread), access heights (mean %.0f ms), %.0f%% log-normal noise, %.0f%% of pairs on detours",
			lc.Clusters, lc.Dims, lc.Width, lc.Spread, lc.Height, 100*lc.Noise, 100*lc.Detours),
	}
	var acc position.Accuracy
	var pred position.Predictor
	var coords [][]float64 // each node's estimated coordinates
	detail := func(int) string { return "" }
	switch algo {
	case "gnp":
		cfg := position.DefaultGNP
		cfg.Seed = o.seed
		g, err := position.EmbedGNP(m, cfg)
		if err != nil {
			return nil, usageErr("--nodes: gnp: %v", err)
		}
		r.Method = fmt.Sprintf("%d landmarks in %d dimensions: %d probes among landmarks, %d per host", cfg.Landmarks, cfg.Dims, cfg.Landmarks*(cfg.Landmarks-1)/2, cfg.Landmarks)
		acc = position.Evaluate(m, g)
		pred, coords = g, g.Coords
		detail = func(i int) string {
			if slices.Contains(g.Landmarks, i) {
				return "a landmark"
			}
			return ""
		}
	case "vivaldi":
		cfg := position.DefaultVivaldi
		cfg.Seed = o.seed
		v, err := position.NewVivaldi(m, cfg)
		if err != nil {
			return nil, usageErr("vivaldi: %v", err)
		}
		r.Method = fmt.Sprintf("%d-D + height, cc %g, ce %g, %d random neighbours per node, %d rounds of one sample per node", cfg.Dims, cfg.CC, cfg.CE, cfg.Neighbors, vivaldiRounds)
		rounds := []int{1, 10, 100, vivaldiRounds}
		if o.curve {
			rounds = []int{1, 2, 5, 10, 20, 50, 100, 200, 500, vivaldiRounds}
		}
		for _, round := range rounds {
			v.Run(round - v.Rounds())
			acc = position.Evaluate(m, v)
			if round == 1 || round == 10 || round == 100 || round == vivaldiRounds {
				r.ByRound = append(r.ByRound, roundError{round, acc.Median})
			}
			if o.curve {
				r.Curve = append(r.Curve, roundAccuracy{round, acc.Median, acc.P90})
			}
		}
		pred = v
		for i := range v.Nodes {
			coords = append(coords, v.Nodes[i].Coord.Vec)
		}
		detail = func(i int) string {
			return fmt.Sprintf("height %.3g ms, estimated %.3g ms", ground.Height[i], v.Nodes[i].Coord.Height)
		}
	}
	if o.nodeMap {
		r.Map = coordinateMap(r, m, ground, pred, coords, detail)
	}
	r.MedianRelError, r.P90RelError, r.Pairs = ptr(acc.Median), ptr(acc.P90), acc.Pairs
	return r, nil
}

// coordinateMap is the map of a coordinate system's run: each node at its
// place on the synthetic plane of continents and at its estimated
// coordinates, moved onto that plane by the rigid motion that fits them
// best (position.Align), coloured by the node's median relative error.
func coordinateMap(r *positionReport, m *position.Matrix, ground position.Ground, pred position.Predictor, coords [][]float64, detail func(int) string) *viewer.Map {
	errs := position.NodeErrors(m, pred)
	at := position.Align(coords, ground.Pos)
	mp := &viewer.Map{
		Title:     fmt.Sprintf("%s: each node's coordinates beside its true place (%d nodes)", r.Algo, r.Nodes),
		Unit:      "ms",
		ErrorName: "median relative error of its RTTs",
		MaxError:  0.3,
		Note: fmt.Sprintf("The estimates (%d-D) are turned, reflected and moved, never scaled, to fit the plane of the synthetic Internet best (orthogonal Procrustes); "+
			"a node's true access height is not on the plane.", len(coords[0])),
	}
	for i := range r.Nodes {
		est := [2]float64{at[i][0], at[i][1]}
		mp.Nodes = append(mp.Nodes, viewer.MapNode{ID: i, Truth: [2]float64{ground.Pos[i][0], ground.Pos[i][1]}, Estimate: &est, Error: errs[i], Detail: detail(i)})
	}
	return mp
}

func printPositionReport(w io.Writer, r *positionReport) {
	unit := "nodes"
	if r.Algo == "gps" {
		unit = "satellites"
	}
	fmt.Fprintf(w, "%s/%s   %d %s   seed %d\n", r.Family, r.Algo, r.Nodes, unit, r.Seed)
	fmt.Fprintf(w, "  model        %s\n", r.Model)
	fmt.Fprintf(w, "  method       %s\n", r.Method)
	if r.Algo == "gps" {
		fmt.Fprintf(w, "  fix          position error %.3g m; clock bias %v found to %.3g ns; GDOP %.2f, PDOP %.2f\n",
			*r.PositionErrorM, time.Duration(*r.ReceiverBiasNS), math.Abs(*r.EstimatedBiasNS-*r.ReceiverBiasNS), *r.GDOP, *r.PDOP)
		fmt.Fprintf(w, "  clock trusted position error %.4g m: the bias, left out of the unknowns, adds c·%v = %.4g m to every range\n",
			*r.ErrorIgnoringBiasM, time.Duration(*r.ReceiverBiasNS), position.SpeedOfLight**r.ReceiverBiasNS*1e-9)
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  CLOCK ERROR σ\tPOSITION ERROR (RMS, %d skies)\tc·σ·PDOP\tMEAN PDOP\n", gpsSweepTrials)
		for _, s := range r.Sweep {
			fmt.Fprintf(tw, "  %v\t%.4g m\t%.4g m\t%.2f\n", time.Duration(s.ClockErrorNS), s.RMSErrorM, s.PredictedM, s.MeanPDOP)
		}
		tw.Flush()
		return
	}
	if len(r.ByRound) > 0 {
		var parts []string
		for _, b := range r.ByRound {
			parts = append(parts, fmt.Sprintf("%d: %.4f", b.Round, b.MedianRelError))
		}
		fmt.Fprintf(w, "  by round     %s (median relative error)\n", strings.Join(parts, ", "))
	}
	fmt.Fprintf(w, "  error        median %.4f, p90 %.4f (|predicted − actual| / actual over %d pairs)\n", *r.MedianRelError, *r.P90RelError, r.Pairs)
}

func printPositionTable(w io.Writer, reports []*positionReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ALGORITHM\tNODES\tMEDIAN-REL-ERROR\tP90-REL-ERROR\tPOSITION-ERROR")
	for _, r := range reports {
		med, p90, pos := "-", "-", "-"
		if r.MedianRelError != nil {
			med, p90 = fmt.Sprintf("%.4f", *r.MedianRelError), fmt.Sprintf("%.4f", *r.P90RelError)
		}
		if r.PositionErrorM != nil {
			pos = fmt.Sprintf("%.3g m", *r.PositionErrorM)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", r.Algo, r.Nodes, med, p90, pos)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nNODES are satellites for gps, hosts otherwise; --algo NAME for one run in detail.\n")
}

// positionListEntries are the rows of `cohort list` for the position
// family.
func positionListEntries() []listEntry {
	var entries []listEntry
	for _, a := range positionAlgos {
		entries = append(entries, listEntry{Family: positionFamily, Name: a.name, Summary: a.summary, Source: "Tanenbaum & van Steen §6.4", Assumes: "numerical (no messages)"})
	}
	return entries
}
