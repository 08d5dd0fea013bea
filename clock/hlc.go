package clock

import (
	"fmt"
	"time"

	"github.com/cohort-go/cohort/logical"
	"github.com/cohort-go/cohort/proc"
)

// HLCMsg is a message of the hybrid clock demonstration, carrying the
// sender's timestamp.
type HLCMsg struct {
	Name string          `json:"name"`
	TS   logical.HLCTime `json:"ts"`
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
	clock logical.HLC
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
