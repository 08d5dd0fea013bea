package check

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/cohort-go/cohort/overlay"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/trace"
)

// The overlay checkers read the overlay family's contract from a trace:
// a "lookup" input {"key"} asks the node to route the key; a "delivered"
// output {"key", "hops"} says the node took delivery of it; "put"
// {"key", "value"} and "get" {"key"} inputs are the DHT's requests,
// "stored" {"key", "replicas"} and "got" {"key", "value", "found"}
// outputs their answers at the key's home; a "tables" output is a node's
// leaf set and routing table. A route's hops are "route" messages whose
// label names the key ("dht-route" on a live cluster: the route with its
// request's origin). Nodes' identifiers are overlay.NodeID of their
// addresses; a node is live from its start, or from its "joined"
// output if it joined, or from the beginning if the trace records no
// start (a live cluster's), until its crash or leave. The oracle is computed here from the live set alone
// (overlay.Home: the live node numerically closest), never from the
// nodes' tables.
//
//   - overlay-lookup: every delivery is at the live node numerically
//     closest to the key — at the moment the lookup was asked or at the
//     moment of delivery (a node that joins or fails while the lookup is
//     on its way may change the home) — where Rowstron & Druschel's
//     Pastry keeps the key's object; and every lookup is delivered,
//     unless the node that last held it failed or left before passing it
//     on (Pastry's lookups are then retried by the application). A lookup
//     never delivered while messages were still in flight at the end
//     gives unknown (the run stopped early); with none in flight, it was
//     lost: violated.
//   - overlay-tables: every "tables" output holds exactly the l live nodes
//     nearest on each side of the node's leaf set (fewer if fewer live),
//     nearest first, and every routing-table entry R[p][d] is a live node
//     sharing exactly p digits with the node and having d as digit p: the
//     tables are consistent once repair is done (the workload asks for
//     them then).
//   - dht-get: a get asked after its key's put was stored is answered at
//     the key's home with the value put — unless k of the nodes that were
//     among the key's k closest live nodes when they failed have failed
//     since the put (k: the replicas of the Stored output; PAST's
//     guarantee: an object survives fewer than k failures of its replica
//     set); a get answered with another value is always a violation; a
//     get is answered (unknown or lost as for lookups).
var (
	overlayLookup = checker{
		name:  "overlay-lookup",
		doc:   "every lookup is delivered, at the live node numerically closest to its key",
		check: checkOverlayLookup,
	}
	overlayTables = checker{
		name:  "overlay-tables",
		doc:   "every leaf set shown holds the l live nodes on each side; every routing entry is live and has the right prefix",
		check: checkOverlayTables,
	}
	dhtGet = checker{
		name:  "dht-get",
		doc:   "every get after a put returns the value put, unless its replica set failed",
		check: checkDHTGet,
	}
)

func init() {
	Register(overlayLookup)
	Register(overlayTables)
	Register(dhtGet)
}

// ring follows the live nodes of an overlay run, and where each routed
// key last was.
type ring struct {
	live    map[int32]bool
	joining map[int32]bool         // joined, not yet "joined"
	holder  map[overlay.GUID]int32 // the node that last received a key's keyRequest
	gone    map[overlay.GUID]bool  // its holder failed or left holding it
	flying  map[uint64]bool
	pending map[overlay.GUID]int // requests of the key not yet answered
	sorted  []proc.ID            // the live nodes, sorted; nil: to be made again
}

// newRing follows t's nodes. A node whose first event neither starts
// nor joins it was running when the trace began — a live cluster's trace
// records no starts — and is live from the beginning.
func newRing(t *trace.Trace) *ring {
	r := &ring{live: map[int32]bool{}, joining: map[int32]bool{}, holder: map[overlay.GUID]int32{}, gone: map[overlay.GUID]bool{},
		flying: map[uint64]bool{}, pending: map[overlay.GUID]int{}}
	seen := map[int32]bool{}
	for i := range t.Events {
		e := &t.Events[i]
		if !e.Kind.IsProcess() || seen[e.Node] {
			continue
		}
		seen[e.Node] = true
		if !e.Kind.Begins() {
			r.live[e.Node] = true
		}
	}
	return r
}

