package position

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// GPS positioning (Tanenbaum & van Steen §6.4; the textbook also treats GPS
// under physical clocks, §6.1). A satellite broadcasts its position and
// stamps each message with the time on its atomic clock. A receiver that
// hears satellite i at time T on its own clock knows the signal travelled
//
//	ρᵢ = c·(T − Tᵢ)
//
// metres — but the receiver's clock is off by an unknown bias b, so ρᵢ is
// a pseudorange, the true distance plus the same c·b for every satellite:
//
//	ρᵢ = √((xᵢ−x)² + (yᵢ−y)² + (zᵢ−z)²) + c·b
//
// Four unknowns (x, y, z, b) need four satellites; more give a
// least-squares fix. Locate solves the equations by Gauss–Newton: from a
// guess (the Earth's centre, b = 0) it linearises each equation — the row
// of the Jacobian is the unit vector from satellite to receiver and a 1 for
// c·b — solves the normal equations (JᵀJ)·δ = −Jᵀr and repeats until the
// step is below a micrometre, in five or six iterations.
//
// The receiver's clock bias costs nothing, because it is an unknown: a
// receiver whose clock is a whole second wrong finds its position to the
// same millimetre as one with a perfect clock. An error in the timestamps
// themselves (a satellite clock off by ε, a late measurement) is another
// matter: it moves ρᵢ by c·ε — 30 cm per nanosecond, 300 m per
// microsecond — and the fix by about c·ε·PDOP, where the dilution of
// precision PDOP = √(trace of the position block of (JᵀJ)⁻¹) measures how
// well the satellites' directions pin the position down (2 to 3 for a good
// sky, large when the satellites crowd together). LocateWithClock solves
// the three position unknowns only, trusting the receiver's clock; there a
// bias b moves the fix by about c·b.
//
// Costs: each iteration is O(n) for n satellites plus a 4×4 solve.
// Assumptions: straight-line propagation at c in an Earth-centred frame
// that does not rotate during the flight (no atmosphere, no relativity, no
// Sagnac effect): the synthetic constellation of NewGPSScenario obeys the
// same physics, so a noise-free fix is exact to rounding.

// SpeedOfLight is c in metres per second.
const SpeedOfLight = 299_792_458.0

// EarthRadius is the radius, in metres, of the sphere on which
// NewGPSScenario places receivers.
const EarthRadius = 6_371_000.0

// OrbitRadius is the radius, in metres, of the satellites' orbits: about
// 20,200 km above the surface, as in the GPS constellation (Tanenbaum &
// van Steen: "a height of approximately 20,000 km").
const OrbitRadius = EarthRadius + 20_200_000.0

// Vec3 is a point or a vector in an Earth-centred frame, in metres.
type Vec3 [3]float64

// Sub returns a − b.
func (a Vec3) Sub(b Vec3) Vec3 { return Vec3{a[0] - b[0], a[1] - b[1], a[2] - b[2]} }

// Norm returns the length of a.
func (a Vec3) Norm() float64 { return math.Sqrt(a[0]*a[0] + a[1]*a[1] + a[2]*a[2]) }

// Signal is what a receiver learns from one satellite's message.
type Signal struct {
	Sat      Vec3    // where the satellite was when it sent, metres
	Sent     float64 // send time by the satellite's clock (its timestamp), seconds
	Received float64 // arrival time by the receiver's clock, seconds
}

// Pseudorange returns c·(Received − Sent): the distance to the satellite
// plus c times the receiver's clock bias, in metres.
func (s Signal) Pseudorange() float64 { return SpeedOfLight * (s.Received - s.Sent) }

// Fix is a receiver's solved position.
type Fix struct {
	Pos        Vec3    // metres, Earth-centred
	Bias       float64 // the receiver's clock reads true time + Bias, seconds
	GDOP       float64 // geometric dilution of precision: position and clock
	PDOP       float64 // position dilution of precision: fix error ≈ PDOP × range error
	Iterations int     // Gauss–Newton steps taken
}

// Errors of Locate, for errors.Is.
var (
	ErrTooFewSatellites = errors.New("too few satellites")
	ErrSingularGeometry = errors.New("singular satellite geometry")
	ErrNoConvergence    = errors.New("no convergence")
	ErrBadSignal        = errors.New("bad signal")
)

