package multicast

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
	"github.com/cohort-go/cohort/trace"
)

// simRun is one simulated run of a multicast algorithm.
type simRun struct {
	Algo    string
	Nodes   int
	Seed    uint64
	Network sim.Network // zero: uniform 0.5–3 ms latency
	Faults  []sim.Fault
	Inputs  sim.Script                      // scripted multicasts; nil: Load
	Load    *load                           // nil with nil Inputs: every process multicasts 3 times to all
	New     func(proc.ID, int) proc.Process // overrides the registered constructor
}

// load has every process multicast Count times to a group drawn from
// Groups, separated by exponential think times of mean Think.
type load struct {
	Count  int
	Think  time.Duration
	Groups []string
}

func (l load) script(n int, seed uint64) sim.Script {
	var s sim.Script
	for p := 0; p < n; p++ {
		at := time.Duration(0)
		for i := 0; i < l.Count; i++ {
			// A small deterministic generator: the script must not depend on
			// anything but the seed.
			h := (seed*1000003 + uint64(p)*7919 + uint64(i)*104729) % 1000
			at += time.Duration(float64(l.Think) * (0.05 + 2*float64(h)/1000))
			g := l.Groups[int(h)%len(l.Groups)]
			s = append(s, sim.TimedInput{At: at, Node: proc.ID(p), Input: Multicast{Group: g, Body: fmt.Sprintf("m%d.%d", p, i)}})
		}
	}
	slices.SortStableFunc(s, func(a, b sim.TimedInput) int { return int(a.At - b.At) })
	return s
}

func algorithm(t testing.TB, name string) proc.Algorithm {
	t.Helper()
	i := slices.IndexFunc(Algorithms, func(a proc.Algorithm) bool { return a.Name == name })
	if i < 0 {
		t.Fatalf("no algorithm %q", name)
	}
	return Algorithms[i]
}

// run runs r until quiescence (at most 10 s of virtual time) and returns
// the trace.
func (r simRun) run(t testing.TB) *trace.Trace {
	t.Helper()
	a := algorithm(t, r.Algo)
	nw := r.Network
	if nw.Latency == nil {
		nw.Latency = sim.Uniform{Min: 500 * time.Microsecond, Max: 3 * time.Millisecond}
	}
	mk := a.New
	if r.New != nil {
		mk = r.New
	}
	inputs := r.Inputs
	if inputs == nil {
		l := load{Count: 3, Think: 2 * time.Millisecond, Groups: []string{"all"}}
		if r.Load != nil {
			l = *r.Load
		}
		inputs = l.script(r.Nodes, r.Seed)
	}
	run := simtest.Run(t, "multicast", sim.Config{Nodes: r.Nodes, Seed: r.Seed, New: mk, Faults: r.Faults, Network: nw,
		Deadline: 10 * time.Second, VectorClocks: r.Nodes <= 16, Workload: inputs})
	run.Trace.Header.Algo = r.Algo
	return run.Trace
}

// verdicts runs every checker of the family on tr.
func verdicts(t testing.TB, tr *trace.Trace) map[string]check.Result {
	t.Helper()
	return simtest.Verdicts(t, tr, Checks...)
}

// deliveries returns each process's deliveries, as "p0#1" labels, in order.
func deliveries(tr *trace.Trace) map[int32][]string {
	out := map[int32][]string{}
	for _, e := range tr.Events {
		if e.Kind == trace.Output && e.Type == "deliver" {
			var d Delivered
			if json.Unmarshal(e.Data, &d) == nil {
				out[e.Node] = append(out[e.Node], label(d.Origin, d.Seq, d.Group))
			}
		}
	}
	return out
}

func describe(r simRun) string {
	var parts []string
	lat := "uniform:500us,3ms"
	if r.Network.Latency != nil {
		lat = r.Network.Latency.String()
	}
	parts = append(parts, fmt.Sprintf("%s n=%d seed=%d latency %s", r.Algo, r.Nodes, r.Seed, lat))
	if r.Network.FIFO {
		parts = append(parts, "fifo")
	}
	if r.Network.Loss > 0 {
		parts = append(parts, fmt.Sprintf("loss %g", r.Network.Loss))
	}
	if r.Network.Reorder > 0 {
		parts = append(parts, fmt.Sprintf("reorder %g", r.Network.Reorder))
	}
	for _, f := range r.Faults {
		parts = append(parts, fmt.Sprintf("%s p%d at %v", f.Kind, f.Node, f.At))
	}
	return strings.Join(parts, ", ")
}
