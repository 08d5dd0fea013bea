package position

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Global Network Positioning (GNP; Ng and Zhang, 2002), the landmark
// method of Tanenbaum & van Steen §6.4: a few landmark nodes play the
// satellites' part.
//
//  1. The L landmarks measure the round-trip times dᵢⱼ among themselves
//     and choose coordinates cᵢ in a d-dimensional Euclidean space that
//     minimise the squared relative error
//     Σᵢ<ⱼ ((‖cᵢ − cⱼ‖ − dᵢⱼ) / dᵢⱼ)².
//  2. A host measures its round-trip times dₖ to the landmarks and chooses
//     the x that minimises Σₖ ((‖x − cₖ‖ − dₖ) / dₖ)², with the landmarks'
//     coordinates fixed — as a GPS receiver solves for its position from
//     the satellites'.
//  3. The predicted round-trip time between two hosts is the distance
//     between their coordinates: no measurement needed.
//
// The paper minimises with the downhill simplex method; this file uses
// Levenberg–Marquardt (Gauss–Newton with damping) on the same objectives,
// which converges in tens of steps and is deterministic. The landmarks
// relax one at a time, each fitted like a host to the others, sweep after
// sweep until the error stops falling. Both problems have local minima, so
// the landmarks start from the classical multidimensional scaling of their
// times (exact when the times are Euclidean distances) and from
// Restarts−1 seeded random placements; a host starts from the landmarks'
// centroid, from beside its nearest landmark and from the linearised
// trilateration of its times; each keeps its best result.
//
// Assumptions: latencies nearly fit a low-dimensional Euclidean space
// (they do not exactly: access links add to every path, and routes break
// the triangle inequality); the landmarks are reachable by every host and
// spread over the network. Costs: L(L−1)/2 measurements among the
// landmarks, L per host, and none to predict a pair; a host's computation
// is O(iterations·L·d²) and independent of the other hosts.

// GNPConfig configures EmbedGNP.
type GNPConfig struct {
	Landmarks int    // number of landmarks, at least Dims+1; default 15
	Dims      int    // dimensions of the coordinate space; default 7
	Restarts  int    // starts of the landmarks' embedding: one from scaling, the rest random; default 2
	Seed      uint64 // chooses the landmarks and the starts
}

// DefaultGNP is GNP's configuration from the paper's experiments: 15
// landmarks in 7 dimensions.
var DefaultGNP = GNPConfig{Landmarks: 15, Dims: 7, Restarts: 2, Seed: 1}

// ErrTooFewLandmarks reports landmarks that cannot span the space.
var ErrTooFewLandmarks = errors.New("too few landmarks")

// GNP is a finished embedding.
type GNP struct {
	Landmarks []int       // the landmark nodes
	Coords    [][]float64 // every node's coordinates, milliseconds
}

// Predict returns the distance between the coordinates of i and j.
func (g *GNP) Predict(i, j int) float64 { return distance(g.Coords[i], g.Coords[j]) }

// EmbedGNP chooses cfg.Landmarks landmarks among m's nodes at random,
// embeds them, then embeds every other node from its round-trip times to
// the landmarks.
func EmbedGNP(m *Matrix, cfg GNPConfig) (*GNP, error) {
	if cfg.Dims < 1 || cfg.Dims > 20 {
		return nil, fmt.Errorf("dims %d: want 1 to 20", cfg.Dims)
	}
	if cfg.Landmarks < cfg.Dims+1 {
		return nil, fmt.Errorf("%w: %d landmarks, need at least dims+1 = %d", ErrTooFewLandmarks, cfg.Landmarks, cfg.Dims+1)
	}
	if cfg.Landmarks > m.N() {
		return nil, fmt.Errorf("%w: %d landmarks among %d nodes", ErrTooFewLandmarks, cfg.Landmarks, m.N())
	}
	if cfg.Restarts < 1 {
		return nil, fmt.Errorf("restarts %d: need at least 1", cfg.Restarts)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x676e70))
	g := &GNP{Landmarks: rng.Perm(m.N())[:cfg.Landmarks], Coords: make([][]float64, m.N())}
	land := embedLandmarks(m, g.Landmarks, cfg, rng)
	isLandmark := make([]bool, m.N())
	for k, l := range g.Landmarks {
		g.Coords[l] = land[k]
		isLandmark[l] = true
	}
	for h := range m.N() {
		if !isLandmark[h] {
			rtt := make([]float64, len(land))
			for k, l := range g.Landmarks {
				rtt[k] = m.RTT(h, l)
			}
			g.Coords[h] = embedHost(land, rtt, rng)
		}
	}
	return g, nil
}

