package clock

import (
	"fmt"
	"math"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Hybrid logical clocks (Kulkarni, Demirbas et al., "Logical Physical
// Clocks", 2014), beyond the seeds: a timestamp (l, c) whose l is the
// largest physical clock reading the process has heard of and c counts
// events that share that l. It respects happened-before like a Lamport
// clock, e → f ⇒ (l, c)(e) < (l, c)(f) in lexicographic order, and stays
// close to physical time: l − pt ≤ ε, where ε bounds the difference of
// the processes' physical clocks, because l is always some physical
// clock's reading in the event's causal past. Given the rules,
//
//	send or local event:       l' := l; l := max(l', pt)
//	                           c := c + 1 if l = l', else 0
//	receive of m = (l_m, c_m): l' := l; l := max(l', l_m, pt)
//	                           c := max(c, c_m) + 1  if l = l' = l_m
//	                                c + 1            if l = l' only
//	                                c_m + 1          if l = l_m only
//	                                0                otherwise
//
// where pt is the process's physical (hardware) clock, read at the event.

// HLC is a hybrid logical clock. The zero value is a clock that has seen no
// event: its first event takes the physical time, whatever it reads (a
// clock set behind the start of the run reads less than 0).
type HLC struct {
	t    HLCTime
	seen bool
}

// begin makes a clock that has seen nothing read less than any time.
func (h *HLC) begin() {
	if !h.seen {
		h.seen = true
		h.t = HLCTime{L: math.MinInt64}
	}
}

// HLCTime is a hybrid timestamp; it is also the output by which a process
// reports the timestamp of the send or receive it just performed (the
// hybrid counterpart of proc.Stamp), which the "hlc" checker judges.
type HLCTime struct {
	L time.Duration `json:"l"`
	C uint32        `json:"c"`
}

// Kind implements proc.Output.
func (HLCTime) Kind() string { return "hlc" }

func (t HLCTime) String() string { return fmt.Sprintf("(%v,%d)", t.L, t.C) }

// Less reports whether t comes before u: by l, then by c.
func (t HLCTime) Less(u HLCTime) bool { return t.L < u.L || (t.L == u.L && t.C < u.C) }

// Now returns the timestamp of the clock's last event (zero before the
// first).
func (h *HLC) Now() HLCTime {
	if !h.seen {
		return HLCTime{}
	}
	return h.t
}

// Send timestamps a send or local event at physical time pt.
func (h *HLC) Send(pt time.Duration) HLCTime {
	h.begin()
	if pt > h.t.L {
		h.t = HLCTime{L: pt}
	} else {
		h.t.C++
	}
	return h.t
}

// Recv timestamps the receipt, at physical time pt, of a message stamped m.
func (h *HLC) Recv(pt time.Duration, m HLCTime) HLCTime {
	h.begin()
	l := max(h.t.L, m.L, pt)
	switch {
	case l == h.t.L && l == m.L:
		h.t.C = max(h.t.C, m.C) + 1
	case l == h.t.L:
		h.t.C++
	case l == m.L:
		h.t.C = m.C + 1
	default:
		h.t.C = 0
	}
	h.t.L = l
	return h.t
}

// HLCMsg is a message of the hybrid clock demonstration, carrying the
// sender's timestamp.
type HLCMsg struct {
	Name string  `json:"name"`
	TS   HLCTime `json:"ts"`
}

func (HLCMsg) Kind() string     { return "msg" }
func (m HLCMsg) String() string { return m.Name + m.TS.String() }

// HLCConfig configures the hybrid clock demonstration.
type HLCConfig struct {
	// Tick is the period of each process's activity on its own clock (> 0).
	Tick time.Duration
	// Chatty is the probability that a process sends a message to a random
	// other process at a tick ([0, 1]).
	Chatty float64
	// Ticks is how many ticks each process runs (≥ 1).
	Ticks int
}

// DefaultHLC is the registered entry's setting: a tick every 5 ms for one
// second, a message at two ticks in five.
var DefaultHLC = HLCConfig{Tick: 5 * time.Millisecond, Chatty: 0.4, Ticks: 200}

// Validate reports the first bad field of c.
func (c HLCConfig) Validate() error {
	switch {
	case c.Tick <= 0:
		return fmt.Errorf("%w: tick %v: must be positive", ErrConfig, c.Tick)
	case !(c.Chatty >= 0 && c.Chatty <= 1):
		return fmt.Errorf("%w: chatty %v: want a probability in [0, 1]", ErrConfig, c.Chatty)
	case c.Ticks < 1:
		return fmt.Errorf("%w: ticks %d: want at least 1", ErrConfig, c.Ticks)
	}
	return nil
}

// NewHLCDemo returns the constructor of the hybrid clock demonstration's
// processes with configuration c, or the error of c.Validate. Each process
// ticks on its drifting hardware clock; at every tick it reads its hybrid
// clock (a local event, output as a Reading of l) and may send a message
// to a random other process; it outputs the HLCTime of every send and
// receive.
func NewHLCDemo(c HLCConfig) (func(proc.ID, int) proc.Process, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return func(proc.ID, int) proc.Process { return &hlcDemo{cfg: c} }, nil
}

type hlcDemo struct {
	cfg   HLCConfig
	clock HLC
	tick  int
}

type hlcTick struct{}

func (hlcTick) Kind() string { return "tick" }

func (d *hlcDemo) Start(env proc.Env) {
	d.read(env)
	env.SetTimer(d.cfg.Tick, hlcTick{})
}

// read is a local event: the hybrid clock is read, as an application
// reads the time.
func (d *hlcDemo) read(env proc.Env) {
	env.Output(Reading{Clock: d.clock.Send(env.Now()).L, Synced: true})
}

func (d *hlcDemo) Timeout(env proc.Env, _ any) {
	d.tick++
	d.read(env)
	if env.N() > 1 && env.Rand().Float64() < d.cfg.Chatty {
		to := proc.ID(env.Rand().IntN(env.N() - 1))
		if to >= env.Self() {
			to++
		}
		ts := d.clock.Send(env.Now())
		env.Send(to, HLCMsg{Name: fmt.Sprintf("m%d.%d", env.Self(), d.tick), TS: ts})
		env.Output(ts)
	}
	if d.tick < d.cfg.Ticks {
		env.SetTimer(d.cfg.Tick, hlcTick{})
	}
}

func (d *hlcDemo) Receive(env proc.Env, _ proc.ID, m proc.Message) {
	if msg, ok := m.(HLCMsg); ok {
		env.Output(d.clock.Recv(env.Now(), msg.TS))
	}
}

func (d *hlcDemo) Input(proc.Env, proc.Input) {}
