package position

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Vivaldi (Dabek, Cox, Kaashoek and Morris, 2004), the decentralised method
// of Tanenbaum & van Steen §6.4, based on the nodes' mutual distances: no
// landmarks; every node keeps a coordinate and moves it a little after each
// round-trip time it measures, as if the nodes were joined by springs whose
// rest lengths are the measured times. A node i that measures rtt to a node
// j, which reports its coordinate xⱼ and its error estimate eⱼ, does:
//
//	w  = eᵢ / (eᵢ + eⱼ)                      // trust in this sample
//	eₛ = |‖xᵢ − xⱼ‖ − rtt| / rtt              // this sample's relative error
//	eᵢ = eₛ·ce·w + eᵢ·(1 − ce·w)             // moving average of the error
//	δ  = cc·w                                // adaptive timestep
//	xᵢ = xᵢ + δ·(rtt − ‖xᵢ − xⱼ‖)·u(xᵢ − xⱼ)  // move along the spring's force
//
// A node sure of itself (small eᵢ) moves little for an unsure neighbour, and
// an unsure node moves a lot for a sure one: new nodes find their place
// fast without shaking the settled ones. With height vectors a coordinate
// is a Euclidean point plus a height, the node's access delay, which every
// path to it pays:
//
//	[x, xₕ] − [y, yₕ] = [x − y, xₕ + yₕ]    ‖[x, xₕ]‖ = ‖x‖ + xₕ
//
// so a spring that is too long (rtt above the distance) also raises both
// heights' share, and one too short lowers it; heights stay at or above
// MinHeight. Two nodes at one point push apart in a random direction.
//
// Assumptions: round-trip times roughly fit a Euclidean space plus heights;
// a node samples neighbours near and far (here Neighbors random ones).
// Costs: one measurement and O(Dims) work per sample; no node holds more
// than its own coordinate and error; a node's coordinate goes with every
// reply, so the measurements cost no extra messages in a system that
// already exchanges them.

// VivaldiConfig configures a Vivaldi run.
type VivaldiConfig struct {
	Dims      int     // Euclidean dimensions; default 2
	Height    bool    // use height vectors; default true
	CC        float64 // cc: the timestep's scale, in (0, 1]; default 0.25
	CE        float64 // ce: the error average's weight, in (0, 1]; default 0.25
	Neighbors int     // each node samples from this many random other nodes; default 32
	Seed      uint64  // chooses the neighbours, the samples and the random directions
}

// DefaultVivaldi uses the paper's constants: cc = ce = 0.25, two dimensions
// and a height.
var DefaultVivaldi = VivaldiConfig{Dims: 2, Height: true, CC: 0.25, CE: 0.25, Neighbors: 32, Seed: 1}

// MinHeight is the least height of a node, milliseconds: a height of 0
// would never grow, since both heights scale a spring's push on them.
const MinHeight = 0.01

// Coord is a Vivaldi coordinate, in milliseconds.
type Coord struct {
	Vec    []float64
	Height float64 // 0 without height vectors
}

// DistanceTo returns the predicted round-trip time ‖a.Vec − b.Vec‖ +
// a.Height + b.Height.
func (a Coord) DistanceTo(b Coord) float64 { return distance(a.Vec, b.Vec) + a.Height + b.Height }

// VivaldiNode is one node's state.
type VivaldiNode struct {
	Coord Coord
	Err   float64 // the node's estimate of its relative error; starts at 1
}

// NewVivaldiNode returns a node at the origin, unsure of itself.
func NewVivaldiNode(cfg VivaldiConfig) VivaldiNode {
	n := VivaldiNode{Coord: Coord{Vec: make([]float64, cfg.Dims)}, Err: 1}
	if cfg.Height {
		n.Coord.Height = MinHeight
	}
	return n
}

