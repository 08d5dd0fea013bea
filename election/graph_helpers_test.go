package election

import (
	"fmt"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

// graphRun is the outcome of one simulated election on a graph.
type graphRun struct {
	trace   *trace.Trace
	result  sim.Result
	sim     *sim.Sim
	elected map[proc.ID][]proc.ID // every Elected output, per process, in order
}

// last is the leader process id believes in at the end of the run, None if
// it never output one.
func (r graphRun) last(id proc.ID) proc.ID {
	if ls := r.elected[id]; len(ls) > 0 {
		return ls[len(ls)-1]
	}
	return proc.None
}

// runGraph runs an algorithm in the simulator on topology g with the
// scripted Elect inputs and returns the trace, the figures and the outputs.
func runGraph(t *testing.T, newProc func(proc.ID, int) proc.Process, g *sim.Graph, n int,
	seed uint64, latency sim.Dist, elects ...sim.TimedInput) graphRun {
	t.Helper()
	rec := &trace.Recorder{}
	rec.Trace.Header = trace.Header{Format: trace.FormatName, Nodes: n, Family: "election", Seed: seed}
	out := graphRun{elected: map[proc.ID][]proc.ID{}}
	s, err := sim.New(sim.Config{
		Nodes:    n,
		Seed:     seed,
		New:      newProc,
		Topology: g,
		Network:  sim.Network{Latency: latency},
		Workload: sim.Script(elects),
		Trace:    rec,
		Deadline: time.Minute,
		Observe: func(_ time.Duration, node proc.ID, o proc.Output) {
			if e, ok := o.(Elected); ok {
				out.elected[node] = append(out.elected[node], e.Leader)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run()
	if err != nil {
		t.Fatal(err)
	}
	if res.Stop != sim.StopQuiescent {
		t.Fatalf("%s seed %d: run stopped by %s, want quiescence", g, seed, res.Stop)
	}
	out.trace, out.result, out.sim = &rec.Trace, res, s
	return out
}

// elect is an Elect input at node at time at.
func elect(at time.Duration, node proc.ID) sim.TimedInput {
	return sim.TimedInput{At: at, Node: node, Input: Elect{}}
}

// checkRun runs the named checkers that are registered on the run's trace
// and fails the test on a violation; checkers not (yet) registered are
// skipped, the tests assert the outputs themselves as well.
func checkRun(t *testing.T, what string, r graphRun, names ...string) {
	t.Helper()
	var have []string
	for _, name := range names {
		if _, ok := check.Lookup(name); ok {
			have = append(have, name)
		}
	}
	results, err := check.Run(r.trace, have...)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range results {
		if !res.OK() {
			t.Errorf("%s: %s", what, res)
		}
	}
}

// everyoneElected asserts that every process ends the run believing in
// want (E2 and agreement, and E1 when want is the largest id).
func everyoneElected(t *testing.T, what string, r graphRun, n int, want proc.ID) {
	t.Helper()
	for id := proc.ID(0); int(id) < n; id++ {
		if got := r.last(id); got != want {
			t.Errorf("%s: %s elected %s (outputs %v), want %s", what, id, got, r.elected[id], want)
			return
		}
	}
}

// testGraph is a named topology of a test.
type testGraph struct {
	name string
	n    int
	g    *sim.Graph
}

// testGraphs are the topologies the election tests run on: a ring, a
// line, a grid and a random graph of degree at least 3, each of 8, 16 and
// 32 processes.
func testGraphs(t *testing.T) []testGraph {
	t.Helper()
	var gs []testGraph
	for _, n := range []int{8, 16, 32} {
		rg, err := sim.RandomGraph(n, 3, uint64(n))
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range []*sim.Graph{sim.Ring(n), sim.Line(n), sim.Grid(n), rg} {
			if g.Diameter() < 0 {
				t.Fatalf("%s of %d is not connected", g, n)
			}
			gs = append(gs, testGraph{name: fmt.Sprintf("%s/n=%d", g, n), n: n, g: g})
		}
	}
	return gs
}
