package check

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/cohort-go/cohort/trace"
)

// The gossip checkers read the epidemic family's contract from a trace:
//
//   - an "applied" output, {"key", "value", "version", "deleted"}: the
//     node adopted that entry of the replicated map (a tombstone if
//     deleted), newer than what it had;
//   - a "reaped" output, {"key", "version"}: the node dropped the
//     tombstone it held for key;
//   - a "state" output, {"s", "w"}: a push-sum node's sum and weight
//     after a change; "share" messages, labelled SHARE(s=…,w=…), carry
//     mass between nodes.
//
// A node is live at the end of a trace if its last process event is not
// a crash or a leave; its map is what its Applied outputs left since it
// last began (start, recovery or join), less what it reaped. The
// properties:
//
//   - gossip-convergence: every live node ends with the same map: for
//     each key, the newest version any live node holds, everywhere (a
//     tombstone and no entry count alike: both say "deleted"). Eventual
//     consistency, judged at the end: a run stopped before anti-entropy
//     had time to finish breaks it.
//   - gossip-no-resurrection: once a node adopted a key's tombstone, it
//     never adopts an older value of that key again in the same
//     incarnation — not even after it reaped the tombstone (Demers et
//     al.'s resurrection of deleted items, which death certificates kept
//     long enough prevent).
//   - push-sum-mass: Σs and Σw over the nodes and the shares in flight
//     change only where mass is given (a node's start, a Value input), to
//     1e-12 relative: a dropped, duplicated or crashed share or node
//     breaks it (Kempe et al.'s mass conservation).
//   - push-sum-error: every live node's last estimate s/w lies within
//     PushSumEpsilon (relative) of the aggregate of the mass given. Kempe
//     et al. promise it after O(log n + log 1/ε) rounds; a run with fewer
//     than PushSumRounds(n) rounds at its busiest node gives unknown.
var (
	gossipConvergence = checker{
		name:  "gossip-convergence",
		doc:   "every live node ends with the same replicated map: each key at the newest version any live node holds",
		check: checkGossipConvergence,
	}
	gossipNoResurrection = checker{
		name:  "gossip-no-resurrection",
		doc:   "a node that adopted a key's tombstone never adopts an older value of the key again (in the same incarnation)",
		check: checkGossipNoResurrection,
	}
	pushSumMass = checker{
		name:  "push-sum-mass",
		doc:   "push-sum's total sum and weight, counting shares in flight, change only where mass is given",
		check: checkPushSumMass,
	}
	pushSumError = checker{
		name:  "push-sum-error",
		doc:   "every live push-sum node's last estimate is within 10⁻³ (relative) of the aggregate of the mass given",
		check: checkPushSumError,
	}
)

func init() {
	Register(gossipConvergence)
	Register(gossipNoResurrection)
	Register(pushSumMass)
	Register(pushSumError)
}

// PushSumEpsilon is the relative error push-sum-error allows.
const PushSumEpsilon = 1e-3

// PushSumRounds is the rounds after which push-sum-error expects every
// estimate of an n-node run within PushSumEpsilon: 2·log₂ n + 3·log₂ 1/ε.
// Kempe et al. prove O(log n + log 1/ε + log 1/δ) without constants; the
// relative error falls by about √2 per round once the mass has spread
// (about log₂ n rounds), and these constants leave a margin over what the
// sweeps measure.
func PushSumRounds(n int) int {
	return int(math.Ceil(2*math.Log2(max(float64(n), 2)) + 3*math.Log2(1/PushSumEpsilon)))
}

type gossipEntry struct {
	Key     string `json:"key"`
	Value   string `json:"value"`
	Version uint64 `json:"version"`
	Deleted bool   `json:"deleted"`
}

// held is an entry a node holds, with the event that gave it.
type held struct {
	gossipEntry
	at int
}

// gossipMaps replays the Applied and Reaped outputs: each node's map at
// the end, and which nodes are live then. It also calls each(e, i, node
// map before e) for every Applied output, if set.
func gossipMaps(t *trace.Trace, each func(e gossipEntry, i int, before map[string]held)) (maps map[int32]map[string]held, live map[int32]int) {
	maps = map[int32]map[string]held{}
	live = map[int32]int{} // node → the event that began its last incarnation
	for i := range t.Events {
		e := &t.Events[i]
		switch {
		case e.Kind.Begins():
			maps[e.Node] = map[string]held{}
			live[e.Node] = i
		case e.Kind.Stops():
			delete(maps, e.Node)
			delete(live, e.Node)
		case e.Kind == trace.Output && e.Type == "applied":
			var g gossipEntry
			if json.Unmarshal(e.Data, &g) != nil {
				continue
			}
			m := maps[e.Node]
			if m == nil {
				m = map[string]held{}
				maps[e.Node] = m
			}
			if each != nil {
				each(g, i, m)
			}
			m[g.Key] = held{g, i}
		case e.Kind == trace.Output && e.Type == "reaped":
			var g gossipEntry
			if json.Unmarshal(e.Data, &g) == nil {
				delete(maps[e.Node], g.Key)
			}
		}
	}
	return maps, live
}

