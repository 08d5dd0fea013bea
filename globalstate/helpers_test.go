package globalstate

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cohort-go/cohort/trace"
)

// randomTrace is a run of n processes and about steps events: sends,
// receives (some duplicated, some of messages never sent), drops, enter
// and exit outputs, acquire inputs, crashes and recoveries, in an order a
// real run could have (a receive after its send).
func randomTrace(r *rand.Rand, n, steps int) *trace.Trace {
	t := &trace.Trace{Header: trace.Header{Format: trace.FormatName, Nodes: n, Seed: r.Uint64()}}
	type flight struct {
		msg      uint64
		from, to int32
	}
	var inflight []flight
	var msg uint64
	inCS := make([]bool, n)
	up := make([]bool, n)
	for i := range up {
		up[i] = true
	}
	add := func(e trace.Event) {
		e.Index = len(t.Events)
		e.Time = int64(len(t.Events))
		if e.Peer == 0 && e.Kind != trace.Send && e.Kind != trace.Recv && e.Kind != trace.Drop {
			e.Peer = -1
		}
		t.Events = append(t.Events, e)
	}
	for range steps {
		p := int32(r.IntN(n))
		var mine []int
		for i, f := range inflight {
			if f.to == p {
				mine = append(mine, i)
			}
		}
		switch x := r.IntN(20); {
		case !up[p]:
			up[p] = true
			add(trace.Event{Node: p, Kind: trace.Recover})
		case x < 6:
			q := int32(r.IntN(n))
			msg++
			add(trace.Event{Node: p, Kind: trace.Send, Msg: msg, Peer: q, Type: "m"})
			inflight = append(inflight, flight{msg, p, q})
		case x < 11 && len(mine) > 0:
			i := mine[r.IntN(len(mine))]
			f := inflight[i]
			add(trace.Event{Node: p, Kind: trace.Recv, Msg: f.msg, Peer: f.from, Type: "m"})
			if r.IntN(6) > 0 { // else duplicated: it arrives again later
				inflight = slices.Delete(inflight, i, i+1)
			}
		case x == 11 && len(mine) > 0:
			i := mine[r.IntN(len(mine))]
			f := inflight[i]
			add(trace.Event{Node: p, Kind: trace.Drop, Msg: f.msg, Peer: f.from, Type: "m"})
			inflight = slices.Delete(inflight, i, i+1)
		case x == 12 && n > 1:
			add(trace.Event{Node: p, Kind: trace.Recv, Msg: 1 << 40, Peer: (p + 1) % int32(n), Type: "m"}) // never sent
		case x < 16:
			if inCS[p] {
				add(trace.Event{Node: p, Kind: trace.Output, Type: "exit"})
			} else {
				add(trace.Event{Node: p, Kind: trace.Output, Type: "enter"})
			}
			inCS[p] = !inCS[p]
		case x < 18:
			add(trace.Event{Node: p, Kind: trace.Input, Type: "acquire"})
		case x == 18:
			up[p], inCS[p] = false, false
			add(trace.Event{Node: p, Kind: trace.Crash})
		default:
			add(trace.Event{Node: p, Kind: trace.Timer, Type: "tick"})
		}
	}
	return t
}

// bruteCuts lists every consistent cut of t: every vector of prefix
// lengths, kept if package trace calls it consistent.
func bruteCuts(t *testing.T, tr *trace.Trace) []trace.Cut {
	t.Helper()
	hb, err := trace.NewHB(tr)
	if err != nil {
		t.Fatal(err)
	}
	n := tr.Header.Nodes
	c := make(trace.Cut, n)
	var out []trace.Cut
	var rec func(p int)
	rec = func(p int) {
		if p == n {
			if ok, _ := hb.Consistent(c); ok {
				out = append(out, slices.Clone(c))
			}
			return
		}
		for k := 0; k <= len(hb.History(p)); k++ {
			c[p] = k
			rec(p + 1)
		}
		c[p] = 0
	}
	rec(0)
	return out
}

