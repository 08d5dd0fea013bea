package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Dist is a distribution of durations (message latency, think time).
// Samples are never negative.
type Dist interface {
	Sample(r *rand.Rand) time.Duration
	Mean() time.Duration
	String() string // the form ParseDist reads back
}

// Constant is a fixed duration.
type Constant time.Duration

// Uniform is uniform on [Min, Max].
type Uniform struct{ Min, Max time.Duration }

// Exponential has the given mean (memoryless; Poisson arrivals).
type Exponential struct{ MeanD time.Duration }

// Normal is a normal distribution truncated at zero.
type Normal struct{ MeanD, Stddev time.Duration }

// LogNormal is exp(N(ln Median, Sigma²)): heavy-tailed, like real RTTs.
type LogNormal struct {
	Median time.Duration
	Sigma  float64
}

func (c Constant) Sample(*rand.Rand) time.Duration { return time.Duration(c) }
func (c Constant) Mean() time.Duration             { return time.Duration(c) }
func (c Constant) String() string                  { return "const:" + time.Duration(c).String() }

func (u Uniform) Sample(r *rand.Rand) time.Duration {
	if u.Max <= u.Min {
		return u.Min
	}
	return u.Min + time.Duration(r.Int64N(int64(u.Max-u.Min)+1))
}
func (u Uniform) Mean() time.Duration { return (u.Min + u.Max) / 2 }
func (u Uniform) String() string      { return "uniform:" + u.Min.String() + "," + u.Max.String() }

func (e Exponential) Sample(r *rand.Rand) time.Duration {
	return time.Duration(r.ExpFloat64() * float64(e.MeanD))
}
func (e Exponential) Mean() time.Duration { return e.MeanD }
func (e Exponential) String() string      { return "exp:" + e.MeanD.String() }

func (n Normal) Sample(r *rand.Rand) time.Duration {
	return time.Duration(max(0, float64(n.MeanD)+r.NormFloat64()*float64(n.Stddev)))
}

// Mean is the mean before truncation; for Stddev well below the mean the two agree.
func (n Normal) Mean() time.Duration { return n.MeanD }
func (n Normal) String() string      { return "normal:" + n.MeanD.String() + "," + n.Stddev.String() }

func (l LogNormal) Sample(r *rand.Rand) time.Duration {
	return time.Duration(float64(l.Median) * math.Exp(r.NormFloat64()*l.Sigma))
}
func (l LogNormal) Mean() time.Duration {
	return time.Duration(float64(l.Median) * math.Exp(l.Sigma*l.Sigma/2))
}
func (l LogNormal) String() string {
	return "lognormal:" + l.Median.String() + "," + strconv.FormatFloat(l.Sigma, 'g', -1, 64)
}

// ParseDist reads a distribution: "1ms" or "const:1ms", "uniform:1ms,3ms",
// "exp:2ms", "normal:5ms,1ms", "lognormal:5ms,0.5" (median, sigma).
func ParseDist(s string) (Dist, error) {
	name, args, found := strings.Cut(strings.TrimSpace(s), ":")
	if !found {
		d, err := parseDuration(name)
		if err != nil {
			return nil, fmt.Errorf("distribution %q: %w", s, err)
		}
		return Constant(d), nil
	}
	parts := strings.Split(args, ",")
	want := map[string]int{"const": 1, "uniform": 2, "exp": 1, "normal": 2, "lognormal": 2}
	n, ok := want[name]
	if !ok {
		return nil, fmt.Errorf("distribution %q: unknown kind %q (want const, uniform, exp, normal or lognormal)", s, name)
	}
	if len(parts) != n {
		return nil, fmt.Errorf("distribution %q: %s takes %d parameter(s), got %d", s, name, n, len(parts))
	}
	var ds []time.Duration
	for i, p := range parts {
		if name == "lognormal" && i == 1 {
			break
		}
		d, err := parseDuration(p)
		if err != nil {
			return nil, fmt.Errorf("distribution %q: %w", s, err)
		}
		ds = append(ds, d)
	}
	switch name {
	case "const":
		return Constant(ds[0]), nil
	case "uniform":
		if ds[1] < ds[0] {
			return nil, fmt.Errorf("distribution %q: max %v is below min %v", s, ds[1], ds[0])
		}
		return Uniform{ds[0], ds[1]}, nil
	case "exp":
		return Exponential{ds[0]}, nil
	case "normal":
		return Normal{ds[0], ds[1]}, nil
	default:
		sigma, err := strconv.ParseFloat(strings.TrimSpace(parts[1]), 64)
		if err != nil || sigma < 0 || math.IsNaN(sigma) || math.IsInf(sigma, 0) {
			return nil, fmt.Errorf("distribution %q: sigma %q is not a non-negative number", s, parts[1])
		}
		return LogNormal{ds[0], sigma}, nil
	}
}

func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q (want e.g. 250us, 1ms, 2s)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("negative duration %q", s)
	}
	return d, nil
}
