package catalog

import (
	"encoding/json"
	"time"

	"github.com/cohort-go/cohort/election"
	"github.com/cohort-go/cohort/run"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

// electionMetrics measures a run against the seeds' figures: messages, the
// turnaround (the longest chain of messages sent one after another, from
// the start to the end of the election), the leader the live processes
// agree on (-1 if they do not), and for flooding the rounds it took.
func electionMetrics(f run.Finished) (map[string]float64, map[string]*float64) {
	t := f.Trace
	m := map[string]float64{"messages": float64(f.Result.Sent), "turnaround_msgs": float64(Turnaround(t))}
	leader := int64(-2)
	live := make([]bool, f.Nodes)
	last := make([]int64, f.Nodes)
	for i := range live {
		live[i], last[i] = true, -1
	}
	for _, e := range t.Events {
		switch {
		case e.Kind == trace.Crash:
			live[e.Node], last[e.Node] = false, -1
		case e.Kind == trace.Recover:
			live[e.Node] = true
		case e.Kind == trace.Output && e.Type == "elected":
			var o election.Elected
			if json.Unmarshal(e.Data, &o) == nil {
				last[e.Node] = int64(o.Leader)
			}
		}
	}
	for p := range live {
		if !live[p] {
			continue
		}
		switch {
		case leader == -2:
			leader = last[p]
		case leader != last[p]:
			leader = -1
		}
	}
	m["leader"] = float64(leader)
	return m, nil
}

// Turnaround is the length of the longest chain of messages in a trace in
// which each message is sent after the previous one was received (at the
// same process, or further along its causal past): the seed's "turnaround
// time" in message transmissions.
func Turnaround(t *trace.Trace) int {
	depth := map[int32]int{} // per process: the longest chain ending at its latest event
	sent := map[uint64]int{} // per message: the chain length it carries
	best := 0
	for _, e := range t.Events {
		switch e.Kind {
		case trace.Send:
			sent[e.Msg] = depth[e.Node] + 1
		case trace.Recv:
			if d, ok := sent[e.Msg]; ok && d > depth[e.Node] {
				depth[e.Node] = d
			}
			best = max(best, depth[e.Node])
		}
	}
	return best
}

// electAtStart is the election family's default workload: process 0 starts
// an election at 1 ms.
func electAtStart() sim.Workload {
	return sim.Script{{At: time.Millisecond, Node: 0, Input: election.Elect{}}}
}
