package check

import (
	"encoding/json"
	"fmt"

	"github.com/cohort-go/cohort/trace"
)

// The RPC checkers read the rpc family's outputs (package rpc): a client's
// "call" {"client", "epoch", "seq", "sem"} when a call begins and "return"
// {..., "ok", "err"} when it ends; the server's "exec" {"client", "epoch",
// "seq", "sem"} each time it begins to run a call's procedure. They count
// the executions of each call, by the call's semantics:
//
//   - rpc-maybe: a maybe call runs at most once (and need not run);
//   - rpc-at-least-once: an at-least-once call that returned a result ran
//     at least once before it returned;
//   - rpc-at-most-once: an at-most-once call runs at most once, whatever
//     the network and the server's crashes did.
//
// None of them asks for exactly once: no RPC system can promise it where
// the server may crash (Tanenbaum & van Steen §8.3.2).
var (
	rpcMaybe = checker{
		name:  "rpc-maybe",
		doc:   "every maybe call's procedure runs at most once",
		check: func(t *trace.Trace) Result { return checkAtMostOnce(t, "maybe") },
	}
	rpcAtLeastOnce = checker{
		name:  "rpc-at-least-once",
		doc:   "every at-least-once call that returned a result ran at least once before it returned",
		check: checkAtLeastOnce,
	}
	rpcAtMostOnce = checker{
		name:  "rpc-at-most-once",
		doc:   "every at-most-once call's procedure runs at most once",
		check: func(t *trace.Trace) Result { return checkAtMostOnce(t, "at-most-once") },
	}
)

func init() {
	Register(rpcMaybe)
	Register(rpcAtLeastOnce)
	Register(rpcAtMostOnce)
}

type rpcCallID struct {
	Client int32  `json:"client"`
	Epoch  uint64 `json:"epoch"`
	Seq    uint64 `json:"seq"`
}

func (c rpcCallID) String() string { return fmt.Sprintf("p%d.e%d#%d", c.Client, c.Epoch, c.Seq) }

type rpcOutput struct {
	rpcCallID
	Sem string `json:"sem"`
	OK  bool   `json:"ok"`
}

// rpcCall is one call as the trace shows it.
type rpcCall struct {
	sem    string
	call   int   // its call output; -1 if none
	execs  []int // its exec outputs
	ret    int   // its return output; -1 if none
	retOK  bool
	execAt int // executions before its return
}

// readRPC collects the calls of a trace, in the order they first appear.
func readRPC(t *trace.Trace) ([]rpcCallID, map[rpcCallID]*rpcCall, error) {
	var order []rpcCallID
	calls := map[rpcCallID]*rpcCall{}
	get := func(id rpcCallID, sem string) *rpcCall {
		c := calls[id]
		if c == nil {
			c = &rpcCall{sem: sem, call: -1, ret: -1}
			calls[id] = c
			order = append(order, id)
		}
		return c
	}
	for i := range t.Events {
		e := &t.Events[i]
		if e.Kind != trace.Output || (e.Type != "call" && e.Type != "return" && e.Type != "exec") {
			continue
		}
		var o rpcOutput
		if err := json.Unmarshal(e.Data, &o); err != nil {
			return nil, nil, fmt.Errorf("event #%d: %s output: %v", i, e.Type, err)
		}
		c := get(o.rpcCallID, o.Sem)
		switch e.Type {
		case "call":
			c.call = i
		case "exec":
			c.execs = append(c.execs, i)
		case "return":
			if c.ret < 0 {
				c.ret, c.retOK, c.execAt = i, o.OK, len(c.execs)
			}
		}
	}
	return order, calls, nil
}

func checkAtMostOnce(t *trace.Trace, sem string) Result {
	order, calls, err := readRPC(t)
	if err != nil {
		return unknown(err)
	}
	var fs []finding
	for _, id := range order {
		c := calls[id]
		if c.sem != sem || len(c.execs) <= 1 {
			continue
		}
		events := append([]int(nil), c.execs...)
		if c.call >= 0 {
			events = append(events, c.call)
		}
		fs = append(fs, finding{fmt.Sprintf("%s call %s ran %d times", sem, id, len(c.execs)), events})
	}
	return verdict(fs)
}

func checkAtLeastOnce(t *trace.Trace) Result {
	order, calls, err := readRPC(t)
	if err != nil {
		return unknown(err)
	}
	var fs []finding
	for _, id := range order {
		c := calls[id]
		if c.sem != "at-least-once" || c.ret < 0 || !c.retOK || c.execAt > 0 {
			continue
		}
		events := []int{c.ret}
		if c.call >= 0 {
			events = append(events, c.call)
		}
		fs = append(fs, finding{fmt.Sprintf("at-least-once call %s returned a result but never ran", id), events})
	}
	return verdict(fs)
}
