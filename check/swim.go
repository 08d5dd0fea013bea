package check

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/cohort-go/cohort/trace"
)

// The SWIM checkers read the membership outputs of the epidemic family's
// swim algorithm from a trace: "suspect" {"member", "inc", "from"}, "dead"
// {"member", "inc", "left"} and "alive" {"member", "inc"}, each at the
// node that came to hold that fact; and its "period" timer, whose spacing
// at a healthy node is the protocol period T.
//
//   - swim-completeness (Das et al.'s strong completeness): every member
//     that crashed and stayed down is eventually held dead by every live
//     member. Judged for each pair (crashed m, observer o live at the
//     end): o's last verdict on m since o's last start must be dead (a
//     verdict from before the crash counts: o holds m dead; that it was
//     premature is swim-accuracy's business), if the run went on for at
//     least CompletenessBound(n, T) after both the crash and that start;
//     a pair without the verdict and with less time left is unknown. The bound
//     is the round-robin worst case of a first probe by o itself, 2n−1
//     periods (Das et al. §4.3), plus the longest suspicion timeout of the
//     default settings (Lifeguard's 6·4·max(1, log₁₀ n) periods) and ten
//     periods of slack for the local health multiplier.
//   - swim-accuracy: no member that was up all along is declared dead. A
//     "dead" output (not a goodbye) about a member m that was up at that
//     moment and had been since the run's start is a false positive. It
//     is a violation if nothing in the trace could justify it: no message
//     to or from m, or to or from a member that suspected m first by its
//     own probe (an accuser), was lost or was handled more than T/2 (the
//     default probe timeout) after it was sent, before the declaration. A
//     paused or slowed member handles what arrives late, so its pauses
//     show as such deliveries; a silent pause shows nothing, but a member
//     that receives nothing is asked nothing either. With such evidence, the false positive is unknown — SWIM's accuracy is only
//     probabilistic under loss, delay and pauses — and the detail counts
//     the false positives and cites the evidence.
var (
	swimCompleteness = checker{
		name:  "swim-completeness",
		doc:   "every SWIM member that crashed and stayed down is held dead by every live member, within a bound of the run's end",
		check: checkSwimCompleteness,
	}
	swimAccuracy = checker{
		name:  "swim-accuracy",
		doc:   "no SWIM member that was up all along is declared dead without loss, delay or a pause that could justify it",
		check: checkSwimAccuracy,
	}
)

func init() {
	Register(swimCompleteness)
	Register(swimAccuracy)
}

// CompletenessBound is how long swim-completeness gives the members of a
// group of n with protocol period T to hold a crashed member dead:
// (2n−1)·T + 24·max(1, log₁₀ n)·T + 10·T.
func CompletenessBound(n int, T time.Duration) time.Duration {
	return time.Duration(float64(2*n-1)*float64(T) + 24*max(1, math.Log10(float64(n)))*float64(T) + 10*float64(T))
}

type swimFact struct {
	Member int32  `json:"member"`
	Inc    uint32 `json:"inc"`
	From   int32  `json:"from"`
	Left   bool   `json:"left"`
}

// swimPeriod estimates the protocol period: the median gap between
// successive "period" timers of a node. 0 if there are none.
func swimPeriod(t *trace.Trace) time.Duration {
	last := map[int32]int64{}
	var gaps []int64
	for i := range t.Events {
		e := &t.Events[i]
		if e.Kind.Begins() || e.Kind.Stops() {
			delete(last, e.Node)
		}
		if e.Kind != trace.Timer || e.Type != "period" {
			continue
		}
		if l, ok := last[e.Node]; ok {
			gaps = append(gaps, e.Time-l)
		}
		last[e.Node] = e.Time
	}
	if len(gaps) == 0 {
		return 0
	}
	slices.Sort(gaps)
	return time.Duration(gaps[len(gaps)/2])
}