// Locate solves a receiver's position and clock bias from the signals of
// four or more satellites. It fails with ErrTooFewSatellites for fewer than
// four, ErrBadSignal for a NaN or infinite value (naming it), and
// ErrSingularGeometry when the satellites' directions do not determine the
// four unknowns — two satellites at the same place, or all of them at the
// same elevation around the receiver, on a cone, where a shift along the
// cone's axis and a clock change cancel exactly.
func Locate(signals []Signal) (Fix, error) { return solveGPS(signals, true, 0) }

// LocateWithClock solves the position only, trusting that the receiver's
// clock reads true time + bias. Three satellites suffice. With the wrong
// bias the fix is wrong by about c·(error in bias): this is what solving
// for the bias in Locate avoids.
func LocateWithClock(signals []Signal, bias float64) (Fix, error) {
	return solveGPS(signals, false, bias)
}

func solveGPS(signals []Signal, solveBias bool, bias float64) (Fix, error) {
	unknowns := 3
	if solveBias {
		unknowns = 4
	}
	if len(signals) < unknowns {
		return Fix{}, fmt.Errorf("%w: %d, need at least %d for %d unknowns", ErrTooFewSatellites, len(signals), unknowns, unknowns)
	}
	for i, s := range signals {
		for k, v := range []float64{s.Sat[0], s.Sat[1], s.Sat[2], s.Sent, s.Received} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				field := [...]string{"x", "y", "z", "sent", "received"}[k]
				return Fix{}, fmt.Errorf("%w: satellite %d: %s = %v", ErrBadSignal, i, field, v)
			}
		}
	}
	if math.IsNaN(bias) || math.IsInf(bias, 0) {
		return Fix{}, fmt.Errorf("%w: clock bias = %v", ErrBadSignal, bias)
	}

	// Unknowns: x, y, z in metres and cb = c·b, also in metres, so that
	// every column of the Jacobian has the same scale. Start from the
	// Earth's centre, or from Bancroft's direct solution when solving for
	// the bias: from the centre, a large bias or a poor sky can lead
	// Gauss–Newton astray.
	x := Vec3{}
	cb := SpeedOfLight * bias
	if solveBias {
		if x0, cb0, ok := bancroft(signals); ok {
			x, cb = x0, cb0
		}
	}
	n := len(signals)
	jac := make([]float64, n*unknowns)
	r := make([]float64, n)
	a := make([]float64, unknowns*unknowns)
	g := make([]float64, unknowns)
	lastStep := math.Inf(1)
	for iter := 1; iter <= 50; iter++ {
		for i, s := range signals {
			d := x.Sub(s.Sat)
			dist := d.Norm()
			if dist == 0 {
				return Fix{}, fmt.Errorf("%w: the guess reached satellite %d", ErrSingularGeometry, i)
			}
			// rᵢ = ‖x − satᵢ‖ + c·b − ρᵢ; its gradient is the unit vector
			// from the satellite to x, and 1 for c·b.
			r[i] = dist + cb - s.Pseudorange()
			row := jac[i*unknowns : (i+1)*unknowns]
			for k := range 3 {
				row[k] = d[k] / dist
			}
			if solveBias {
				row[3] = 1
			}
		}
		clear(a)
		clear(g)
		for i := range n {
			row := jac[i*unknowns : (i+1)*unknowns]
			for j := range unknowns {
				g[j] -= row[j] * r[i]
				for k := range unknowns {
					a[j*unknowns+k] += row[j] * row[k]
				}
			}
		}
		l, err := cholesky(a, unknowns)
		if err != nil {
			return Fix{}, fmt.Errorf("%w: the %d satellites' directions do not determine %d unknowns", ErrSingularGeometry, n, unknowns)
		}
		step := cholSolve(l, unknowns, g)
		for k := range 3 {
			x[k] += step[k]
		}
		if solveBias {
			cb += step[3]
		}
		// Settled: a step below a micrometre, or a step below a millimetre
		// that no longer shrinks — the rounding of the data, magnified by a
		// poor geometry, keeps it from getting smaller.
		size := math.Sqrt(sumSquares(step))
		if size < 1e-6 || size < 1e-3 && size > lastStep/2 {
			gdop, pdop := dilution(l, unknowns)
			return Fix{Pos: x, Bias: cb / SpeedOfLight, GDOP: gdop, PDOP: pdop, Iterations: iter}, nil
		}
		lastStep = size
	}
	return Fix{}, fmt.Errorf("%w: Gauss–Newton did not settle in 50 iterations", ErrNoConvergence)
}

