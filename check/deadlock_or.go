package check

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/cohort-go/cohort/trace"
)

// The OR-model deadlock checkers read the OR model's contract from a trace
// (package deadlock, communication.go) and rebuild its wait-for graph:
// there is an edge p → q while p waits ("waits" {wait, from}, until
// "resumed" or "gave-up"), q is in from, and no process has answered p's
// wait ("answered" {wait}, at the answerer: its answer is on the way, so p
// will resume). Each piece of that state is local to one process, so the
// graph can be rebuilt at any consistent cut as well as at any instant.
//
// In the OR model a process waits for any one of its dependent set, so a
// cycle is not a deadlock: p is deadlocked iff every process reachable
// from p waits (none of them will ever answer). Every deadlock ends in a
// knot: a strongly connected set of two or more processes with no edge
// out of it.
//
//   - or-deadlock-detected: no knot of the wait-for graph stands longer
//     than the bound without a "deadlock" declared by one of its
//     processes. The bound is the detector's wait ("detector" {wait_ns})
//     plus two of the trace's longest message delays per process (a
//     query's way out and its reply's way back).
//   - or-deadlock-no-phantom: every "deadlock" declared by a process p is
//     real: p is deadlocked at the instant of the declaration, or in the
//     consistent cut of the declaration's causal past. A declaration true
//     in neither is a phantom: on a cycle with a way out, say, which the
//     AND model would call a deadlock.
var (
	orDeadlockDetected = checker{
		name:  "or-deadlock-detected",
		doc:   "OR model: no knot of the wait-for graph stands longer than the detector's bound without a deadlock declared by one of its processes",
		check: checkORDeadlockDetected,
	}
	orDeadlockNoPhantom = checker{
		name:  "or-deadlock-no-phantom",
		doc:   "OR model: every declared deadlock is real: every process its declarer reaches in the wait-for graph waits, at the declaration or in the consistent cut of its causal past",
		check: checkORDeadlockNoPhantom,
	}
)

func init() {
	Register(orDeadlockDetected)
	Register(orDeadlockNoPhantom)
}

// orOutput is any output of the OR model, its fields merged.
type orOutput struct {
	Wait json.RawMessage `json:"wait"` // a wait {p, seq}, or the detector's wait_ns field's neighbour
	From []int32         `json:"from"`
	NS   int64           `json:"wait_ns"`
	w    dlTxn
}

var orKinds = []string{"waits", "answered", "resumed", "gave-up", "deadlock", "detector"}

// parse reads e, an output of one of orKinds in a run of n processes,
// into o, and checks it names processes of the run.
func (o *orOutput) parse(e *trace.Event, n int) error {
	inRange := func(x int32) bool { return x >= 0 && int(x) < n }
	if !inRange(e.Node) {
		return fmt.Errorf("node %d out of range", e.Node)
	}
	if err := json.Unmarshal(e.Data, o); err != nil {
		return fmt.Errorf("%s %s: %v", e.Type, e.Data, err)
	}
	if e.Type == "detector" {
		return nil
	}
	if err := json.Unmarshal(o.Wait, &o.w); err != nil {
		return fmt.Errorf("%s %s: wait: %v", e.Type, e.Data, err)
	}
	if !inRange(o.w.P) || o.w.Seq < 1 || (e.Type != "answered" && o.w.P != e.Node) {
		return fmt.Errorf("%s names wait %s, not one of a process of the run (or not its own)", e.Type, o.w)
	}
	for _, q := range o.From {
		if !inRange(q) || q == e.Node {
			return fmt.Errorf("%s waits for process %d", e.Type, q)
		}
	}
	return nil
}

// orLocal is one process's part of the OR graph: its wait and dependent
// set, and, by asker, the last wait it answered.
type orLocal struct {
	wait     int
	from     []int32
	answered []int
}

// orGraph is the OR wait-for graph's state.
type orGraph struct{ p []orLocal }

func newORGraph(n int) *orGraph {
	g := &orGraph{p: make([]orLocal, n)}
	for i := range g.p {
		g.p[i].answered = make([]int, n)
	}
	return g
}

func (g *orGraph) apply(node int32, kind string, o *orOutput) bool {
	l := &g.p[node]
	switch kind {
	case "waits":
		l.wait, l.from = o.w.Seq, o.From
	case "resumed", "gave-up":
		if l.wait == o.w.Seq {
			l.wait, l.from = 0, nil
		}
	case "answered":
		l.answered[o.w.P] = max(l.answered[o.w.P], o.w.Seq)
	default:
		return false
	}
	return true
}

