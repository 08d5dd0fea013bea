package catalog

import (
	"fmt"
	"slices"
	"time"

	"github.com/cohort-go/cohort/mutex"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/run"
	"github.com/cohort-go/cohort/scenario"
	"github.com/cohort-go/cohort/sim"
)

// CompareRow is one measured figure beside the theory's, the JSON contract
// of `cohort compare`. Theory is nil where the seeds give no single figure.
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
	f, err := Lookup(family)
	if err != nil {
		return nil, nil, err
	}
	cases, ok := familyCases[f.Name]
	if !ok {
		return nil, nil, fmt.Errorf("family %s has no comparison yet (mutex and election have)", f.Name)
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
					case ch.Failed():
						cr.Failed = append(cr.Failed, ch.Name)
					case !ch.OK:
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
					row.Note = compareNotes[a.Name+"/"+metric]
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
	run     func(f Family, a proc.Algorithm, n int, seed uint64) (*run.Report, error)
	// algos limits the case to some algorithms; nil means all.
	algos []string
	// theory, if set, gives the theory's figure for a metric of this case.
	theory func(algo string, n int, metric string) *float64
	// notes explain differences, by metric.
	notes map[string]string
}

// familyCases are the constructed situations each family is compared in.
var familyCases = map[string][]compareCase{
	"mutex":     mutexCases,
	"election":  electionCases,
	"multicast": multicastCases,
}

var mutexCases = []compareCase{
	{
		// Every process requests once, far apart from the others: the
		// client delay of a request nobody competes with.
		name:    "uncontended",
		metrics: []string{"messages_per_entry", "client_delay_msgs"},
		run: func(f Family, a proc.Algorithm, n int, seed uint64) (*run.Report, error) {
			gap := time.Duration(4*n+20) * compareLatency
			var script sim.Script
			for i := 0; i < n; i++ {
				script = append(script, sim.TimedInput{At: gap * time.Duration(i+1), Node: proc.ID(i), Input: mutex.Acquire{}})
			}
			o := compareOptions(f, a, n, seed)
			o.Workload = script
			o.Deadline = gap * time.Duration(n+2)
			r, _, err := run.Sim(o)
			return r, err
		},
	},
	{
		// One process enters again and again while the others stay idle:
		// where JUST-RELEASED and the token algorithms save messages.
		name:    "repeated",
		metrics: []string{"messages_per_entry"},
		run: func(f Family, a proc.Algorithm, n int, seed uint64) (*run.Report, error) {
			var script sim.Script
			gap := time.Duration(4*n+20) * compareLatency
			for i := 0; i < repeatedEntries; i++ {
				script = append(script, sim.TimedInput{At: gap * time.Duration(i+1), Node: proc.ID(n - 1), Input: mutex.Acquire{}})
			}
			o := compareOptions(f, a, n, seed)
			o.Workload = script
			o.Deadline = gap * time.Duration(repeatedEntries+2)
			r, _, err := run.Sim(o)
			return r, err
		},
	},
	{
		// Every process requests again as soon as it leaves: the
		// synchronization delay and the throughput under saturation.
		name:    "saturated",
		metrics: []string{"messages_per_entry", "sync_delay_msgs", "throughput_per_s"},
		run: func(f Family, a proc.Algorithm, n int, seed uint64) (*run.Report, error) {
			o := compareOptions(f, a, n, seed)
			o.Workload = &MutexLoad{Rounds: 10}
			o.Deadline = time.Duration(100*n+1000) * compareLatency
			r, _, err := run.Sim(o)
			return r, err
		},
	},
}

// repeatedEntries is how often the last process enters in the repeated case.
const repeatedEntries = 10

// repeatedTheory is the messages per entry of the repeated case: what the
// first entry costs, spread over all of them where later entries are free.
func repeatedTheory(algo string, n int) *float64 {
	N, R := float64(n), float64(repeatedEntries)
	f := func(x float64) *float64 { return &x }
	switch algo {
	case "ricart-agrawala-jr":
		return f(2 * (N - 1) / R) // the first entry asks everyone; the rest are free
	case "suzuki-kasami":
		return f(N / R) // N−1 requests and the token, once
	}
	msgs, _, _ := MutexTheory(algo, n)
	return msgs
}

func compareOptions(f Family, a proc.Algorithm, n int, seed uint64) run.Options {
	o := f.Options(a)
	sc, _ := scenario.Parse("comparison", []byte(fmt.Sprintf("nodes: %d\nnetwork:\n  latency: %s\n  fifo: true\n", n, compareLatency)))
	o.Scenario = sc
	o.Seed = &seed
	o.React = MutexHold{Hold: CompareHold}
	return o
}

// compareNotes explain where a measured figure and the seed's differ.
var compareNotes = map[string]string{
	"central/messages_per_entry":                  "request, grant, release; entries of the coordinator itself cost none, so the average over all processes is 3(N−1)/N",
	"central/client_delay_msgs":                   "request and grant: one round trip; the coordinator itself enters at once",
	"central/sync_delay_msgs":                     "the release reaches the coordinator, then the grant reaches the next process",
	"token-ring/messages_per_entry":               "the seed's 1..∞: under saturation about one pass per entry; an idle ring spends passes on nobody",
	"token-ring/client_delay_msgs":                "the seed's 0..N−1: the wait for the token to come round, N/2 passes on average",
	"token-ring/sync_delay_msgs":                  "the seed's 1..N−1: with every process waiting, the next one is the neighbour",
	"ricart-agrawala/client_delay_msgs":           "the seed's table counts the N−1 requests as sent one after another, 2(N−1); sent in parallel the client waits one round trip, 2",
	"ricart-agrawala-jr/client_delay_msgs":        "as Ricart–Agrawala; a process that re-enters with nobody else interested waits 0",
	"ricart-agrawala-jr/messages_per_entry":       "as Ricart–Agrawala, but re-entries with nobody else interested cost nothing (the repeated case)",
	"ricart-agrawala-majority/messages_per_entry": "requests and releases still go to all N−1 others (any majority may answer); only the votes are fewer, so nothing is saved",
	"lamport/messages_per_entry":                  "request, reply and release to each of the N−1 others",
	"decentralized/messages_per_entry":            "2mk + m with k attempts; k = 1 without contention, more when coordinators split their votes",
	"decentralized/client_delay_msgs":             "the seed's 2mk counts the m requests as sent one after another; sent in parallel, one round trip per attempt",
	"maekawa/messages_per_entry":                  "3(K−1) with voting sets of K = 2√N − 1 (the grid); more under contention",
	"maekawa-safe/messages_per_entry":             "3(K−1) without contention; inquire, relinquish and failed messages add to it under contention",
	"central-failover/messages_per_entry":         "as central, plus the coordinator's heartbeats to waiting processes every 10 ms: they grow with the queue under saturation",
	"suzuki-kasami/messages_per_entry":            "N−1 requests and the token; 0 when the process already holds the token",
	"raymond/messages_per_entry":                  "O(log N): requests and the token travel along the tree's paths",
}
