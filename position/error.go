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
