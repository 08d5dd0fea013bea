package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/cohort-go/cohort/proc"
)

// Topology says which processes are neighbours. It describes the graph an
// algorithm runs on (Env.Neighbors); the simulator does not stop a process
// from sending to a non-neighbour, since addressing is the algorithm's
// business.
type Topology interface {
	Neighbors(id proc.ID) []proc.ID
	String() string
}

// Full is the complete graph: everyone is everyone's neighbour. Neighbour
// lists are built on first use, so large runs that never ask pay nothing.
type Full struct {
	n     int
	cache map[proc.ID][]proc.ID
}

// NewFull returns the complete graph on n processes.
func NewFull(n int) *Full { return &Full{n: n} }

func (f *Full) Neighbors(id proc.ID) []proc.ID {
	if nb, ok := f.cache[id]; ok {
		return nb
	}
	nb := make([]proc.ID, 0, f.n-1)
	for i := 0; i < f.n; i++ {
		if proc.ID(i) != id {
			nb = append(nb, proc.ID(i))
		}
	}
	if f.cache == nil {
		f.cache = map[proc.ID][]proc.ID{}
	}
	f.cache[id] = nb
	return nb
}
func (f *Full) String() string { return "full" }

// Graph is an explicit undirected graph in compressed adjacency form.
type Graph struct {
	name  string
	start []int32 // neighbours of i are adj[start[i]:start[i+1]]
	adj   []proc.ID
}

func (g *Graph) Neighbors(id proc.ID) []proc.ID { return g.adj[g.start[id]:g.start[id+1]] }
func (g *Graph) String() string                 { return g.name }

// Edges counts undirected edges.
func (g *Graph) Edges() int { return len(g.adj) / 2 }

// Diameter is the longest shortest path (by BFS from every node; meant for
// the small graphs of tests and scenarios). A disconnected graph returns -1.
func (g *Graph) Diameter() int {
	n := len(g.start) - 1
	dist := make([]int, n)
	best := 0
	for s := 0; s < n; s++ {
		for i := range dist {
			dist[i] = -1
		}
		dist[s] = 0
		q := []proc.ID{proc.ID(s)}
		seen := 1
		for len(q) > 0 {
			u := q[0]
			q = q[1:]
			for _, v := range g.Neighbors(u) {
				if dist[v] < 0 {
					dist[v] = dist[u] + 1
					best = max(best, dist[v])
					seen++
					q = append(q, v)
				}
			}
		}
		if seen < n {
			return -1
		}
	}
	return best
}

// fromEdges builds a Graph from a set of undirected edges, dropping
// duplicates and self-loops; neighbour lists are sorted.
func fromEdges(name string, n int, edges [][2]int) *Graph {
	sets := make([][]proc.ID, n)
	for _, e := range edges {
		a, b := e[0], e[1]
		if a == b {
			continue
		}
		sets[a] = append(sets[a], proc.ID(b))
		sets[b] = append(sets[b], proc.ID(a))
	}
	g := &Graph{name: name, start: make([]int32, n+1)}
	for i, s := range sets {
		slices.Sort(s)
		s = slices.Compact(s)
		g.adj = append(g.adj, s...)
		g.start[i+1] = int32(len(g.adj))
	}
	return g
}

// Ring connects i with i-1 and i+1 (mod n).
func Ring(n int) *Graph {
	var e [][2]int
	for i := 0; i < n; i++ {
		e = append(e, [2]int{i, (i + 1) % n})
	}
	return fromEdges("ring", n, e)
}

// Line connects i with i+1.
func Line(n int) *Graph {
	var e [][2]int
	for i := 0; i+1 < n; i++ {
		e = append(e, [2]int{i, i + 1})
	}
	return fromEdges("line", n, e)
}

// Grid lays the processes out row by row on a grid of ⌈√n⌉ columns and
// connects each to its four neighbours.
func Grid(n int) *Graph {
	cols := int(math.Ceil(math.Sqrt(float64(n))))
	var e [][2]int
	for i := 0; i < n; i++ {
		if (i+1)%cols != 0 && i+1 < n {
			e = append(e, [2]int{i, i + 1})
		}
		if i+cols < n {
			e = append(e, [2]int{i, i + cols})
		}
	}
	return fromEdges(fmt.Sprintf("grid(%d cols)", cols), n, e)
}

// RandomGraph is a connected random graph where every process has at least
// degree neighbours (a random spanning tree for connectivity, then random
// edges until every degree is reached). The graph depends only on seed.
func RandomGraph(n, degree int, seed uint64) (*Graph, error) {
	if degree < 1 || degree >= n {
		return nil, fmt.Errorf("random graph: degree %d must be between 1 and n-1 = %d", degree, n-1)
	}
	r := rand.New(rand.NewPCG(seed, 0x6772617068)) // "graph"
	deg := make([]int, n)
	var e [][2]int
	have := map[[2]int]bool{}
	add := func(a, b int) {
		if a == b || have[[2]int{min(a, b), max(a, b)}] {
			return
		}
		have[[2]int{min(a, b), max(a, b)}] = true
		e = append(e, [2]int{a, b})
		deg[a]++
		deg[b]++
	}
	perm := r.Perm(n)
	for i := 1; i < n; i++ {
		add(perm[i], perm[r.IntN(i)])
	}
	for a := 0; a < n; a++ {
		for tries := 0; deg[a] < degree && tries < 100*degree; tries++ {
			add(a, r.IntN(n))
		}
	}
	return fromEdges(fmt.Sprintf("random(degree %d)", degree), n, e), nil
}
