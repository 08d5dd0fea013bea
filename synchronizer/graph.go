package synchronizer

import (
	"slices"

	"github.com/cohort-go/cohort/proc"
)

// learner floods the process's neighbour list and collects everyone
// else's, until it knows the whole graph: the initialization of β and γ.
// Every list crosses every edge at most twice (it is forwarded once by
// each process, to all neighbours but the one it came from).
type learner struct {
	adj   [][]proc.ID // by process: its neighbours, sorted; nil until known
	known int
}

// start records the process's own list and floods it. It reports whether
// the graph is known (a single process).
func (l *learner) start(env proc.Env) bool {
	l.adj = make([][]proc.ID, env.N())
	return l.onTopo(env, proc.None, Topo{Origin: env.Self(), Neighbors: env.Neighbors()})
}

// onTopo records a list heard of for the first time and forwards it. It
// reports whether the graph has just become known. A list naming a
// process outside the run is dropped.
func (l *learner) onTopo(env proc.Env, from proc.ID, m Topo) bool {
	n := len(l.adj)
	if m.Origin < 0 || int(m.Origin) >= n || l.adj[m.Origin] != nil {
		return false
	}
	if slices.ContainsFunc(m.Neighbors, func(q proc.ID) bool { return q < 0 || int(q) >= n }) {
		return false
	}
	nb := slices.Clone(m.Neighbors)
	slices.Sort(nb)
	l.adj[m.Origin] = nb
	l.known++
	for _, q := range env.Neighbors() {
		if q != from {
			env.Send(q, Topo{Origin: m.Origin, Neighbors: m.Neighbors})
		}
	}
	return l.known == n
}

// layout is what every process computes alike from the graph: clusters,
// each with a BFS tree rooted at its leader, and the preferred edges
// between neighbouring clusters. β's layout is one cluster, the graph.
type layout struct {
	parent    []proc.ID   // in the cluster tree; None at a leader
	children  [][]proc.ID // in the cluster tree, ascending
	cluster   []proc.ID   // the leader of each process's cluster
	preferred [][]proc.ID // each process's ends of preferred edges, ascending
	clusters  int
	height    int // of the tallest cluster tree
	edges     int
	nprefer   int // preferred edges
}

// partition is Awerbuch's cluster partition: while processes are left,
// the least of them, v, leads a new cluster, which grows from {v} by BFS
// layers among the processes left while a layer multiplies its size by
// more than k (k ≤ 0: with no limit, to the whole connected graph — β's
// single BFS tree). A cluster of height h so holds more than k^h
// processes: h ≤ log_k N. And the processes one layer out, which stopped
// it, are at most k times its size, which bounds the preferred edges —
// one per pair of neighbouring clusters, the least such edge — by k·N.
func partition(adj [][]proc.ID, k int) *layout {
	n := len(adj)
	l := &layout{parent: make([]proc.ID, n), children: make([][]proc.ID, n), cluster: make([]proc.ID, n), preferred: make([][]proc.ID, n)}
	for i := range n {
		l.parent[i], l.cluster[i] = proc.None, proc.None
		l.edges += len(adj[i])
	}
	l.edges /= 2
	for v := range n {
		if l.cluster[v] != proc.None {
			continue
		}
		leader := proc.ID(v)
		l.clusters++
		l.cluster[v] = leader
		members, frontier := 1, []proc.ID{leader}
		for h := 0; ; h++ {
			// The next layer, tentatively: parents are set only if it is kept.
			var layer []proc.ID
			from := map[proc.ID]proc.ID{}
			for _, u := range frontier {
				for _, w := range adj[u] {
					if _, seen := from[w]; !seen && l.cluster[w] == proc.None {
						from[w] = u
						layer = append(layer, w)
					}
				}
			}
			if len(layer) == 0 || k > 0 && members+len(layer) <= k*members {
				l.height = max(l.height, h)
				break
			}
			for _, w := range layer {
				l.cluster[w], l.parent[w] = leader, from[w]
				l.children[from[w]] = append(l.children[from[w]], w)
			}
			members += len(layer)
			frontier = layer
		}
	}
	for i := range n {
		slices.Sort(l.children[i])
	}
	// The preferred edges: for each pair of neighbouring clusters, the
	// first edge between them in the order of (process, neighbour).
	seen := map[[2]proc.ID]bool{}
	for u := range n {
		for _, w := range adj[u] {
			a, b := l.cluster[u], l.cluster[w]
			if a == b {
				continue
			}
			pair := [2]proc.ID{min(a, b), max(a, b)}
			if seen[pair] {
				continue
			}
			seen[pair] = true
			l.nprefer++
			l.preferred[u] = append(l.preferred[u], w)
			l.preferred[w] = append(l.preferred[w], proc.ID(u))
		}
	}
	for i := range n {
		slices.Sort(l.preferred[i])
	}
	return l
}

// output reports the layout as process self sees it.
func (l *layout) output(env proc.Env) {
	env.Output(Layout{Degree: len(env.Neighbors()), Edges: l.edges, Clusters: l.clusters, Height: l.height, Preferred: l.nprefer})
}
