package position

import (
	"math"
	"slices"
)

// Predictor predicts the round-trip time between two nodes from their
// coordinates, in milliseconds.
type Predictor interface {
	Predict(i, j int) float64
}

// Accuracy summarises the relative errors |predicted − actual| / actual of
// a set of node pairs.
type Accuracy struct {
	Pairs  int     // pairs measured
	Median float64 // median relative error
	P90    float64 // 90th percentile
}

// Evaluate compares p's predictions with m over every pair of distinct
// nodes.
func Evaluate(m *Matrix, p Predictor) Accuracy {
	errs := make([]float64, 0, len(m.rtt))
	for i := range m.n {
		for j := i + 1; j < m.n; j++ {
			actual := m.rtt[m.tri(i, j)]
			errs = append(errs, math.Abs(p.Predict(i, j)-actual)/actual)
		}
	}
	return summarise(errs)
}

// summarise sorts errs and reads its median and 90th percentile (nearest
// rank).
func summarise(errs []float64) Accuracy {
	if len(errs) == 0 {
		return Accuracy{}
	}
	slices.Sort(errs)
	return Accuracy{Pairs: len(errs), Median: quantile(errs, 0.5), P90: quantile(errs, 0.9)}
}

// quantile returns the q-quantile of sorted, by nearest rank: the smallest
// value with at least a fraction q of the values at or below it.
func quantile(sorted []float64, q float64) float64 {
	k := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(k, 0)]
}

// NodeErrors returns each node's median relative error |predicted −
// actual| / actual over its pairs with every other node: where in the
// network the coordinates are wrong.
func NodeErrors(m *Matrix, p Predictor) []float64 {
	out := make([]float64, m.n)
	errs := make([]float64, 0, m.n-1)
	for i := range m.n {
		errs = errs[:0]
		for j := range m.n {
			if j != i {
				actual := m.RTT(i, j)
				errs = append(errs, math.Abs(p.Predict(i, j)-actual)/actual)
			}
		}
		out[i] = summarise(errs).Median
	}
	return out
}

// Align places the points est (one per node, of any dimension d) in the
// space of the points truth (of dimension k) by the rigid motion that
// fits them best in least squares: a translation and an orthogonal map Q
// (d×k, QᵀQ = I if d ≥ k) — the orthogonal Procrustes problem (Schönemann,
// 1966), solved as Q = M (MᵀM)^-½ with M = Xᵀ Y, X and Y the centred points.
// Coordinates are only defined up to such a motion, so it is how to draw
// an estimate beside the truth; there is no scaling, so every distance
// drawn is the estimate's own (when d ≤ k).
func Align(est, truth [][]float64) [][]float64 {
	n := len(est)
	if n == 0 || len(truth) != n {
		return nil
	}
	d, k := len(est[0]), len(truth[0])
	mean := func(pts [][]float64, dim int) []float64 {
		c := make([]float64, dim)
		for _, p := range pts {
			for a := range dim {
				c[a] += p[a] / float64(n)
			}
		}
		return c
	}
	ce, ct := mean(est, d), mean(truth, k)
	m := make([]float64, d*k) // M = Xᵀ Y, row-major d×k
	for i := range n {
		for a := range d {
			for b := range k {
				m[a*k+b] += (est[i][a] - ce[a]) * (truth[i][b] - ct[b])
			}
		}
	}
	// Q = U Vᵀ of M's singular value decomposition: M (MᵀM)^-½, or
	// (MMᵀ)^-½ M when d < k; directions M does not span are dropped.
	var q []float64
	if d >= k {
		q = matMul(m, invSqrt(matMul(transpose(m, d, k), m, k, d, k), k), d, k, k)
	} else {
		q = matMul(invSqrt(matMul(m, transpose(m, d, k), d, k, d), d), m, d, d, k)
	}
	out := make([][]float64, n)
	for i := range n {
		out[i] = slices.Clone(ct)
		for a := range d {
			for b := range k {
				out[i][b] += (est[i][a] - ce[a]) * q[a*k+b]
			}
		}
	}
	return out
}

// transpose returns the transpose of the r×c row-major matrix a.
func transpose(a []float64, r, c int) []float64 {
	t := make([]float64, r*c)
	for i := range r {
		for j := range c {
			t[j*r+i] = a[i*c+j]
		}
	}
	return t
}

// matMul returns the r×c product of a (r×n) and b (n×c), row-major.
func matMul(a, b []float64, r, n, c int) []float64 {
	out := make([]float64, r*c)
	for i := range r {
		for l := range n {
			for j := range c {
				out[i*c+j] += a[i*n+l] * b[l*c+j]
			}
		}
	}
	return out
}

// invSqrt returns S^-½ of the symmetric positive semi-definite n×n matrix
// s, the inverse taken only on the eigenvalues that are not (nearly) zero.
func invSqrt(s []float64, n int) []float64 {
	values, vectors := jacobiEigen(slices.Clone(s), n)
	top := slices.Max(values)
	out := make([]float64, n*n)
	for e, v := range values {
		if v <= top*1e-12 || v <= 0 {
			continue
		}
		f := 1 / math.Sqrt(v)
		for i := range n {
			for j := range n {
				out[i*n+j] += f * vectors[i*n+e] * vectors[j*n+e]
			}
		}
	}
	return out
}