// see follows event e: membership, messages, and route hops.
func (r *ring) see(e *trace.Event) {
	switch {
	case e.Kind == trace.Join:
		// A joining node is in the overlay once it has joined (its
		// "joined" output): until then nobody can route to it.
		r.joining[e.Node] = true
	case e.Kind == trace.Output && e.Type == "joined" && r.joining[e.Node]:
		delete(r.joining, e.Node)
		r.live[e.Node], r.sorted = true, nil
	case e.Kind.Begins():
		r.live[e.Node], r.sorted = true, nil
	case e.Kind.Stops():
		delete(r.live, e.Node)
		delete(r.joining, e.Node)
		r.sorted = nil
		for k, h := range r.holder {
			if h == e.Node && r.pending[k] > 0 {
				r.gone[k] = true
			}
		}
	case e.Kind == trace.Send:
		r.flying[e.Msg] = true
	case e.Kind == trace.Recv || e.Kind == trace.Drop:
		delete(r.flying, e.Msg)
		if e.Kind == trace.Recv && (e.Type == "route" || e.Type == "dht-route") {
			if k, ok := routeKey(e.Label); ok && r.pending[k] > 0 {
				r.holder[k] = e.Node
				r.gone[k] = false
			}
		}
	}
}

// asked: a request for key was made at node.
func (r *ring) asked(key overlay.GUID, node int32) {
	r.pending[key]++
	r.holder[key] = node
	r.gone[key] = false
}

func (r *ring) answered(key overlay.GUID) {
	if r.pending[key]--; r.pending[key] <= 0 {
		delete(r.pending, key)
		delete(r.holder, key)
		delete(r.gone, key)
	}
}

// home is the live node numerically closest to key.
func (r *ring) home(key overlay.GUID) proc.ID { return overlay.Home(key, r.ids()) }

func (r *ring) ids() []proc.ID {
	if r.sorted == nil {
		r.sorted = make([]proc.ID, 0, len(r.live))
		for n := range r.live {
			r.sorted = append(r.sorted, proc.ID(n))
		}
		slices.Sort(r.sorted)
	}
	return r.sorted
}

// routeKey reads the key from a route message's label, ROUTE(key,h=…).
func routeKey(label string) (overlay.GUID, bool) {
	var k overlay.GUID
	rest, ok := strings.CutPrefix(label, "ROUTE(")
	if !ok || len(rest) < 32 {
		return k, false
	}
	return k, k.UnmarshalText([]byte(rest[:32])) == nil
}

// keyRequest is a lookup or get not yet answered: its input event, and the
// key's home when it was asked.
type keyRequest struct {
	at   int
	home proc.ID
}

func checkOverlayLookup(t *trace.Trace) Result {
	r := newRing(t)
	asked := map[overlay.GUID][]keyRequest{} // key → the lookups not yet delivered
	var fs []finding
	for i := range t.Events {
		e := &t.Events[i]
		r.see(e)
		switch {
		case e.Kind == trace.Input && e.Type == "lookup":
			var l overlay.Lookup
			if err := json.Unmarshal(e.Data, &l); err != nil {
				return Result{Status: Unknown, Detail: fmt.Sprintf("event #%d: lookup %s: %v", i, e.Data, err), Events: []int{i}}
			}
			asked[l.Key] = append(asked[l.Key], keyRequest{i, r.home(l.Key)})
			r.asked(l.Key, e.Node)
		case e.Kind == trace.Output && e.Type == "delivered":
			var d overlay.Delivered
			if err := json.Unmarshal(e.Data, &d); err != nil {
				return Result{Status: Unknown, Detail: fmt.Sprintf("event #%d: delivered %s: %v", i, e.Data, err), Events: []int{i}}
			}
			q := asked[d.Key]
			if len(q) == 0 {
				fs = append(fs, finding{fmt.Sprintf("p%d delivered key %s, which no lookup asked for (or not that often)", e.Node, d.Key), []int{i}})
				continue
			}
			asked[d.Key] = q[1:]
			r.answered(d.Key)
			if home := r.home(d.Key); home != proc.ID(e.Node) && q[0].home != proc.ID(e.Node) {
				fs = append(fs, finding{fmt.Sprintf("p%d took delivery of key %s after %d hops, but p%d (nodeId %s) is the live node numerically closer than p%d (nodeId %s)",
					e.Node, d.Key, d.Hops, home, overlay.NodeID(home), e.Node, overlay.NodeID(proc.ID(e.Node))), []int{q[0].at, i}})
			}
		}
	}
	return unanswered(t, r, asked, fs, "lookup")
}

