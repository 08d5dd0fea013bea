package lab

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/cohort-go/cohort/election"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/scenario"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

// electionMetrics measures a run against the textbooks' figures: messages,
// the turnaround (the longest chain of messages sent one after another,
// from the start to the end of the election), the leader the live processes
// agree on (-1 if they do not), and for flooding the rounds it took.
//
// The election measured is the one the first Elect input starts: messages
// before it (an algorithm that elects when it starts, as bully does) are
// not counted.
func electionMetrics(f Finished) (map[string]float64, map[string]*float64) {
	t := f.Trace
	from := 0
	for i, e := range t.Events {
		if e.Kind == trace.Input && e.Type == "elect" {
			from = i
			break
		}
	}
	tail := &trace.Trace{Header: t.Header, Events: t.Events[from:]}
	sends := 0
	for _, e := range tail.Events {
		if e.Kind == trace.Send {
			sends++
		}
	}
	m := map[string]float64{"messages": float64(sends), "turnaround_msgs": float64(Turnaround(tail))}
	leader := int64(-2)
	live := make([]bool, f.Nodes)
	last := make([]int64, f.Nodes)
	for i := range live {
		live[i], last[i] = true, -1
	}
	for _, e := range t.Events {
		switch {
		case e.Kind.Stops():
			live[e.Node], last[e.Node] = false, -1
		case e.Kind == trace.Recover || e.Kind == trace.Join:
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
// same process, or further along its causal past): Coulouris et al.'s
// "turnaround time" in message transmissions.
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

// electionCases are the textbooks' constructed cases for elections.
var electionCases = []compareCase{
	{
		// The ring's worst case: the starter's anticlockwise neighbour holds
		// the largest id; N−1 messages reach it, N go round with its id,
		// N announce it.
		name: "worst", algos: []string{"ring"}, metrics: []string{"messages", "turnaround_msgs"},
		run: func(f Family, a proc.Algorithm, n int, seed uint64) (*Report, error) {
			return electionRun(f, a, n, seed, nil, 0)
		},
		theory: func(_ string, n int, metric string) *float64 {
			v := float64(3*n - 1)
			return &v
		},
		notes: map[string]string{"messages": "3N − 1 (Coulouris et al.): the election message goes N − 1 hops to the largest id, N more with it, and the elected message N"},
	},
	{
		// Bully, best case: the highest crashed and the second highest
		// notices: it sends COORDINATOR to the N − 2 others at once.
		name: "best", algos: []string{"bully"}, metrics: []string{"messages", "turnaround_msgs"},
		run: func(f Family, a proc.Algorithm, n int, seed uint64) (*Report, error) {
			return electionRun(f, a, n, seed, []string{fmt.Sprintf("crash %d at %v", n-1, crashAfterStart)}, proc.ID(n-2))
		},
		theory: func(_ string, n int, metric string) *float64 {
			v := float64(n - 2)
			if metric == "turnaround_msgs" {
				v = 1
			}
			return &v
		},
		notes: map[string]string{"messages": "N − 2 COORDINATOR messages, sent in parallel: one message of turnaround (Coulouris et al.)"},
	},
	{
		// Bully, worst case: the lowest notices; every process above it
		// holds an election of its own: O(N²) messages.
		name: "worst", algos: []string{"bully"}, metrics: []string{"messages", "turnaround_msgs"},
		run: func(f Family, a proc.Algorithm, n int, seed uint64) (*Report, error) {
			return electionRun(f, a, n, seed, []string{fmt.Sprintf("crash %d at %v", n-1, crashAfterStart)}, 0)
		},
		notes: map[string]string{"messages": "O(N²) (Coulouris et al.): each process above the starter holds its own election"},
	},
}

// Bully elects when its processes start; the cases let that election
// settle, crash the coordinator, and start the measured election later.
const (
	crashAfterStart = 30 * time.Millisecond
	electAt         = 40 * time.Millisecond
)

// electionRun elects with n processes on a constant-latency network, with
// the given faults, starter asking at electAt.
func electionRun(f Family, a proc.Algorithm, n int, seed uint64, faults []string, starter proc.ID) (*Report, error) {
	o := f.Options(a)
	sc, err := scenario.Parse("comparison", []byte(fmt.Sprintf("nodes: %d\nnetwork:\n  latency: %s\n  fifo: true\n", n, compareLatency)))
	if err != nil {
		return nil, err
	}
	o.Scenario, o.Seed, o.Faults = sc, &seed, faults
	o.Workload = sim.Script{{At: electAt, Node: starter, Input: election.Elect{}}}
	o.Deadline = time.Duration(20*n*n+1000) * compareLatency
	r, _, err := Sim(o)
	return r, err
}