// bancroft solves the pseudorange equations in closed form (Bancroft,
// 1985), for a starting point. Squaring ‖satᵢ − x‖ = ρᵢ − c·b gives, with
// the Lorentz product ⟨a, b⟩ = a₁b₁ + a₂b₂ + a₃b₃ − a₄b₄, aᵢ = (satᵢ, ρᵢ)
// and u = (x, c·b),
//
//	⟨aᵢ, u⟩ = ½⟨aᵢ, aᵢ⟩ + ½⟨u, u⟩
//
// linear in u but for the one scalar λ = ½⟨u, u⟩. Solving the linear part
// by least squares, u = M(p + λq) with M = diag(1, 1, 1, −1), and λ solves
// the quadratic ½⟨q,q⟩λ² + (⟨p,q⟩ − 1)λ + ½⟨p,p⟩ = 0. Of the two roots it
// keeps the one whose position is nearer the Earth's surface; the other
// is usually far out in space. ok is false when the equations give no
// real root.
func bancroft(signals []Signal) (x Vec3, cb float64, ok bool) {
	lorentz := func(a, b [4]float64) float64 { return a[0]*b[0] + a[1]*b[1] + a[2]*b[2] - a[3]*b[3] }
	var bb [16]float64
	var bAlpha, bOne [4]float64
	for _, s := range signals {
		a := [4]float64{s.Sat[0], s.Sat[1], s.Sat[2], s.Pseudorange()}
		alpha := lorentz(a, a) / 2
		for j := range 4 {
			bAlpha[j] += a[j] * alpha
			bOne[j] += a[j]
			for k := range 4 {
				bb[j*4+k] += a[j] * a[k]
			}
		}
	}
	l, err := cholesky(bb[:], 4)
	if err != nil {
		return x, 0, false
	}
	p, q := [4]float64(cholSolve(l, 4, bAlpha[:])), [4]float64(cholSolve(l, 4, bOne[:]))
	qa, qb, qc := lorentz(q, q)/2, lorentz(p, q)-1, lorentz(p, p)/2
	disc := qb*qb - 4*qa*qc
	if disc < 0 || qa == 0 {
		return x, 0, false
	}
	best := math.Inf(1)
	for _, lambda := range []float64{(-qb + math.Sqrt(disc)) / (2 * qa), (-qb - math.Sqrt(disc)) / (2 * qa)} {
		pos := Vec3{p[0] + lambda*q[0], p[1] + lambda*q[1], p[2] + lambda*q[2]}
		if off := math.Abs(pos.Norm() - EarthRadius); off < best {
			best, x, cb = off, pos, -(p[3] + lambda*q[3])
			ok = true
		}
	}
	return x, cb, ok
}

// dilution returns GDOP = √trace((JᵀJ)⁻¹) and PDOP, the same over the
// three position unknowns, from the Cholesky factor of JᵀJ.
func dilution(l []float64, n int) (gdop, pdop float64) {
	for k := range n {
		e := make([]float64, n)
		e[k] = 1
		v := cholSolve(l, n, e)[k] // (JᵀJ)⁻¹ₖₖ
		gdop += v
		if k < 3 {
			pdop += v
		}
	}
	return math.Sqrt(gdop), math.Sqrt(pdop)
}

// GPSConfig describes a synthetic fix: a receiver at a random place on the
// Earth's surface and satellites at random places in its sky.
type GPSConfig struct {
	// Satellites heard by the receiver; at least 4 for Locate. Default 8.
	Satellites int
	// Bias is the receiver clock's error, seconds: it reads true time +
	// Bias. Zero is a perfect clock.
	Bias float64
	// Noise is the standard deviation, in seconds, of an independent
	// error in each satellite's timestamp. Zero is exact timestamps.
	Noise float64
	// MaskDeg is the lowest elevation, in degrees above the horizon, of a
	// satellite the receiver hears. Default 10.
	MaskDeg float64
	// Seed chooses the receiver, the satellites and the noise.
	Seed uint64
}

// DefaultGPS is the default synthetic fix: 8 satellites, a receiver clock
// a millisecond off (300 km of pseudorange), exact timestamps.
var DefaultGPS = GPSConfig{Satellites: 8, Bias: 1e-3, MaskDeg: 10, Seed: 1}

