package lab

import (
	"fmt"
	"slices"
	"time"

	"github.com/cohort-go/cohort/mutex"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/scenario"
	"github.com/cohort-go/cohort/sim"
)

// CompareRow is one measured figure beside the theory's, the JSON contract
// of `cohort compare`. Theory is nil where the textbooks give no single
// figure.
type CompareRow struct {
	Algo     string   `json:"algo"`
	Nodes    int      `json:"nodes"`
	Case     string   `json:"case"`
	Metric   string   `json:"metric"`
	Measured *float64 `json:"measured"`
	Theory   *float64 `json:"theory"`
	Note     string   `json:"note,omitempty"`
}

// CompareRun is one constructed run behind the rows, with its verdicts.
type CompareRun struct {
	Algo   string   `json:"algo"`
	Nodes  int      `json:"nodes"`
	Case   string   `json:"case"`
	Failed []string `json:"failed_checks,omitempty"`
	// Broken are violated properties the algorithm does not guarantee (a
	// deadlocked run of basic Maekawa, say).
	Broken []string `json:"not_guaranteed_violated,omitempty"`
	Skip   string   `json:"skipped,omitempty"`
}

// The comparison's network: constant latency, so "in messages" is exact,
// and FIFO channels, which every mutex algorithm here may assume.
const compareLatency = time.Millisecond

// CompareHold is the critical section's length in the comparison runs.
const CompareHold = time.Millisecond

// Compare runs every algorithm of the family in constructed situations for
// each process count and returns measured figures beside the theory.
func Compare(family string, nodes []int, seed uint64) ([]CompareRow, []CompareRun, error) {
	return CompareWith(family, nodes, seed, CompareOptions{})
}

// CompareOptions narrow a comparison.
type CompareOptions struct {
	// Proximity, for the overlay family: "on" keeps only the cases whose
	// Pastry tables are chosen by proximity, "off" only those whose
	// tables are not; "" keeps every case.
	Proximity string
}

// CompareWith is Compare with options.
func CompareWith(family string, nodes []int, seed uint64, opt CompareOptions) ([]CompareRow, []CompareRun, error) {
	f, err := Lookup(family)
	if err != nil {
		return nil, nil, err
	}
	cases, ok := familyCases[f.Name]
	if !ok {
		return nil, nil, fmt.Errorf("family %s has no comparison yet (mutex and election have)", f.Name)
	}
	switch opt.Proximity {
	case "":
	case "on", "off":
		if f.Name != "overlay" {
			return nil, nil, fmt.Errorf("proximity %q: only the overlay family's comparison has proximity-aware tables, not %s", opt.Proximity, f.Name)
		}
		cases = slices.DeleteFunc(slices.Clone(cases), func(c compareCase) bool { return c.proximity != (opt.Proximity == "on") })
	default:
		return nil, nil, fmt.Errorf("proximity %q: want on or off", opt.Proximity)
	}
	var rows []CompareRow
	var runs []CompareRun
	for _, a := range f.Algorithms {
		for _, n := range nodes {
			for _, c := range cases {
				if c.algos != nil && !slices.Contains(c.algos, a.Name) {
					continue
				}
				cr := CompareRun{Algo: a.Name, Nodes: n, Case: c.name}
				if c.skip != nil {
					if why := c.skip(n); why != "" {
						cr.Skip = why
						runs = append(runs, cr)
						continue
					}
				}
				if a.Validate != nil {
					if err := a.Validate(n); err != nil {
						cr.Skip = err.Error()
						runs = append(runs, cr)
						continue
					}
				}
				r, err := c.run(f, a, n, seed)
				if err != nil {
					return nil, nil, fmt.Errorf("%s with %d nodes, %s: %w", a.Name, n, c.name, err)
				}
				for _, ch := range r.Checks {
					switch {
					case ch.Failed() && !slices.Contains(cr.Failed, ch.Name):
						cr.Failed = append(cr.Failed, ch.Name)
					case !ch.Failed() && !ch.OK && !slices.Contains(cr.Broken, ch.Name):
						cr.Broken = append(cr.Broken, ch.Name)
					}
				}
				runs = append(runs, cr)
				for _, metric := range c.metrics {
					row := CompareRow{Algo: a.Name, Nodes: n, Case: c.name, Metric: metric, Theory: r.Theory[metric]}
					if v, ok := r.Metrics[metric]; ok {
						row.Measured = &v
					}
					if c.name == "repeated" {
						row.Theory = repeatedTheory(a.Name, n)
					}
					if c.theory != nil {
						row.Theory = c.theory(a.Name, n, metric)
					}
					if metric == "throughput_per_s" {
						if s := r.Theory["sync_delay_msgs"]; s != nil {
							th := 1 / (CompareHold.Seconds() + *s*compareLatency.Seconds())
							row.Theory = &th
						}
					}
					row.Note = a.Notes[metric]
					if c.notes != nil && c.notes[metric] != "" {
						row.Note = c.notes[metric]
					}
					rows = append(rows, row)
				}
			}
		}
	}
	return rows, runs, nil
}

