package sim_test

import (
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
)

// TestPlaneIsAMetricOfCities: the plane's latencies are symmetric, zero
// to oneself, at least the two access links (2 ms) between two hosts, at
// most the continent's diagonal and two access links (and the hosts'
// offsets from their cities), obey the triangle inequality, and are
// drawn from the seed alone.
func TestPlaneIsAMetricOfCities(t *testing.T) {
	const n = 300
	p, q := sim.NewPlane(n, 7), sim.NewPlane(n, 7)
	other := sim.NewPlane(n, 8)
	differs := false
	most := time.Duration(float64(sim.PlaneSide)*1.415) + 10*time.Millisecond + 10*time.Millisecond // the diagonal, 2·5 ms of access, a host's offset
	for a := range proc.ID(n) {
		if p.Latency(a, a) != 0 {
			t.Fatalf("latency of p%d to itself: %v", a, p.Latency(a, a))
		}
		for b := a + 1; b < n; b += 7 {
			l := p.Latency(a, b)
			if l != p.Latency(b, a) || l != q.Latency(a, b) {
				t.Fatalf("p%d–p%d: %v, back %v, same seed %v", a, b, l, p.Latency(b, a), q.Latency(a, b))
			}
			if l < 2*time.Millisecond || l > most {
				t.Fatalf("p%d–p%d: %v, outside [2ms, %v]", a, b, l, most)
			}
			differs = differs || l != other.Latency(a, b)
			c := (a + b) % n
			if c != a && c != b && l > p.Latency(a, c)+p.Latency(c, b) {
				t.Fatalf("p%d–p%d: %v, longer than through p%d", a, b, l, c)
			}
		}
	}
	if !differs {
		t.Error("another seed drew the same plane")
	}
}
