package check

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/cohort-go/cohort/trace"
)

// The deadlock checkers read the deadlock family's contract from a trace
// (package deadlock) and rebuild the wait-for graph from it: there is an
// edge p → q while the owner of some resource has p's current transaction
// in its queue ("blocked" output, until "granted" or "withdrawn") and q's
// current transaction holding it ("granted", until "freed"), a process's
// current transaction being the one it began ("txn") and has not ended
// ("released", "aborted"). Every piece of that state is local to one
// process, so the graph can be rebuilt at any consistent cut as well as
// at any instant of true time.
//
//   - deadlock-detected: no process stays on a cycle of the wait-for
//     graph longer than the bound without a "deadlock" declared by a
//     process of its strongly connected component (its deadlock). The
//     bound is the detector's own promise, its wait ("detector" output
//     {wait_ns}), plus two of the trace's longest message delays per
//     process (a probe's round trip through every resource's owner).
//   - deadlock-no-phantom: every "deadlock" declared by a process p is
//     real: p is on a cycle of the wait-for graph — the very cycle it
//     names, if it names one — at the instant of the declaration, or in
//     the consistent cut made of the declaration's causal past (what p
//     could know: a victim elsewhere on the cycle may have aborted a
//     moment before, unknown to p). A declaration true in neither is a
//     phantom deadlock (Coulouris et al. §17.5.1).
var (
	deadlockDetected = checker{
		name:  "deadlock-detected",
		doc:   "no process stays on a cycle of the wait-for graph longer than the detector's bound without a deadlock declared in its component",
		check: checkDeadlockDetected,
	}
	deadlockNoPhantom = checker{
		name:  "deadlock-no-phantom",
		doc:   "every declared deadlock is a cycle of the wait-for graph at the declaration, or in the consistent cut of its causal past",
		check: checkDeadlockNoPhantom,
	}
)

func init() {
	Register(deadlockDetected)
	Register(deadlockNoPhantom)
}

// dlTxn names a transaction as package deadlock does.
type dlTxn struct {
	P   int32 `json:"p"`
	Seq int   `json:"seq"`
}

func (t dlTxn) String() string { return fmt.Sprintf("p%d.%d", t.P, t.Seq) }

// dlOutput is any output of the family, its fields merged.
type dlOutput struct {
	Txn    dlTxn   `json:"txn"`
	Res    int32   `json:"res"`
	Holder dlTxn   `json:"holder"`
	Cycle  []int32 `json:"cycle"`
	Wait   int64   `json:"wait_ns"`
}

var dlKinds = []string{"txn", "released", "aborted", "granted", "blocked", "freed", "withdrawn", "deadlock", "detector"}

// parse reads e, an output of one of dlKinds in a run of n processes,
// into o, and checks it names processes of the run.
func (o *dlOutput) parse(e *trace.Event, n int) error {
	if e.Node < 0 || int(e.Node) >= n {
		return fmt.Errorf("node %d out of range", e.Node)
	}
	if err := json.Unmarshal(e.Data, o); err != nil {
		return fmt.Errorf("%s %s: %v", e.Type, e.Data, err)
	}
	for _, x := range []int32{o.Txn.P, o.Holder.P} {
		if x < 0 || int(x) >= n {
			return fmt.Errorf("%s names process %d, out of range", e.Type, x)
		}
	}
	return nil
}

// wfg is the state the wait-for graph is made of: each process's current
// transaction, and each owner's lock table.
type wfg struct {
	active []int     // process → its current transaction's Seq; 0 if none
	holder []dlTxn   // owner → the transaction holding its resource
	queue  [][]dlTxn // owner → the transactions queued for it
}

func newWFG(n int) *wfg {
	return &wfg{active: make([]int, n), holder: make([]dlTxn, n), queue: make([][]dlTxn, n)}
}

// apply applies an output of the family; it reports whether the graph's
// state changed.
func (g *wfg) apply(node int32, kind string, o *dlOutput) bool {
	p := int(node)
	switch kind {
	case "txn":
		g.active[p] = o.Txn.Seq
	case "released", "aborted":
		if g.active[p] == o.Txn.Seq {
			g.active[p] = 0
		}
	case "granted":
		g.holder[p] = o.Txn
		g.queue[p] = slices.DeleteFunc(g.queue[p], func(t dlTxn) bool { return t == o.Txn })
	case "blocked":
		g.queue[p] = append(g.queue[p], o.Txn)
	case "freed":
		if g.holder[p] == o.Txn {
			g.holder[p] = dlTxn{}
		}
	case "withdrawn":
		g.queue[p] = slices.DeleteFunc(g.queue[p], func(t dlTxn) bool { return t == o.Txn })
	default:
		return false
	}
	return true
}

