package check

import (
	"encoding/json"
	"fmt"

	"github.com/cohort-go/cohort/logical"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/trace"
)

// clockCondition is the clock condition of Lamport 1978, a → b ⇒ C(a) <
// C(b), for every timestamp a trace carries:
//
//   - the recorded Lamport timestamps;
//   - the recorded vector timestamps, if any: V(a) < V(b) in the vector
//     order, and, for the strong condition a → b ⇔ V(a) < V(b), each
//     recorded vector equals the one the trace's structure implies
//     (trace.HB.VC);
//   - the algorithm's own timestamps, reported by proc.Stamp outputs. A
//     stamp output stamps the last send or receive of the same process
//     before it; for stamped events a → b, the stamps must rise.
//
// The recorded timestamps are checked on the edges of the happened-before
// DAG (consecutive events of a process; a send and its receipt), which by
// transitivity covers every pair. Stamps mark only some events, so every
// pair of stamped events is compared: O(stamps²), fine for the small runs
// traces are kept for. A violation cites the two events (and the stamp
// outputs) with their timestamps: "m3: sent at C=60 by p2, received at
// C=56 by p1". A trace that trace.NewHB rejects gives Unknown.
var clockCondition = checker{
	name:  "clock-condition",
	doc:   "Lamport, vector and algorithm timestamps respect happened-before: a → b implies C(a) < C(b)",
	check: checkClocks,
}

func init() { Register(clockCondition) }

func checkClocks(t *trace.Trace) Result {
	h, err := trace.NewHB(t)
	if err != nil {
		return unknown(err)
	}
	preds := dag(h, len(t.Events))
	var fs []finding
	fs = append(fs, lamportFindings(t, preds)...)
	fs = append(fs, vectorFindings(t, h, preds)...)
	fs = append(fs, stampFindings(t, h)...)
	return verdict(fs)
}

// dag returns, for each process event, its immediate predecessors in the
// happened-before DAG: the previous event of its process and, for a receive,
// its send (once, if they are the same event).
func dag(h *trace.HB, events int) [][]int {
	preds := make([][]int, events)
	for p := range h.Nodes() {
		hist := h.History(p)
		for k, i := range hist {
			if k > 0 {
				preds[i] = append(preds[i], hist[k-1])
			}
			if s, ok := h.Send(i); ok && (k == 0 || s != hist[k-1]) {
				preds[i] = append(preds[i], s)
			}
		}
	}
	return preds
}

func lamportFindings(t *trace.Trace, preds [][]int) []finding {
	var fs []finding
	for b, ps := range preds {
		lb := t.Events[b].Lamport
		for _, a := range ps {
			if la := t.Events[a].Lamport; la >= lb {
				fs = append(fs, finding{
					pairDetail(t, a, b, fmt.Sprintf("L=%d", la), fmt.Sprintf("L=%d", lb)),
					[]int{a, b},
				})
			}
		}
	}
	return fs
}

// vectorFindings checks the recorded vector timestamps. At an event whose
// incoming edges are out of order it reports those; only at an event where
// they are in order does it report a vector that differs from the one the
// structure implies, so one bad vector is one finding.
func vectorFindings(t *trace.Trace, h *trace.HB, preds [][]int) []finding {
	var fs []finding
	for b, ps := range preds {
		vb := t.Events[b].VC
		if vb.IsZero() {
			continue
		}
		ordered := true
		for _, a := range ps {
			va := t.Events[a].VC
			if !va.IsZero() && va.Compare(vb) != logical.Before {
				ordered = false
				fs = append(fs, finding{
					pairDetail(t, a, b, "VC="+va.String(), "VC="+vb.String()),
					[]int{a, b},
				})
			}
		}
		// (A recorded vector may be shorter than the trace's processes: in
		// a trace they join, an absent entry is 0.)
		if want := h.Clock(b); ordered && vb.Compare(want) != logical.Equal {
			implied := want.String() // by process, if sparse
			if !want.Sparse() {
				implied = trace.FormatVC(h.VC(b)) // an entry per process
			}
			fs = append(fs, finding{
				fmt.Sprintf("#%d (p%d %s): recorded VC=%s, happened-before implies VC=%s",
					b, t.Events[b].Node, what(&t.Events[b]), vb, implied),
				[]int{b},
			})
		}
	}
	return fs
}

// stamp is an algorithm's timestamp C for a send or receive event, reported
// by the stamp output at index output.
type stamp struct {
	event, output int
	c             uint64
}

func stampFindings(t *trace.Trace, h *trace.HB) []finding {
	var fs []finding
	var stamps []stamp
	last := make([]int, h.Nodes()) // each process's latest send or receive
	for p := range last {
		last[p] = -1
	}
	for i := range t.Events {
		e := &t.Events[i]
		switch {
		case e.Kind == trace.Send || e.Kind == trace.Recv:
			last[e.Node] = i
		case e.Kind == trace.Output && e.Type == (proc.Stamp{}).Kind():
			var s proc.Stamp
			if err := json.Unmarshal(e.Data, &s); err != nil {
				fs = append(fs, finding{fmt.Sprintf("#%d: p%d stamp output %s: %v", i, e.Node, e.Data, err), []int{i}})
				continue
			}
			if last[e.Node] < 0 {
				fs = append(fs, finding{fmt.Sprintf("#%d: p%d stamps C=%d with no send or receive before it", i, e.Node, s.C), []int{i}})
				continue
			}
			stamps = append(stamps, stamp{last[e.Node], i, s.C})
		}
	}
	for _, b := range stamps {
		for _, a := range stamps {
			if a.c >= b.c && h.Before(a.event, b.event) {
				fs = append(fs, finding{
					pairDetail(t, a.event, b.event, fmt.Sprintf("C=%d", a.c), fmt.Sprintf("C=%d", b.c)),
					[]int{a.event, a.output, b.event, b.output},
				})
			}
		}
	}
	return fs
}

// pairDetail says that event a, timestamped ta, happened before event b,
// timestamped tb, in the words that fit the pair.
func pairDetail(t *trace.Trace, a, b int, ta, tb string) string {
	ea, eb := &t.Events[a], &t.Events[b]
	switch {
	case ea.Kind == trace.Send && eb.Kind == trace.Recv && ea.Msg == eb.Msg:
		return fmt.Sprintf("%s: sent at %s by p%d, received at %s by p%d", msgName(ea.Msg), ta, ea.Node, tb, eb.Node)
	case ea.Node == eb.Node:
		return fmt.Sprintf("p%d: %s at #%d (%s), then %s at #%d (%s)", ea.Node, ta, a, what(ea), tb, b, what(eb))
	}
	return fmt.Sprintf("#%d (p%d %s) at %s happened before #%d (p%d %s) at %s", a, ea.Node, what(ea), ta, b, eb.Node, what(eb), tb)
}

// what names an event briefly: "send m3", "recv m3", "timer".
func what(e *trace.Event) string {
	if e.Msg != 0 {
		return e.Kind.String() + " " + msgName(e.Msg)
	}
	return e.Kind.String()
}