// embedLandmarks solves step 1: coordinates for the landmarks from their
// pairwise round-trip times. From each start it relaxes the landmarks one
// at a time — each moves to its best place given the others, by the same
// fit a host makes — and sweeps until the total error stops falling.
func embedLandmarks(m *Matrix, landmarks []int, cfg GNPConfig, rng *rand.Rand) [][]float64 {
	L, d := len(landmarks), cfg.Dims
	mean := 0.0
	for i := range L {
		for j := i + 1; j < L; j++ {
			mean += m.RTT(landmarks[i], landmarks[j]) / float64(L*(L-1)/2)
		}
	}
	var best [][]float64
	bestCost := math.Inf(1)
	for r := range cfg.Restarts {
		x := make([][]float64, L)
		var flat []float64
		if r == 0 {
			flat = classicalMDS(m, landmarks, d)
		} else {
			flat = make([]float64, L*d)
			for k := range flat {
				flat[k] = mean * rng.Float64()
			}
		}
		for i := range x {
			x[i] = flat[i*d : (i+1)*d]
		}
		if cost := relaxLandmarks(m, landmarks, x); cost < bestCost {
			best, bestCost = x, cost
		}
	}
	return best
}

// relaxLandmarks improves the landmark coordinates x in place, one landmark
// at a time, and returns the final error Σᵢ<ⱼ rᵢⱼ².
func relaxLandmarks(m *Matrix, landmarks []int, x [][]float64) float64 {
	L := len(landmarks)
	others := make([][]float64, 0, L-1)
	rtt := make([]float64, 0, L-1)
	prev := math.Inf(1)
	for range 500 {
		total := 0.0
		for i := range L {
			others, rtt = others[:0], rtt[:0]
			for j := range L {
				if j != i {
					others = append(others, x[j])
					rtt = append(rtt, m.RTT(landmarks[i], landmarks[j]))
				}
			}
			total += fitPoint(x[i], others, rtt, 10)
		}
		total /= 2 // every pair was counted from both ends
		if prev-total <= 1e-8*total {
			return total
		}
		prev = total
	}
	return prev
}

// embedHost solves step 2: a host's coordinates from its round-trip times
// to the landmarks at land.
func embedHost(land [][]float64, rtt []float64, rng *rand.Rand) []float64 {
	d := len(land[0])
	centroid := make([]float64, d)
	nearest := 0
	for k, c := range land {
		for q := range d {
			centroid[q] += c[q] / float64(len(land))
		}
		if rtt[k] < rtt[nearest] {
			nearest = k
		}
	}
	// Beside the nearest landmark: at its measured distance, in a seeded
	// random direction.
	beside := make([]float64, d)
	dir := make([]float64, d)
	for q := range d {
		dir[q] = rng.NormFloat64()
	}
	norm := math.Sqrt(sumSquares(dir))
	if norm == 0 {
		dir[0], norm = 1, 1
	}
	for q := range d {
		beside[q] = land[nearest][q] + rtt[nearest]*dir[q]/norm
	}
	starts := [][]float64{centroid, beside}
	if x, ok := trilaterate(land, rtt); ok {
		starts = append(starts, x)
	}
	var best []float64
	bestCost := math.Inf(1)
	for _, x := range starts {
		if cost := fitPoint(x, land, rtt, 100); cost < bestCost {
			best, bestCost = x, cost
		}
	}
	return best
}

// fitPoint moves x, in place, to minimise Σₖ ((‖x − anchorₖ‖ − rttₖ) /
// rttₖ)² and returns that sum. The residual's gradient is the unit vector
// from the anchor to x, over rttₖ.
func fitPoint(x []float64, anchors [][]float64, rtt []float64, maxIter int) float64 {
	d := len(x)
	f := func(x, r, jac []float64) {
		for k, c := range anchors {
			dist := distance(x, c)
			r[k] = (dist - rtt[k]) / rtt[k]
			for q := range d {
				if dist == 0 {
					jac[k*d+q] = 0
				} else {
					jac[k*d+q] = (x[q] - c[q]) / dist / rtt[k]
				}
			}
		}
	}
	return levenbergMarquardt(f, x, len(anchors), maxIter)
}

