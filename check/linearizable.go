package check

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/cohort-go/cohort/trace"
)

// linearizableKV reads a key-value store's client history from a trace:
// an operation is called when its first "propose" input carrying
// {"client", "seq", "op", "key", ...} arrives at a server, and returns at
// the first "kv-result" output with the same client and seq, anywhere. An
// operation that never returned may or may not have taken effect; it is
// given an open end, as Jepsen does with indeterminate operations. The
// history is then checked against a sequential map, key by key, with
// Porcupine (Athalye; the algorithm of Wing and Gong 1993 with Lowe's
// improvements).
var linearizableKV = checker{
	name:  "linearizable-kv",
	doc:   "linearizability of a key-value store: every get, put and cas took effect at one instant between its first proposal and its first result, in an order a single map would have produced",
	check: checkLinearizableKV,
}

func init() { Register(linearizableKV) }

// LinearizableTimeout bounds the search for one trace; past it the result
// is Unknown.
var LinearizableTimeout = 30 * time.Second

type kvOp struct {
	Client uint64 `json:"client"`
	Seq    uint64 `json:"seq"`
	Op     string `json:"op"`
	Key    string `json:"key"`
	Value  string `json:"value"`
	Expect string `json:"expect"`
}

type kvResult struct {
	Client uint64 `json:"client"`
	Seq    uint64 `json:"seq"`
	Value  string `json:"value"`
	Found  bool   `json:"found"`
	OK     bool   `json:"ok"`
}

// kvCall is one operation of the history, as the model sees it.
type kvCall struct {
	op          kvOp
	res         *kvResult // nil: no result was seen
	call, ret   int       // their events; ret is -1 without a result
	callT, retT int64
}

