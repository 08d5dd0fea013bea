package check

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/cohort-go/cohort/trace"
)

// The mutual exclusion checkers read the mutex family's contract from a
// trace: "acquire" inputs, "enter" and "exit" outputs, and the "waiting"
// ({"for":[ids]}) and "lent" ({"to":id}) outputs from which a wait-for
// graph is built. A crash ends whatever the process was doing: a pending
// request is void, a critical section is over.

var me1 = checker{
	name:  "ME1",
	doc:   "mutual exclusion (safety): at most one process is in the critical section at a time",
	check: checkME1,
}

var me2 = checker{
	name:  "ME2",
	doc:   "no deadlock or starvation (liveness): every request of a process that stays up is granted; a stuck run shows its wait-for cycle",
	check: checkME2,
}

var me3 = checker{
	name:  "ME3",
	doc:   "happened-before order: if one request happened before another, it enters the critical section first",
	check: checkME3,
}

func init() {
	Register(me1)
	Register(me2)
	Register(me3)
}

// request is one Acquire and what became of it.
type request struct {
	node    int32
	acquire int // index of the acquire input
	enter   int // index of the enter output, -1 if never
	exit    int // index of the exit output (or the crash), -1 if never
	void    bool
}

// requests pairs every process's acquires with its enters and exits.
func requests(t *trace.Trace) []*request {
	var all []*request
	open := map[int32]*request{} // a process's current request
	for i := range t.Events {
		e := &t.Events[i]
		r := open[e.Node]
		switch {
		case e.Kind == trace.Input && e.Type == "acquire":
			if r != nil && r.enter < 0 {
				r.void = true // a second acquire before entering: the first is abandoned
			}
			r = &request{node: e.Node, acquire: i, enter: -1, exit: -1}
			open[e.Node] = r
			all = append(all, r)
		case e.Kind == trace.Output && e.Type == "enter":
			if r == nil || r.enter >= 0 {
				// Entering without a request (or twice): keep it for ME1.
				r = &request{node: e.Node, acquire: -1, enter: i, exit: -1}
				open[e.Node] = r
				all = append(all, r)
				continue
			}
			r.enter = i
		case e.Kind == trace.Output && e.Type == "exit":
			if r != nil && r.enter >= 0 && r.exit < 0 {
				r.exit = i
				delete(open, e.Node)
			}
		case e.Kind.Stops():
			if r != nil {
				if r.enter >= 0 {
					r.exit = i
				} else {
					r.void = true
				}
				delete(open, e.Node)
			}
		}
	}
	return all
}

func checkME1(t *trace.Trace) Result {
	var fs []finding
	var inside []*request // in the critical section now
	type step struct {
		at    int
		enter bool
		r     *request
	}
	var steps []step
	for _, r := range requests(t) {
		if r.enter < 0 {
			continue
		}
		steps = append(steps, step{r.enter, true, r})
		if r.exit >= 0 {
			steps = append(steps, step{r.exit, false, r})
		}
	}
	slices.SortFunc(steps, func(a, b step) int { return a.at - b.at })
	for _, s := range steps {
		if !s.enter {
			inside = slices.DeleteFunc(inside, func(r *request) bool { return r == s.r })
			continue
		}
		for _, o := range inside {
			ev := &t.Events[s.at]
			fs = append(fs, finding{
				fmt.Sprintf("p%d entered the critical section at #%d (t=%s) while p%d was in it since #%d",
					ev.Node, s.at, trace.FormatNS(ev.Time), o.node, o.enter),
				[]int{o.enter, s.at},
			})
		}
		inside = append(inside, s.r)
	}
	return verdict(fs)
}

func checkME2(t *trace.Trace) Result {
	var stuck []*request
	for _, r := range requests(t) {
		if r.acquire >= 0 && r.enter < 0 && !r.void {
			stuck = append(stuck, r)
		}
	}
	if len(stuck) == 0 {
		return Result{Status: OK}
	}
	g := waitFor(t)
	flying := inFlight(t)
	for _, r := range stuck {
		if cycle := g.cycleFrom(r.node); cycle != nil {
			var towards []int32
			for _, p := range cycle[:len(cycle)-1] {
				if flying[p] > 0 {
					towards = append(towards, p)
				}
			}
			if len(towards) > 0 {
				// The run was cut off: what is still travelling may break
				// the cycle. A deadlock cannot be told from a slow run.
				return Result{Status: Unknown, Events: []int{r.acquire}, Detail: fmt.Sprintf(
					"p%d's request at #%d was not granted when the run ended, with messages still in flight to %s: run longer to tell a deadlock from a slow run",
					r.node, r.acquire, idList(towards))}
			}
			return deadlock(t, g, cycle, stuck)
		}
	}
	var fs []finding
	for _, r := range stuck {
		e := &t.Events[r.acquire]
		detail := fmt.Sprintf("p%d's request at #%d (t=%s) was never granted", r.node, r.acquire, trace.FormatNS(e.Time))
		events := []int{r.acquire}
		if w, ok := g.waiting[r.node]; ok && len(w.to) > 0 {
			detail += fmt.Sprintf("; it still waits for %s (no wait-for cycle: starvation, a lost message, or a run too short)", idList(w.to))
			events = append(events, w.at)
		}
		fs = append(fs, finding{detail, events})
	}
	return verdict(fs)
}

