package synchronizer_test

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/cohort-go/cohort/election"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
	"github.com/cohort-go/cohort/synchronizer"
	"github.com/cohort-go/cohort/trace"
)

type M = election.FloodLeader

// wrappers are the three synchronizers around flooding (γ with k = 2 and
// k = 3).
var wrappers = []struct {
	name string
	wrap func(proc.Rounds) proc.Process
}{
	{"alpha", func(r proc.Rounds) proc.Process { return synchronizer.NewAlpha[M](r) }},
	{"beta", func(r proc.Rounds) proc.Process { return synchronizer.NewBeta[M](r) }},
	{"gamma-k2", func(r proc.Rounds) proc.Process { return synchronizer.NewGamma[M](r, 2) }},
	{"gamma-k3", func(r proc.Rounds) proc.Process { return synchronizer.NewGamma[M](r, 3) }},
}

// graph is the topology of a sweep's run: a ring, a grid or a random
// graph of least degree 2 or 3, by seed.
func graph(t testing.TB, n int, seed uint64) *sim.Graph {
	switch seed % 3 {
	case 0:
		return sim.Ring(n)
	case 1:
		return sim.Grid(n)
	}
	g, err := sim.RandomGraph(n, 2+int(seed%2), seed)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// act is an output of the algorithm, with the round it was made in.
type act struct {
	round int
	label string
}

// lockstep runs the rounds in lockstep, the synchronous model itself:
// each round every process gets exactly what its neighbours sent it in the
// round before, by sender. It returns every process's outputs.
func lockstep(g *sim.Graph, n int, newRounds func(proc.ID, int) proc.Rounds) [][]act {
	procs := make([]proc.Rounds, n)
	for i := range n {
		procs[i] = newRounds(proc.ID(i), n)
	}
	acts := make([][]act, n)
	inbox := make([][]proc.Received, n)
	running := n
	alive := make([]bool, n)
	for i := range alive {
		alive[i] = true
	}
	for r := 1; running > 0; r++ {
		next := make([][]proc.Received, n)
		for i := range n {
			if !alive[i] {
				continue
			}
			env := &stepEnv{self: proc.ID(i), n: n, g: g, r: r, acts: &acts[i], next: next}
			in := inbox[i]
			slices.SortStableFunc(in, func(a, b proc.Received) int { return int(a.From - b.From) })
			if !procs[i].Round(env, r, in) {
				alive[i] = false
				running--
			}
		}
		inbox = next
	}
	return acts
}

// stepEnv is a process's Env in the lockstep run.
type stepEnv struct {
	proc.Env // nil: the rounds use only what is below
	self     proc.ID
	n, r     int
	g        *sim.Graph
	acts     *[]act
	next     [][]proc.Received
}

func (e *stepEnv) Self() proc.ID        { return e.self }
func (e *stepEnv) N() int               { return e.n }
func (e *stepEnv) Neighbors() []proc.ID { return e.g.Neighbors(e.self) }
func (e *stepEnv) Send(to proc.ID, m proc.Message) {
	e.next[to] = append(e.next[to], proc.Received{From: e.self, M: m})
}
func (e *stepEnv) Output(o proc.Output) {
	*e.acts = append(*e.acts, act{e.r, fmt.Sprint(o)})
}

// synchronized reads the same from a synchronized run's trace: each
// process's outputs other than the synchronizer's, with the round it was
// in.
func synchronized(tr *trace.Trace, n int) [][]act {
	acts := make([][]act, n)
	round := make([]int, n)
	for _, e := range tr.Events {
		if e.Kind != trace.Output {
			continue
		}
		switch e.Type {
		case "round":
			round[e.Node]++
		case "layout":
		default:
			acts[e.Node] = append(acts[e.Node], act{round[e.Node], e.Label})
		}
	}
	return acts
}

func floodMax(id proc.ID, n int) proc.Rounds { return election.FloodMax(id, n, 0) }

// asynchronous is a sweep's network: exponential delays (no bound) with a
// seed-dependent mean, and reordering.
func asynchronous(seed uint64) sim.Network {
	return sim.Network{Latency: sim.Exponential{MeanD: time.Duration(1+seed%3) * time.Millisecond}, Reorder: 0.3}
}

func run(t testing.TB, wrap func(proc.Rounds) proc.Process, g *sim.Graph, n int, seed uint64) *simtest.Recorded {
	t.Helper()
	return simtest.Run(t, "synchronizer", sim.Config{Nodes: n, Seed: seed, Topology: g, Network: asynchronous(seed),
		New: func(id proc.ID, n int) proc.Process { return wrap(floodMax(id, n)) }})
}

// TestSweep runs flooding under every synchronizer over many seeds, on
// rings, grids and random graphs with unbounded, reordering delays: every
// process outputs exactly what it outputs in the lockstep run, in the same
// round — the largest id, at the start of round D+1 = N — no message of
// a round arrives after its receiver began the next, and the election's
// checkers hold.
func TestSweep(t *testing.T) {
	seeds := 24
	if testing.Short() || raceEnabled {
		seeds = 6
	}
	for _, w := range wrappers {
		t.Run(w.name, func(t *testing.T) {
			for seed := uint64(1); seed <= uint64(seeds); seed++ {
				n := 4 + int(seed*7%13)
				g := graph(t, n, seed)
				r := run(t, w.wrap, g, n, seed)
				what := fmt.Sprintf("seed %d (%d nodes, %s)", seed, n, g)
				r.Hold(t, synchronizer.Checks...)
				want, got := lockstep(g, n, floodMax), synchronized(r.Trace, n)
				for p := range n {
					if !slices.Equal(got[p], want[p]) {
						t.Fatalf("%s: p%d output %v, in lockstep %v", what, p, got[p], want[p])
					}
				}
				if last := want[0][len(want[0])-1]; last.round != n || last.label != (election.Elected{Leader: proc.ID(n - 1)}).String() {
					t.Fatalf("%s: lockstep p0 ends with %v, want the leader p%d in round %d", what, last, n-1, n)
				}
			}
		})
	}
}

// TestHastyAlphaIsCaught: an α that begins the next round without
// waiting for its last neighbour's SAFE receives messages of a round it
// has left, and sync-safe says so on every seed, citing the late
// message. (The election's checkers may well pass: flooding's maximum
// often survives a lost message; the synchronizer's safety does not.)
func TestHastyAlphaIsCaught(t *testing.T) {
	seeds := 12
	if raceEnabled {
		seeds = 6
	}
	caught := 0
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		n := 9
		g := graph(t, n, seed)
		r := run(t, func(a proc.Rounds) proc.Process { return synchronizer.NewHastyAlpha[M](a) }, g, n, seed)
		v := r.Verdicts(t, "sync-safe")["sync-safe"]
		if v.OK() {
			continue
		}
		caught++
		late := &r.Trace.Events[v.Events[len(v.Events)-1]]
		if late.Kind != trace.Recv || late.Label[:2] != "[r" {
			t.Fatalf("seed %d: the counterexample ends with %s, want the late receipt\n%s", seed, late.String(), v.Counterexample(r.Trace))
		}
		if seed == 1 {
			t.Logf("%s", v.Counterexample(r.Trace))
		}
	}
	if caught < seeds {
		t.Fatalf("sync-safe caught the hasty α in %d of %d runs", caught, seeds)
	}
}

