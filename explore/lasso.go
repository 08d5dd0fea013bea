package explore

import (
	"fmt"
	"slices"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/trace"
)

// Liveness in cycles (Config.Cycles, mutual exclusion). A run that never
// ends never reaches a terminal state, where liveness is otherwise judged;
// a state space is finite, so such a run ends in a cycle. The explorer
// keeps the state graph (breadth first, without partial-order reduction)
// and, once it is exhausted, looks for a lasso: a reachable cycle along
// which some process waits throughout — it was given Acquire and has not
// output Enter — while the run is fair.
//
// Fairness is weak fairness on every event (Manna & Pnueli): an event
// (a delivery, a timer, an input) that stays pending and enabled along
// the whole cycle is handled in it. Crashes, losses and duplicates are the
// explorer's choices, never obligations. Events are told apart by content
// (their label: kind, processes, payload, act), as fingerprints do.
//
// The test is per strongly connected component (Tarjan 1972) of the
// states where process p waits: a component with an edge inside it holds
// a fair cycle exactly when every label enabled in all of its states is
// taken by one of its edges (a cycle through every edge of the component
// then passes a state where each other label is disabled), and no cycle of
// a component that fails the test is fair (the label enabled everywhere
// and never taken stays so in every smaller cycle). A state's waiting set
// is part of its fingerprint in this mode, so it is a function of the
// state.
type graph struct {
	index   map[uint64]int32
	fps     []uint64
	succ    [][]edge
	waiting []uint64   // per state: a bit per waiting process
	enabled [][]uint64 // per state: the labels of its fair events
}

type edge struct {
	to    int32
	label uint64
}

// add records state i (trail index) with its fingerprint.
func (g *graph) node(fp uint64, waiting uint64) int32 {
	i := int32(len(g.fps))
	g.index[fp] = i
	g.fps = append(g.fps, fp)
	g.succ = append(g.succ, nil)
	g.waiting = append(g.waiting, waiting)
	g.enabled = append(g.enabled, nil)
	return i
}

func (g *graph) bytes() int {
	n := 48*len(g.index) + 8*cap(g.fps) + 24*cap(g.succ) + 8*cap(g.waiting) + 24*cap(g.enabled)
	for i := range g.succ {
		n += 16*cap(g.succ[i]) + 8*cap(g.enabled[i])
	}
	return n
}

// fair reports whether the step is an obligation under weak fairness.
func (r *run) fair(ch choice) bool {
	if ch.act != Fire {
		return false
	}
	return r.q.ev(r.q.find(ch.seq)).class != crashEvent
}

// track updates the waiting set from the trace events since the last
// call: an Acquire input makes its process wait, an Enter output ends it.
func (r *run) track() {
	for _, ev := range r.rec.since(r.tracked) {
		switch {
		case ev.Kind == trace.Input && ev.Type == "acquire":
			r.waiting |= 1 << uint(ev.Node)
		case ev.Kind == trace.Output && ev.Type == "enter":
			r.waiting &^= 1 << uint(ev.Node)
		}
	}
	r.tracked = r.rec.Len()
}

// lasso looks for a fair cycle in which a process waits throughout; it
// returns the process, the state the cycle starts at, and the cycle's
// states (from there back to it).
func (g *graph) lasso(nodes int) (proc.ID, []int32, bool) {
	n := len(g.fps)
	for p := 0; p < nodes; p++ {
		bit := uint64(1) << uint(p)
		in := func(v int32) bool { return g.waiting[v]&bit != 0 }
		for _, comp := range g.sccs(in) {
			member := make(map[int32]bool, len(comp))
			for _, v := range comp {
				member[v] = true
			}
			taken := map[uint64]bool{}
			inner := false
			for _, v := range comp {
				for _, e := range g.succ[v] {
					if member[e.to] {
						inner = true
						taken[e.label] = true
					}
				}
			}
			if !inner {
				continue
			}
			// The labels enabled in every state of the component.
			always := slices.Clone(g.enabled[comp[0]])
			for _, v := range comp[1:] {
				always = slices.DeleteFunc(always, func(l uint64) bool { return !slices.Contains(g.enabled[v], l) })
			}
			if slices.ContainsFunc(always, func(l uint64) bool { return !taken[l] }) {
				continue // every cycle here starves an event pending throughout: unfair
			}
			start := slices.Min(comp) // the shallowest: BFS numbers states by depth
			return proc.ID(p), g.cycle(start, member, comp), true
		}
	}
	_ = n
	return 0, nil, false
}

