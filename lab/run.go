package lab

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/scenario"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

// Options are the settings of one run. Zero values keep what the scenario
// says.
type Options struct {
	Algo     proc.Algorithm
	Scenario *scenario.Scenario // nil: the algorithm's default scenario, else a 3-node default
	Nodes    int                // processes; 0 keeps the scenario's
	Seed     *uint64            // nil keeps the scenario's
	// Topology replaces the scenario's graph: full, ring, line, grid or
	// random; "" keeps the scenario's.
	Topology string
	// Degree is the least degree of a random Topology; 0 means 3.
	Degree  int
	Network NetworkFlags
	// Faults are extra faults in the scenario language ("crash 3 at
	// 10ms"), added to the scenario's.
	Faults []string
	// Chaos, if set, adds a random fault schedule drawn from the run's seed.
	Chaos    *sim.Chaos
	Deadline time.Duration
	// VectorClocks records vector timestamps; Auto turns them on for runs
	// of at most 64 processes.
	VectorClocks Toggle
	// States records each process's description of its state after every
	// step (sim.Config.States), for the viewer; it changes the trace and
	// its hash.
	States bool
	// NoCheck skips the checkers and does not keep the trace in memory.
	NoCheck bool
	// NoHash, beside NoCheck and without Trace, skips the trace's hash
	// too (Report.TraceSHA is then empty): nothing needs the trace, so the
	// simulator builds none of its events, which is most of the cost of a
	// large gossip run.
	NoHash bool
	// Trace, if set, receives the JSONL trace as it is made.
	Trace io.Writer
	// Progress, if set, is called now and then with the virtual time and the
	// number of events so far.
	Progress func(virtual time.Duration, events int64)
	// Metrics computes the family's metrics from the run; nil reports none.
	Metrics MetricsFunc
	// Streamed says that Metrics reads the run's result and its workload
	// (which saw every output as it happened), never the trace: it then
	// runs with NoCheck too, and Finished.Trace may be nil.
	Streamed bool
	// Workload drives the run when the scenario scripts no inputs and no
	// workload of its own; nil means no inputs.
	Workload sim.Workload
	// React runs beside any workload, scripted or not, to answer outputs
	// (the mutex family releases the critical section after a hold time).
	React sim.Workload
}

// MetricsFunc computes a family's metrics, and the theory's figures for the
// same quantities where the textbooks give one (nil where they give none).
type MetricsFunc func(r Finished) (metrics map[string]float64, theory map[string]*float64)

// Finished is a run as a family's metrics see it.
type Finished struct {
	Trace       *trace.Trace
	Result      sim.Result
	Algo        string
	Nodes       int
	MeanLatency time.Duration // the network's mean one-way latency: the unit of delays "in messages"
	// Workload is the run's workload (Options.Workload, if the run used
	// it; nil otherwise): a closed-loop workload saw every output.
	Workload sim.Workload
	// Series receives the metrics that are sequences (the susceptible
	// fraction after each round ...), by name, for Report.Series.
	Series map[string][]float64
}

// NetworkFlags override the scenario's network model.
type NetworkFlags struct {
	Latency   sim.Dist
	FIFO      *bool
	Loss      *float64
	Duplicate *float64
	Reorder   *float64
}

// Toggle is a three-way switch.
type Toggle int

const (
	Auto Toggle = iota
	On
	Off
)

// Report is one run, as `cohort sim --json` prints it.
type Report struct {
	Family     string              `json:"family"`
	Algo       string              `json:"algo"`
	Nodes      int                 `json:"nodes"`
	Seed       uint64              `json:"seed"`
	Events     int64               `json:"events"`
	VirtualNS  int64               `json:"virtual_ns"`
	Stop       string              `json:"stop"`
	Messages   Messages            `json:"messages"`
	Outputs    map[string]int64    `json:"outputs"`
	Metrics    map[string]float64  `json:"metrics"`
	Theory     map[string]*float64 `json:"theory"`
	Checks     []Check             `json:"checks"`
	TraceSHA   string              `json:"trace_sha256"`
	Network    string              `json:"network"`
	Assumption string              `json:"assumes"`
	// Outside says how the run breaks the algorithm's assumptions (see
	// Outside); when it does, no check is guaranteed.
	Outside []string `json:"outside_assumptions,omitempty"`
	// Series are the metrics that are sequences, by name (the gossip
	// family's susceptible fraction after each round).
	Series map[string][]float64 `json:"series,omitempty"`
	// TraceEvents is the number of events of the run's trace (every
	// send, receipt, loss, output ... of every process); Events counts
	// only what the simulator handled (deliveries, timers, inputs,
	// faults). 0 if no trace was kept or hashed.
	TraceEvents int64 `json:"trace_events,omitempty"`
	// Periods are the faults of the run that last a while and that the
	// trace does not record as events: partitions and pauses.
	Periods []Period `json:"fault_periods,omitempty"`
	// Phases are the stages of a run whose workload has some, timed
	// apart (the overlay's build by joins, then its lookups): their
	// events add up to Events, their wall-clock and CPU times to the
	// simulation's, from its start to its end (the checkers and metrics
	// after it aside). Unlike the rest of the report they are
	// measurements of the machine, different from run to run.
	Phases []Phase `json:"phases,omitempty"`
}

