package overlay_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/cohort-go/cohort/overlay"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
	"github.com/cohort-go/cohort/trace"
)

// proximityRun builds an overlay of n Pastry nodes by joins on a
// transit-stub network, asks lookups, then has every node show its
// tables.
func proximityRun(t testing.TB, n int, seed uint64, cfg overlay.Config) (*simtest.Recorded, *sim.TransitStub) {
	topo := sim.NewTransitStub(n, seed)
	maxLat := topo.MaxLatency()
	cfg.HopTimeout = 2*maxLat + 10*time.Millisecond
	gap := 10*time.Millisecond + 24*maxLat
	fs, s := joins(n, 300, gap, seed)
	show := time.Duration(n)*gap + 10*time.Second
	for i := range n {
		s = append(s, sim.TimedInput{At: show, Node: proc.ID(i), Input: overlay.ShowTables{}})
	}
	c := sim.Config{Nodes: n, Seed: seed, Faults: fs, Workload: s, New: overlay.Build("pastry", cfg)}
	c.Network.Pairwise = topo
	return simtest.Run(t, "overlay", c), topo
}

// entryLatency is the mean latency from a node to its routing-table
// entries, over every entry the tables shown hold; best is the same for
// the nearest candidate of each entry among all the nodes.
func entryLatency(t testing.TB, tr *trace.Trace, topo *sim.TransitStub, n int) (mean, best time.Duration) {
	var sum, opt time.Duration
	k := 0
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.Kind != trace.Output || e.Type != "tables" {
			continue
		}
		var tb overlay.Tables
		if err := json.Unmarshal(e.Data, &tb); err != nil {
			t.Fatal(err)
		}
		self := proc.ID(e.Node)
		for _, en := range tb.Table {
			sum += topo.Latency(self, en.Node)
			b := time.Duration(1 << 62)
			for c := range n {
				g := overlay.NodeID(proc.ID(c))
				if proc.ID(c) != self && overlay.SharedPrefix(g, overlay.NodeID(self)) == en.Row && g.Digit(en.Row) == en.Col {
					b = min(b, topo.Latency(self, proc.ID(c)))
				}
			}
			opt += b
			k++
		}
	}
	if k == 0 {
		t.Fatal("no routing-table entry shown")
	}
	return sum / time.Duration(k), opt / time.Duration(k)
}

// TestProximityTables: on a transit-stub network, the routing-table
// entries chosen by proximity are much nearer than those of tables that
// keep the first candidate — most of the way to the nearest candidate of
// each entry among all the nodes — and every lookup still reaches the key's
// home (overlay-lookup) in no more hops than before.
func TestProximityTables(t *testing.T) {
	seeds := simtest.Seeds(4, 2)
	if raceEnabled {
		seeds = 1
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		n := []int{100, 200}[seed%2]
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			plain, topo := proximityRun(t, n, seed, overlay.FailureFree)
			near, _ := proximityRun(t, n, seed, proximate(overlay.FailureFree))
			near.Hold(t, "overlay-lookup")
			pm, _ := entryLatency(t, plain.Trace, topo, n)
			nm, best := entryLatency(t, near.Trace, topo, n)
			ph, nh := mean(hops(plain.Trace)), mean(hops(near.Trace))
			t.Logf("%d nodes: entries %v away without proximity, %v with (the nearest candidates: %v); hops %.2f, %.2f",
				n, pm, nm, best, ph, nh)
			// Of the improvement the nearest candidates would make, most is
			// made (a slot's nearest candidate may never be heard of).
			if float64(pm-nm) < 0.7*float64(pm-best) {
				t.Errorf("entries %v away with proximity, %v without, %v at best: want 70%% of the way", nm, pm, best)
			}
			if nh > ph+0.15 {
				t.Errorf("hops %.2f with proximity, %.2f without", nh, ph)
			}
		})
	}
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(max(len(xs), 1))
}
