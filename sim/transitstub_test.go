package sim_test

import (
	"testing"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
)

// TestTransitStub: the network is the seed's alone; latencies are
// symmetric and positive; a path runs from the source's host to the
// destination's, link to link; the cost of naive unicast has RDP 1.
func TestTransitStub(t *testing.T) {
	a, b := sim.NewTransitStub(100, 7), sim.NewTransitStub(100, 7)
	c := sim.NewTransitStub(100, 8)
	differs := false
	for x := range proc.ID(100) {
		for y := range proc.ID(100) {
			l := a.Latency(x, y)
			if l != b.Latency(x, y) {
				t.Fatalf("seed 7 twice: %v and %v from p%d to p%d", l, b.Latency(x, y), x, y)
			}
			differs = differs || l != c.Latency(x, y)
			if l != a.Latency(y, x) || (x != y && l <= 0) {
				t.Fatalf("latency p%d→p%d %v, back %v", x, y, l, a.Latency(y, x))
			}
			p := a.Path(x, y)
			if x == y {
				continue
			}
			for i := 1; i < len(p); i++ {
				prev, cur := p[i-1], p[i]
				if prev.A != cur.A && prev.A != cur.B && prev.B != cur.A && prev.B != cur.B {
					t.Fatalf("p%d→p%d: links %v and %v do not meet", x, y, prev, cur)
				}
			}
		}
	}
	if !differs {
		t.Error("seeds 7 and 8 give the same network")
	}
	members := []proc.ID{3, 9, 27, 81}
	u := a.Cost(0, sim.Unicast(0, members), members)
	for _, r := range u.RDP {
		if r != 1 {
			t.Fatalf("unicast RDP %v, want 1", r)
		}
	}
	if u.StressMax < 1 || u.StressMax > len(members) {
		t.Fatalf("unicast stress %d for %d members", u.StressMax, len(members))
	}
}