func checkSwimCompleteness(t *trace.Trace) Result {
	T := swimPeriod(t)
	if T <= 0 {
		return Result{Status: Unknown, Detail: "no protocol period in the trace (no \"period\" timer)"}
	}
	n := t.Header.Nodes
	bound := int64(CompletenessBound(n, T))
	// Lifecycles: each node's last begin and last stop.
	lastBegin, lastStop := map[int32]int{}, map[int32]int{}
	for i := range t.Events {
		e := &t.Events[i]
		switch {
		case e.Kind.Begins():
			lastBegin[e.Node] = i
		case e.Kind.Stops():
			lastStop[e.Node] = i
		}
	}
	var crashed, live []int32
	for node, s := range lastStop {
		b, ok := lastBegin[node]
		if t.Events[s].Kind == trace.Crash && (!ok || b < s) {
			crashed = append(crashed, node)
		}
	}
	for node, b := range lastBegin {
		if s, ok := lastStop[node]; !ok || s < b {
			live = append(live, node)
		}
	}
	slices.Sort(crashed)
	slices.Sort(live)
	if len(crashed) == 0 {
		return Result{Status: OK}
	}
	end := t.Events[len(t.Events)-1].Time
	// verdict[o][m]: the index of o's last dead or alive output about m.
	type key struct{ o, m int32 }
	last := map[key]int{}
	for i := range t.Events {
		e := &t.Events[i]
		if e.Kind != trace.Output || (e.Type != "dead" && e.Type != "alive") {
			continue
		}
		var f swimFact
		if json.Unmarshal(e.Data, &f) != nil {
			continue
		}
		last[key{e.Node, f.Member}] = i
	}
	var fs []finding
	undecided := 0
	for _, m := range crashed {
		c := lastStop[m]
		for _, o := range live {
			from := max(c, lastBegin[o])
			v, ok := last[key{o, m}]
			if ok && v > lastBegin[o] && t.Events[v].Type == "dead" {
				continue // held dead, since the crash or (wrongly) before
			}
			if end-t.Events[from].Time < bound {
				undecided++
				continue
			}
			ev := []int{c, lastBegin[o]}
			if ok {
				ev = append(ev, v)
			}
			fs = append(fs, finding{fmt.Sprintf("p%d crashed at #%d and stayed down, but p%d does not hold it dead %s later (bound %s, T = %s)",
				m, c, o, trace.FormatNS(end-t.Events[from].Time), trace.FormatNS(bound), T), ev})
		}
	}
	if len(fs) == 0 && undecided > 0 {
		return Result{Status: Unknown, Detail: fmt.Sprintf("%d (crashed, live) pairs without a verdict yet, with less than the bound %s left", undecided, trace.FormatNS(bound))}
	}
	return verdict(fs)
}

func checkSwimAccuracy(t *trace.Trace) Result {
	T := swimPeriod(t)
	if T <= 0 {
		return Result{Status: Unknown, Detail: "no protocol period in the trace (no \"period\" timer)"}
	}
	// Evidence per node: the first event (lost message, slow message,
	// long silence) that could justify suspecting it, by index.
	evidence := map[int32][]int{}
	note := func(node int32, i int) { evidence[node] = append(evidence[node], i) }
	sent := map[uint64]int64{}
	up := map[int32]bool{}
	since := map[int32]int{} // node → the event that began it, if it has been up since the run's start
	gone := map[int32]bool{} // node stopped (crash, leave) at some time
	accusers := map[int32][]int32{}
	type fp struct{ m, at int }
	var fps []fp
	slow := int64(T / 2)
	for i := range t.Events {
		e := &t.Events[i]
		switch e.Kind {
		case trace.Drop:
			note(e.Node, i)
			note(e.Peer, i)
		case trace.Send:
			sent[e.Msg] = e.Time
		case trace.Recv:
			if s, ok := sent[e.Msg]; ok && e.Time-s > slow {
				note(e.Node, i)
				note(e.Peer, i)
			}
		}
		if !e.Kind.IsProcess() {
			continue
		}
		switch {
		case e.Kind.Begins():
			up[e.Node] = true
			if _, ok := since[e.Node]; !ok && !gone[e.Node] && e.Kind == trace.Start {
				since[e.Node] = i
			}
		case e.Kind.Stops():
			up[e.Node] = false
			gone[e.Node] = true
			delete(since, e.Node)
		case e.Kind == trace.Output && (e.Type == "suspect" || e.Type == "dead"):
			var f swimFact
			if json.Unmarshal(e.Data, &f) != nil {
				continue
			}
			if e.Type == "suspect" {
				if f.From == e.Node && !slices.Contains(accusers[f.Member], e.Node) {
					accusers[f.Member] = append(accusers[f.Member], e.Node)
				}
				continue
			}
			if _, ok := since[f.Member]; ok && up[f.Member] && !f.Left {
				fps = append(fps, fp{int(f.Member), i})
			}
		}
	}
	if len(fps) == 0 {
		return Result{Status: OK}
	}
	members := map[int]bool{}
	var fs []finding
	var justified []int
	for _, x := range fps {
		members[x.m] = true
		var why []int
		for _, node := range append([]int32{int32(x.m)}, accusers[int32(x.m)]...) {
			for _, ev := range evidence[node] {
				if ev < x.at {
					why = append(why, ev)
					break
				}
			}
		}
		if len(why) > 0 {
			justified = append(justified, append([]int{x.at}, why...)...)
			continue
		}
		fs = append(fs, finding{fmt.Sprintf("p%d, up since the start (#%d), was declared dead at #%d by p%d, with no loss, delay or pause at it or its accusers %v before",
			x.m, since[int32(x.m)], x.at, t.Events[x.at].Node, accusers[int32(x.m)]), []int{since[int32(x.m)], x.at}})
	}
	if len(fs) > 0 {
		r := verdict(fs)
		r.Detail = fmt.Sprintf("%d false positives (%d live members declared dead): %s", len(fps), len(members), r.Detail)
		return r
	}
	slices.Sort(justified)
	return Result{Status: Unknown, Events: slices.Compact(justified),
		Detail: fmt.Sprintf("%d false positives (%d live members declared dead), each after loss, delay or a pause at the member or its accusers, which SWIM's probabilistic accuracy allows", len(fps), len(members))}
}