// cycle returns a cycle from start back to it, within member, through every
// state of the component (so that it is fair: it takes each edge label the
// component's test found taken, and passes every state).
func (g *graph) cycle(start int32, member map[int32]bool, comp []int32) []int32 {
	path := []int32{start}
	at := start
	visit := func(to int32) { // a shortest path within the component
		prev := map[int32]int32{at: -1}
		queue := []int32{at}
		for len(queue) > 0 {
			v := queue[0]
			queue = queue[1:]
			if v == to && v != at {
				break
			}
			for _, e := range g.succ[v] {
				if _, ok := prev[e.to]; !ok && member[e.to] {
					prev[e.to] = v
					queue = append(queue, e.to)
				}
			}
		}
		var rev []int32
		for v := to; v != at; v = prev[v] {
			rev = append(rev, v)
		}
		slices.Reverse(rev)
		path = append(path, rev...)
		at = to
	}
	for _, v := range comp {
		if v != at && !slices.Contains(path, v) {
			visit(v)
		}
	}
	if at != start {
		visit(start)
	} else {
		// A cycle back to start: take any edge inside and return.
		for _, e := range g.succ[start] {
			if member[e.to] {
				if e.to == start {
					path = append(path, start)
				} else {
					at = e.to
					path = append(path, e.to)
					visit(start)
				}
				break
			}
		}
	}
	return path
}

// sccs returns the strongly connected components of the states in (Tarjan
// 1972).
func (g *graph) sccs(in func(int32) bool) [][]int32 {
	n := int32(len(g.fps))
	index := make([]int32, n)
	low := make([]int32, n)
	on := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int32
	var out [][]int32
	next := int32(0)
	var strong func(v int32)
	strong = func(v int32) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		on[v] = true
		for _, e := range g.succ[v] {
			w := e.to
			if !in(w) {
				continue
			}
			if index[w] < 0 {
				strong(w)
				low[v] = min(low[v], low[w])
			} else if on[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var comp []int32
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				on[w] = false
				comp = append(comp, w)
				if w == v {
					break
				}
			}
			out = append(out, comp)
		}
	}
	for v := int32(0); v < n; v++ {
		if in(v) && index[v] < 0 {
			strong(v)
		}
	}
	return out
}

// judgeCycles reports a fair cycle that starves a waiting process as a
// violation of ME2, with a schedule that reaches the cycle and goes round
// it once.
func (e *explorer) judgeCycles(tr *trail) error {
	p, cyc, ok := e.g.lasso(e.cfg.Nodes)
	if !ok {
		return nil
	}
	r, path, err := e.replayTrail(tr, cyc[0])
	if err != nil {
		return err
	}
	prefix := len(path)
	for _, to := range cyc[1:] {
		var found bool
		for _, ch := range r.choices(nil) {
			f, err := r.fork(e.cp)
			if err != nil {
				if f, err = e.replay(path); err != nil {
					return err
				}
			}
			if err := f.apply(ch); err != nil {
				return err
			}
			f.track()
			if f.fingerprint() == e.g.fps[to] {
				r, found = f, true
				path = append(path, ch)
				break
			}
		}
		if !found {
			return fmt.Errorf("liveness: no step from the cycle's state to the next (an unstable fingerprint)")
		}
	}
	sched, full, err := e.schedule(path)
	if err != nil {
		return err
	}
	res := check.Result{Name: "ME2", Status: check.Violated,
		Detail: fmt.Sprintf("%s requested entry and never enters: after %d steps a fair cycle of %d steps repeats forever, %s waiting throughout (weak fairness: every event pending along the cycle is handled in it)",
			p, prefix, len(path)-prefix, p)}
	e.res.Violation = &Violation{Check: res, Schedule: sched, Trace: full, Cycle: len(path) - prefix}
	return nil
}
