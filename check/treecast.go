package check

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/cohort-go/cohort/overlay"
	"github.com/cohort-go/cohort/trace"
)

// The application-level multicast checkers read the contract of Scribe
// and End System Multicast (overlay/scribe.go, overlay/esm.go) from a
// trace. Scribe: a "join-group" input {"group"} makes the node a member
// of the group, "leave-group" ends it, a "multicast" input {"group",
// "id"} sends message id to the group, and a "received" output {"group",
// "id"} is its delivery at a member. ESM has one session, the stream of
// its source: "esm-join" and "esm-leave" inputs, "esm-send" {"id"} at
// the source, "esm-received" {"id"} at a member, and "esm-parent"
// {"parent"} outputs whenever a node takes a new parent in the tree (-1:
// none).
//
// The delivery properties are judged against stated bounds: a multicast
// asked at time t must reach every member within D of t, exactly once,
// when the tree is intact around it — no node crashed, left or departed
// within R before t nor before t + D, where R is the algorithm's repair
// bound; a member is one that joined at least J before t and neither
// left nor crashed before t + D. A multicast whose window reaches past
// the end of the trace is not judged. Outside intact windows (a repair
// under way) nothing is demanded but that no node that never joined
// receives.
//
//   - scribe-delivery: Scribe, with D = overlay.ScribeDeliveryBound, R =
//     overlay.ScribeRepairBound, J = overlay.ScribeJoinBound.
//   - esm-delivery: ESM, with overlay.ESMDeliveryBound, ESMRepairBound,
//     ESMJoinBound.
//   - esm-no-cycle: the parent graph, as the "esm-parent" outputs build
//     it (a node that crashes or leaves drops out, with its edge), never
//     has a cycle.
var (
	scribeDelivery = checker{
		name:  "scribe-delivery",
		doc:   "every Scribe member receives every multicast exactly once, within a bound, while the tree is intact and after repair",
		check: func(t *trace.Trace) Result { return checkTreecast(t, scribeCast) },
	}
	esmDelivery = checker{
		name:  "esm-delivery",
		doc:   "every ESM member receives every packet exactly once, within a bound, while the tree is intact and after repair",
		check: func(t *trace.Trace) Result { return checkTreecast(t, esmCast) },
	}
	esmNoCycle = checker{
		name:  "esm-no-cycle",
		doc:   "the ESM parent graph rebuilt from the trace never has a cycle",
		check: checkESMNoCycle,
	}
)

func init() {
	Register(scribeDelivery)
	Register(esmDelivery)
	Register(esmNoCycle)
}

// treecastSpec names a tree multicast's events and bounds.
type treecastSpec struct {
	join, leave, depart, send, recv string
	delivery, repair, joined        time.Duration
}

var (
	scribeCast = treecastSpec{join: "join-group", leave: "leave-group", send: "multicast", recv: "received",
		delivery: overlay.ScribeDeliveryBound, repair: overlay.ScribeRepairBound, joined: overlay.ScribeJoinBound}
	esmCast = treecastSpec{join: "esm-join", leave: "esm-leave", depart: "esm-leave", send: "esm-send", recv: "esm-received",
		delivery: overlay.ESMDeliveryBound, repair: overlay.ESMRepairBound, joined: overlay.ESMJoinBound}
)

// castKey names a message: its group (zero for ESM's one session) and id.
type castKey struct {
	group overlay.GUID
	id    uint64
}

type castFields struct {
	Group overlay.GUID `json:"group"`
	ID    uint64       `json:"id"`
}

// span is a node's membership of a group: from the join input to the
// leave input or the node's stop (-1: not ended).
type span struct {
	node       int32
	from, till int64
	at         int
}

