package clock

import (
	"fmt"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Cristian's algorithm and NTP's clock filter (Cristian 1989; Mills,
// RFC 5905; Tanenbaum & van Steen §6.1): clients ask a time server for its
// time and correct their clocks by the offset they estimate from the four
// timestamps of one exchange.
//
//	A (client):  T1 := now; send REQ(T1) to B
//	B (server):  on REQ(T1): T2 := now; ... T3 := now; send REPLY(T1, T2, T3)
//	A:           on REPLY(T1, T2, T3): T4 := now
//	             θ := ((T2 − T1) + (T3 − T4)) / 2   B's clock minus A's
//	             δ := ((T4 − T1) − (T3 − T2)) / 2   the one-way delay
//	             cristian: correct by θ
//	             ntp:      keep the last 8 (θ, δ); correct by the θ whose δ is smallest
//
// The formulas assume the request and the reply take as long: δTreq =
// T2 − T1 ≈ T4 − T3 = δTres. If the request takes d1 and the reply d2, θ is
// off by exactly (d1 − d2)/2: asymmetry biases it by half the difference,
// and since both delays are positive the error is at most (d1 + d2)/2 = δ
// (Tanenbaum & van Steen's δ is half the round trip; NTP's δ is the whole
// round trip, whence the "error ≤ δ/2" usually stated for NTP). A sample
// with a small δ has little room for error, which is why NTP prefers the
// smallest δ of its last eight samples to their average when delays are
// jittery.
//
// The client takes T1 and T4 from its hardware clock, so θ is the server's
// offset from the hardware clock: samples taken before a correction stay
// comparable with later ones. It then corrects its software clock to read
// hardware + θ: a clock that is behind steps forward, one that is ahead is
// slewed (SoftClock). The server is the reference (a UTC receiver): its
// clock is never corrected.
//
// NTP's filter ignores a sample's age: the sample it picks may be up to
// eight polls old, and a clock drifting at ρ has moved ρ·age since (200µs
// for ρ = 1e-4 and 2 s). Real NTP also disciplines the clock's frequency,
// which removes most of that; these clients do not.
//
// Sender-side nondeterminism is modelled by ReplyHold: after stamping T3
// the server's reply waits a random time, uniform in [0, ReplyHold), before
// it leaves — as a reply waits in the kernel, the interface queue or for
// the medium. The wait counts as reply delay d2 that T3 does not see.
//
// Assumptions: the server's clock is right; messages may be lost,
// duplicated or reordered (a client ignores a reply to an older request
// than one it has used); crash-stop or crash-recover (a recovered client
// starts again from its hardware clock). Cost: 2 messages per client per
// poll, 2(N−1) per poll period.

// TimeRequest is a client's request: REQ(T1).
type TimeRequest struct {
	T1 time.Duration `json:"t1"`
}

// TimeReply is the server's reply: REPLY(T1, T2, T3).
type TimeReply struct {
	T1 time.Duration `json:"t1"`
	T2 time.Duration `json:"t2"`
	T3 time.Duration `json:"t3"`
}

func (TimeRequest) Kind() string { return "time-req" }
func (TimeReply) Kind() string   { return "time-reply" }

func (m TimeRequest) String() string { return fmt.Sprintf("REQ(T1=%v)", m.T1) }
func (m TimeReply) String() string {
	return fmt.Sprintf("REPLY(T1=%v,T2=%v,T3=%v)", m.T1, m.T2, m.T3)
}

// Theta is the offset θ = ((T2 − T1) + (T3 − T4)) / 2 of the server's clock
// from the client's, by one exchange.
func Theta(t1, t2, t3, t4 time.Duration) time.Duration { return ((t2 - t1) + (t3 - t4)) / 2 }

// Delay is the one-way delay δ = ((T4 − T1) − (T3 − T2)) / 2 of one
// exchange: half the round trip less the server's time.
func Delay(t1, t2, t3, t4 time.Duration) time.Duration { return ((t4 - t1) - (t3 - t2)) / 2 }

// Sample is an output by which a client reports one exchange: θ (the
// server's clock minus the client's hardware clock at T4) and δ.
type Sample struct {
	Theta time.Duration `json:"theta"`
	Delta time.Duration `json:"delta"`
}

// Kind implements proc.Output.
func (Sample) Kind() string { return "sample" }

func (s Sample) String() string { return fmt.Sprintf("θ=%v δ=%v", s.Theta, s.Delta) }

// Filter is how a client picks the offset it corrects by from its samples.
type Filter uint8

const (
	// Latest takes the last sample's θ: Cristian's algorithm.
	Latest Filter = iota
	// MinDelay takes the θ of the sample with the smallest δ: NTP.
	MinDelay
	// MeanOffset averages the samples' θ: the plain average NTP improves on.
	MeanOffset
)

func (f Filter) String() string {
	switch f {
	case Latest:
		return "latest"
	case MinDelay:
		return "min-delay"
	case MeanOffset:
		return "mean"
	}
	return fmt.Sprintf("filter(%d)", uint8(f))
}

// Pick returns the offset a filter chooses from samples (oldest first; at
// least one). Of samples with the same smallest δ, MinDelay takes the
// newest.
func (f Filter) Pick(samples []Sample) time.Duration {
	switch f {
	case MinDelay:
		best := len(samples) - 1
		for i := len(samples) - 2; i >= 0; i-- {
			if samples[i].Delta < samples[best].Delta {
				best = i
			}
		}
		return samples[best].Theta
	case MeanOffset:
		var sum time.Duration
		for _, s := range samples {
			sum += s.Theta
		}
		return sum / time.Duration(len(samples))
	}
	return samples[len(samples)-1].Theta
}

// TimeSyncConfig configures Cristian's algorithm and NTP.
type TimeSyncConfig struct {
	// Server is the time server's id.
	Server proc.ID
	// Poll is how often a client asks, on its own clock (> 0).
	Poll time.Duration
	// Samples is how many samples a client keeps (1 .. 1024): 1 for
	// Cristian, 8 for NTP.
	Samples int
	// Filter picks the offset from the samples.
	Filter Filter
	// ReplyHold bounds the random wait of a reply between T3 and its
	// departure (sender-side nondeterminism); 0 sends it at once.
	ReplyHold time.Duration
	// ReadEvery is how often every process outputs a Reading (> 0).
	ReadEvery time.Duration
	// Discipline is how clients correct their clocks.
	Discipline Discipline
}

// DefaultCristian and DefaultNTP are the registered entries' settings:
// poll every 250 ms; a client behind steps forward, one ahead slews.
var (
	DefaultCristian = TimeSyncConfig{Poll: 250 * time.Millisecond, Samples: 1, Filter: Latest,
		ReadEvery: 100 * time.Millisecond, Discipline: Discipline{SlewRate: DefaultSlewRate, StepForward: true}}
	DefaultNTP = TimeSyncConfig{Poll: 250 * time.Millisecond, Samples: 8, Filter: MinDelay,
		ReadEvery: 100 * time.Millisecond, Discipline: Discipline{SlewRate: DefaultSlewRate, StepForward: true}}
)

// Validate reports the first bad field of c.
func (c TimeSyncConfig) Validate() error {
	switch {
	case c.Server < 0:
		return fmt.Errorf("%w: server %d: want a process id", ErrConfig, c.Server)
	case c.Poll <= 0:
		return fmt.Errorf("%w: poll %v: must be positive", ErrConfig, c.Poll)
	case c.Samples < 1 || c.Samples > 1024:
		return fmt.Errorf("%w: samples %d: want 1 to 1024", ErrConfig, c.Samples)
	case c.Filter > MeanOffset:
		return fmt.Errorf("%w: unknown filter %v", ErrConfig, c.Filter)
	case c.ReplyHold < 0:
		return fmt.Errorf("%w: reply hold %v: must not be negative", ErrConfig, c.ReplyHold)
	case c.ReadEvery <= 0:
		return fmt.Errorf("%w: read every %v: must be positive", ErrConfig, c.ReadEvery)
	}
	return c.Discipline.validate()
}

// NewTimeSync returns the constructor of Cristian's or NTP's processes
// with configuration c, or the error of c.Validate.
func NewTimeSync(c TimeSyncConfig) (func(proc.ID, int) proc.Process, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return func(id proc.ID, _ int) proc.Process {
		if id == c.Server {
			return &timeServer{cfg: c, k: newKeeper(c.Discipline, c.ReadEvery)}
		}
		return &timeClient{cfg: c, k: newKeeper(c.Discipline, c.ReadEvery)}
	}, nil
}

// timeServer answers requests with its own clock.
type timeServer struct {
	cfg TimeSyncConfig
	k   keeper
}

// heldReply is a reply waiting to leave (ReplyHold).
type heldReply struct {
	to    proc.ID
	reply TimeReply
}

func (heldReply) Kind() string { return "reply-hold" }

func (s *timeServer) Start(env proc.Env) { s.k.start(env, true) }

func (s *timeServer) Receive(env proc.Env, from proc.ID, m proc.Message) {
	req, ok := m.(TimeRequest)
	if !ok {
		return
	}
	t2 := s.k.now(env)
	reply := TimeReply{T1: req.T1, T2: t2, T3: s.k.now(env)}
	if s.cfg.ReplyHold <= 0 {
		env.Send(from, reply)
		return
	}
	env.SetTimer(time.Duration(env.Rand().Int64N(int64(s.cfg.ReplyHold))), heldReply{from, reply})
}

func (s *timeServer) Timeout(env proc.Env, tag any) {
	if h, ok := tag.(heldReply); ok {
		env.Send(h.to, h.reply)
		return
	}
	s.k.timeout(env, tag)
}

func (s *timeServer) Input(proc.Env, proc.Input) {}

// timeClient polls the server and corrects its clock.
type timeClient struct {
	cfg     TimeSyncConfig
	k       keeper
	samples []Sample      // the last cfg.Samples, oldest first
	lastT1  time.Duration // T1 of the newest reply used
	used    bool          // some reply was used
}

type pollTick struct{}

func (pollTick) Kind() string { return "poll" }

func (c *timeClient) Start(env proc.Env) {
	c.k.start(env, false)
	c.poll(env)
}

func (c *timeClient) poll(env proc.Env) {
	if int(c.cfg.Server) < env.N() {
		env.Send(c.cfg.Server, TimeRequest{T1: env.Now()})
	}
	env.SetTimer(c.cfg.Poll, pollTick{})
}

func (c *timeClient) Timeout(env proc.Env, tag any) {
	if _, ok := tag.(pollTick); ok {
		c.poll(env)
		return
	}
	c.k.timeout(env, tag)
}

func (c *timeClient) Receive(env proc.Env, from proc.ID, m proc.Message) {
	r, ok := m.(TimeReply)
	if !ok || from != c.cfg.Server || (c.used && r.T1 <= c.lastT1) {
		return // not the server's, a duplicate, or older than one used
	}
	c.used, c.lastT1 = true, r.T1
	t4 := env.Now()
	s := Sample{Theta: Theta(r.T1, r.T2, r.T3, t4), Delta: Delay(r.T1, r.T2, r.T3, t4)}
	env.Output(s)
	if len(c.samples) == c.cfg.Samples {
		c.samples = append(c.samples[:0], c.samples[1:]...)
	}
	c.samples = append(c.samples, s)
	// Set the software clock to hardware + θ.
	c.k.adjust(env, t4+c.cfg.Filter.Pick(c.samples)-c.k.now(env))
}

func (c *timeClient) Input(proc.Env, proc.Input) {}
