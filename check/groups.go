package check

import (
	"encoding/json"
	"fmt"
	"hash/fnv"

	"github.com/cohort-go/cohort/trace"
)

// groupOrder reads a log-ordered group service's deliveries from a trace
// (consensus.Groups): "group-delivered" outputs {"messages":[m...]}, each
// m {"group","pos","origin","seq","body"}, and "group-acked" outputs
// {"sent":[a...]}, each a {"group","origin","seq","pos"} acknowledging a
// send — or, in traces of earlier versions, one "group-message" output
// per m and one "group-sent" per a. The property: one total order per group — every
// server that delivers position p of a group delivers the same message
// there; no message is delivered at two positions; a server delivers a
// group's positions one after the other, without a gap, from the first it
// delivers after it (re)starts or installs a snapshot — and an
// acknowledged message is delivered
// at the position its acknowledgement names.
var groupOrder = checker{
	name:  "group-order",
	doc:   "group total order: every server delivers the same message at each position of a group, no message at two positions, positions without gaps on each server, and every acknowledged message at the position acknowledged",
	check: checkGroupOrder,
}

func init() { Register(groupOrder) }

func checkGroupOrder(t *trace.Trace) Result {
	type gpos struct {
		group string
		pos   uint64
	}
	type msgID struct {
		group       string
		origin, seq uint64
	}
	type at struct {
		id   msgID
		body uint64
		ev   int
	}
	byPos := map[gpos]at{}
	posOf := map[msgID]gpos{}
	last := map[int32]map[string]uint64{} // node → group → last position delivered in this incarnation
	var fs []finding
	for i, e := range t.Events {
		if e.Kind == trace.Crash || e.Kind == trace.Recover || e.Kind == trace.Start || (e.Kind == trace.Output && e.Type == "restored") {
			delete(last, e.Node) // a new incarnation, or a snapshot: positions start again
			continue
		}
		if e.Kind != trace.Output {
			continue
		}
		var out struct {
			Messages []groupMessage `json:"messages"`
			Sent     []groupMessage `json:"sent"`
		}
		var err error
		switch e.Type {
		case "group-delivered", "group-acked":
			err = json.Unmarshal(e.Data, &out)
		case "group-message", "group-sent": // one each, as earlier versions output them
			var m groupMessage
			err = json.Unmarshal(e.Data, &m)
			if e.Type == "group-message" {
				out.Messages = append(out.Messages, m)
			} else {
				out.Sent = append(out.Sent, m)
			}
		default:
			continue
		}
		if err != nil {
			return Result{Status: Unknown, Detail: fmt.Sprintf("event #%d: %s: %v", i, e.Type, err), Events: []int{i}}
		}
		for _, m := range out.Sent {
			id, p := msgID{m.Group, m.Origin, m.Seq}, gpos{m.Group, m.Pos}
			if m.Pos == 0 {
				continue // a copy of a message acknowledged before
			}
			if first, ok := byPos[p]; ok && first.id != id {
				fs = append(fs, finding{detail: fmt.Sprintf("group %q: %d/%d was acknowledged at position %d, where %d/%d was delivered",
					m.Group, m.Origin, m.Seq, m.Pos, first.id.origin, first.id.seq), events: []int{first.ev, i}})
			}
		}
		for _, m := range out.Messages {
			id, p := msgID{m.Group, m.Origin, m.Seq}, gpos{m.Group, m.Pos}
			h := fnv.New64a()
			h.Write(m.Body)
			cur := at{id, h.Sum64(), i}
			if first, ok := byPos[p]; ok {
				if first.id != id || first.body != cur.body {
					fs = append(fs, finding{detail: fmt.Sprintf("group %q, position %d: p%d delivered %d/%d, where p%d delivered %d/%d",
						m.Group, m.Pos, e.Node, m.Origin, m.Seq, t.Events[first.ev].Node, first.id.origin, first.id.seq), events: []int{first.ev, i}})
				}
			} else {
				byPos[p] = cur
			}
			if q, ok := posOf[id]; ok && q != p {
				fs = append(fs, finding{detail: fmt.Sprintf("group %q: %d/%d was delivered at positions %d and %d", m.Group, m.Origin, m.Seq, q.pos, m.Pos),
					events: []int{byPos[q].ev, i}})
			} else {
				posOf[id] = p
			}
			if last[e.Node] == nil {
				last[e.Node] = map[string]uint64{}
			}
			if prev, ok := last[e.Node][m.Group]; ok && m.Pos != prev+1 {
				fs = append(fs, finding{detail: fmt.Sprintf("group %q: p%d delivered position %d after %d", m.Group, e.Node, m.Pos, prev), events: []int{i}})
			}
			last[e.Node][m.Group] = m.Pos
		}
	}
	return verdict(fs)
}

// groupMessage is a delivery or an acknowledgement in a group-order
// trace.
type groupMessage struct {
	Group  string `json:"group"`
	Pos    uint64 `json:"pos"`
	Origin uint64 `json:"origin"`
	Seq    uint64 `json:"seq"`
	Body   []byte `json:"body"`
}