func checkLinearizableKV(t *trace.Trace) Result {
	type id struct{ client, seq uint64 }
	calls := map[id]*kvCall{}
	var order []id
	for i, e := range t.Events {
		switch {
		case e.Kind == trace.Input && e.Type == "propose":
			var p struct {
				Data []byte `json:"data"`
			}
			var op kvOp
			if json.Unmarshal(e.Data, &p) != nil || json.Unmarshal(p.Data, &op) != nil || op.Client == 0 {
				continue // not a key-value operation
			}
			k := id{op.Client, op.Seq}
			if calls[k] == nil {
				calls[k] = &kvCall{op: op, call: i, ret: -1, callT: e.Time}
				order = append(order, k)
			}
		case e.Kind == trace.Output && e.Type == "kv-result":
			var r kvResult
			if err := json.Unmarshal(e.Data, &r); err != nil {
				return Result{Status: Unknown, Detail: fmt.Sprintf("event #%d: kv-result %s: %v", i, e.Data, err)}
			}
			c := calls[id{r.Client, r.Seq}]
			if c == nil {
				return Result{Status: Violated, Detail: fmt.Sprintf("a result for c%d#%d, which no client proposed", r.Client, r.Seq), Events: []int{i}}
			}
			if c.res == nil {
				c.res, c.ret, c.retT = &r, i, e.Time
			}
		}
	}
	if len(order) == 0 {
		return Result{Status: OK, Detail: "no key-value operations"}
	}
	ops := make([]porcupine.Operation, len(order))
	returned := 0
	for i, k := range order {
		c := calls[k]
		ret := int64(math.MaxInt64)
		if c.res != nil {
			ret = c.retT
			returned++
		}
		ops[i] = porcupine.Operation{ClientId: int(c.op.Client), Input: c, Call: c.callT, Output: c.res, Return: ret}
	}
	// Porcupine partitions by key itself; checking key by key here lets
	// the verdict name the key and cite its events.
	byKey := map[string][]porcupine.Operation{}
	for _, o := range ops {
		k := o.Input.(*kvCall).op.Key
		byKey[k] = append(byKey[k], o)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	deadline := time.Now().Add(LinearizableTimeout)
	for _, k := range keys {
		left := time.Until(deadline)
		if left <= 0 {
			return Result{Status: Unknown, Detail: fmt.Sprintf("the search took longer than %v", LinearizableTimeout)}
		}
		res, info := porcupine.CheckOperationsVerbose(kvModel, byKey[k], left)
		switch res {
		case porcupine.Unknown:
			return Result{Status: Unknown, Detail: fmt.Sprintf("key %q: the search took longer than %v", k, LinearizableTimeout)}
		case porcupine.Illegal:
			return kvViolation(k, byKey[k], info)
		}
	}
	return Result{Status: OK, Detail: fmt.Sprintf("%d operations on %d keys (%d returned, %d indeterminate)", len(ops), len(keys), returned, len(ops)-returned)}
}

// kvViolation explains a key whose history is not linearizable: the
// longest order the search found explains some operations; of the others,
// the one that returned first could not come next — no state reachable
// then agrees with its result. It cites that operation's call and return
// and the last operations of the order before it.
func kvViolation(key string, ops []porcupine.Operation, info porcupine.LinearizationInfo) Result {
	var longest []int
	for _, part := range info.PartialLinearizations() {
		for _, l := range part {
			if len(l) > len(longest) {
				longest = l
			}
		}
	}
	in := map[int]bool{}
	for _, i := range longest {
		in[i] = true
	}
	stuck := -1
	for i, o := range ops {
		if !in[i] && (stuck < 0 || o.Return < ops[stuck].Return) {
			stuck = i
		}
	}
	if stuck < 0 { // cannot happen for an illegal history; cite them all
		return Result{Status: Violated, Detail: fmt.Sprintf("key %q: not linearizable", key)}
	}
	describe := func(i int) string { return kvModel.DescribeOperation(ops[i].Input, ops[i].Output) }
	var ev []int
	var before []string
	for _, i := range longest[max(0, len(longest)-3):] {
		c := ops[i].Input.(*kvCall)
		ev = append(ev, c.call)
		if c.ret >= 0 {
			ev = append(ev, c.ret)
		}
		before = append(before, describe(i))
	}
	c := ops[stuck].Input.(*kvCall)
	ev = append(ev, c.call)
	if c.ret >= 0 {
		ev = append(ev, c.ret)
	}
	slices.Sort(ev)
	return Result{Status: Violated, Events: ev, Detail: fmt.Sprintf(
		"key %q: the longest order found explains %d of its %d operations (ending %s); %s cannot come next: no value the key can hold then gives that result",
		key, len(longest), len(ops), strings.Join(before, ", "), describe(stuck))}
}

// kvModel is one key of a map, as Porcupine's sequential specification:
// the state is the value, or nil for a missing key.
var kvModel = porcupine.Model{
	Init: func() any { return (*string)(nil) },
	Step: func(state, input, output any) (bool, any) {
		v := state.(*string)
		c := input.(*kvCall)
		res := output.(*kvResult)
		cur, found := "", v != nil
		if found {
			cur = *v
		}
		if res != nil && (res.Value != cur || res.Found != found) {
			return false, nil // it read or replaced another value
		}
		switch c.op.Op {
		case "put":
			return res == nil || res.OK, &c.op.Value
		case "cas":
			swap := cur == c.op.Expect
			if res != nil && res.OK != swap {
				return false, nil
			}
			if swap {
				return true, &c.op.Value
			}
			return true, v
		case "get":
			return res == nil || res.OK, v
		}
		return res == nil || !res.OK, v // an unknown operation changes nothing
	},
	Equal: func(a, b any) bool {
		x, y := a.(*string), b.(*string)
		return x == y || x != nil && y != nil && *x == *y
	},
	DescribeOperation: func(input, output any) string {
		c := input.(*kvCall)
		s := fmt.Sprintf("c%d#%d %s %s", c.op.Client, c.op.Seq, c.op.Op, c.op.Key)
		switch c.op.Op {
		case "put":
			s += fmt.Sprintf("=%q", c.op.Value)
		case "cas":
			s += fmt.Sprintf(" %q→%q", c.op.Expect, c.op.Value)
		}
		r, _ := output.(*kvResult)
		switch {
		case r == nil:
			s += " (no answer)"
		case c.op.Op == "get":
			s += fmt.Sprintf(" → %q", r.Value)
		case c.op.Op == "cas" && !r.OK:
			s += fmt.Sprintf(" failed, saw %q", r.Value)
		default:
			s += fmt.Sprintf(" (was %q)", r.Value)
		}
		return s
	},
}
