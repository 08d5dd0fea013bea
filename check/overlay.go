package check

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/cohort-go/cohort/overlay"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/trace"
)

// The overlay checker reads the overlay family's contract from a trace:
// a "lookup" input {"key"} asks the node to route the key; a "delivered"
// output {"key", "hops"} says the node took delivery of it. Nodes'
// identifiers are overlay.NodeID of their addresses; a node is present
// from its start or join until its crash or leave.
//
//   - overlay-lookup: every delivery is at the present node numerically
//     closest to the key (overlay.Home over the nodes present at that
//     moment: where Rowstron & Druschel's Pastry, and any such overlay,
//     keeps the key's object); and every lookup is delivered. A lookup
//     never delivered while messages were still in flight at the end
//     gives unknown (the run stopped early); with none in flight, it was
//     lost: violated.
var overlayLookup = checker{
	name:  "overlay-lookup",
	doc:   "every lookup is delivered, at the present node numerically closest to its key",
	check: checkOverlayLookup,
}

func init() { Register(overlayLookup) }

func checkOverlayLookup(t *trace.Trace) Result {
	present := map[int32]bool{}
	asked := map[overlay.GUID][]int{} // key → the lookup inputs not yet delivered
	inFlight := map[uint64]bool{}
	var fs []finding
	for i := range t.Events {
		e := &t.Events[i]
		switch {
		case e.Kind.Begins():
			present[e.Node] = true
		case e.Kind.Stops():
			delete(present, e.Node)
		case e.Kind == trace.Send:
			inFlight[e.Msg] = true
		case e.Kind == trace.Recv || e.Kind == trace.Drop:
			delete(inFlight, e.Msg)
		case e.Kind == trace.Input && e.Type == "lookup":
			var l overlay.Lookup
			if err := json.Unmarshal(e.Data, &l); err != nil {
				return Result{Status: Unknown, Detail: fmt.Sprintf("event #%d: lookup %s: %v", i, e.Data, err), Events: []int{i}}
			}
			asked[l.Key] = append(asked[l.Key], i)
		case e.Kind == trace.Output && e.Type == "delivered":
			var d overlay.Delivered
			if err := json.Unmarshal(e.Data, &d); err != nil {
				return Result{Status: Unknown, Detail: fmt.Sprintf("event #%d: delivered %s: %v", i, e.Data, err), Events: []int{i}}
			}
			cite := []int{i}
			if q := asked[d.Key]; len(q) > 0 {
				cite = []int{q[0], i}
				asked[d.Key] = q[1:]
			} else {
				fs = append(fs, finding{fmt.Sprintf("p%d delivered key %s, which no lookup asked for (or not that often)", e.Node, d.Key), cite})
				continue
			}
			ids := make([]proc.ID, 0, len(present))
			for n := range present {
				ids = append(ids, proc.ID(n))
			}
			if home := overlay.Home(d.Key, ids); home != proc.ID(e.Node) {
				fs = append(fs, finding{fmt.Sprintf("p%d took delivery of key %s after %d hops, but p%d (nodeId %s) is numerically closer than p%d (nodeId %s)",
					e.Node, d.Key, d.Hops, home, overlay.NodeID(home), e.Node, overlay.NodeID(proc.ID(e.Node))), cite})
			}
		}
	}
	var lost []int
	for _, q := range asked {
		lost = append(lost, q...)
	}
	if len(fs) == 0 && len(lost) > 0 && len(inFlight) > 0 {
		return Result{Status: Unknown, Detail: fmt.Sprintf("%d lookups undelivered, %d messages still in flight at the end", len(lost), len(inFlight))}
	}
	slices.Sort(lost)
	for _, i := range lost {
		e := &t.Events[i]
		fs = append(fs, finding{fmt.Sprintf("the lookup at p%d (%s) was never delivered", e.Node, e.Data), []int{i}})
	}
	return verdict(fs)
}