func (g *wfg) current(t dlTxn) bool {
	return t.Seq != 0 && t.P >= 0 && int(t.P) < len(g.active) && g.active[t.P] == t.Seq
}

// adjacency lists the graph's edges, by waiting process.
func (g *wfg) adjacency() [][]int32 {
	adj := make([][]int32, len(g.active))
	for o, h := range g.holder {
		if !g.current(h) {
			continue
		}
		for _, t := range g.queue[o] {
			if g.current(t) && t.P != h.P && !slices.Contains(adj[t.P], h.P) {
				adj[t.P] = append(adj[t.P], h.P)
			}
		}
	}
	return adj
}

// components returns each process's strongly connected component (an
// index) and whether it lies on a cycle (a component of two or more:
// there are no self-loops). Tarjan's algorithm.
func components(adj [][]int32) (comp []int, onCycle []bool) {
	n := len(adj)
	comp, onCycle = make([]int, n), make([]bool, n)
	index, low := make([]int, n), make([]int, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int
	on := make([]bool, n)
	next, ncomp := 0, 0
	var visit func(v int)
	visit = func(v int) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		on[v] = true
		for _, w := range adj[v] {
			switch {
			case index[w] < 0:
				visit(int(w))
				low[v] = min(low[v], low[w])
			case on[w]:
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			start := len(stack) - 1
			for stack[start] != v {
				start--
			}
			for _, w := range stack[start:] {
				on[w] = false
				comp[w] = ncomp
				onCycle[w] = len(stack)-start > 1
			}
			stack = stack[:start]
			ncomp++
		}
	}
	for v := range n {
		if index[v] < 0 {
			visit(v)
		}
	}
	return comp, onCycle
}

// hasCycle reports whether cycle (p0, p1, ..., pk) is a cycle of adj:
// p0 → p1 → ... → pk → p0.
func hasCycle(adj [][]int32, cycle []int32) bool {
	for i, p := range cycle {
		q := cycle[(i+1)%len(cycle)]
		if p < 0 || int(p) >= len(adj) || !slices.Contains(adj[p], q) {
			return false
		}
	}
	return len(cycle) > 1
}

// DeadlockRun is what the deadlock checkers find in a trace of the
// deadlock family, for its metrics.
type DeadlockRun struct {
	// Formed counts the events that put a process on a cycle of the
	// wait-for graph it was not on: deadlocks formed (or grown).
	Formed int
	// Detected counts the formations followed, while their processes
	// were still on a cycle, by a real declaration in their component;
	// Latencies are the times (ns) from each to its first declaration.
	Detected  int
	Latencies []int64
	// Declarations counts the "deadlock" outputs; Phantoms are the
	// indexes of those that were phantoms.
	Declarations int
	Phantoms     []int
	// Bound is the detection bound (ns): the detector's wait plus two
	// longest message delays per process; -1 if the trace states no wait.
	Bound int64
	// Late are the violations of the bound: a process on a cycle longer
	// than Bound with no declaration in its component; LateEdges[i] are
	// the edges of Late[i]'s component.
	Late      []finding
	LateEdges [][]Edge
	// Open is set if the trace ends with a process on a cycle for less
	// than Bound, undeclared: the trace cannot tell.
	Open string
}

// formation is a deadlock formed: when, by which event, and the processes
// it put on a cycle.
type formation struct {
	at    int64
	event int
	nodes []int32
	done  bool
}

// stretches follows, for the detection checkers of both models, the
// processes the wait-for graph holds in a deadlock — on a cycle (AND),
// in a knot (OR): when each one's undeclared stretch began and by which
// event, the formations no declaration has answered yet, and which
// stretches were reported past the bound.
type stretches struct {
	bound     int64
	comp      []int   // each process's component
	in        []bool  // in a deadlock now
	since     []int64 // the start of its current undeclared stretch
	joined    []int   // the event that put it in the deadlock
	reported  []bool  // late, and reported: once per stretch
	open      []*formation
	formed    int
	detected  int
	latencies []int64
}

func newStretches(n int, bound int64) *stretches {
	return &stretches{bound: bound, comp: make([]int, n), in: make([]bool, n),
		since: make([]int64, n), joined: make([]int, n), reported: make([]bool, n)}
}

// late calls report for each process in a deadlock undeclared for longer
// than the bound at now, once per stretch; with component, its
// component's other processes count as reported with it.
func (s *stretches) late(now int64, component bool, report func(p int)) {
	if s.bound < 0 {
		return
	}
	for p := range s.in {
		if !s.in[p] || s.reported[p] || now-s.since[p] <= s.bound {
			continue
		}
		report(p)
		s.reported[p] = true
		for q := range s.in {
			if component && s.in[q] && s.comp[q] == s.comp[p] {
				s.reported[q] = true
			}
		}
	}
}

// declared takes a real declaration by p at now: its component's
// stretches start again, and the formations it answers are detected.
func (s *stretches) declared(p int32, now int64) {
	if !s.in[p] {
		return
	}
	c := s.comp[p]
	for q := range s.in {
		if s.in[q] && s.comp[q] == c {
			s.since[q] = now
		}
	}
	for _, f := range s.open {
		if !f.done && slices.ContainsFunc(f.nodes, func(q int32) bool { return s.in[q] && s.comp[q] == c }) {
			f.done = true
			s.detected++
			s.latencies = append(s.latencies, now-f.at)
		}
	}
}

// changed takes the deadlocks after event i, at now: the processes new
// in one form a deadlock (or grow one).
func (s *stretches) changed(comp []int, in []bool, now int64, i int) {
	was := s.in
	s.comp, s.in = comp, in
	var fresh []int32
	for p := range in {
		if in[p] && !was[p] {
			s.since[p], s.joined[p] = now, i
			fresh = append(fresh, int32(p))
		}
		if !in[p] {
			s.reported[p] = false
		}
	}
	if fresh != nil {
		s.formed++
		s.open = append(s.open, &formation{at: now, event: i, nodes: fresh})
	}
	s.open = slices.DeleteFunc(s.open, func(f *formation) bool {
		return f.done || !slices.ContainsFunc(f.nodes, func(p int32) bool { return in[p] })
	})
}

// ending says, if the trace ends at last with a stretch younger than the
// bound undeclared, that the trace cannot tell ("" otherwise).
func (s *stretches) ending(last int64, what string) string {
	for p := range s.in {
		if s.in[p] && !s.reported[p] && s.bound >= 0 {
			return fmt.Sprintf("the trace ends %s after p%d %s, undeclared, before the bound %s",
				trace.FormatNS(last-s.since[p]), p, what, trace.FormatNS(s.bound))
		}
	}
	return ""
}

// AnalyzeDeadlocks replays a trace of the deadlock family and judges its
// declarations against the wait-for graph.
func AnalyzeDeadlocks(t *trace.Trace) (*DeadlockRun, error) {
	n := t.Header.Nodes
	if n < 1 {
		return nil, fmt.Errorf("the header names %d nodes", n)
	}
	r := &DeadlockRun{Bound: -1}
	outs := make([]*dlOutput, len(t.Events))
	var wait int64
	waitSeen := false
	for i := range t.Events {
		e := &t.Events[i]
		if e.Kind != trace.Output || !slices.Contains(dlKinds, e.Type) {
			continue
		}
		o := &dlOutput{}
		if err := o.parse(e, n); err != nil {
			return nil, fmt.Errorf("event #%d: %w", i, err)
		}
		outs[i] = o
		if e.Type == "detector" {
			wait, waitSeen = max(wait, o.Wait), true
		}
	}
	if waitSeen {
		r.Bound = wait + 2*int64(n)*longestDelay(t)
	}
	past := &dlPast{t: t, hist: make([][]dlLocal, n)}
	{
		h := newWFG(n)
		for i := range t.Events {
			e := &t.Events[i]
			if outs[i] != nil && h.apply(e.Node, e.Type, outs[i]) {
				q := e.Node
				past.hist[q] = append(past.hist[q], dlLocal{idx: i, active: h.active[q], holder: h.holder[q], queue: slices.Clone(h.queue[q])})
			}
		}
	}

	g := newWFG(n)
	st := newStretches(n, r.Bound)
	late := func(p int) {
		adj := g.adjacency()
		r.Late = append(r.Late, finding{
			detail: fmt.Sprintf("p%d has been on a cycle of the wait-for graph since %s (%s) with no deadlock declared in its component, longer than the bound %s",
				p, trace.FormatNS(st.since[p]), describeComponent(adj, st.comp, p), trace.FormatNS(r.Bound)),
			events: []int{st.joined[p]},
		})
		r.LateEdges = append(r.LateEdges, componentEdges(adj, st.comp, p, st.joined[p]))
	}
	lastTime := int64(0)
	for i := range t.Events {
		e := &t.Events[i]
		st.late(e.Time, false, late)
		lastTime = e.Time
		o := outs[i]
		if o == nil {
			continue
		}
		if e.Type == "deadlock" {
			r.Declarations++
			if !dlGenuine(past, outs, g, i) {
				r.Phantoms = append(r.Phantoms, i)
				continue
			}
			st.declared(e.Node, e.Time)
			continue
		}
		if !g.apply(e.Node, e.Type, o) {
			continue
		}
		comp, onCycle := components(g.adjacency())
		st.changed(comp, onCycle, e.Time, i)
	}
	st.late(lastTime, false, late)
	r.Formed, r.Detected, r.Latencies = st.formed, st.detected, st.latencies
	r.Open = st.ending(lastTime, "joined a cycle")
	return r, nil
}

// longestDelay is the trace's longest message delay, from a send to the
// message's first receipt. A message still in flight when the trace ends,
// and not lost, counts as delayed until then: a prefix of a run (the
// explorer judges every one) must not hold a detector to a bound that its
// own messages, still on their way, have already overrun.
func longestDelay(t *trace.Trace) int64 {
	sendAt := map[uint64]int64{}
	arrived := map[uint64]bool{} // received or lost
	var longest, end int64
	for i := range t.Events {
		e := &t.Events[i]
		end = max(end, e.Time)
		switch e.Kind {
		case trace.Send:
			if _, ok := sendAt[e.Msg]; !ok {
				sendAt[e.Msg] = e.Time
			}
		case trace.Recv:
			if s, ok := sendAt[e.Msg]; ok {
				longest = max(longest, e.Time-s)
			}
			arrived[e.Msg] = true
		case trace.Drop:
			arrived[e.Msg] = true
		}
	}
	for m, s := range sendAt {
		if !arrived[m] {
			longest = max(longest, end-s)
		}
	}
	return longest
}

// describeComponent names p's component, and its edges: "p1→p3 p3→p1".
func describeComponent(adj [][]int32, comp []int, p int) string {
	var edges []string
	for v, out := range adj {
		if comp[v] != comp[p] {
			continue
		}
		for _, w := range out {
			if comp[w] == comp[p] {
				edges = append(edges, fmt.Sprintf("p%d→p%d", v, w))
			}
		}
	}
	return strings.Join(edges, " ")
}

// componentEdges are the edges within p's component, each shown by the
// event at, the one that closed the cycle: the structured form of
// describeComponent.
func componentEdges(adj [][]int32, comp []int, p, at int) []Edge {
	var edges []Edge
	for v, out := range adj {
		if comp[v] != comp[p] {
			continue
		}
		for _, w := range out {
			if comp[w] == comp[p] {
				edges = append(edges, Edge{From: int32(v), To: w, At: at})
			}
		}
	}
	return edges
}

// dlLocal is a process's part of the wait-for graph's state after its
// event idx.
type dlLocal struct {
	idx    int
	active int
	holder dlTxn
	queue  []dlTxn
}

// dlPast rebuilds the graph at the consistent cut of an event's causal
// past: each process's state after its last event in the cut.
type dlPast struct {
	t    *trace.Trace
	hist [][]dlLocal // per process, its states, in order
	hb   *trace.HB   // made when first needed
	evs  [][]int     // per process, its events' indexes (hb.History)
}

func (d *dlPast) at(event int) *wfg {
	if d.hb == nil {
		hb, err := trace.NewHB(d.t)
		if err != nil {
			return nil
		}
		d.hb = hb
		for q := range d.hist {
			d.evs = append(d.evs, hb.History(q))
		}
	}
	n := len(d.hist)
	g := newWFG(n)
	for q := range n {
		// The cut holds q's first Entry(event, q) events: the last of
		// them is q's Entry-th event.
		k := int(d.hb.Entry(event, q))
		if k == 0 {
			continue
		}
		last := d.evs[q][k-1]
		h := d.hist[q]
		j, _ := slices.BinarySearchFunc(h, last+1, func(l dlLocal, i int) int { return l.idx - i })
		if j > 0 {
			l := h[j-1]
			g.active[q], g.holder[q], g.queue[q] = l.active, l.holder, l.queue
		}
	}
	return g
}

// dlGenuine judges the declaration at event d: the declaring process is
// on a cycle — the one it names, if any — in the graph g as it is (true
// time), or else in the consistent cut of d's causal past.
func dlGenuine(past *dlPast, outs []*dlOutput, g *wfg, d int) bool {
	p, cycle := past.t.Events[d].Node, outs[d].Cycle
	holds := func(g *wfg) bool {
		adj := g.adjacency()
		if cycle != nil {
			return cycle[0] == p && hasCycle(adj, cycle)
		}
		_, on := components(adj)
		return on[p]
	}
	if holds(g) {
		return true
	}
	if c := past.at(d); c != nil {
		return holds(c)
	}
	return false
}

func checkDeadlockDetected(t *trace.Trace) Result {
	r, err := AnalyzeDeadlocks(t)
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

func checkDeadlockNoPhantom(t *trace.Trace) Result {
	r, err := AnalyzeDeadlocks(t)
	if err != nil {
		return unknown(err)
	}
	var fs []finding
	for _, d := range r.Phantoms {
		e := &t.Events[d]
		fs = append(fs, finding{
			detail: fmt.Sprintf("p%d declared %q at %s, but it was on no such cycle of the wait-for graph then, nor in the causal past of its declaration",
				e.Node, e.Label, trace.FormatNS(e.Time)),
			events: []int{d},
		})
	}
	return verdict(fs)
}
