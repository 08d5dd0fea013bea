package lab

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

// KVClients are the consensus family's default workload: Clients
// closed-loop clients of a replicated key-value store. Each proposes one
// operation at a time (KVOp: get, put or cas on one of Keys keys) to a
// server, waits for its result, thinks for Think and goes on, until Stop.
// A server that is not the leader answers NotLeader and the client tries
// the leader it names (or a random server); an operation unanswered for
// Retry goes, with the same number, to a random server. Retries go on
// until Stop + Retry·10, so that operations under way at Stop can end.
//
// Under the raft algorithm, whose state machine only logs entries, an
// operation is answered when it is applied (an "applied" output carrying
// it); under raft-kv, by its "kv-result".
type KVClients struct {
	Clients, Keys      int
	Think, Retry, Stop time.Duration
	cs                 []kvClient
}

type kvClient struct {
	op      consensus.KVOp
	pending bool
	leader  proc.ID           // the leader last named to this client; None: unknown
	last    map[string]string // the last value this client saw per key (cas expects it)
}

// DefaultKVClients: 5 clients on 3 keys, 1 ms of thought, retries after
// 50 ms, for a second.
func DefaultKVClients() sim.Workload {
	return &KVClients{Clients: 5, Keys: 3, Think: time.Millisecond, Retry: 50 * time.Millisecond, Stop: time.Second}
}

func (w *KVClients) Init(c sim.Control) {
	w.cs = make([]kvClient, w.Clients)
	for i := range w.cs {
		w.cs[i].last = map[string]string{}
		w.cs[i].leader = proc.None
		c.After(time.Duration(c.Rand().Int64N(int64(w.Think)+1)), func() { w.next(c, i) })
	}
}

// next starts client i's next operation.
func (w *KVClients) next(c sim.Control, i int) {
	if c.Now() >= w.Stop {
		return
	}
	cl := &w.cs[i]
	key := "k" + strconv.Itoa(c.Rand().IntN(w.Keys))
	op := consensus.KVOp{Client: uint64(i + 1), Seq: cl.op.Seq + 1, Key: key}
	switch x := c.Rand().IntN(10); {
	case x < 4:
		op.Op = "get"
	case x < 7:
		op.Op, op.Value = "put", fmt.Sprintf("v%d.%d", i+1, op.Seq)
	default:
		op.Op, op.Expect, op.Value = "cas", cl.last[key], fmt.Sprintf("v%d.%d", i+1, op.Seq)
	}
	cl.op, cl.pending = op, true
	to := cl.leader
	if to == proc.None {
		to = proc.ID(c.Rand().IntN(c.N()))
	}
	w.send(c, i, to)
}

// send proposes client i's operation to server to, and retries it later
// if it is still unanswered.
func (w *KVClients) send(c sim.Control, i int, to proc.ID) {
	op := w.cs[i].op
	c.Schedule(0, to, consensus.Propose{Data: op.Encode()})
	c.After(w.Retry, func() {
		if cl := w.waiting(op); cl != nil && w.retrying(c) {
			cl.leader = proc.None // it did not answer: try another
			w.send(c, i, proc.ID(c.Rand().IntN(c.N())))
		}
	})
}

// waiting returns the client that still waits for op's answer, or nil.
func (w *KVClients) waiting(op consensus.KVOp) *kvClient {
	i := int(op.Client) - 1
	if i < 0 || i >= len(w.cs) || !w.cs[i].pending || w.cs[i].op.Seq != op.Seq {
		return nil
	}
	return &w.cs[i]
}

// retrying reports whether unanswered operations are still resent.
func (w *KVClients) retrying(c sim.Control) bool { return c.Now() < w.Stop+10*w.Retry }

