package lab

import (
	"encoding/json"
	"fmt"

	"github.com/cohort-go/cohort/election"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/synchronizer"
	"github.com/cohort-go/cohort/trace"
)

// syncControl are the synchronizers' own messages of a round (TOPO, the
// initialization, and ACK, one per message of the algorithm, are counted
// apart).
var syncControl = map[string]bool{"safe": true, "pulse": true, "cluster-safe": true, "ready": true}

// synchronizerMetrics measures a synchronized run from its trace, per
// round synchronized (the rounds after the first: R − 1 when the
// processes reached round R):
//
//   - rounds: R; elected_round: the round in which the processes output
//     their leader (theory: D + 1 = N, flooding's D = N − 1); leader;
//   - control_per_round: SAFE, PULSE, CLUSTER-SAFE and READY messages
//     (theory: α 2|E|, β 2(N−1), γ 4(N − clusters) + 2·preferred);
//     acks_per_round and payload_per_round: the algorithm's messages and
//     their acknowledgements; init_messages: TOPO;
//   - max_delay_ms: the longest delay of any message of the run, the
//     unit of round_time_delays: the time from the last process's start
//     of round 2 to the last one's of round R, per round (theory, a bound:
//     α 3, β 2 + 2·height, γ 3 + 4·height); round_time_mean_delays: the
//     same in mean delays;
//   - edges, clusters, height, preferred: the structure the processes
//     computed (α: edges from the degrees).
func synchronizerMetrics(f Finished) (map[string]float64, map[string]*float64) {
	m := map[string]float64{}
	th := map[string]*float64{"control_per_round": nil, "round_time_delays": nil, "elected_round": nil}
	t := f.Trace
	if t == nil {
		return m, th
	}
	n := f.Nodes
	started := make([]int64, 0, 8) // by round: when the last process began it
	sentAt := map[uint64]int64{}
	var maxDelay int64
	var control, acks, payload, topo, degrees float64
	var lay *synchronizer.Layout
	leader, electedRound := int64(-2), 0
	round := make([]int, n)
	for i := range t.Events {
		e := &t.Events[i]
		switch e.Kind {
		case trace.Send:
			sentAt[e.Msg] = e.Time
			switch {
			case syncControl[e.Type]:
				control++
			case e.Type == "ack":
				acks++
			case e.Type == "topo":
				topo++
			default:
				payload++
			}
		case trace.Recv:
			if s, ok := sentAt[e.Msg]; ok {
				maxDelay = max(maxDelay, e.Time-s)
			}
		case trace.Output:
			if e.Node < 0 || int(e.Node) >= n {
				continue
			}
			switch e.Type {
			case "round":
				var o synchronizer.Round
				if json.Unmarshal(e.Data, &o) != nil || o.Round < 1 {
					continue
				}
				round[e.Node] = o.Round
				for len(started) < o.Round {
					started = append(started, 0)
				}
				started[o.Round-1] = max(started[o.Round-1], e.Time)
			case "layout":
				var o synchronizer.Layout
				if json.Unmarshal(e.Data, &o) == nil {
					degrees += float64(o.Degree)
					if lay == nil {
						lay = &o
					}
				}
			case "elected":
				var o election.Elected
				if json.Unmarshal(e.Data, &o) == nil {
					electedRound = max(electedRound, round[e.Node])
					switch {
					case leader == -2:
						leader = int64(o.Leader)
					case leader != int64(o.Leader):
						leader = -1
					}
				}
			}
		}
	}
	r := len(started)
	m["rounds"] = float64(r)
	m["elected_round"] = float64(electedRound)
	m["leader"] = float64(leader)
	m["init_messages"] = topo
	d1 := float64(n)
	th["elected_round"] = &d1
	if r >= 2 {
		per := float64(r - 1)
		m["control_per_round"] = control / per
		m["acks_per_round"] = acks / per
		m["payload_per_round"] = payload / per
	}
	m["max_delay_ms"] = float64(maxDelay) / 1e6
	if r >= 3 && maxDelay > 0 {
		per := float64(started[r-1]-started[1]) / float64(r-2)
		m["round_time_delays"] = per / float64(maxDelay)
		if f.MeanLatency > 0 {
			m["round_time_mean_delays"] = per / float64(f.MeanLatency)
		}
	}
	if lay == nil {
		return m, th
	}
	edges := float64(lay.Edges)
	if edges == 0 {
		edges = degrees / 2
	}
	m["edges"] = edges
	var msgs, delays float64
	switch f.Algo {
	case "alpha":
		msgs, delays = 2*edges, 3
	case "beta":
		msgs, delays = 2*float64(n-1), 2+2*float64(lay.Height)
	case "gamma":
		msgs, delays = 4*float64(n-lay.Clusters)+2*float64(lay.Preferred), 3+4*float64(lay.Height)
	default:
		return m, th
	}
	if f.Algo != "alpha" {
		m["clusters"], m["height"], m["preferred"] = float64(lay.Clusters), float64(lay.Height), float64(lay.Preferred)
	}
	th["control_per_round"], th["round_time_delays"] = &msgs, &delays
	return m, th
}

// synchronizerCases: flooding under each synchronizer on a ring, a grid
// and random graphs of least degree 3 and 8 (dense), with a constant delay of 1 ms —
// every delay is the largest, so a round's time in delays is exact — and
// on a grid with exponential delays (mean 1 ms, no bound), where the
// formulas are bounds in units of the largest delay of the run.
var synchronizerCases = func() []compareCase {
	var cases []compareCase
	for _, c := range []struct {
		name, topo string
		degree     int
		latency    sim.Dist
	}{
		{"ring", "ring", 0, sim.Constant(compareLatency)},
		{"grid", "grid", 0, sim.Constant(compareLatency)},
		{"random", "random", 3, sim.Constant(compareLatency)},
		{"dense", "random", 8, sim.Constant(compareLatency)},
		{"grid-exp", "grid", 0, sim.Exponential{MeanD: compareLatency}},
	} {
		cases = append(cases, compareCase{
			name:    c.name,
			metrics: []string{"control_per_round", "acks_per_round", "round_time_delays", "height", "clusters", "elected_round"},
			skip: func(n int) string {
				if c.degree >= n {
					return fmt.Sprintf("a random graph of least degree %d needs more than %d nodes", c.degree, c.degree)
				}
				return ""
			},
			run: func(f Family, a proc.Algorithm, n int, seed uint64) (*Report, error) {
				o := f.Options(a)
				reorder := 0.0
				o.Nodes, o.Seed, o.Topology, o.Degree = n, &seed, c.topo, c.degree
				o.Network = NetworkFlags{Latency: c.latency, Reorder: &reorder}
				r, _, err := Sim(o)
				return r, err
			},
			notes: map[string]string{
				"control_per_round": "exact: α 2|E|, β 2(N−1), γ 4(N − clusters) + 2·preferred edges (≤ kN)",
				"acks_per_round":    "one per message of flooding: 2|E|",
				"round_time_delays": "theory is the worst case in units of the largest delay of the run: α 3, β 2 + 2·height, γ 3 + 4·height (γ's phases overlap across clusters, so with a constant delay it comes in under)",
				"elected_round":     "flooding's D + 1 with D = N − 1, as in lockstep",
			},
		})
	}
	return cases
}()