// TestPartition: Awerbuch's partition covers every process with clusters
// whose trees are no taller than log_k N, with at most k·N preferred
// edges; with no k it is one BFS tree.
func TestPartition(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		n := 5 + int(seed*11%60)
		g := graph(t, n, seed)
		adj := make([][]proc.ID, n)
		for i := range n {
			adj[i] = g.Neighbors(proc.ID(i))
		}
		for _, k := range []int{0, 2, 3, 5} {
			cluster, parent, clusters, height, preferred := synchronizer.Partition(adj, k)
			for p := range n {
				if cluster[p] == proc.None || (parent[p] == proc.None) != (cluster[p] == proc.ID(p)) {
					t.Fatalf("seed %d, k=%d: p%d in cluster %s with parent %s", seed, k, p, cluster[p], parent[p])
				}
				if q := parent[p]; q != proc.None && (cluster[q] != cluster[p] || !slices.Contains(adj[p], q)) {
					t.Fatalf("seed %d, k=%d: p%d's parent %s is not a neighbour in its cluster", seed, k, p, q)
				}
			}
			if k == 0 {
				if clusters != 1 || height > g.Diameter() {
					t.Fatalf("seed %d: β's tree: %d clusters, height %d (diameter %d)", seed, clusters, height, g.Diameter())
				}
				continue
			}
			if bound := math.Log(float64(n)) / math.Log(float64(k)); float64(height) > bound {
				t.Errorf("seed %d, k=%d, %d nodes: height %d > log_k N = %.2f", seed, k, n, height, bound)
			}
			if preferred > k*n {
				t.Errorf("seed %d, k=%d: %d preferred edges > kN = %d", seed, k, preferred, k*n)
			}
		}
	}
}