func checkGossipConvergence(t *trace.Trace) Result {
	maps, live := gossipMaps(t, nil)
	nodes := make([]int32, 0, len(live))
	for n := range live {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	// The newest version of each key at any live node.
	newest := map[string]held{}
	for _, n := range nodes {
		for k, h := range maps[n] {
			// The earliest adoption of the newest version: the same
			// citation whatever the maps' order.
			if w, ok := newest[k]; !ok || h.Version > w.Version || h.Version == w.Version && h.at < w.at {
				newest[k] = h
			}
		}
	}
	keys := make([]string, 0, len(newest))
	for k := range newest {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var fs []finding
	for _, k := range keys {
		want := newest[k]
		for _, n := range nodes {
			h, ok := maps[n][k]
			switch {
			case ok && h.Version == want.Version:
			case !ok && want.Deleted:
				// deleted here too: reaped, or never held
			case !ok:
				fs = append(fs, finding{fmt.Sprintf("p%d ends without %s=%s (version %s), which p%d holds",
					n, k, want.Value, fmtVersion(want.Version), t.Events[want.at].Node), []int{live[n], want.at}})
			default:
				fs = append(fs, finding{fmt.Sprintf("p%d ends with %s at version %s, older than version %s at p%d",
					n, k, fmtVersion(h.Version), fmtVersion(want.Version), t.Events[want.at].Node), []int{h.at, want.at}})
			}
		}
	}
	return verdict(fs)
}

func checkGossipNoResurrection(t *trace.Trace) Result {
	type tomb struct {
		version uint64
		at      int
	}
	dead := map[int32]map[string]tomb{} // node → key → newest tombstone it adopted
	var fs []finding
	for i := range t.Events {
		e := &t.Events[i]
		switch {
		case e.Kind.Begins() || e.Kind.Stops():
			delete(dead, e.Node)
		case e.Kind == trace.Output && e.Type == "applied":
			var g gossipEntry
			if json.Unmarshal(e.Data, &g) != nil {
				continue
			}
			d := dead[e.Node]
			if d == nil {
				d = map[string]tomb{}
				dead[e.Node] = d
			}
			tb, had := d[g.Key]
			if had && !g.Deleted && g.Version < tb.version {
				fs = append(fs, finding{fmt.Sprintf("p%d adopted %s=%s (version %s) after it had adopted the key's tombstone (version %s)",
					e.Node, g.Key, g.Value, fmtVersion(g.Version), fmtVersion(tb.version)), []int{tb.at, i}})
			}
			if g.Deleted && g.Version > tb.version {
				d[g.Key] = tomb{g.Version, i}
			}
		}
	}
	return verdict(fs)
}

func fmtVersion(v uint64) string {
	return strconv.FormatUint(v>>32, 10) + "." + strconv.FormatUint(v&0xffffffff, 10)
}

// mass is a push-sum pair.
type mass struct{ s, w float64 }

// parseShare reads SHARE(s=…,w=…).
func parseShare(label string) (mass, bool) {
	rest, ok := strings.CutPrefix(label, "SHARE(s=")
	if !ok {
		return mass{}, false
	}
	rest, ok = strings.CutSuffix(rest, ")")
	if !ok {
		return mass{}, false
	}
	a, b, ok := strings.Cut(rest, ",w=")
	if !ok {
		return mass{}, false
	}
	s, err1 := strconv.ParseFloat(a, 64)
	w, err2 := strconv.ParseFloat(b, 64)
	return mass{s, w}, err1 == nil && err2 == nil
}

func checkPushSumMass(t *trace.Trace) Result {
	state := map[int32]mass{}
	flight := map[uint64]mass{}
	var total, given mass // Σ state + Σ flight; Σ mass given
	var scale mass        // Σ |mass given|: the tolerance's scale
	creating := false     // the current call may give mass
	var call []int        // the events of the current call that moved mass
	var fs []finding
	var bad string
	settle := func() {
		tolS, tolW := 1e-12*(1+scale.s), 1e-12*(1+scale.w)
		if bad == "" && (math.Abs(total.s-given.s) > tolS || math.Abs(total.w-given.w) > tolW) && len(call) > 0 {
			bad = fmt.Sprintf("total mass s=%s w=%s (nodes and shares in flight) differs from the mass given, s=%s w=%s",
				fmtF(total.s), fmtF(total.w), fmtF(given.s), fmtF(given.w))
			fs = append(fs, finding{bad, slices.Clone(call)})
		}
		call = call[:0]
	}
	for i := range t.Events {
		e := &t.Events[i]
		if e.Kind.IsProcess() && e.Kind != trace.Send && e.Kind != trace.Output {
			settle() // a new call begins: the last one must have balanced
			creating = e.Kind.Begins() || e.Kind == trace.Input
		}
		switch {
		case e.Kind == trace.Output && e.Type == "state":
			var st struct{ S, W float64 }
			if json.Unmarshal(e.Data, &st) != nil {
				continue
			}
			old := state[e.Node]
			state[e.Node] = mass{st.S, st.W}
			total.s += st.S - old.s
			total.w += st.W - old.w
			if creating {
				given.s += st.S - old.s
				given.w += st.W - old.w
				scale.s += math.Abs(st.S - old.s)
				scale.w += math.Abs(st.W - old.w)
			}
			call = append(call, i)
		case e.Type == "share" && e.Kind == trace.Send:
			m, ok := parseShare(e.Label)
			if !ok {
				return Result{Status: Unknown, Detail: fmt.Sprintf("event #%d: share label %q is not SHARE(s=…,w=…)", i, e.Label)}
			}
			flight[e.Msg] = m
			total.s += m.s
			total.w += m.w
			call = append(call, i)
		case e.Type == "share" && (e.Kind == trace.Recv || e.Kind == trace.Drop):
			// Received or lost: out of flight. A duplicate was never in
			// it: the receiver's state shows the mass it adds.
			if f, ok := flight[e.Msg]; ok {
				delete(flight, e.Msg)
				total.s -= f.s
				total.w -= f.w
			}
			call = append(call, i)
		case e.Kind == trace.Crash:
			old := state[e.Node]
			delete(state, e.Node)
			total.s -= old.s
			total.w -= old.w
			call = append(call, i)
		}
	}
	settle()
	return verdict(fs)
}

func fmtF(x float64) string { return strconv.FormatFloat(x, 'g', 15, 64) }

func checkPushSumError(t *trace.Trace) Result {
	state := map[int32]mass{}
	last := map[int32]int{}
	live := map[int32]bool{}
	rounds := map[int32]int{}
	var given mass    // the mass given: state changes in start and input calls
	creating := false // the current call may give mass
	var busiest int
	for i := range t.Events {
		e := &t.Events[i]
		if e.Kind.IsProcess() && e.Kind != trace.Send && e.Kind != trace.Output {
			creating = e.Kind.Begins() || e.Kind == trace.Input
		}
		switch {
		case e.Kind.Begins():
			live[e.Node] = true
			delete(state, e.Node)
		case e.Kind.Stops():
			delete(live, e.Node)
		case e.Kind == trace.Timer && e.Type == "round":
			rounds[e.Node]++
			busiest = max(busiest, rounds[e.Node])
		case e.Kind == trace.Output && e.Type == "state":
			var st struct{ S, W float64 }
			if json.Unmarshal(e.Data, &st) != nil {
				continue
			}
			if creating {
				given.s += st.S - state[e.Node].s
				given.w += st.W - state[e.Node].w
			}
			state[e.Node] = mass{st.S, st.W}
			last[e.Node] = i
		}
	}
	if given.w == 0 || len(last) == 0 {
		return Result{Status: Unknown, Detail: "no push-sum mass was given"}
	}
	if need := PushSumRounds(t.Header.Nodes); busiest < need {
		return Result{Status: Unknown, Detail: fmt.Sprintf("%d rounds at the busiest node; Kempe et al.'s bound needs about %d for ε = %g", busiest, need, PushSumEpsilon)}
	}
	truth := given.s / given.w
	nodes := make([]int32, 0, len(live))
	for p := range live {
		nodes = append(nodes, p)
	}
	slices.Sort(nodes)
	var fs []finding
	for _, p := range nodes {
		st, ok := state[p]
		if !ok {
			continue
		}
		est := st.s / st.w
		if st.w == 0 || math.Abs(est-truth) > PushSumEpsilon*max(math.Abs(truth), 1e-300) {
			fs = append(fs, finding{fmt.Sprintf("p%d ends estimating %s (s=%s, w=%s); the aggregate is %s", p, fmtF(est), fmtF(st.s), fmtF(st.w), fmtF(truth)), []int{last[p]}})
		}
	}
	return verdict(fs)
}
