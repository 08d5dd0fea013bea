// Package catalog is the table of every algorithm Cohort has, by family.
// The CLI, `cohort list`, the benchmarks and the comparison tables are all
// generated from it. It is the one package that imports every family.
package catalog

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cohort-go/cohort/clock"
	"github.com/cohort-go/cohort/election"
	"github.com/cohort-go/cohort/multicast"
	"github.com/cohort-go/cohort/mutex"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/run"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

// Family is a family of algorithms and what its runs report.
type Family struct {
	Name       string
	Summary    string
	Algorithms []proc.Algorithm
	Metrics    run.MetricsFunc
	// Workload makes the default workload of a run whose scenario scripts
	// none; React makes what answers outputs in every run. Either may be nil.
	Workload func() sim.Workload
	React    func() sim.Workload
	// Diagram says how the family's runs are best drawn: which outputs are
	// bookkeeping, which pairs of outputs delimit intervals.
	Diagram trace.SVGOptions
}

// Options returns run options for algorithm a of the family, with the
// family's metrics and workloads in place.
func (f Family) Options(a proc.Algorithm) run.Options {
	o := run.Options{Algo: a, Metrics: f.Metrics}
	if f.Workload != nil {
		o.Workload = f.Workload()
	}
	if f.React != nil {
		o.React = f.React()
	}
	return o
}

// families is filled in init: the families' metrics look their
// algorithms' theory up in it.
var families []Family

func init() {
	families = []Family{
		{
			Name:       "clocks",
			Summary:    "clocks: Lamport's correction of drifting clocks, vector clocks (seed 003 §6.2); physical clock synchronization — Cristian, NTP, Berkeley, RBS — and hybrid logical clocks (§6.1)",
			Algorithms: clock.Algorithms,
			Metrics:    clockMetrics,
		},
		{
			Name:       "mutex",
			Summary:    "mutual exclusion: central, token ring, Lamport, Ricart–Agrawala, Maekawa, decentralized, Suzuki–Kasami, Raymond (seeds 000, 001, 003 §6.3, 004)",
			Algorithms: mutex.WithApps(mutex.Algorithms), // the workload tells: ME3's application messages
			Metrics:    mutexMetrics,
			Workload:   func() sim.Workload { return DefaultMutexLoad() },
			React:      func() sim.Workload { return MutexHold{Hold: time.Millisecond} },
			Diagram: trace.SVGOptions{
				Quiet: []string{"waiting", "lent", "told"},
				Spans: []trace.Span{{Open: "enter", Close: "exit", Label: "critical section"}},
			},
		},
		{
			Name:       "election",
			Summary:    "leader election: bully, ring, flooding, echo (seeds 000-004)",
			Algorithms: election.Algorithms,
			Metrics:    electionMetrics,
			Workload:   electAtStart,
		},
		{
			Name:       "multicast",
			Summary:    "ordered multicast: basic, reliable (+ NACK), FIFO, causal, total (sequencer, ISIS, Lamport), FIFO-total, causal-total (seeds 000, 001, 003, 004)",
			Algorithms: multicast.Algorithms,
			Metrics:    multicastMetrics,
			Workload:   DefaultMulticastLoad,
			Diagram:    trace.SVGOptions{Quiet: []string{"holdback"}},
		}}
}

// Families lists the families in the order of the seeds.
func Families() []Family { return families }

// Lookup finds a family by name; the error lists the known ones.
func Lookup(family string) (Family, error) {
	for _, f := range families {
		if f.Name == family {
			return f, nil
		}
	}
	var names []string
	for _, f := range families {
		names = append(names, f.Name)
	}
	return Family{}, fmt.Errorf("unknown family %q (known: %s)", family, strings.Join(names, ", "))
}

// Algorithm finds an algorithm of the family by name; the error lists the
// family's algorithms.
func (f Family) Algorithm(name string) (proc.Algorithm, error) {
	i := slices.IndexFunc(f.Algorithms, func(a proc.Algorithm) bool { return a.Name == name })
	if i < 0 {
		return proc.Algorithm{}, fmt.Errorf("unknown %s algorithm %q (known: %s)", f.Name, name, strings.Join(f.Names(), ", "))
	}
	return f.Algorithms[i], nil
}

// Names lists the family's algorithm names.
func (f Family) Names() []string {
	var names []string
	for _, a := range f.Algorithms {
		names = append(names, a.Name)
	}
	return names
}

// clockMetrics counts the timestamps the processes reported, and measures
// the synchronization of physical clocks.
func clockMetrics(r run.Finished) (map[string]float64, map[string]*float64) {
	t := r.Trace
	m := map[string]float64{}
	var stamps float64
	for i := range t.Events {
		e := &t.Events[i]
		if e.Kind == trace.Output && (e.Type == "stamp" || e.Type == "vstamp") {
			stamps++
		}
	}
	m["stamps"] = stamps
	addSyncMetrics(r, m) // clocksync.go: the physical clocks' precision and accuracy
	return m, nil
}

// theoryOf is what algorithm algo of family says a run of n processes
// costs, for each of the metrics (nil where its source gives no figure).
// The figures are the algorithm's own (proc.Algorithm.Theory).
func theoryOf(family, algo string, n int, metrics ...string) map[string]*float64 {
	out := map[string]*float64{}
	for _, m := range metrics {
		out[m] = nil
	}
	f, err := Lookup(family)
	if err != nil {
		return out
	}
	a, err := f.Algorithm(algo)
	if err != nil || a.Theory == nil {
		return out
	}
	for m, v := range a.Theory(n) {
		if _, ok := out[m]; ok {
			v := v
			out[m] = &v
		}
	}
	return out
}