// waiting: p waits and no process has answered its wait.
func (g *orGraph) waiting(p int) bool {
	l := &g.p[p]
	return l.wait != 0 && !slices.ContainsFunc(l.from, func(q int32) bool { return g.p[q].answered[p] == l.wait })
}

// adjacency lists the graph's edges, by waiting process.
func (g *orGraph) adjacency() [][]int32 {
	adj := make([][]int32, len(g.p))
	for p := range g.p {
		if g.waiting(p) {
			adj[p] = g.p[p].from
		}
	}
	return adj
}

// orDeadlocked reports, per process, whether every process it reaches
// waits (no path from it ends in one that does not).
func orDeadlocked(adj [][]int32) []bool {
	n := len(adj)
	free := make([]bool, n) // reaches a process that does not wait
	rev := make([][]int32, n)
	var stack []int32
	for p, out := range adj {
		if len(out) == 0 {
			free[p] = true
			stack = append(stack, int32(p))
		}
		for _, q := range out {
			rev[q] = append(rev[q], int32(p))
		}
	}
	for len(stack) > 0 {
		q := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, p := range rev[q] {
			if !free[p] {
				free[p] = true
				stack = append(stack, p)
			}
		}
	}
	dead := make([]bool, n)
	for p := range dead {
		dead[p] = !free[p]
	}
	return dead
}

// orKnots returns each process's strongly connected component and
// whether it lies in a knot (a component of two or more with no edge out).
func orKnots(adj [][]int32) (comp []int, inKnot []bool) {
	comp, onCycle := components(adj)
	exits := map[int]bool{}
	for p, out := range adj {
		for _, q := range out {
			if comp[q] != comp[p] {
				exits[comp[p]] = true
			}
		}
	}
	inKnot = make([]bool, len(adj))
	for p := range adj {
		inKnot[p] = onCycle[p] && !exits[comp[p]]
	}
	return comp, inKnot
}

// orReach lists the edges reachable from p.
func orReach(adj [][]int32, p int32, at int) []Edge {
	seen := map[int32]bool{p: true}
	stack := []int32{p}
	var edges []Edge
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, w := range adj[v] {
			edges = append(edges, Edge{From: v, To: w, At: at})
			if !seen[w] {
				seen[w] = true
				stack = append(stack, w)
			}
		}
	}
	return edges
}

// ORDeadlockRun is what the OR checkers find in a trace, for the metrics.
type ORDeadlockRun struct {
	// Formed counts the events that put processes in a knot they were not
	// in: deadlocks formed. Detected counts those followed, while the
	// knot stood, by a real declaration of one of its processes;
	// Latencies are the times (ns) from each to that declaration.
	Formed    int
	Detected  int
	Latencies []int64
	// Declarations counts the "deadlock" outputs; Phantoms are the
	// indexes of those that were phantoms, PhantomEdges the wait-for
	// edges their declarer reached then.
	Declarations int
	Phantoms     []int
	PhantomEdges [][]Edge
	// Reached is, for every real declaration, the wait-for edges
	// reachable from its declarer then (At: the declaration): the e of
	// its computation is their number.
	Reached [][]Edge
	// Bound is the detection bound (ns); -1 if the trace states no wait.
	Bound int64
	// Late are the knots that stood longer than Bound undeclared.
	Late      []finding
	LateEdges [][]Edge
	// Open is set if the trace ends with a knot younger than Bound,
	// undeclared: the trace cannot tell.
	Open string
}

