package position

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// Noise-free signals give the receiver's position to well under a
// millimetre, with exactly four satellites and with eight, whatever the
// receiver's clock bias: it is one of the unknowns.
func TestLocateRecoversPositionAndBias(t *testing.T) {
	for _, sats := range []int{4, 8} {
		for _, bias := range []float64{0, 1e-6, 1e-3, -0.3} {
			for seed := range uint64(50) {
				cfg := GPSConfig{Satellites: sats, Bias: bias, MaskDeg: 10, Seed: seed}
				sc, err := NewGPSScenario(cfg)
				if err != nil {
					t.Fatal(err)
				}
				fix, err := Locate(sc.Signals)
				if err != nil {
					t.Fatalf("%+v: %v", cfg, err)
				}
				if e := fix.Pos.Sub(sc.Receiver).Norm(); e > 1e-3 {
					t.Errorf("%+v: position off by %.3g m (GDOP %.3g)", cfg, e, fix.GDOP)
				}
				if d := math.Abs(fix.Bias - bias); d*SpeedOfLight > 1e-3 {
					t.Errorf("%+v: bias %.15g s, want %g (off by %.3g m of range)", cfg, fix.Bias, bias, d*SpeedOfLight)
				}
			}
		}
	}
}

// A receiver that trusts its clock is wrong by about c·bias — 300 m for a
// microsecond; solving for the bias removes the error.
func TestIgnoringTheClockBiasCostsMetres(t *testing.T) {
	for _, bias := range []float64{1e-7, 1e-6, 1e-5} {
		sc, err := NewGPSScenario(GPSConfig{Satellites: 8, Bias: bias, MaskDeg: 10, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		trusting, err := LocateWithClock(sc.Signals, 0)
		if err != nil {
			t.Fatal(err)
		}
		e := trusting.Pos.Sub(sc.Receiver).Norm()
		if cb := SpeedOfLight * bias; e < cb/2 || e > 5*cb {
			t.Errorf("bias %v s ignored: position off by %.4g m, want about c·bias = %.4g m", bias, e, cb)
		}
		right, err := LocateWithClock(sc.Signals, bias)
		if err != nil {
			t.Fatal(err)
		}
		if e := right.Pos.Sub(sc.Receiver).Norm(); e > 1e-3 {
			t.Errorf("bias %v s known: position off by %.3g m", bias, e)
		}
		solved, err := Locate(sc.Signals)
		if err != nil {
			t.Fatal(err)
		}
		if e := solved.Pos.Sub(sc.Receiver).Norm(); e > 1e-3 {
			t.Errorf("bias %v s solved for: position off by %.3g m", bias, e)
		}
	}
}

// Timestamp noise of σ seconds moves each pseudorange by c·σ and the fix
// by c·σ·PDOP: over 200 skies, the mean of (error / (c·σ·PDOP))² is 1 (the
// least-squares covariance is (cσ)²·(JᵀJ)⁻¹), and ten times the noise is
// ten times the error.
func TestTimestampNoiseBecomesMetres(t *testing.T) {
	for _, sats := range []int{4, 8} {
		var prev float64
		for _, sigma := range []float64{1e-9, 1e-8, 1e-7, 1e-6} {
			var ratio, sq float64
			const trials = 200
			for seed := range uint64(trials) {
				sc, err := NewGPSScenario(GPSConfig{Satellites: sats, Bias: 1e-3, Noise: sigma, MaskDeg: 10, Seed: seed})
				if err != nil {
					t.Fatal(err)
				}
				fix, err := Locate(sc.Signals)
				if err != nil {
					t.Fatalf("%d satellites, σ %v, seed %d: %v", sats, sigma, seed, err)
				}
				e := fix.Pos.Sub(sc.Receiver).Norm()
				k := e / (SpeedOfLight * sigma * fix.PDOP)
				ratio += k * k
				sq += e * e
			}
			ratio /= trials
			if ratio < 0.75 || ratio > 1.25 {
				t.Errorf("%d satellites, σ %v: mean (error/(c·σ·PDOP))² = %.3f, want about 1", sats, sigma, ratio)
			}
			rms := math.Sqrt(sq / trials)
			if prev > 0 && (rms/prev < 9 || rms/prev > 11) {
				t.Errorf("%d satellites: σ ×10 moved the RMS error from %.4g to %.4g m", sats, prev, rms)
			}
			prev = rms
		}
	}
}

func TestGPSErrorVsNoise(t *testing.T) {
	rows, err := GPSErrorVsNoise(DefaultGPS, []float64{1e-9, 1e-6}, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.RMSError < 0.8*r.Predicted || r.RMSError > 1.2*r.Predicted {
			t.Errorf("σ %v: RMS error %.4g m, predicted c·σ·PDOP %.4g m", r.Noise, r.RMSError, r.Predicted)
		}
		if r.MeanPDOP < 1 || r.MeanPDOP > 10 {
			t.Errorf("σ %v: mean PDOP %.3g for 8 satellites above 10°", r.Noise, r.MeanPDOP)
		}
	}
	if _, err := GPSErrorVsNoise(DefaultGPS, []float64{1e-9}, 0); err == nil || !strings.Contains(err.Error(), "trials 0") {
		t.Errorf("0 trials: %v", err)
	}
}

// cone places satellites at one elevation around the receiver's zenith:
// a shift along the zenith changes every range by the same amount, as a
// clock bias does, so position and bias are not determined.
func cone(receiver Vec3, n int, elevDeg float64) []Signal {
	up := scale(receiver, 1/receiver.Norm())
	east := Vec3{-up[1], up[0], 0}
	east = scale(east, 1/east.Norm())
	north := Vec3{up[1]*east[2] - up[2]*east[1], up[2]*east[0] - up[0]*east[2], up[0]*east[1] - up[1]*east[0]}
	el := elevDeg * math.Pi / 180
	var sigs []Signal
	for k := range n {
		az := 2 * math.Pi * float64(k) / float64(n)
		dir := Vec3{}
		for i := range 3 {
			dir[i] = math.Cos(el)*(math.Cos(az)*east[i]+math.Sin(az)*north[i]) + math.Sin(el)*up[i]
		}
		sat := receiver
		for i := range 3 {
			sat[i] += 20_000_000 * dir[i]
		}
		sigs = append(sigs, Signal{Sat: sat, Sent: 0, Received: 20_000_000 / SpeedOfLight})
	}
	return sigs
}

func TestLocateRejectsBadInput(t *testing.T) {
	sc, err := NewGPSScenario(DefaultGPS)
	if err != nil {
		t.Fatal(err)
	}
	nan := append([]Signal(nil), sc.Signals...)
	nan[1].Sent = math.NaN()
	inf := append([]Signal(nil), sc.Signals...)
	inf[2].Sat[1] = math.Inf(1)
	same := append([]Signal(nil), sc.Signals[:4]...)
	same[3] = same[2]
	cases := []struct {
		name    string
		signals []Signal
		is      error
		want    string
	}{
		{"three satellites", sc.Signals[:3], ErrTooFewSatellites, "3, need at least 4"},
		{"none", nil, ErrTooFewSatellites, "0, need at least 4"},
		{"NaN timestamp", nan, ErrBadSignal, "satellite 1: sent = NaN"},
		{"infinite position", inf, ErrBadSignal, "satellite 2: y = +Inf"},
		{"two satellites at one place", same, ErrSingularGeometry, "4 satellites"},
		{"four on a cone", cone(sc.Receiver, 4, 30), ErrSingularGeometry, "singular"},
		{"eight on a cone", cone(sc.Receiver, 8, 45), ErrSingularGeometry, "singular"},
	}
	for _, c := range cases {
		_, err := Locate(c.signals)
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %v naming %q", c.name, err, c.is, c.want)
		}
	}
	if _, err := LocateWithClock(sc.Signals[:2], 0); !errors.Is(err, ErrTooFewSatellites) || !strings.Contains(err.Error(), "2, need at least 3") {
		t.Errorf("two satellites, clock trusted: %v", err)
	}
	if _, err := LocateWithClock(sc.Signals, math.NaN()); !errors.Is(err, ErrBadSignal) || !strings.Contains(err.Error(), "clock bias = NaN") {
		t.Errorf("NaN bias: %v", err)
	}
	// The cone is only singular for four unknowns: with the clock known,
	// the same sky gives a fix.
	if _, err := LocateWithClock(cone(sc.Receiver, 4, 30), 0); err != nil {
		t.Errorf("cone with a trusted clock: %v", err)
	}
}

func TestNewGPSScenario(t *testing.T) {
	a, err := NewGPSScenario(DefaultGPS)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewGPSScenario(DefaultGPS)
	if len(a.Signals) != 8 || a.Receiver != b.Receiver || a.Signals[7] != b.Signals[7] {
		t.Errorf("same seed, different skies: %v vs %v", a, b)
	}
	other := DefaultGPS
	other.Seed = 2
	c, _ := NewGPSScenario(other)
	if c.Receiver == a.Receiver {
		t.Errorf("seeds 1 and 2 put the receiver at the same place")
	}
	if r := a.Receiver.Norm(); math.Abs(r-EarthRadius) > 1e-6 {
		t.Errorf("receiver %.3f m from the centre, want the Earth's radius", r)
	}
	up := scale(a.Receiver, 1/EarthRadius)
	for i, s := range a.Signals {
		d := s.Sat.Sub(a.Receiver)
		if math.Abs(s.Sat.Norm()-OrbitRadius) > 1e-6 || dot(d, up)/d.Norm() < math.Sin(10*math.Pi/180) {
			t.Errorf("satellite %d at %v: not on the orbit above the 10° mask", i, s.Sat)
		}
		if want := d.Norm() + SpeedOfLight*DefaultGPS.Bias; math.Abs(s.Pseudorange()-want) > 1e-6 {
			t.Errorf("satellite %d: pseudorange %.3f m, want distance + c·bias = %.3f m", i, s.Pseudorange(), want)
		}
	}
	for _, c := range []struct {
		cfg  GPSConfig
		want string
	}{
		{GPSConfig{Satellites: 0}, "satellites 0"},
		{GPSConfig{Satellites: 4, Noise: -1e-9}, "noise -1e-09"},
		{GPSConfig{Satellites: 4, Bias: math.NaN()}, "bias NaN"},
		{GPSConfig{Satellites: 4, MaskDeg: 75}, "mask 75°"},
	} {
		if _, err := NewGPSScenario(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error naming %q", c.cfg, err, c.want)
		}
	}
}