// Period is a fault that lasts a while.
type Period struct {
	Kind   string `json:"kind"` // "partition", "pause", "slow"
	Nodes  []int  `json:"nodes,omitempty"`
	FromNS int64  `json:"from_ns"`
	ToNS   int64  `json:"to_ns"` // 0: until the end
	Label  string `json:"label,omitempty"`
}

// periods lists the partitions and pauses of a configuration, in order of
// their start.
func periods(cfg *sim.Config) []Period {
	var out []Period
	for _, p := range cfg.Network.Partitions {
		var groups []string
		for _, g := range p.Groups {
			var names []string
			for _, id := range g {
				names = append(names, fmt.Sprintf("p%d", id))
			}
			groups = append(groups, "{"+strings.Join(names, ",")+"}")
		}
		out = append(out, Period{Kind: "partition", FromNS: int64(p.From), ToNS: int64(p.To), Label: strings.Join(groups, " | ")})
	}
	for _, f := range cfg.Faults {
		kind := map[sim.FaultKind]string{sim.Pause: "pause", sim.Slow: "slow"}[f.Kind]
		if kind != "" {
			out = append(out, Period{Kind: kind, Nodes: []int{int(f.Node)}, FromNS: int64(f.At), ToNS: int64(f.Until)})
		}
	}
	slices.SortStableFunc(out, func(a, b Period) int { return cmp.Compare(a.FromNS, b.FromNS) })
	return out
}

// Messages counts the messages sent.
type Messages struct {
	Total      int64            `json:"total"`
	ByType     map[string]int64 `json:"by_type"`
	Dropped    int64            `json:"dropped"`
	Duplicated int64            `json:"duplicated"`
}

// Check is one checker's verdict. Guaranteed is false for a property the
// algorithm does not promise (proc.Algorithm.Breaks): its violation is
// reported but does not fail the run.
type Check struct {
	Name       string `json:"name"`
	OK         bool   `json:"ok"`
	Status     string `json:"status"`
	Guaranteed bool   `json:"guaranteed"`
	Detail     string `json:"detail"`
	Events     []int  `json:"events,omitempty"`
	// Edges are a deadlock's wait-for edges (check.Result.Edges).
	Edges []check.Edge `json:"edges,omitempty"`
	// Counterexample is the violating events, one per line.
	Counterexample string `json:"counterexample,omitempty"`
}

// Failed reports whether the check broke a property the algorithm claims.
func (c Check) Failed() bool { return c.Guaranteed && c.Status != check.OK.String() }

// Failed reports whether any check failed unexpectedly.
func (r *Report) Failed() bool {
	return slices.ContainsFunc(r.Checks, Check.Failed)
}

// ErrInput is wrapped by errors in the user's settings.
var ErrInput = errors.New("bad input")

