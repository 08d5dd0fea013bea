package position

import (
	"errors"
	"math"
)

// errNotPositiveDefinite reports a normal matrix JᵀJ that has no Cholesky
// factor: the least-squares problem does not determine its unknowns.
var errNotPositiveDefinite = errors.New("matrix is singular")

// cholesky factors the symmetric n×n matrix a (row-major) as L·Lᵀ and
// returns L. A pivot at or below 1e-12 of the largest diagonal entry counts
// as zero: the matrix is singular, or so close that the solution would be
// noise.
func cholesky(a []float64, n int) ([]float64, error) {
	maxDiag := 0.0
	for i := range n {
		maxDiag = math.Max(maxDiag, math.Abs(a[i*n+i]))
	}
	tol := 1e-12 * maxDiag
	l := make([]float64, n*n)
	for j := range n {
		s := a[j*n+j]
		for k := range j {
			s -= l[j*n+k] * l[j*n+k]
		}
		if !(s > tol) {
			return nil, errNotPositiveDefinite
		}
		d := math.Sqrt(s)
		l[j*n+j] = d
		for i := j + 1; i < n; i++ {
			s := a[i*n+j]
			for k := range j {
				s -= l[i*n+k] * l[j*n+k]
			}
			l[i*n+j] = s / d
		}
	}
	return l, nil
}

// cholSolve solves L·Lᵀ·x = b for x, given the factor L of cholesky.
func cholSolve(l []float64, n int, b []float64) []float64 {
	y := make([]float64, n)
	for i := range n {
		s := b[i]
		for k := range i {
			s -= l[i*n+k] * y[k]
		}
		y[i] = s / l[i*n+i]
	}
	x := make([]float64, n)
	for i := n - 1; i >= 0; i-- {
		s := y[i]
		for k := i + 1; k < n; k++ {
			s -= l[k*n+i] * x[k]
		}
		x[i] = s / l[i*n+i]
	}
	return x
}

// residuals evaluates a least-squares problem at x: it fills r (one entry
// per residual) and jac (row-major, len(r)×len(x)).
type residuals func(x, r, jac []float64)

// levenbergMarquardt minimises ½‖r(x)‖² from the start x, in place, and
// returns the final sum of squares ‖r‖². It is Gauss–Newton with a damping
// term λ: each step solves (JᵀJ + λI)·δ = −Jᵀr; a step that lowers the
// cost is taken and λ shrinks (towards Gauss–Newton), a step that does not
// is refused and λ grows (towards short gradient steps). The damping also
// keeps the step defined where JᵀJ is singular. It stops after maxIter
// steps, or when a step improves the cost by less than one part in 10⁸.
// Deterministic: no randomness.
func levenbergMarquardt(f residuals, x []float64, m, maxIter int) float64 {
	n := len(x)
	r := make([]float64, m)
	jac := make([]float64, m*n)
	rTry := make([]float64, m)
	jacTry := make([]float64, m*n)
	xTry := make([]float64, n)
	a := make([]float64, n*n)
	g := make([]float64, n)
	damped := make([]float64, n*n)

	f(x, r, jac)
	cost := sumSquares(r)
	lambda, floor := -1.0, 0.0
	for range maxIter {
		clear(a)
		clear(g)
		for i := range m {
			row := jac[i*n : (i+1)*n]
			for j := range n {
				g[j] += row[j] * r[i]
				for k := range n {
					a[j*n+k] += row[j] * row[k]
				}
			}
		}
		if lambda < 0 {
			trace := 0.0
			for j := range n {
				trace += a[j*n+j]
			}
			lambda = 1e-3 * trace / float64(n)
			if lambda == 0 {
				return cost
			}
			// Never below this, so that a singular JᵀJ still factors.
			floor = 1e-9 * trace / float64(n)
		}
		improved := false
		for range 30 {
			copy(damped, a)
			for j := range n {
				damped[j*n+j] += lambda
			}
			l, err := cholesky(damped, n)
			if err != nil {
				lambda *= 4
				continue
			}
			for j := range n {
				g[j] = -g[j]
			}
			step := cholSolve(l, n, g)
			for j := range n {
				g[j] = -g[j]
				xTry[j] = x[j] + step[j]
			}
			f(xTry, rTry, jacTry)
			if c := sumSquares(rTry); c < cost {
				gain := cost - c
				copy(x, xTry)
				r, rTry = rTry, r
				jac, jacTry = jacTry, jac
				cost = c
				lambda = math.Max(lambda/3, floor)
				improved = true
				if gain <= 1e-8*c {
					return cost
				}
				break
			}
			lambda *= 4
		}
		if !improved {
			return cost
		}
	}
	return cost
}

func sumSquares(r []float64) float64 {
	s := 0.0
	for _, v := range r {
		s += v * v
	}
	return s
}
