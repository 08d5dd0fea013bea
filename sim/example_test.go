package sim_test

import (
	"fmt"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

type ping struct{ Hop int }

func (ping) Kind() string { return "ping" }

// relay passes a ping round a ring of N processes, three times round.
type relay struct{}

func (relay) Start(env proc.Env) {
	if env.Self() == 0 {
		env.Send(1, ping{Hop: 1})
	}
}
func (relay) Receive(env proc.Env, _ proc.ID, m proc.Message) {
	p := m.(ping)
	env.Output(p)
	if p.Hop < 3*env.N() {
		env.Send((env.Self()+1)%proc.ID(env.N()), ping{Hop: p.Hop + 1})
	}
}
func (relay) Timeout(proc.Env, any)      {}
func (relay) Input(proc.Env, proc.Input) {}

// A run of four processes on a network with 1–3 ms of latency, in which
// process 2 crashes at 10 ms: the ping stops there. The same seed gives the
// same run, event for event.
func Example() {
	rec := &trace.Recorder{}
	s, err := sim.New(sim.Config{
		Nodes:   4,
		Seed:    1,
		New:     func(proc.ID, int) proc.Process { return relay{} },
		Network: sim.Network{Latency: sim.Uniform{Min: time.Millisecond, Max: 3 * time.Millisecond}},
		Faults:  []sim.Fault{{Kind: sim.Crash, Node: 2, At: 10 * time.Millisecond}},
		Trace:   rec,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := s.Run()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("sent %d, delivered %d, dropped %d; stopped: %s\n", res.Sent, res.Delivered, res.Dropped, res.Stop)
	for _, e := range rec.Trace.Events {
		if e.Kind == trace.Crash || e.Kind == trace.Drop {
			fmt.Printf("p%d %s at %s\n", e.Node, e.Kind, trace.FormatNS(e.Time))
		}
	}
	// Output:
	// sent 10, delivered 9, dropped 1; stopped: quiescent
	// p2 crash at 10.000ms
	// p2 drop at 16.831ms
}
