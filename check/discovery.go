package check

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/cohort-go/cohort/trace"
)

// The discovery checkers read resource discovery's contract (the gossip
// family's discovery and members algorithms) from a trace:
//
//   - an "advertise" input, {"name", "attrs"}: the node holds the
//     resource from then on, until a "withdraw" input {"name"} for it, or
//     the end of its incarnation (a crash or a leave: a recovered node
//     holds nothing it has not advertised again);
//   - a "found" output, {"id", "name", "k", "holders": [{"node",
//     "rtt_ms"}]}: the node's answer to a find, nearest first.
//
// A holder is live at a time if it is up then and holds the resource.
// Both properties are judged at the last find of each name at each node
// (eventually, like gossip-convergence: a run whose last finds come
// before an advertisement, a withdrawal or a crash has had time to spread
// breaks them):
//
//   - discovery-findable: the answer holds min(k, live holders) holders
//     (all of them if k ≤ 0): every live holder is found, nearest or not;
//   - discovery-fresh: every holder the answer names is live: withdrawn
//     and crashed holders have disappeared.
var (
	discoveryFindable = checker{
		name:  "discovery-findable",
		doc:   "the last find of each name at each node answers min(k, live holders) holders: every live advertised holder is eventually findable everywhere",
		check: func(t *trace.Trace) Result { return checkDiscovery(t, true) },
	}
	discoveryFresh = checker{
		name:  "discovery-fresh",
		doc:   "the last find of each name at each node names only live holders: withdrawn and crashed holders eventually disappear",
		check: func(t *trace.Trace) Result { return checkDiscovery(t, false) },
	}
)

func init() {
	Register(discoveryFindable)
	Register(discoveryFresh)
}

// DiscoveryFound is a "found" output's data.
type DiscoveryFound struct {
	ID      uint32            `json:"id"`
	Name    string            `json:"name"`
	K       int               `json:"k"`
	Holders []DiscoveryHolder `json:"holders"`
}

// DiscoveryHolder is one holder of a "found" output.
type DiscoveryHolder struct {
	Node int32   `json:"node"`
	RTT  float64 `json:"rtt_ms"`
}

type lastFind struct {
	at    int
	found DiscoveryFound
	live  map[int32]int // the live holders then: holder → its advertise event
}

func checkDiscovery(t *trace.Trace, findable bool) Result {
	holds := map[int32]map[string]int{} // node → name → its advertise event, this incarnation
	last := map[int32]map[string]*lastFind{}
	for i := range t.Events {
		e := &t.Events[i]
		switch {
		case e.Kind.Begins() || e.Kind.Stops():
			delete(holds, e.Node)
		case e.Kind == trace.Input && (e.Type == "advertise" || e.Type == "withdraw"):
			var in struct {
				Name string `json:"name"`
			}
			if json.Unmarshal(e.Data, &in) != nil {
				continue
			}
			if holds[e.Node] == nil {
				holds[e.Node] = map[string]int{}
			}
			if e.Type == "advertise" {
				if _, ok := holds[e.Node][in.Name]; !ok {
					holds[e.Node][in.Name] = i
				}
			} else {
				delete(holds[e.Node], in.Name)
			}
		case e.Kind == trace.Output && e.Type == "found":
			var f DiscoveryFound
			if json.Unmarshal(e.Data, &f) != nil {
				continue
			}
			live := map[int32]int{}
			for h, names := range holds {
				if at, ok := names[f.Name]; ok {
					live[h] = at
				}
			}
			if last[e.Node] == nil {
				last[e.Node] = map[string]*lastFind{}
			}
			last[e.Node][f.Name] = &lastFind{at: i, found: f, live: live}
		}
	}
	nodes := make([]int32, 0, len(last))
	for n := range last {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	var fs []finding
	for _, n := range nodes {
		names := make([]string, 0, len(last[n]))
		for name := range last[n] {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			l := last[n][name]
			if findable {
				want := len(l.live)
				if l.found.K > 0 {
					want = min(want, l.found.K)
				}
				if got := len(l.found.Holders); got < want {
					missing := []int{l.at}
					var who []int32
					for h, at := range l.live {
						if !slices.ContainsFunc(l.found.Holders, func(x DiscoveryHolder) bool { return x.Node == h }) {
							who = append(who, h)
							missing = append(missing, at)
						}
					}
					slices.Sort(who)
					slices.Sort(missing)
					fs = append(fs, finding{fmt.Sprintf("p%d's last find of %s answered %d holders of %d live (k=%d); not found: %v",
						n, name, got, len(l.live), l.found.K, fmtNodes(who)), missing[:min(len(missing), 4)]})
				}
				continue
			}
			for _, h := range l.found.Holders {
				if _, ok := l.live[h.Node]; !ok {
					fs = append(fs, finding{fmt.Sprintf("p%d's last find of %s names p%d, which does not hold it then (withdrawn, crashed or never advertised)",
						n, name, h.Node), []int{l.at}})
				}
			}
		}
	}
	return verdict(fs)
}

func fmtNodes(ns []int32) string {
	s := ""
	for i, n := range ns {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf("p%d", n)
	}
	return s
}