// unanswered adds the requests never answered to fs, unless their holder
// failed holding them; with messages still in flight, it is unknown.
func unanswered(t *trace.Trace, r *ring, asked map[overlay.GUID][]keyRequest, fs []finding, what string) Result {
	var lost []int
	for k, q := range asked {
		if r.gone[k] {
			continue
		}
		for _, x := range q {
			lost = append(lost, x.at)
		}
	}
	if len(fs) == 0 && len(lost) > 0 && len(r.flying) > 0 {
		return Result{Status: Unknown, Detail: fmt.Sprintf("%d %ss unanswered, %d messages still in flight at the end", len(lost), what, len(r.flying))}
	}
	slices.Sort(lost)
	for _, i := range lost {
		e := &t.Events[i]
		fs = append(fs, finding{fmt.Sprintf("the %s at p%d (%s) was never answered, and no node failed holding it", what, e.Node, e.Data), []int{i}})
	}
	return verdict(fs)
}

func checkOverlayTables(t *trace.Trace) Result {
	r := newRing(t)
	var fs []finding
	for i := range t.Events {
		e := &t.Events[i]
		r.see(e)
		if e.Kind != trace.Output || e.Type != "tables" {
			continue
		}
		var tb overlay.Tables
		if err := json.Unmarshal(e.Data, &tb); err != nil {
			return Result{Status: Unknown, Detail: fmt.Sprintf("event #%d: tables: %v", i, err), Events: []int{i}}
		}
		self := proc.ID(e.Node)
		left, right := leafOracle(self, r.ids(), tb.Leaves)
		for _, side := range []struct {
			name      string
			got, want []proc.ID
		}{{"left", tb.Left, left}, {"right", tb.Right, right}} {
			if !slices.Equal(side.got, side.want) {
				fs = append(fs, finding{fmt.Sprintf("p%d's %s leaf set is %v, but the %d live nodes nearest on that side are %v",
					self, side.name, side.got, len(side.want), side.want), []int{i}})
			}
		}
		g := overlay.NodeID(self)
		for _, x := range tb.Table {
			h := overlay.NodeID(x.Node)
			switch {
			case !r.live[int32(x.Node)]:
				fs = append(fs, finding{fmt.Sprintf("p%d's R[%d][%x] is p%d, which is not live", self, x.Row, x.Col, x.Node), []int{i}})
			case overlay.SharedPrefix(g, h) != x.Row || h.Digit(x.Row) != x.Col:
				fs = append(fs, finding{fmt.Sprintf("p%d's R[%d][%x] is p%d (nodeId %s), which shares %d digits with p%d (nodeId %s)",
					self, x.Row, x.Col, x.Node, h, overlay.SharedPrefix(g, h), self, g), []int{i}})
			}
		}
	}
	return verdict(fs)
}

// leafOracle is the leaf set node self should have among the live nodes:
// the l nearest on each side, nearest first.
func leafOracle(self proc.ID, live []proc.ID, l int) (left, right []proc.ID) {
	g := overlay.NodeID(self)
	others := slices.DeleteFunc(slices.Clone(live), func(x proc.ID) bool { return x == self })
	byDist := func(dist func(proc.ID) overlay.GUID) []proc.ID {
		ids := slices.Clone(others)
		slices.SortFunc(ids, func(a, b proc.ID) int { return overlay.Cmp(dist(a), dist(b)) })
		return ids[:min(l, len(ids))]
	}
	right = byDist(func(x proc.ID) overlay.GUID { return overlay.Clockwise(g, overlay.NodeID(x)) })
	left = byDist(func(x proc.ID) overlay.GUID { return overlay.Clockwise(overlay.NodeID(x), g) })
	return left, right
}