func checkTreecast(t *trace.Trace, s treecastSpec) Result {
	type sent struct {
		key  castKey
		node int32
		at   int64
		ev   int
	}
	type receipt struct {
		at int64
		ev int
	}
	var (
		sends    []sent
		members  = map[overlay.GUID][]*span{}
		open     = map[int32]map[overlay.GUID]*span{}
		got      = map[castKey]map[int32][]receipt{}
		failures []int64 // crashes, leaves and departures
		fs       []finding
	)
	end := func(node int32, g overlay.GUID, at int64) {
		if sp := open[node][g]; sp != nil {
			sp.till = at
			delete(open[node], g)
		}
	}
	for i := range t.Events {
		e := &t.Events[i]
		switch {
		case e.Kind.Stops():
			failures = append(failures, e.Time)
			for g := range open[e.Node] {
				end(e.Node, g, e.Time)
			}
		case e.Kind == trace.Input && (e.Type == s.join || e.Type == s.leave || e.Type == s.send):
			var f castFields
			if len(e.Data) > 0 {
				if err := json.Unmarshal(e.Data, &f); err != nil {
					return Result{Status: Unknown, Detail: fmt.Sprintf("event #%d: %s %s: %v", i, e.Type, e.Data, err), Events: []int{i}}
				}
			}
			switch e.Type {
			case s.send:
				sends = append(sends, sent{castKey{f.Group, f.ID}, e.Node, e.Time, i})
			case s.join:
				if open[e.Node][f.Group] == nil {
					if open[e.Node] == nil {
						open[e.Node] = map[overlay.GUID]*span{}
					}
					sp := &span{node: e.Node, from: e.Time, till: -1, at: i}
					open[e.Node][f.Group] = sp
					members[f.Group] = append(members[f.Group], sp)
				}
			}
			if e.Type == s.leave {
				end(e.Node, f.Group, e.Time)
			}
			if e.Type == s.depart {
				failures = append(failures, e.Time)
			}
		case e.Kind == trace.Output && e.Type == s.recv:
			var f castFields
			if err := json.Unmarshal(e.Data, &f); err != nil {
				return Result{Status: Unknown, Detail: fmt.Sprintf("event #%d: %s %s: %v", i, e.Type, e.Data, err), Events: []int{i}}
			}
			k := castKey{f.Group, f.ID}
			if !slices.ContainsFunc(members[f.Group], func(sp *span) bool { return sp.node == e.Node }) {
				fs = append(fs, finding{fmt.Sprintf("p%d received message %d of group %s, but never joined it", e.Node, f.ID, f.Group), []int{i}})
			}
			if got[k] == nil {
				got[k] = map[int32][]receipt{}
			}
			got[k][e.Node] = append(got[k][e.Node], receipt{e.Time, i})
		}
	}
	if len(t.Events) == 0 {
		return Result{Status: OK}
	}
	last := t.Events[len(t.Events)-1].Time
	D, R, J := int64(s.delivery), int64(s.repair), int64(s.joined)
	for _, m := range sends {
		if m.at+D > last {
			continue // the run ended too early to judge it
		}
		if slices.ContainsFunc(failures, func(f int64) bool { return f >= m.at-R && f <= m.at+D }) {
			continue // a repair under way
		}
		for _, sp := range members[m.key.group] {
			if sp.from > m.at-J || (sp.till >= 0 && sp.till <= m.at+D) {
				continue
			}
			rs := got[m.key][sp.node]
			switch {
			case len(rs) == 0:
				fs = append(fs, finding{fmt.Sprintf("p%d, a member of group %s since %v, never received message %d multicast by p%d at %v, with the tree intact",
					sp.node, m.key.group, time.Duration(sp.from), m.key.id, m.node, time.Duration(m.at)), []int{sp.at, m.ev}})
			case len(rs) > 1:
				fs = append(fs, finding{fmt.Sprintf("p%d received message %d of group %s %d times, with the tree intact",
					sp.node, m.key.id, m.key.group, len(rs)), []int{m.ev, rs[0].ev, rs[1].ev}})
			case rs[0].at > m.at+D:
				fs = append(fs, finding{fmt.Sprintf("p%d received message %d of group %s after %v, beyond the bound %v",
					sp.node, m.key.id, m.key.group, time.Duration(rs[0].at-m.at), s.delivery), []int{m.ev, rs[0].ev}})
			}
		}
	}
	return verdict(fs)
}

// checkESMNoCycle rebuilds the parent graph from the "esm-parent"
// outputs and, after every change, follows the changed node's ancestors:
// a cycle through it would bring the walk back to it.
func checkESMNoCycle(t *trace.Trace) Result {
	parent := map[int32]int32{}
	at := map[int32]int{} // the event that set each edge
	for i := range t.Events {
		e := &t.Events[i]
		switch {
		case e.Kind.Stops() || e.Kind.Begins():
			delete(parent, e.Node)
		case e.Kind == trace.Output && e.Type == "esm-parent":
			var p struct {
				Parent int32 `json:"parent"`
			}
			if err := json.Unmarshal(e.Data, &p); err != nil {
				return Result{Status: Unknown, Detail: fmt.Sprintf("event #%d: esm-parent %s: %v", i, e.Data, err), Events: []int{i}}
			}
			if p.Parent < 0 {
				delete(parent, e.Node)
				continue
			}
			parent[e.Node], at[e.Node] = p.Parent, i
			path := []int32{e.Node}
			evs := []int{i}
			for x, ok := parent[e.Node]; ok; x, ok = parent[x] {
				if x == e.Node {
					return verdict([]finding{{fmt.Sprintf("the parent graph has a cycle: %v", cycleText(path)), evs}})
				}
				if len(path) > len(parent) {
					break // a cycle not through e.Node: found when it formed
				}
				path = append(path, x)
				if j, ok := at[x]; ok && parent[x] >= 0 {
					evs = append(evs, j)
				}
			}
		}
	}
	return Result{Status: OK}
}

func cycleText(path []int32) string {
	s := ""
	for _, x := range path {
		s += fmt.Sprintf("p%d → ", x)
	}
	return s + fmt.Sprintf("p%d", path[0])
}