func (w *KVClients) Observe(c sim.Control, node proc.ID, o proc.Output) {
	var op consensus.KVOp
	switch o := o.(type) {
	case consensus.KVResult:
		cl := w.waiting(consensus.KVOp{Client: o.Client, Seq: o.Seq})
		if cl == nil {
			return
		}
		switch {
		case cl.op.Op == "get":
			cl.last[cl.op.Key] = o.Value
		case o.OK:
			cl.last[cl.op.Key] = cl.op.Value
		default:
			cl.last[cl.op.Key] = o.Value // the cas failed; the value it saw
		}
		w.answered(c, cl)
	case consensus.Applied: // under raft, whose log answers nothing else
		if json.Unmarshal([]byte(o.Data), &op) == nil {
			if cl := w.waiting(op); cl != nil {
				w.answered(c, cl)
			}
		}
	case consensus.NotLeader:
		if json.Unmarshal(o.Data, &op) != nil {
			return
		}
		cl := w.waiting(op)
		if cl == nil {
			return
		}
		cl.leader = o.Leader
		to, wait := o.Leader, time.Duration(0)
		if to == proc.None || to == node {
			// Not straight away: a server that knows no leader yet
			// would answer again at once.
			to, wait = proc.ID(c.Rand().IntN(c.N())), w.Retry/10
		}
		c.After(wait, func() {
			if w.waiting(op) != nil && w.retrying(c) {
				c.Schedule(0, to, consensus.Propose{Data: op.Encode()})
			}
		})
	}
}

// answered ends client cl's operation; it thinks, then goes on.
func (w *KVClients) answered(c sim.Control, cl *kvClient) {
	cl.pending = false
	i := int(cl.op.Client) - 1
	c.After(w.Think, func() { w.next(c, i) })
}

// consensusMetrics: leaderships, entries committed (the highest index
// applied anywhere), lock grants and sessions expired (raft-lock), client
// operations proposed, answered and redirected,
// their latency from first proposal to first answer, and messages per
// committed entry.
func consensusMetrics(f Finished) (map[string]float64, map[string]*float64) {
	var leaders, redirects, sends float64
	var committed uint64
	type opID struct{ client, seq uint64 }
	called := map[opID]int64{}
	answered := map[opID]bool{}
	var lat []float64
	grants, expired := map[uint64]bool{}, map[uint64]bool{}
	answer := func(id opID, t int64) {
		if at, ok := called[id]; ok && !answered[id] {
			answered[id] = true
			lat = append(lat, float64(t-at)/1e6)
		}
	}
	for _, e := range f.Trace.Events {
		switch {
		case e.Kind == trace.Send:
			sends++
		case e.Kind == trace.Input && e.Type == "propose":
			var p consensus.Propose
			var op consensus.KVOp
			if json.Unmarshal(e.Data, &p) == nil && json.Unmarshal(p.Data, &op) == nil {
				if _, ok := called[opID{op.Client, op.Seq}]; !ok {
					called[opID{op.Client, op.Seq}] = e.Time
				}
			}
		case e.Kind == trace.Output && e.Type == "leader":
			leaders++
		case e.Kind == trace.Output && e.Type == "granted":
			var g consensus.Granted
			if json.Unmarshal(e.Data, &g) == nil {
				grants[g.Token] = true
			}
		case e.Kind == trace.Output && e.Type == "closed":
			var c consensus.Closed
			if json.Unmarshal(e.Data, &c) == nil && c.Expired {
				expired[c.Session] = true
			}
		case e.Kind == trace.Output && e.Type == "not-leader":
			redirects++
		case e.Kind == trace.Output && e.Type == "kv-result":
			var r consensus.KVResult
			if json.Unmarshal(e.Data, &r) == nil {
				answer(opID{r.Client, r.Seq}, e.Time)
			}
		case e.Kind == trace.Output && e.Type == "applied":
			var a consensus.Applied
			var op consensus.KVOp
			if json.Unmarshal(e.Data, &a) == nil {
				committed = max(committed, a.Index)
				if json.Unmarshal([]byte(a.Data), &op) == nil {
					answer(opID{op.Client, op.Seq}, e.Time)
				}
			}
		}
	}
	m := map[string]float64{"leaderships": leaders, "committed": float64(committed), "redirected": redirects}
	if len(called) > 0 {
		m["operations"], m["answered"] = float64(len(called)), float64(len(answered))
	}
	if len(grants) > 0 {
		m["lock_grants"], m["sessions_expired"] = float64(len(grants)), float64(len(expired))
	}
	if committed > 0 {
		m["messages_per_entry"] = sends / float64(committed)
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		m["latency_ms_p50"] = lat[len(lat)/2]
		m["latency_ms_p99"] = lat[len(lat)*99/100]
	}
	return m, map[string]*float64{}
}
