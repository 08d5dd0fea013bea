package clock

import (
	"fmt"
	"time"

	"github.com/cohort-go/cohort/logical"
	"github.com/cohort-go/cohort/proc"
)

// This file holds the logical-clock demonstrations of Tanenbaum & van Steen
// §6.2 as state machines, so that they run in the simulator (and on a real
// cluster) like any other algorithm and are judged by the same checkers.

// Tick is the period of the demonstrations' clock ticks.
const Tick = time.Millisecond

// Stamped is a message that carries a scalar timestamp.
type Stamped struct {
	Name string `json:"name"`
	TS   uint64 `json:"ts"`
}

func (Stamped) Kind() string     { return "msg" }
func (m Stamped) String() string { return fmt.Sprintf("%s(ts=%d)", m.Name, m.TS) }

// VStamped is a message that carries a vector timestamp.
type VStamped struct {
	Name string         `json:"name"`
	TS   logical.Vector `json:"ts"`
}

func (VStamped) Kind() string     { return "msg" }
func (m VStamped) String() string { return m.Name + m.TS.String() }

// VStamp is an output reporting the vector timestamp a process gave the
// event it just performed.
type VStamp struct {
	V logical.Vector `json:"v"`
}

func (VStamp) Kind() string     { return "vstamp" }
func (s VStamp) String() string { return s.V.String() }

// Compared is the outcome of comparing the timestamps of two messages, the
// words of a row of Tanenbaum & van Steen's table (§6.2): "m2 may causally
// precede m4".
type Compared struct {
	A, B       string
	TA, TB     logical.Vector
	Order      string `json:"order"`
	Conclusion string `json:"conclusion"`
}

func (Compared) Kind() string     { return "compared" }
func (c Compared) String() string { return c.Conclusion }

// send is one scripted transmission.
type send struct {
	tick int // the tick at which it is sent (clock reading tick·rate)
	to   proc.ID
	name string
}

// drifter is a process whose clock advances by rate units per tick, like
// a physical clock running at its own speed. With correct set it applies
// Lamport's rule on receipt: a message stamped ts moves the clock to ts+1
// if it does not already read more (Clock.Witness). Every send and receive
// is reported as a proc.Stamp, so the clock-condition checker can judge the
// clock.
type drifter struct {
	clock   logical.Lamport
	correct bool
	ticks   int // how many ticks to run
	tick    int
	script  []send
	chatty  float64 // probability of a random send per tick (general form)
	last    uint64  // the reading of this process's previous event
}

// event returns the timestamp of a new event. A corrected clock also obeys
// rule 1 between ticks: two events of one process never share a reading,
// so the clock moves past the previous event's if it has not ticked since.
func (d *drifter) event() uint64 {
	if d.correct && d.clock.Now() <= d.last {
		d.clock.Witness(d.last)
	}
	d.last = d.clock.Now()
	return d.last
}

func (d *drifter) Start(env proc.Env) { env.SetTimer(Tick, "tick") }

func (d *drifter) Timeout(env proc.Env, _ any) {
	d.tick++
	d.clock.Tick()
	for _, s := range d.script {
		if s.tick == d.tick {
			d.transmit(env, s.to, s.name)
		}
	}
	if d.chatty > 0 && env.N() > 1 && env.Rand().Float64() < d.chatty {
		to := proc.ID(env.Rand().IntN(env.N() - 1))
		if to >= env.Self() {
			to++
		}
		d.transmit(env, to, fmt.Sprintf("m%d.%d", env.Self(), d.tick))
	}
	if d.tick < d.ticks {
		env.SetTimer(Tick, "tick")
	}
}

func (d *drifter) transmit(env proc.Env, to proc.ID, name string) {
	ts := d.event()
	env.Send(to, Stamped{Name: name, TS: ts})
	env.Output(proc.Stamp{C: ts})
}

func (d *drifter) Receive(env proc.Env, _ proc.ID, m proc.Message) {
	ts := m.(Stamped).TS
	if d.correct {
		d.clock.Witness(ts)
	}
	env.Output(proc.Stamp{C: d.event()})
}

func (d *drifter) Input(proc.Env, proc.Input) {}

// figureRates are the tick rates of the three processes of the figure.
var figureRates = [3]uint64{6, 8, 10}

// figureScript is the figure's four messages. With ticks every millisecond
// and a one-way latency of 1.5 ms: m1 leaves P1 at 6 and reaches P2 at 16;
// m2 leaves P2 at 24 and reaches P3 at 40; m3 leaves P3 at 60 and reaches
// P2 when it reads 56; m4 leaves P2 at 69 (61+8, corrected) or 64 and
// reaches P1 when it reads 54.
var figureScript = [3][]send{
	{{tick: 1, to: 1, name: "m1"}},
	{{tick: 3, to: 2, name: "m2"}, {tick: 8, to: 0, name: "m4"}},
	{{tick: 6, to: 1, name: "m3"}},
}

func newFigure(correct bool) func(proc.ID, int) proc.Process {
	return func(id proc.ID, _ int) proc.Process {
		return &drifter{clock: logical.NewLamport(0, figureRates[id]), correct: correct, ticks: 10, script: figureScript[id]}
	}
}

func newChatter(correct bool) func(proc.ID, int) proc.Process {
	return func(id proc.ID, n int) proc.Process {
		return &drifter{clock: logical.NewLamport(0, uint64(6+2*(int(id)%8))), correct: correct, ticks: 20, chatty: 0.4}
	}
}

func exactly(k int) func(int) error {
	return func(n int) error {
		if n != k {
			return fmt.Errorf("this demonstration has exactly %d processes, not %d", k, n)
		}
		return nil
	}
}

// figureScenario is the network of the figure: ticks every 1 ms, messages
// take 1.5 ms, so each arrives in the tick after the next.
const figureScenario = `nodes: 3
network:
  latency: 1500us
  fifo: true
`