type compareCase struct {
	name    string
	metrics []string
	run     func(f Family, a proc.Algorithm, n int, seed uint64) (*Report, error)
	// algos limits the case to some algorithms; nil means all.
	algos []string
	// skip, if set, says why the case does not run at n nodes ("": it does).
	skip func(n int) string
	// theory, if set, gives the theory's figure for a metric of this case.
	theory func(algo string, n int, metric string) *float64
	// notes explain differences, by metric.
	notes map[string]string
	// proximity: the case's Pastry tables are chosen by proximity.
	proximity bool
}

// familyCases are the constructed situations each family is compared in.
var familyCases = map[string][]compareCase{
	"mutex":        mutexCases,
	"election":     electionCases,
	"multicast":    multicastCases,
	"gossip":       gossipCases,
	"overlay":      overlayCases,
	"snapshot":     snapshotCases,
	"deadlock":     deadlockCases,
	"synchronizer": synchronizerCases,
	"rpc":          rpcCases,
}

// CompareMaxNodes is the largest process count `cohort compare` runs a
// family with: the gossip and overlay families' runs keep no trace past
// 10^4 nodes and go to a million; the others keep theirs.
func CompareMaxNodes(family string) int {
	if family == "gossip" || family == "overlay" {
		return 1_000_000
	}
	return 4096
}

var mutexCases = []compareCase{
	{
		// Every process requests once, far apart from the others: the
		// client delay of a request nobody competes with.
		name:    "uncontended",
		metrics: []string{"messages_per_entry", "client_delay_msgs"},
		run: func(f Family, a proc.Algorithm, n int, seed uint64) (*Report, error) {
			gap := time.Duration(4*n+20) * compareLatency
			var script sim.Script
			for i := 0; i < n; i++ {
				script = append(script, sim.TimedInput{At: gap * time.Duration(i+1), Node: proc.ID(i), Input: mutex.Acquire{}})
			}
			o := compareOptions(f, a, n, seed)
			o.Workload = script
			o.Deadline = gap * time.Duration(n+2)
			r, _, err := Sim(o)
			return r, err
		},
	},
	{
		// One process enters again and again while the others stay idle:
		// where JUST-RELEASED and the token algorithms save messages.
		name:    "repeated",
		metrics: []string{"messages_per_entry"},
		run: func(f Family, a proc.Algorithm, n int, seed uint64) (*Report, error) {
			var script sim.Script
			gap := time.Duration(4*n+20) * compareLatency
			for i := 0; i < repeatedEntries; i++ {
				script = append(script, sim.TimedInput{At: gap * time.Duration(i+1), Node: proc.ID(n - 1), Input: mutex.Acquire{}})
			}
			o := compareOptions(f, a, n, seed)
			o.Workload = script
			o.Deadline = gap * time.Duration(repeatedEntries+2)
			r, _, err := Sim(o)
			return r, err
		},
	},
	{
		// Every process requests again as soon as it leaves: the
		// synchronization delay and the throughput under saturation.
		name:    "saturated",
		metrics: []string{"messages_per_entry", "sync_delay_msgs", "throughput_per_s"},
		run: func(f Family, a proc.Algorithm, n int, seed uint64) (*Report, error) {
			o := compareOptions(f, a, n, seed)
			o.Workload = &MutexLoad{Rounds: 10}
			o.Deadline = time.Duration(100*n+1000) * compareLatency
			r, _, err := Sim(o)
			return r, err
		},
	},
}

// repeatedEntries is how often the last process enters in the repeated case.
const repeatedEntries = 10

// repeatedTheory is the messages per entry of the repeated case: what the
// first entry costs, spread over all of them where the algorithm says later
// entries are free (its "repeat_first_messages"), else its cost per entry.
func repeatedTheory(algo string, n int) *float64 {
	th := theoryOf("mutex", algo, n, "repeat_first_messages", "messages_per_entry")
	if first := th["repeat_first_messages"]; first != nil {
		v := *first / repeatedEntries
		return &v
	}
	return th["messages_per_entry"]
}

func compareOptions(f Family, a proc.Algorithm, n int, seed uint64) Options {
	o := f.Options(a)
	sc, _ := scenario.Parse("comparison", []byte(fmt.Sprintf("nodes: %d\nnetwork:\n  latency: %s\n  fifo: true\n", n, compareLatency)))
	o.Scenario = sc
	o.Seed = &seed
	o.React = MutexHold{Hold: CompareHold}
	return o
}
