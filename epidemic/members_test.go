package epidemic_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
)

// TestOpenGroupLearnsEveryMember: in an open group (a live cluster's),
// every member knows the three founders and nobody else; five join, at
// different times, each through one member present then. By the end every
// member has learnt every other — a joiner from its contact's answer or a
// piggybacked update, a founder from the joiner's announcement or hearsay
// — and the map written meanwhile is whole everywhere. Over seeds, with
// loss and jitter.
func TestOpenGroupLearnsEveryMember(t *testing.T) {
	const n, founders = 8, 3
	a := algorithm(t, "members", epidemic.Params{Open: true, Founders: founders})
	for seed := uint64(1); seed <= uint64(simtest.Seeds(20, 4)); seed++ {
		var faults []sim.Fault
		for j := founders; j < n; j++ {
			faults = append(faults, sim.Fault{Kind: sim.Join, Node: proc.ID(j), At: time.Duration(j*int(seed%7+1)) * 7 * time.Millisecond})
		}
		net := sim.Network{Latency: sim.Exponential{MeanD: time.Millisecond}, Loss: 0.05}
		r := simtest.Run(t, "gossip", sim.Config{Nodes: n, Seed: seed, New: a.New, Network: net, Faults: faults,
			Workload: writes(n), Deadline: 2 * time.Second})
		r.Hold(t, "integrity", "gossip-convergence", "gossip-no-resurrection")
		known := learnt(t, r)
		for i := range proc.ID(n) {
			for j := range proc.ID(n) {
				if i == j || j < founders {
					continue // every member knows the founders from the start
				}
				if !known[i][j] {
					t.Errorf("seed %d: p%d never learnt of p%d", seed, i, j)
				}
			}
		}
	}
}

// TestOpenGroupStaysClosedToStrangers: a founder knows only the founders;
// an ID it has never heard of is never probed, so nothing is suspected or
// declared dead in a group of three whose ID space is larger.
func TestOpenGroupStaysClosedToStrangers(t *testing.T) {
	a := algorithm(t, "members", epidemic.Params{Open: true, Founders: 3})
	r := simtest.Run(t, "gossip", sim.Config{Nodes: 3, Seed: 1, New: func(id proc.ID, _ int) proc.Process { return a.New(id, 1000) },
		Deadline: time.Second})
	if k := r.Count("suspect") + r.Count("dead"); k != 0 {
		t.Fatalf("%d suspicions or deaths among three live founders", k)
	}
}

// TestPartitionHeals: an open group of eight cut in two for 40 periods —
// long enough that each side declares the other dead — then healed. Each
// side writes meanwhile. Afterwards every member holds every other alive
// again (the periodic exchange with a member held dead finds it; its
// obituary is refuted at a higher incarnation) and the two sides' maps
// have merged. Over seeds, with jitter and loss.
func TestPartitionHeals(t *testing.T) {
	const n = 8
	a := algorithm(t, "members", epidemic.Params{Open: true, Founders: n})
	for seed := uint64(1); seed <= 10; seed++ {
		net := sim.Network{Latency: sim.Exponential{MeanD: time.Millisecond}, Loss: 0.02,
			Partitions: []sim.Partition{{Groups: [][]proc.ID{{0, 1, 2, 3}, {4, 5, 6, 7}}, From: 50 * time.Millisecond, To: 450 * time.Millisecond}}}
		r := simtest.Run(t, "gossip", sim.Config{Nodes: n, Seed: seed, New: a.New, Network: net,
			Workload: sim.Script{
				{At: 100 * time.Millisecond, Node: 1, Input: epidemic.Put{Key: "left", Value: "1"}},
				{At: 120 * time.Millisecond, Node: 6, Input: epidemic.Put{Key: "right", Value: "2"}},
			},
			Deadline: 3 * time.Second})
		r.Hold(t, "integrity", "gossip-convergence")
		// The last verdict each member reached about each other.
		last := map[[2]proc.ID]string{}
		for _, e := range r.Trace.Events {
			var m struct {
				Member proc.ID `json:"member"`
			}
			switch e.Type {
			case "alive", "suspect", "dead":
				if json.Unmarshal(e.Data, &m) == nil {
					last[[2]proc.ID{proc.ID(e.Node), m.Member}] = e.Type
				}
			}
		}
		healed := 0
		for k, v := range last {
			if v == "dead" {
				t.Errorf("seed %d: p%d ends holding p%d dead", seed, k[0], k[1])
			}
			if v == "alive" {
				healed++ // an alive after a suspicion or a death
			}
		}
		if healed == 0 {
			t.Errorf("seed %d: nobody was suspected across a 400 ms partition", seed)
		}
	}
}
