package check

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/cohort-go/cohort/clock"
	"github.com/cohort-go/cohort/logical"
	"github.com/cohort-go/cohort/trace"
)

// Checkers of clocks that follow physical time: the software clocks of the
// synchronization algorithms (Tanenbaum & van Steen §6.1) and hybrid
// logical clocks.

// hlcCheck judges hybrid logical clocks by the timestamps processes report
// with logical.HLCTime outputs. An "hlc" output stamps the last send or
// receive of the same process before it, as a proc.Stamp does. Two
// properties:
//
//   - the clock condition, lexicographically: a → b ⇒ (l, c)(a) < (l, c)(b)
//     for stamped events a and b;
//   - l is never ahead of physical time: l(b) is at most the largest
//     physical clock reading (the trace's local time) among the events of
//     b's causal past, b included. Hence l − pt ≤ ε, if ε bounds how far
//     apart the processes' clocks are.
//
// For each stamped event b it compares, per process q, only the latest
// stamped event of q that happened before b (the earlier ones are covered
// by q's own order): O(stamps × nodes). A trace that trace.NewHB rejects
// gives Unknown.
var hlcCheck = checker{
	name:  "hlc",
	doc:   "hybrid timestamps (l, c) respect happened-before, and l is never ahead of every physical clock in the event's causal past",
	check: checkHLC,
}

// monotonicClock judges the software clocks of clock synchronization by
// their clock.Reading outputs: a process's readings never decrease — a
// clock that is ahead is slewed, never set back (Tanenbaum & van Steen
// §6.1). A crash or recovery starts the process's clock afresh.
var monotonicClock = checker{
	name:  "monotonic-clock",
	doc:   "a process's clock readings never decrease (a clock ahead is slowed down, not set back)",
	check: checkMonotonic,
}

func init() {
	Register(hlcCheck)
	Register(monotonicClock)
}

// hlcStamp is the hybrid timestamp of event, reported by output.
type hlcStamp struct {
	event, output int
	pos           int // the event's position in its process's history
	ts            logical.HLCTime
}

func checkHLC(t *trace.Trace) Result {
	h, err := trace.NewHB(t)
	if err != nil {
		return unknown(err)
	}
	var fs []finding
	n := h.Nodes()
	hist := make([][]int, n)
	pos := make([]int, len(t.Events)) // position of each process event in its history
	for p := range n {
		hist[p] = h.History(p)
		for k, i := range hist[p] {
			pos[i] = k
		}
	}
	byNode := make([][]hlcStamp, n) // in history order
	last := make([]int, n)          // each process's latest send or receive
	for p := range last {
		last[p] = -1
	}
	for i := range t.Events {
		e := &t.Events[i]
		switch {
		case e.Kind == trace.Send || e.Kind == trace.Recv:
			last[e.Node] = i
		case e.Kind == trace.Output && e.Type == (logical.HLCTime{}).Kind():
			var ts logical.HLCTime
			if err := json.Unmarshal(e.Data, &ts); err != nil {
				fs = append(fs, finding{fmt.Sprintf("#%d: p%d hlc output %s: %v", i, e.Node, e.Data, err), []int{i}})
				continue
			}
			a := last[e.Node]
			if a < 0 {
				fs = append(fs, finding{fmt.Sprintf("#%d: p%d stamps %v with no send or receive before it", i, e.Node, ts), []int{i}})
				continue
			}
			s := hlcStamp{event: a, output: i, pos: pos[a], ts: ts}
			if k := len(byNode[e.Node]); k > 0 && byNode[e.Node][k-1].event == a {
				byNode[e.Node][k-1] = s // a second stamp of one event: the last counts
			} else {
				byNode[e.Node] = append(byNode[e.Node], s)
			}
		}
	}
	for p := range n {
		for _, b := range byNode[p] {
			// The clock condition, against the latest stamped predecessor
			// of each process.
			for q := range n {
				if len(byNode[q]) == 0 {
					continue
				}
				seen := int(h.Entry(b.event, q)) // events of q in b's past, b included
				if q == p {
					seen = b.pos // strictly before b
				}
				k, _ := slices.BinarySearchFunc(byNode[q], seen, func(s hlcStamp, x int) int { return s.pos - x })
				if k == 0 {
					continue
				}
				a := byNode[q][k-1]
				if !a.ts.Less(b.ts) {
					fs = append(fs, finding{
						pairDetail(t, a.event, b.event, "(l,c)="+a.ts.String(), "(l,c)="+b.ts.String()),
						[]int{a.event, a.output, b.event, b.output},
					})
				}
			}
			// l within the physical clocks of the causal past.
			top := -1
			for q, c := range h.Clock(b.event).Entries() {
				g := hist[q][c-1]
				if top < 0 || t.Events[g].Local > t.Events[top].Local {
					top = g
				}
			}
			if pt := time.Duration(t.Events[top].Local); b.ts.L > pt {
				eb := &t.Events[b.event]
				fs = append(fs, finding{
					fmt.Sprintf("#%d (p%d %s): l=%v is ahead of every physical clock in its causal past (the latest reads %v, at #%d)",
						b.event, eb.Node, what(eb), b.ts.L, pt, top),
					[]int{top, b.event, b.output},
				})
			}
		}
	}
	return verdict(fs)
}

func checkMonotonic(t *trace.Trace) Result {
	var fs []finding
	n := t.Header.Nodes
	prev := make([]int, max(n, 0)) // each process's previous reading: its index, or -1
	clocks := make([]time.Duration, len(prev))
	for p := range prev {
		prev[p] = -1
	}
	for i := range t.Events {
		e := &t.Events[i]
		if e.Node < 0 || int(e.Node) >= n {
			return unknown(fmt.Errorf("%w: event %d: node %d out of range 0..%d", trace.ErrFormat, i, e.Node, n-1))
		}
		switch {
		case e.Kind.Stops() || e.Kind == trace.Recover || e.Kind == trace.Join:
			prev[e.Node] = -1
		case e.Kind == trace.Output && e.Type == (clock.Reading{}).Kind():
			var r clock.Reading
			if err := json.Unmarshal(e.Data, &r); err != nil {
				fs = append(fs, finding{fmt.Sprintf("#%d: p%d reading %s: %v", i, e.Node, e.Data, err), []int{i}})
				continue
			}
			if a := prev[e.Node]; a >= 0 && r.Clock < clocks[e.Node] {
				fs = append(fs, finding{
					fmt.Sprintf("p%d: the clock read %v at #%d, then %v at #%d: it went back %v",
						e.Node, clocks[e.Node], a, r.Clock, i, clocks[e.Node]-r.Clock),
					[]int{a, i},
				})
			}
			prev[e.Node], clocks[e.Node] = i, r.Clock
		}
	}
	return verdict(fs)
}
