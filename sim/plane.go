package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Plane is a latency model of hosts in cities on a continent: Cities
// points drawn uniformly in a square of PlaneSide, each host near a city
// (a normal offset of 1 ms per axis) with an access link of its own
// (1–5 ms, uniform). The one-way latency between two hosts is the
// distance between their points plus both access links — a Euclidean
// plane with heights, the very model of Vivaldi's coordinates (Dabek et
// al. 2004), so coordinates can fit it exactly: the easy case, where a
// transit-stub network (TransitStub) is the hard one. It holds O(hosts)
// and scales to any run.
type Plane struct {
	x, y, access []float64 // ms
}

// The continent: a square of side PlaneSide, PlaneCities cities.
const (
	PlaneSide   = 60 * time.Millisecond
	PlaneCities = 24
)

// NewPlane draws hosts hosts with the seed.
func NewPlane(hosts int, seed uint64) *Plane {
	rng := rand.New(rand.NewPCG(seed, 0x706c616e))
	side := float64(PlaneSide) / float64(time.Millisecond)
	var cx, cy [PlaneCities]float64
	for i := range cx {
		cx[i], cy[i] = side*rng.Float64(), side*rng.Float64()
	}
	p := &Plane{x: make([]float64, hosts), y: make([]float64, hosts), access: make([]float64, hosts)}
	for h := range hosts {
		c := rng.IntN(PlaneCities)
		p.x[h] = cx[c] + rng.NormFloat64()
		p.y[h] = cy[c] + rng.NormFloat64()
		p.access[h] = 1 + 4*rng.Float64()
	}
	return p
}

// Latency is the one-way latency from host a to host b.
func (p *Plane) Latency(a, b proc.ID) time.Duration {
	if a == b {
		return 0
	}
	ms := math.Hypot(p.x[a]-p.x[b], p.y[a]-p.y[b]) + p.access[a] + p.access[b]
	return time.Duration(ms * float64(time.Millisecond)).Round(10 * time.Microsecond)
}

// String describes the network (sim.PairLatency).
func (p *Plane) String() string {
	return fmt.Sprintf("plane: %d hosts in %d cities", len(p.x), PlaneCities)
}