// naiveValue evaluates n in the state of cut c by reading the histories
// from the start: an interpreter independent of the compiled one.
func naiveValue(n *node, tr *trace.Trace, hist [][]int, c trace.Cut) int64 {
	b2i := func(b bool) int64 {
		if b {
			return 1
		}
		return 0
	}
	at := func(v varRef, p int) int64 {
		var cur int64
		if v.name == "up" {
			cur = 1
		}
		for _, i := range hist[p][:c[p]] {
			e := &tr.Events[i]
			out := func(typ string) bool { return e.Kind == trace.Output && e.Type == typ }
			switch v.name {
			case "cs":
				if out("enter") {
					cur = 1
				} else if out("exit") || e.Kind == trace.Crash || e.Kind == trace.Leave || e.Kind == trace.Recover || e.Kind == trace.Start || e.Kind == trace.Join {
					cur = 0
				}
			case "wanting":
				if e.Kind == trace.Input && e.Type == "acquire" {
					cur = 1
				} else if out("enter") || e.Kind == trace.Crash || e.Kind == trace.Leave || e.Kind == trace.Recover || e.Kind == trace.Start || e.Kind == trace.Join {
					cur = 0
				}
			case "up":
				if e.Kind == trace.Crash || e.Kind == trace.Leave {
					cur = 0
				} else if e.Kind == trace.Recover || e.Kind == trace.Start || e.Kind == trace.Join {
					cur = 1
				}
			case "events":
				cur++
			case "sent":
				cur += b2i(e.Kind == trace.Send)
			case "received":
				cur += b2i(e.Kind == trace.Recv)
			case "inputs":
				cur += b2i(e.Kind == trace.Input && e.Type == v.param)
			case "outputs":
				cur += b2i(out(v.param))
			}
		}
		return cur
	}
	switch n.op {
	case opNum, opBool:
		return n.num
	case opVar:
		return at(n.v, n.proc)
	case opAgg:
		var s, cnt int64
		for p := range hist {
			v := at(n.v, p)
			s += v
			cnt += b2i(v != 0)
		}
		switch n.agg {
		case "count":
			return cnt
		case "sum":
			return s
		case "any":
			return b2i(cnt > 0)
		case "all":
			return b2i(cnt == int64(len(hist)))
		}
	case opNot:
		return 1 - naiveValue(n.l, tr, hist, c)
	case opAnd:
		return b2i(naiveValue(n.l, tr, hist, c) != 0 && naiveValue(n.r, tr, hist, c) != 0)
	case opOr:
		return b2i(naiveValue(n.l, tr, hist, c) != 0 || naiveValue(n.r, tr, hist, c) != 0)
	case opAdd:
		return naiveValue(n.l, tr, hist, c) + naiveValue(n.r, tr, hist, c)
	case opSub:
		return naiveValue(n.l, tr, hist, c) - naiveValue(n.r, tr, hist, c)
	case opCmp:
		x, y := naiveValue(n.l, tr, hist, c), naiveValue(n.r, tr, hist, c)
		switch n.rel {
		case "==":
			return b2i(x == y)
		case "!=":
			return b2i(x != y)
		case "<":
			return b2i(x < y)
		case "<=":
			return b2i(x <= y)
		case ">":
			return b2i(x > y)
		case ">=":
			return b2i(x >= y)
		}
	}
	panic("naiveValue: " + render(n, 0))
}

func histories(t *testing.T, tr *trace.Trace) [][]int {
	t.Helper()
	hb, err := trace.NewHB(tr)
	if err != nil {
		t.Fatal(err)
	}
	h := make([][]int, tr.Header.Nodes)
	for p := range h {
		h[p] = hb.History(p)
	}
	return h
}

// randomPredicate writes a predicate over n processes.
func randomPredicate(r *rand.Rand, n, depth int) string {
	proc := func() string { return fmt.Sprintf("p%d", r.IntN(n)) }
	k := func() int { return r.IntN(n + 2) }
	if depth <= 0 || r.IntN(3) == 0 {
		switch r.IntN(16) {
		case 0:
			return "cs(" + proc() + ")"
		case 1:
			return "wanting(" + proc() + ")"
		case 2:
			return "up(" + proc() + ")"
		case 3:
			return fmt.Sprintf("events(%s) >= %d", proc(), r.IntN(5))
		case 4:
			return fmt.Sprintf("sent(%s) > received(%s)", proc(), proc())
		case 5:
			return fmt.Sprintf("outputs[enter](%s) == %d", proc(), r.IntN(3))
		case 6:
			return fmt.Sprintf("count(cs) >= %d", k())
		case 7:
			return fmt.Sprintf("count(cs) <= %d", k())
		case 8:
			return fmt.Sprintf("count(wanting) == %d", k())
		case 9:
			return fmt.Sprintf("%d != count(up)", k())
		case 10:
			return "any(cs)"
		case 11:
			return "all(up)"
		case 12:
			return fmt.Sprintf("sum(sent) - sum(received) >= %d", r.IntN(3))
		case 13:
			return []string{"true", "false"}[r.IntN(2)]
		case 14:
			return fmt.Sprintf("count(cs) < %d", k())
		default:
			return fmt.Sprintf("cs(%s) == wanting(%s)", proc(), proc())
		}
	}
	a, b := randomPredicate(r, n, depth-1), randomPredicate(r, n, depth-1)
	switch r.IntN(4) {
	case 0:
		return "(" + a + ") && (" + b + ")"
	case 1:
		return "(" + a + ") || (" + b + ")"
	case 2:
		return "!(" + a + ")"
	default:
		return a + " && " + strings.ReplaceAll(b, "||", "&&")
	}
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