// waitGraph is who waits for whom at the end of a run: a requesting process
// waits for the processes in its last "waiting" output; a process whose
// permission is lent stands for the process holding it.
type waitGraph struct {
	waiting map[int32]edgeSet // from the last "waiting" output
	lent    map[int32]edgeSet // from the last "lent" output
}

type edgeSet struct {
	to []int32
	at int // the output that says so
}

func waitFor(t *trace.Trace) waitGraph {
	g := waitGraph{waiting: map[int32]edgeSet{}, lent: map[int32]edgeSet{}}
	for i := range t.Events {
		e := &t.Events[i]
		switch {
		case e.Kind == trace.Output && e.Type == "waiting":
			var w struct {
				For []int32 `json:"for"`
			}
			if json.Unmarshal(e.Data, &w) == nil {
				g.waiting[e.Node] = edgeSet{w.For, i}
			}
		case e.Kind == trace.Output && e.Type == "lent":
			var l struct {
				To int32 `json:"to"`
			}
			if json.Unmarshal(e.Data, &l) == nil {
				if l.To < 0 || l.To == e.Node {
					delete(g.lent, e.Node)
				} else {
					g.lent[e.Node] = edgeSet{[]int32{l.To}, i}
				}
			}
		case e.Kind == trace.Output && e.Type == "enter", e.Kind.Stops():
			delete(g.waiting, e.Node)
			if e.Kind.Stops() {
				delete(g.lent, e.Node)
			}
		}
	}
	return g
}

// next lists p's successors in the wait-for graph, in id order. A process
// that waits for itself (for its own vote, in Maekawa's sets) waits for
// whoever holds that vote: the lent edge stands for it.
func (g waitGraph) next(p int32) []int32 {
	var out []int32
	for _, q := range g.waiting[p].to {
		if q != p {
			out = append(out, q)
		}
	}
	out = append(out, g.lent[p].to...)
	slices.Sort(out)
	return slices.Compact(out)
}

// cycleFrom returns a cycle reachable from p (as the sequence of processes
// on it, starting and ending at the same one), or nil.
func (g waitGraph) cycleFrom(p int32) []int32 {
	const (
		white = iota
		grey
		black
	)
	color := map[int32]int{}
	var path []int32
	var found []int32
	var visit func(u int32) bool
	visit = func(u int32) bool {
		color[u] = grey
		path = append(path, u)
		for _, v := range g.next(u) {
			switch color[v] {
			case grey:
				start := slices.Index(path, v)
				found = append(slices.Clone(path[start:]), v)
				return true
			case white:
				if visit(v) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		color[u] = black
		return false
	}
	visit(p)
	return found
}

func deadlock(t *trace.Trace, g waitGraph, cycle []int32, stuck []*request) Result {
	var steps []string
	var events []int
	var edges []Edge
	for i := 0; i+1 < len(cycle); i++ {
		u, v := cycle[i], cycle[i+1]
		at := g.lent[u].at
		if slices.Contains(g.waiting[u].to, v) {
			steps = append(steps, fmt.Sprintf("p%d waits for p%d", u, v))
			at = g.waiting[u].at
		} else {
			steps = append(steps, fmt.Sprintf("p%d's permission is held by p%d", u, v))
		}
		events = append(events, at)
		edges = append(edges, Edge{From: u, To: v, At: at})
	}
	for _, r := range stuck {
		if slices.Contains(cycle, r.node) {
			events = append(events, r.acquire)
		}
	}
	slices.Sort(events)
	return Result{
		Status: Violated,
		Detail: "deadlock: " + strings.Join(steps, ", ") + fmt.Sprintf(" (%d request(s) never granted)", len(stuck)),
		Events: slices.Compact(events),
		Edges:  edges,
	}
}

// inFlight counts, per receiver, the messages sent but neither received
// nor lost when the trace ends (a duplicated message counts twice).
func inFlight(t *trace.Trace) map[int32]int {
	n := map[int32]int{}
	for i := range t.Events {
		e := &t.Events[i]
		switch e.Kind {
		case trace.Send:
			n[e.Peer]++
		case trace.Dup:
			n[e.Peer]++
		case trace.Recv, trace.Drop:
			n[e.Node]--
		}
	}
	return n
}

func idList(ids []int32) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("p%d", id)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func checkME3(t *trace.Trace) Result {
	hb, err := trace.NewHB(t)
	if err != nil {
		return unknown(err)
	}
	var rs []*request
	for _, r := range requests(t) {
		if r.acquire >= 0 && !r.void {
			rs = append(rs, r)
		}
	}
	var fs []finding
	for _, a := range rs {
		for _, b := range rs {
			if a.node == b.node || !hb.Before(a.acquire, b.acquire) || b.enter < 0 {
				continue
			}
			if a.enter < 0 || b.enter < a.enter {
				ea, eb := &t.Events[a.acquire], &t.Events[b.acquire]
				detail := fmt.Sprintf("p%d's request at #%d (t=%s) happened before p%d's at #%d (t=%s), but p%d entered first (#%d)",
					a.node, a.acquire, trace.FormatNS(ea.Time), b.node, b.acquire, trace.FormatNS(eb.Time), b.node, b.enter)
				events := []int{a.acquire, b.acquire, b.enter}
				if a.enter >= 0 {
					events = append(events, a.enter)
				}
				fs = append(fs, finding{detail, events})
			}
		}
	}
	return verdict(fs)
}
