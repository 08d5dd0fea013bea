package clock

import (
	"fmt"
	"math"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Reference Broadcast Synchronization, RBS (Elson, Girod & Estrin 2002;
// Tanenbaum & van Steen §6.1, clock synchronization in wireless networks).
// A sender broadcasts reference messages that carry no time at all; every
// receiver notes when each one arrived on its own clock, and receivers
// compare notes.
//
//	sender, every Period:     broadcast BEACON(k)
//	receiver p, on BEACON(k): T_{p,k} := now; send OBS(k, T_{p,k}) to every other receiver
//	                          for every other receiver q, over the last M beacons both saw:
//	                            averaging:  Offset[p,q] = Σ (T_{q,k} − T_{p,k}) / M
//	                            regression: Offset[p,q](t) = αt + β, least squares over
//	                                        the points (T_{p,k}, T_{q,k} − T_{p,k})
//	                          correct p's clock to the receivers' average:
//	                            C_p(t) := t + Σ_q Offset[p,q](t) / R   (R receivers, q = p adds 0)
//
// (Tanenbaum & van Steen write Offset[p,q] = Σ (T_{p,k} − T_{q,k}) / M, p's
// clock minus q's; here it is q's minus p's, the amount p adds to reach q.)
// A beacon reaches all receivers at nearly the same moment, so the time a
// sender spends preparing and sending it — its send-side nondeterminism,
// which hurts Cristian and NTP because it lies between T3 and the reply's
// departure — cancels out: RBS only compares receive times. What remains
// is the receivers' nondeterminism (propagation, interrupt handling),
// averaged over M beacons. The sender does not synchronize itself, and
// outputs no readings: it only sets the pace.
//
// Averaging estimates the offset as it was in the middle of the last M
// beacons; if the clocks drift apart (ρ up to 1e-4 each), it lags by up to
// 2ρ·M·Period/2, and between beacons the clocks drift apart again.
// Regression follows the drift: it extrapolates the offset to now, and the
// receiver's software clock takes the slope as a frequency correction, so
// that it keeps pace between beacons too. A receiver averages until it
// has M pairs with a peer: a line through fewer points is mostly noise.
//
// The sender's broadcast is modelled as one send per receiver, all at the
// same instant after a random wait uniform in [0, SendJitter) (medium
// access); each copy then takes the network's latency to its receiver. T_{p,k}
// is read from p's hardware clock, so corrections do not disturb the
// estimates.
//
// Assumptions: the sender's broadcast reaches the receivers with little
// receive-side jitter; messages may be lost, duplicated or reordered;
// crash-stop. Cost per beacon: N − 1 beacons and (N−1)(N−2) observations.

// Beacon is a reference broadcast: BEACON(k).
type Beacon struct {
	Seq uint64 `json:"seq"`
}

// Observation tells the other receivers when a beacon arrived: OBS(k, T).
type Observation struct {
	Seq uint64        `json:"seq"`
	T   time.Duration `json:"t"`
}

func (Beacon) Kind() string      { return "beacon" }
func (Observation) Kind() string { return "obs" }

func (m Beacon) String() string      { return fmt.Sprintf("BEACON(%d)", m.Seq) }
func (m Observation) String() string { return fmt.Sprintf("OBS(%d,T=%v)", m.Seq, m.T) }

// RBSConfig configures reference broadcast synchronization.
type RBSConfig struct {
	// Sender is the id of the process that broadcasts the beacons.
	Sender proc.ID
	// Period is the time between beacons on the sender's clock (> 0).
	Period time.Duration
	// M is how many of the last beacons the estimates use (1 .. 1024).
	M int
	// Regression estimates drift by least squares; false averages.
	Regression bool
	// SendJitter bounds the random wait before each broadcast; 0: none.
	SendJitter time.Duration
	// ReadEvery is how often every receiver outputs a Reading (> 0).
	ReadEvery time.Duration
	// Discipline is how receivers correct their clocks.
	Discipline Discipline
}

// DefaultRBS is the registered entry's setting: a beacon every 100 ms
// after up to 1 ms of medium access, estimates by regression over the last
// 8 beacons.
var DefaultRBS = RBSConfig{Period: 100 * time.Millisecond, M: 8, Regression: true, SendJitter: time.Millisecond,
	ReadEvery: 100 * time.Millisecond, Discipline: Discipline{SlewRate: DefaultSlewRate, StepForward: true}}

// Validate reports the first bad field of c.
func (c RBSConfig) Validate() error {
	switch {
	case c.Sender < 0:
		return fmt.Errorf("%w: sender %d: want a process id", ErrConfig, c.Sender)
	case c.Period <= 0:
		return fmt.Errorf("%w: period %v: must be positive", ErrConfig, c.Period)
	case c.M < 1 || c.M > 1024:
		return fmt.Errorf("%w: M = %d: want 1 to 1024 beacons", ErrConfig, c.M)
	case c.SendJitter < 0:
		return fmt.Errorf("%w: send jitter %v: must not be negative", ErrConfig, c.SendJitter)
	case c.ReadEvery <= 0:
		return fmt.Errorf("%w: read every %v: must be positive", ErrConfig, c.ReadEvery)
	}
	return c.Discipline.validate()
}

// NewRBS returns the constructor of RBS's processes with configuration c,
// or the error of c.Validate.
func NewRBS(c RBSConfig) (func(proc.ID, int) proc.Process, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return func(id proc.ID, n int) proc.Process {
		if id == c.Sender {
			return &rbsSender{cfg: c}
		}
		return &rbsReceiver{cfg: c, k: newKeeper(c.Discipline, c.ReadEvery), peers: make([][]rbsPoint, n)}
	}, nil
}

// rbsSender broadcasts the beacons.
type rbsSender struct {
	cfg RBSConfig
	seq uint64
}

type (
	beaconTick struct{} // time for the next beacon
	beaconSend struct{} // the medium is ours: broadcast
)

func (beaconTick) Kind() string { return "beacon" }
func (beaconSend) Kind() string { return "broadcast" }

func (s *rbsSender) Start(env proc.Env) { env.SetTimer(s.cfg.Period, beaconTick{}) }

func (s *rbsSender) Timeout(env proc.Env, tag any) {
	switch tag.(type) {
	case beaconTick:
		env.SetTimer(s.cfg.Period, beaconTick{})
		if s.cfg.SendJitter > 0 {
			env.SetTimer(time.Duration(env.Rand().Int64N(int64(s.cfg.SendJitter))), beaconSend{})
			return
		}
		s.broadcast(env)
	case beaconSend:
		s.broadcast(env)
	}
}

func (s *rbsSender) broadcast(env proc.Env) {
	s.seq++
	for i := range env.N() {
		if id := proc.ID(i); id != env.Self() {
			env.Send(id, Beacon{Seq: s.seq})
		}
	}
}

func (s *rbsSender) Receive(proc.Env, proc.ID, proc.Message) {}
func (s *rbsSender) Input(proc.Env, proc.Input)              {}

// rbsPoint is one beacon's reception time at one receiver.
type rbsPoint struct {
	seq uint64
	t   time.Duration
}

// rbsReceiver notes beacons and compares notes.
type rbsReceiver struct {
	cfg   RBSConfig
	k     keeper
	own   []rbsPoint   // the last 2M beacons this receiver heard, oldest first
	peers [][]rbsPoint // per receiver: its last 2M observations, oldest first
}

func (r *rbsReceiver) Start(env proc.Env) { r.k.start(env, false) }

func (r *rbsReceiver) Timeout(env proc.Env, tag any) { r.k.timeout(env, tag) }

func (r *rbsReceiver) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m := m.(type) {
	case Beacon:
		if from != r.cfg.Sender || (len(r.own) > 0 && m.Seq <= r.own[len(r.own)-1].seq) {
			return // not the sender's, a duplicate, or overtaken
		}
		t := env.Now()
		r.own = keepLast(r.own, rbsPoint{m.Seq, t}, 2*r.cfg.M)
		for i := range env.N() {
			if id := proc.ID(i); id != env.Self() && id != r.cfg.Sender {
				env.Send(id, Observation{Seq: m.Seq, T: t})
			}
		}
		r.synchronize(env)
	case Observation:
		if int(from) >= len(r.peers) || from == r.cfg.Sender || from == env.Self() {
			return
		}
		obs := r.peers[from]
		for _, p := range obs {
			if p.seq == m.Seq {
				return // a duplicate
			}
		}
		r.peers[from] = keepLast(obs, rbsPoint{m.Seq, m.T}, 2*r.cfg.M)
	}
}

// keepLast appends p to ps and keeps the last n.
func keepLast(ps []rbsPoint, p rbsPoint, n int) []rbsPoint {
	if len(ps) == n {
		ps = append(ps[:0], ps[1:]...)
	}
	return append(ps, p)
}

// synchronize corrects the clock to the receivers' average, by the pairs of
// reception times of the last M beacons.
func (r *rbsReceiver) synchronize(env proc.Env) {
	hw := env.Now()
	var xs, ys []float64
	var slope, offset float64 // summed over the receivers heard from
	receivers := 1            // this one, with offset 0
	for q := range r.peers {
		// The last M beacons both heard.
		xs, ys = xs[:0], ys[:0]
		for k := len(r.own) - 1; k >= 0 && len(xs) < r.cfg.M; k-- {
			for _, o := range r.peers[q] {
				if o.seq == r.own[k].seq {
					xs = append(xs, float64(r.own[k].t))
					ys = append(ys, float64(o.t-r.own[k].t))
				}
			}
		}
		if len(xs) == 0 {
			continue
		}
		receivers++
		// A line through fewer points than the window is mostly noise (two
		// beacons 100 ms apart with 20µs of jitter: a slope of ±2e-4):
		// average until the window is full.
		if r.cfg.Regression && len(xs) >= r.cfg.M {
			a, b := LeastSquares(xs, ys)
			slope += a
			offset += a*float64(hw) + b
		} else {
			offset += mean(ys)
		}
	}
	if receivers == 1 {
		return // nobody to compare with yet
	}
	freq := slope / float64(receivers)
	target := hw + time.Duration(math.Round(offset/float64(receivers)))
	r.k.correct(env, func(hw time.Duration) bool {
		r.k.clock.SetFreq(hw, freq)
		return r.k.clock.Adjust(hw, target-r.k.clock.Read(hw))
	})
}

// LeastSquares fits y = αx + β to the points by least squares. With one
// point, or all at the same x, the slope is 0 and β the mean of the y.
func LeastSquares(xs, ys []float64) (alpha, beta float64) {
	mx, my := mean(xs), mean(ys)
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	if sxx > 0 {
		alpha = sxy / sxx
	}
	return alpha, my - alpha*mx
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func (r *rbsReceiver) Input(proc.Env, proc.Input) {}
