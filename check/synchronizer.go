package check

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/cohort-go/cohort/trace"
)

// The synchronizer checkers read the synchronizer family's contract from
// a trace (package synchronizer): a "round" output {"round": r} is the
// process beginning round r; a message of round r is labelled "[r<r>] "
// followed by the algorithm's own label.
//
//   - sync-safe: the synchronizer's safety property (Awerbuch 1985): no
//     process receives a message of round r after it has begun round
//     r+1. The counterexample is the late receipt, the round output
//     before it, and the message's send.
//   - sync-rounds: every process begins rounds 1, 2, 3 ... one after
//     another, and every process that began a round ends the run in the
//     same last round as the others (none is left behind).

var syncSafe = checker{
	name:  "sync-safe",
	doc:   "synchronizer safety: no process receives a message of round r after it has begun round r+1",
	check: checkSyncSafe,
}

var syncRounds = checker{
	name:  "sync-rounds",
	doc:   "synchronizer progress: every process begins rounds 1, 2, 3 ... in turn, and all end in the same last round",
	check: checkSyncRounds,
}

func init() {
	Register(syncSafe)
	Register(syncRounds)
}

// roundOf reads a "round" output's round; ok is false if it has none.
func roundOf(e *trace.Event) (int, bool) {
	var o struct {
		Round *int `json:"round"`
	}
	if json.Unmarshal(e.Data, &o) != nil || o.Round == nil {
		return 0, false
	}
	return *o.Round, true
}

// messageRound reads the round of a message from its label "[r3] ...".
func messageRound(label string) (int, bool) {
	rest, ok := strings.CutPrefix(label, "[r")
	if !ok {
		return 0, false
	}
	digits, _, ok := strings.Cut(rest, "]")
	if !ok {
		return 0, false
	}
	r, err := strconv.Atoi(digits)
	return r, err == nil
}

func checkSyncSafe(t *trace.Trace) Result {
	n := t.Header.Nodes
	round := make([]int, n)
	began := make([]int, n) // the output that began each process's round
	sent := map[uint64]int{}
	rounds := 0
	for i := range t.Events {
		e := &t.Events[i]
		if e.Node < 0 || int(e.Node) >= n {
			continue
		}
		switch {
		case e.Kind == trace.Output && e.Type == "round":
			r, ok := roundOf(e)
			if !ok {
				return Result{Status: Unknown, Detail: fmt.Sprintf("a round output without a round (event #%d)", i), Events: []int{i}}
			}
			round[e.Node], began[e.Node] = r, i
			rounds++
		case e.Kind == trace.Send:
			if _, ok := messageRound(e.Label); ok {
				sent[e.Msg] = i
			}
		case e.Kind == trace.Recv:
			r, ok := messageRound(e.Label)
			if !ok || round[e.Node] <= r {
				continue
			}
			ev := []int{began[e.Node], i}
			if s, ok := sent[e.Msg]; ok {
				ev = append([]int{s}, ev...)
			}
			return Result{Status: Violated, Events: ev, Detail: fmt.Sprintf("p%d received a message of round %d from p%d in round %d (it began round %d before the message arrived)",
				e.Node, r, e.Peer, round[e.Node], round[e.Node])}
		}
	}
	if rounds == 0 {
		return Result{Status: Unknown, Detail: "no process began a round"}
	}
	return Result{Status: OK}
}

func checkSyncRounds(t *trace.Trace) Result {
	n := t.Header.Nodes
	round := make([]int, n)
	last := make([]int, n)
	for i := range last {
		last[i] = -1
	}
	for i := range t.Events {
		e := &t.Events[i]
		if e.Kind != trace.Output || e.Type != "round" || e.Node < 0 || int(e.Node) >= n {
			continue
		}
		r, ok := roundOf(e)
		if !ok {
			return Result{Status: Unknown, Detail: fmt.Sprintf("a round output without a round (event #%d)", i), Events: []int{i}}
		}
		if r != round[e.Node]+1 {
			ev := []int{i}
			if last[e.Node] >= 0 {
				ev = []int{last[e.Node], i}
			}
			return Result{Status: Violated, Events: ev, Detail: fmt.Sprintf("p%d began round %d after round %d", e.Node, r, round[e.Node])}
		}
		round[e.Node], last[e.Node] = r, i
	}
	hi, lo := -1, -1
	for p := range n {
		if last[p] < 0 {
			continue
		}
		if hi < 0 || round[p] > round[hi] {
			hi = p
		}
		if lo < 0 || round[p] < round[lo] {
			lo = p
		}
	}
	if hi < 0 {
		return Result{Status: Unknown, Detail: "no process began a round"}
	}
	for p := range n {
		if last[p] < 0 {
			return Result{Status: Violated, Events: []int{last[hi]}, Detail: fmt.Sprintf("p%d never began a round; p%d reached round %d", p, hi, round[hi])}
		}
	}
	if round[lo] != round[hi] {
		ev := []int{last[lo], last[hi]}
		if ev[0] > ev[1] {
			ev[0], ev[1] = ev[1], ev[0]
		}
		return Result{Status: Violated, Events: ev, Detail: fmt.Sprintf("p%d ended in round %d, p%d in round %d", lo, round[lo], hi, round[hi])}
	}
	return Result{Status: OK}
}