// Sim runs the algorithm once. It returns the report and, unless NoCheck,
// the trace in memory (for rendering).
func Sim(o Options) (*Report, *trace.Trace, error) {
	a := o.Algo
	sc := o.Scenario
	if sc == nil {
		text := a.Scenario
		if text == "" {
			text = "nodes: 3\n"
		}
		var err error
		if sc, err = scenario.Parse(a.Family+"/"+a.Name+" default scenario", []byte(text)); err != nil {
			return nil, nil, fmt.Errorf("algorithm %s: %w", a.Name, err)
		}
	}
	sc2 := *sc
	if o.Nodes > 0 && o.Nodes != sc.Nodes {
		r, err := sc.Resize(o.Nodes)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %s: its scenario does not fit %d nodes: %v", ErrInput, a.Name, o.Nodes, err)
		}
		sc2 = *r
	}
	if o.Seed != nil {
		sc2.Seed = *o.Seed
	}
	if o.Topology != "" {
		if sc2.Topology == "random" {
			sc2.Degree = 0
		}
		sc2.Topology = o.Topology
		if o.Topology == "random" {
			sc2.Degree = cmp.Or(o.Degree, 3)
		}
	}
	if a.Validate != nil {
		if err := a.Validate(sc2.Nodes); err != nil {
			return nil, nil, fmt.Errorf("%w: %s with %d nodes: %v", ErrInput, a.Name, sc2.Nodes, err)
		}
	}
	var mk scenario.InputMaker
	if a.Inputs != nil {
		mk = scenario.InputMaker(a.Inputs)
	}
	cfg, err := sc2.Config(mk)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrInput, err)
	}
	cfg.New = a.New
	// A workload that knows when it is finished ends the run then, so that
	// algorithms that never fall silent (an idle token ring) stop too.
	var done interface {
		Done(up func(proc.ID) bool) bool
	}
	var used sim.Workload
	if len(sc2.Inputs) == 0 && sc2.Workload == nil && o.Workload != nil {
		cfg.Workload = o.Workload
		used = o.Workload
		done, _ = o.Workload.(interface {
			Done(up func(proc.ID) bool) bool
		})
	}
	if o.React != nil {
		if cfg.Workload == nil {
			cfg.Workload = o.React
		} else {
			cfg.Workload = sim.Combine{cfg.Workload, o.React}
		}
	}
	// A workload that brings its own faults (SWIM's crashes) adds them,
	// unless the scenario or the options schedule faults of their own.
	if fw, ok := used.(interface {
		Faults(n int, seed uint64) []sim.Fault
	}); ok && len(cfg.Faults) == 0 && len(o.Faults) == 0 && o.Chaos == nil && len(cfg.Churn) == 0 {
		cfg.Faults = append(cfg.Faults, fw.Faults(cfg.Nodes, cfg.Seed)...)
	}
	// A workload that brings its own physical network (the multicast
	// trees' transit-stub topology) gives its latencies, unless the
	// options set a latency.
	if pw, ok := used.(interface {
		Pairwise(n int, seed uint64) sim.PairLatency
	}); ok && cfg.Network.Pairwise == nil && o.Network.Latency == nil {
		if p := pw.Pairwise(cfg.Nodes, cfg.Seed); p != nil {
			cfg.Network.Pairwise = p
		}
	}
	// A workload that meters the processes' sends (the gossip family's
	// bytes on the wire) sees every message sent.
	if mw, ok := used.(interface {
		Sent(from, to proc.ID, m proc.Message)
	}); ok {
		cfg.Sent = mw.Sent
	}
	// A workload whose live state grows large while its processes make
	// garbage (an overlay built by joins) sets the collector's target.
	if gw, ok := used.(interface{ GCPercent(n int) int }); ok {
		cfg.GCPercent = gw.GCPercent(cfg.Nodes)
	}
	applyNetwork(&cfg.Network, o.Network)
	for _, src := range o.Faults {
		e, err := scenario.ParseFault(src, cfg.Nodes)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: fault %q: %v", ErrInput, src, err)
		}
		e.AddTo(&cfg)
	}
	if o.Chaos != nil {
		faults, parts := o.Chaos.Faults(cfg.Nodes, cfg.Seed)
		cfg.Faults = append(cfg.Faults, faults...)
		cfg.Network.Partitions = append(cfg.Network.Partitions, parts...)
	}
	if o.Deadline > 0 {
		cfg.Deadline = o.Deadline
	}
	cfg.VectorClocks = o.VectorClocks == On || (o.VectorClocks == Auto && cfg.Nodes <= 64)
	cfg.States = o.States

	header := trace.Header{Nodes: cfg.Nodes, Family: a.Family, Algo: a.Name, Seed: cfg.Seed}
	var hasher *trace.Hasher
	if !o.NoHash || !o.NoCheck || o.Trace != nil {
		hasher = trace.NewHasher(header)
	}
	var rec *trace.Recorder
	if !o.NoCheck {
		rec = &trace.Recorder{Trace: trace.Trace{Header: header}}
	}
	var w *trace.Writer
	if o.Trace != nil {
		w = trace.NewWriter(o.Trace, header)
	}
	var sinks []trace.Sink
	if hasher != nil {
		sinks = append(sinks, hasher)
	}
	if rec != nil {
		sinks = append(sinks, rec)
	}
	if w != nil {
		sinks = append(sinks, w)
	}
	cfg.Trace = trace.Tee(sinks...)
	// A workload with stages (the overlay's build, then its lookups) has
	// them timed apart.
	var clock *phaseClock
	if pw, ok := used.(phased); ok {
		clock = &phaseClock{w: pw}
	}
	if o.Progress != nil || done != nil || clock != nil {
		var count int64
		var up func(proc.ID) bool // s.Up, made once: a method value allocates
		cfg.Until = func(s *sim.Sim) bool {
			if count++; o.Progress != nil && count&0xffff == 0 {
				o.Progress(s.Now(), count)
			}
			if clock != nil {
				clock.step(s)
			}
			if done == nil {
				return false
			}
			if up == nil {
				up = s.Up
			}
			return done.Done(up)
		}
	}
	outputs := map[string]int64{}
	cfg.Observe = func(_ time.Duration, _ proc.ID, out proc.Output) { outputs[out.Kind()]++ }

	s, err := sim.New(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrInput, err)
	}
	if clock != nil {
		clock.start()
	}
	res, err := s.Run()
	if errors.Is(err, sim.ErrTooBig) { // too many processes or messages for this machine
		return nil, nil, fmt.Errorf("%w: %s with %d nodes: %v", ErrInput, a.Name, cfg.Nodes, err)
	}
	if err != nil {
		return nil, nil, err
	}
	if w != nil {
		if err := w.Flush(); err != nil {
			return nil, nil, fmt.Errorf("writing the trace: %w", err)
		}
	}
	r := &Report{
		Family: a.Family, Algo: a.Name, Nodes: cfg.Nodes, Seed: cfg.Seed,
		Events: res.Events, VirtualNS: int64(res.VirtualTime), Stop: string(res.Stop),
		Messages: Messages{Total: res.Sent, ByType: map[string]int64{},
			Dropped: res.Dropped, Duplicated: res.Duplicated},
		Outputs:    outputs,
		Metrics:    map[string]float64{},
		Theory:     map[string]*float64{},
		Checks:     []Check{},
		Network:    describeNetwork(cfg.Network),
		Assumption: a.Assumes.String(),
		Outside:    Outside(a.Assumes, &cfg),
	}
	if hasher != nil {
		r.TraceSHA = hasher.Sum()
		r.TraceEvents = hasher.Events()
	}
	r.Periods = periods(&cfg)
	if clock != nil {
		r.Phases = clock.stop(res.Events)
	}
	for _, k := range res.ByKind {
		r.Messages.ByType[k.Kind] = k.Count
	}
	var t *trace.Trace
	if rec != nil {
		t = &rec.Trace
	}
	if o.Metrics != nil && (t != nil || o.Streamed) {
		fin := Finished{Trace: t, Result: res, Algo: a.Name, Nodes: cfg.Nodes, MeanLatency: cfg.Network.Latency.Mean(),
			Workload: used, Series: map[string][]float64{}}
		m, th := o.Metrics(fin)
		for k, v := range m {
			r.Metrics[k] = v
		}
		for k, v := range th {
			r.Theory[k] = v
		}
		if len(fin.Series) > 0 {
			r.Series = fin.Series
		}
	}
	if t == nil {
		return r, nil, nil
	}
	results, err := check.Run(t, a.Checks...)
	if err != nil {
		return nil, nil, fmt.Errorf("algorithm %s: %w", a.Name, err)
	}
	for _, c := range results {
		item := Check{Name: c.Name, OK: c.OK(), Status: c.Status.String(), Detail: c.Detail, Events: c.Events, Edges: c.Edges,
			Guaranteed: !slices.Contains(a.Breaks, c.Name) && len(r.Outside) == 0}
		if !c.OK() {
			item.Counterexample = c.Counterexample(t)
		}
		r.Checks = append(r.Checks, item)
	}
	return r, t, nil
}

func applyNetwork(n *sim.Network, f NetworkFlags) {
	if f.Latency != nil {
		n.Latency = f.Latency
	}
	if f.FIFO != nil {
		n.FIFO = *f.FIFO
	}
	if f.Loss != nil {
		n.Loss = *f.Loss
	}
	if f.Duplicate != nil {
		n.Duplicate = *f.Duplicate
	}
	if f.Reorder != nil {
		n.Reorder = *f.Reorder
	}
}

func describeNetwork(n sim.Network) string {
	s := "latency " + n.Latency.String()
	if n.Pairwise != nil {
		s = "latency " + n.Pairwise.String()
	}
	if n.FIFO {
		s += ", fifo"
	}
	if n.Loss > 0 {
		s += fmt.Sprintf(", loss %g", n.Loss)
	}
	if n.Duplicate > 0 {
		s += fmt.Sprintf(", duplicate %g", n.Duplicate)
	}
	if n.Reorder > 0 {
		s += fmt.Sprintf(", reorder %g", n.Reorder)
	}
	if len(n.Partitions) > 0 {
		s += fmt.Sprintf(", %d partition(s)", len(n.Partitions))
	}
	return s
}