// trilaterate solves ‖x − cₖ‖ = dₖ in the least-squares sense after
// subtracting the first landmark's equation from the others, which leaves
// equations linear in x:
//
//	2(cₖ − c₀)·x = d₀² − dₖ² + ‖cₖ‖² − ‖c₀‖²
//
// Exact when the round-trip times are Euclidean distances; a start for the
// relative-error fit otherwise. ok is false when the landmarks do not span
// the space.
func trilaterate(land [][]float64, rtt []float64) (x []float64, ok bool) {
	d := len(land[0])
	a := make([]float64, d*d)
	b := make([]float64, d)
	c0 := land[0]
	for k := 1; k < len(land); k++ {
		row := make([]float64, d)
		rhs := rtt[0]*rtt[0] - rtt[k]*rtt[k] + sumSquares(land[k]) - sumSquares(c0)
		for q := range d {
			row[q] = 2 * (land[k][q] - c0[q])
		}
		for i := range d {
			b[i] += row[i] * rhs
			for j := range d {
				a[i*d+j] += row[i] * row[j]
			}
		}
	}
	l, err := cholesky(a, d)
	if err != nil {
		return nil, false
	}
	return cholSolve(l, d, b), true
}

// classicalMDS places the landmarks by classical (Torgerson) scaling: the
// doubly centred matrix B = −½·J·D²·J of squared round-trip times is the
// Gram matrix X·Xᵀ of centred coordinates when the times are Euclidean
// distances, so its d largest eigenpairs give X = V·√Λ. It returns the
// coordinates row after row.
func classicalMDS(m *Matrix, landmarks []int, d int) []float64 {
	L := len(landmarks)
	sq := make([]float64, L*L)
	rowMean := make([]float64, L)
	grand := 0.0
	for i := range L {
		for j := range L {
			v := m.RTT(landmarks[i], landmarks[j])
			sq[i*L+j] = v * v
			rowMean[i] += v * v / float64(L)
		}
		grand += rowMean[i] / float64(L)
	}
	b := make([]float64, L*L)
	for i := range L {
		for j := range L {
			b[i*L+j] = -0.5 * (sq[i*L+j] - rowMean[i] - rowMean[j] + grand)
		}
	}
	values, vectors := jacobiEigen(b, L)
	order := make([]int, L)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(values[b], values[a]) })
	x := make([]float64, L*d)
	for k := range min(d, L) {
		e := order[k]
		if values[e] <= 0 {
			break
		}
		for i := range L {
			x[i*d+k] = vectors[i*L+e] * math.Sqrt(values[e])
		}
	}
	return x
}

// jacobiEigen diagonalises the symmetric n×n matrix a (row-major; it is
// overwritten) by Jacobi rotations: each rotation zeroes one off-diagonal
// entry, and sweeps repeat until the off-diagonal entries vanish. It
// returns the eigenvalues and the eigenvectors as the columns of a
// row-major matrix.
func jacobiEigen(a []float64, n int) (values, vectors []float64) {
	v := make([]float64, n*n)
	for i := range n {
		v[i*n+i] = 1
	}
	for range 100 {
		off, diag := 0.0, 0.0
		for p := range n {
			diag += a[p*n+p] * a[p*n+p]
			for q := p + 1; q < n; q++ {
				off += a[p*n+q] * a[p*n+q]
			}
		}
		if off <= 1e-30*diag || off == 0 {
			break
		}
		for p := range n {
			for q := p + 1; q < n; q++ {
				if a[p*n+q] == 0 {
					continue
				}
				// The rotation angle that zeroes a[p][q].
				theta := (a[q*n+q] - a[p*n+p]) / (2 * a[p*n+q])
				t := 1 / (math.Abs(theta) + math.Sqrt(theta*theta+1))
				if theta < 0 {
					t = -t
				}
				c := 1 / math.Sqrt(t*t+1)
				s := t * c
				for k := range n { // a·G
					akp, akq := a[k*n+p], a[k*n+q]
					a[k*n+p], a[k*n+q] = c*akp-s*akq, s*akp+c*akq
				}
				for k := range n { // Gᵀ·a
					apk, aqk := a[p*n+k], a[q*n+k]
					a[p*n+k], a[q*n+k] = c*apk-s*aqk, s*apk+c*aqk
				}
				for k := range n { // v·G
					vkp, vkq := v[k*n+p], v[k*n+q]
					v[k*n+p], v[k*n+q] = c*vkp-s*vkq, s*vkp+c*vkq
				}
			}
		}
	}
	values = make([]float64, n)
	for i := range n {
		values[i] = a[i*n+i]
	}
	return values, v
}