// Update applies one sample: the node measured rtt (milliseconds) to a
// node at remote whose error estimate is remoteErr. rng supplies the
// direction when the two coordinates coincide.
func (n *VivaldiNode) Update(cfg VivaldiConfig, remote Coord, remoteErr, rtt float64, rng *rand.Rand) {
	dist := n.Coord.DistanceTo(remote)
	w := n.Err / (n.Err + remoteErr)
	es := math.Abs(dist-rtt) / rtt
	n.Err = es*cfg.CE*w + n.Err*(1-cfg.CE*w)
	delta := cfg.CC * w
	force := delta * (rtt - dist) // how far to move, along u(xᵢ − xⱼ)

	x := n.Coord.Vec
	gap := distance(x, remote.Vec)
	if gap < 1e-9 {
		// One point: push apart in a random direction, heights untouched.
		dir := randomDirection(rng, len(x))
		for k := range x {
			x[k] += force * dir[k]
		}
		return
	}
	// u(xᵢ − xⱼ) = [xᵢ − xⱼ, hᵢ + hⱼ] / (‖xᵢ − xⱼ‖ + hᵢ + hⱼ).
	hs := n.Coord.Height + remote.Height
	norm := gap + hs
	for k := range x {
		x[k] += force * (x[k] - remote.Vec[k]) / norm
	}
	if cfg.Height {
		n.Coord.Height = math.Max(n.Coord.Height+force*hs/norm, MinHeight)
	}
}

func randomDirection(rng *rand.Rand, d int) []float64 {
	v := make([]float64, d)
	for {
		for k := range v {
			v[k] = rng.NormFloat64()
		}
		if n := math.Sqrt(sumSquares(v)); n > 1e-9 {
			for k := range v {
				v[k] /= n
			}
			return v
		}
	}
}

// Vivaldi runs the algorithm over a latency matrix in rounds: in each
// round every node, in order, measures the round-trip time to one of its
// neighbours chosen at random and updates its coordinate. Nodes see each
// other's latest coordinates, as they would in a system where replies carry
// them.
type Vivaldi struct {
	Nodes []VivaldiNode

	cfg       VivaldiConfig
	m         *Matrix
	neighbors [][]int
	rng       *rand.Rand
	rounds    int
}

// NewVivaldi starts every node at the origin and draws its neighbours.
func NewVivaldi(m *Matrix, cfg VivaldiConfig) (*Vivaldi, error) {
	if cfg.Dims < 1 || cfg.Dims > 20 {
		return nil, fmt.Errorf("dims %d: want 1 to 20", cfg.Dims)
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"cc", cfg.CC}, {"ce", cfg.CE}} {
		if !(p.v > 0 && p.v <= 1) {
			return nil, fmt.Errorf("%s %v: want a number in (0, 1]", p.name, p.v)
		}
	}
	if cfg.Neighbors < 1 {
		return nil, fmt.Errorf("neighbors %d: need at least 1", cfg.Neighbors)
	}
	v := &Vivaldi{cfg: cfg, m: m, rng: rand.New(rand.NewPCG(cfg.Seed, 0x76697661))}
	n := m.N()
	k := min(cfg.Neighbors, n-1)
	v.Nodes = make([]VivaldiNode, n)
	v.neighbors = make([][]int, n)
	for i := range n {
		v.Nodes[i] = NewVivaldiNode(cfg)
		chosen := make(map[int]bool, k) // membership only; order is in the slice
		for len(v.neighbors[i]) < k {
			j := v.rng.IntN(n)
			if j != i && !chosen[j] {
				chosen[j] = true
				v.neighbors[i] = append(v.neighbors[i], j)
			}
		}
	}
	return v, nil
}

// Round lets every node take one sample.
func (v *Vivaldi) Round() {
	for i := range v.Nodes {
		nb := v.neighbors[i]
		j := nb[v.rng.IntN(len(nb))]
		v.Nodes[i].Update(v.cfg, v.Nodes[j].Coord, v.Nodes[j].Err, v.m.RTT(i, j), v.rng)
	}
	v.rounds++
}

// Run plays rounds more rounds.
func (v *Vivaldi) Run(rounds int) {
	for range rounds {
		v.Round()
	}
}

// Rounds returns the number of rounds played.
func (v *Vivaldi) Rounds() int { return v.rounds }

// Predict returns the distance between the coordinates of i and j.
func (v *Vivaldi) Predict(i, j int) float64 { return v.Nodes[i].Coord.DistanceTo(v.Nodes[j].Coord) }