// AnalyzeORDeadlocks replays a trace of the OR model and judges its
// declarations against its wait-for graph.
func AnalyzeORDeadlocks(t *trace.Trace) (*ORDeadlockRun, error) {
	n := t.Header.Nodes
	if n < 1 {
		return nil, fmt.Errorf("the header names %d nodes", n)
	}
	r := &ORDeadlockRun{Bound: -1}
	outs := make([]*orOutput, len(t.Events))
	var wait int64
	waitSeen := false
	for i := range t.Events {
		e := &t.Events[i]
		if e.Kind != trace.Output || !slices.Contains(orKinds, e.Type) {
			continue
		}
		o := &orOutput{}
		if err := o.parse(e, n); err != nil {
			return nil, fmt.Errorf("event #%d: %w", i, err)
		}
		if e.Type == "detector" {
			wait, waitSeen = max(wait, o.NS), true
		}
		outs[i] = o
	}
	if waitSeen {
		r.Bound = wait + 2*int64(n)*longestDelay(t)
	}

	// Each process's states, for the causal cuts.
	hist := make([][]orLocal, n)
	idx := make([][]int, n)
	{
		h := newORGraph(n)
		for i := range t.Events {
			e := &t.Events[i]
			if outs[i] != nil && h.apply(e.Node, e.Type, outs[i]) {
				l := h.p[e.Node]
				l.answered = slices.Clone(l.answered)
				hist[e.Node] = append(hist[e.Node], l)
				idx[e.Node] = append(idx[e.Node], i)
			}
		}
	}
	var hb *trace.HB
	var evs [][]int
	atCut := func(d int) *orGraph {
		if hb == nil {
			var err error
			if hb, err = trace.NewHB(t); err != nil {
				return nil
			}
			for q := range n {
				evs = append(evs, hb.History(q))
			}
		}
		g := newORGraph(n)
		for q := range n {
			k := int(hb.Entry(d, q))
			if k == 0 {
				continue
			}
			last := evs[q][k-1]
			if j, _ := slices.BinarySearch(idx[q], last+1); j > 0 {
				g.p[q] = hist[q][j-1]
			}
		}
		return g
	}

	g := newORGraph(n)
	st := newStretches(n, r.Bound)
	late := func(p int) {
		adj := g.adjacency()
		r.Late = append(r.Late, finding{
			detail: fmt.Sprintf("p%d has been in a knot of the OR wait-for graph since %s (%s) with no deadlock declared in it, longer than the bound %s",
				p, trace.FormatNS(st.since[p]), describeComponent(adj, st.comp, p), trace.FormatNS(r.Bound)),
			events: []int{st.joined[p]},
		})
		r.LateEdges = append(r.LateEdges, componentEdges(adj, st.comp, p, st.joined[p]))
	}
	lastTime := int64(0)
	for i := range t.Events {
		e := &t.Events[i]
		st.late(e.Time, true, late) // a knot is reported once
		lastTime = e.Time
		o := outs[i]
		if o == nil {
			continue
		}
		if e.Type == "deadlock" {
			r.Declarations++
			p := e.Node
			adj := g.adjacency()
			real := orDeadlocked(adj)[p]
			if !real {
				if c := atCut(i); c != nil {
					real = orDeadlocked(c.adjacency())[p]
				}
			}
			if !real {
				r.Phantoms = append(r.Phantoms, i)
				r.PhantomEdges = append(r.PhantomEdges, orReach(adj, p, i))
				continue
			}
			r.Reached = append(r.Reached, orReach(adj, p, i))
			st.declared(p, e.Time)
			continue
		}
		if !g.apply(e.Node, e.Type, o) {
			continue
		}
		comp, inKnot := orKnots(g.adjacency())
		st.changed(comp, inKnot, e.Time, i)
	}
	st.late(lastTime, true, late)
	r.Formed, r.Detected, r.Latencies = st.formed, st.detected, st.latencies
	r.Open = st.ending(lastTime, "joined a knot")
	return r, nil
}

func checkORDeadlockDetected(t *trace.Trace) Result {
	r, err := AnalyzeORDeadlocks(t)
	if err != nil {
		return unknown(err)
	}
	if r.Bound < 0 {
		return Result{Status: Unknown, Detail: "no detector output: the trace does not say within what time deadlocks are to be declared"}
	}
	if res := verdict(r.Late); !res.OK() || r.Open == "" {
		if !res.OK() {
			res.Edges = r.LateEdges[first(r.Late)]
		}
		return res
	}
	return Result{Status: Unknown, Detail: r.Open}
}

func checkORDeadlockNoPhantom(t *trace.Trace) Result {
	r, err := AnalyzeORDeadlocks(t)
	if err != nil {
		return unknown(err)
	}
	var fs []finding
	for k, d := range r.Phantoms {
		e := &t.Events[d]
		fs = append(fs, finding{
			detail: fmt.Sprintf("p%d declared %q at %s, but not every process it reaches in the OR wait-for graph waits (%s), then or in the causal past of its declaration",
				e.Node, e.Label, trace.FormatNS(e.Time), describeEdges(r.PhantomEdges[k])),
			events: []int{d},
		})
	}
	res := verdict(fs)
	if !res.OK() {
		res.Edges = r.PhantomEdges[first(fs)]
	}
	return res
}

// describeEdges renders edges as "p1→p3 p3→p1", or "no edge".
func describeEdges(es []Edge) string {
	if len(es) == 0 {
		return "no edge"
	}
	var parts []string
	for _, e := range es {
		parts = append(parts, fmt.Sprintf("p%d→p%d", e.From, e.To))
	}
	return strings.Join(parts, " ")
}