func checkDHTGet(t *trace.Trace) Result {
	r := newRing(t)
	type object struct {
		value    string
		stored   bool
		replicas int
		failed   int // replica-set members failed since the put was stored
	}
	objects := map[overlay.GUID]*object{}
	asked := map[overlay.GUID][]keyRequest{}
	after := map[int]bool{} // get inputs asked after their key's put was stored
	var fs []finding
	for i := range t.Events {
		e := &t.Events[i]
		if e.Kind == trace.Crash || e.Kind == trace.Leave {
			for k, o := range objects {
				if o.stored && slices.Contains(nearest(k, r.ids(), o.replicas), proc.ID(e.Node)) {
					o.failed++
				}
			}
		}
		r.see(e)
		switch {
		case e.Kind == trace.Input && e.Type == "put":
			var p overlay.Put
			if err := json.Unmarshal(e.Data, &p); err != nil {
				return Result{Status: Unknown, Detail: fmt.Sprintf("event #%d: put %s: %v", i, e.Data, err), Events: []int{i}}
			}
			if objects[p.Key] == nil {
				objects[p.Key] = &object{value: p.Value}
			}
		case e.Kind == trace.Output && e.Type == "stored":
			var s overlay.Stored
			if err := json.Unmarshal(e.Data, &s); err != nil {
				return Result{Status: Unknown, Detail: fmt.Sprintf("event #%d: stored %s: %v", i, e.Data, err), Events: []int{i}}
			}
			if o := objects[s.Key]; o != nil && !o.stored {
				o.stored, o.replicas = true, s.Replicas
			}
		case e.Kind == trace.Input && e.Type == "get":
			var g overlay.Get
			if err := json.Unmarshal(e.Data, &g); err != nil {
				return Result{Status: Unknown, Detail: fmt.Sprintf("event #%d: get %s: %v", i, e.Data, err), Events: []int{i}}
			}
			asked[g.Key] = append(asked[g.Key], keyRequest{at: i})
			r.asked(g.Key, e.Node)
			if o := objects[g.Key]; o != nil && o.stored {
				after[i] = true
			}
		case e.Kind == trace.Output && e.Type == "got":
			var g overlay.Got
			if err := json.Unmarshal(e.Data, &g); err != nil {
				return Result{Status: Unknown, Detail: fmt.Sprintf("event #%d: got %s: %v", i, e.Data, err), Events: []int{i}}
			}
			q := asked[g.Key]
			if len(q) == 0 {
				fs = append(fs, finding{fmt.Sprintf("p%d answered a get of key %s, which no get asked for (or not that often)", e.Node, g.Key), []int{i}})
				continue
			}
			asked[g.Key] = q[1:]
			r.answered(g.Key)
			o := objects[g.Key]
			cite := []int{q[0].at, i}
			switch {
			case g.Found && (o == nil || g.Value != o.value):
				fs = append(fs, finding{fmt.Sprintf("p%d answered a get of key %s with %q, which no put stored", e.Node, g.Key, g.Value), cite})
			case !g.Found && after[q[0].at] && o.failed < o.replicas:
				fs = append(fs, finding{fmt.Sprintf("p%d found nothing under key %s, stored before the get was asked; only %d of its replica set of %d failed since",
					e.Node, g.Key, o.failed, o.replicas), cite})
			}
		}
	}
	return unanswered(t, r, asked, fs, "get")
}

// nearest is the k live nodes numerically closest to key.
func nearest(key overlay.GUID, live []proc.ID, k int) []proc.ID {
	ids := slices.Clone(live)
	slices.SortFunc(ids, func(a, b proc.ID) int {
		if overlay.Closer(key, overlay.NodeID(a), overlay.NodeID(b)) {
			return -1
		}
		return 1
	})
	return ids[:min(k, len(ids))]
}