// GPSScenario is a synthetic fix: the true receiver and what it hears.
type GPSScenario struct {
	Receiver Vec3
	Signals  []Signal
}

// NewGPSScenario places a receiver uniformly on the Earth's surface and
// cfg.Satellites satellites uniformly on the orbit sphere above its
// elevation mask. Each satellite sends at the true time that makes its
// signal arrive at true time 70 ms; its timestamp is off by Normal(0,
// Noise); the receiver's clock reads 70 ms + Bias on arrival.
func NewGPSScenario(cfg GPSConfig) (GPSScenario, error) {
	if cfg.Satellites < 1 {
		return GPSScenario{}, fmt.Errorf("satellites %d: need at least 1", cfg.Satellites)
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"bias", cfg.Bias}, {"noise", cfg.Noise}, {"mask", cfg.MaskDeg}} {
		if math.IsNaN(p.v) || math.IsInf(p.v, 0) {
			return GPSScenario{}, fmt.Errorf("%s %v: want a finite number", p.name, p.v)
		}
	}
	if cfg.Noise < 0 {
		return GPSScenario{}, fmt.Errorf("noise %v: must not be negative", cfg.Noise)
	}
	if cfg.MaskDeg < 0 || cfg.MaskDeg >= 60 {
		return GPSScenario{}, fmt.Errorf("mask %v°: want 0 to 60 degrees", cfg.MaskDeg)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6770730a))
	receiver := scale(randomUnit(rng), EarthRadius)
	up := scale(receiver, 1/EarthRadius)
	minSin := math.Sin(cfg.MaskDeg * math.Pi / 180)
	const arrival = 0.070 // true time of arrival, seconds
	sc := GPSScenario{Receiver: receiver}
	for len(sc.Signals) < cfg.Satellites {
		sat := scale(randomUnit(rng), OrbitRadius)
		d := sat.Sub(receiver)
		dist := d.Norm()
		if dot(d, up)/dist < minSin {
			continue // below the mask: not heard
		}
		sent := arrival - dist/SpeedOfLight
		sc.Signals = append(sc.Signals, Signal{
			Sat:      sat,
			Sent:     sent + cfg.Noise*rng.NormFloat64(),
			Received: arrival + cfg.Bias,
		})
	}
	return sc, nil
}

// NoiseRow is one row of GPSErrorVsNoise.
type NoiseRow struct {
	Noise     float64 // timestamp noise σ, seconds
	RMSError  float64 // root mean square of the fix's position error, metres
	Predicted float64 // c·σ·PDOP, root mean square over the trials, metres
	MeanPDOP  float64
}

// GPSErrorVsNoise solves trials synthetic fixes (seeds cfg.Seed,
// cfg.Seed+1, ...) at each timestamp noise and reports the position error
// beside its first-order prediction c·σ·PDOP. cfg.Noise is ignored.
func GPSErrorVsNoise(cfg GPSConfig, noises []float64, trials int) ([]NoiseRow, error) {
	if trials < 1 {
		return nil, fmt.Errorf("trials %d: need at least 1", trials)
	}
	var rows []NoiseRow
	for _, sigma := range noises {
		c := cfg
		c.Noise = sigma
		var sq, pred, pdop float64
		for t := range trials {
			c.Seed = cfg.Seed + uint64(t)
			sc, err := NewGPSScenario(c)
			if err != nil {
				return nil, err
			}
			fix, err := Locate(sc.Signals)
			if err != nil {
				return nil, fmt.Errorf("noise %v, seed %d: %w", sigma, c.Seed, err)
			}
			e := fix.Pos.Sub(sc.Receiver).Norm()
			sq += e * e
			p := SpeedOfLight * sigma * fix.PDOP
			pred += p * p
			pdop += fix.PDOP
		}
		k := float64(trials)
		rows = append(rows, NoiseRow{Noise: sigma, RMSError: math.Sqrt(sq / k), Predicted: math.Sqrt(pred / k), MeanPDOP: pdop / k})
	}
	return rows, nil
}

func randomUnit(rng *rand.Rand) Vec3 {
	for {
		v := Vec3{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
		if n := v.Norm(); n > 1e-9 {
			return scale(v, 1/n)
		}
	}
}

func scale(v Vec3, k float64) Vec3 { return Vec3{v[0] * k, v[1] * k, v[2] * k} }

func dot(a, b Vec3) float64 { return a[0]*b[0] + a[1]*b[1] + a[2]*b[2] }
