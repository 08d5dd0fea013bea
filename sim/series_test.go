package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// passer records what it handles in a log shared by all and passes each
// input on to the next process as a message.
type passer struct{ log *[]string }

func (r *passer) Start(proc.Env) {}
func (r *passer) Receive(env proc.Env, from proc.ID, m proc.Message) {
	*r.log = append(*r.log, fmt.Sprintf("%v p%d got %v from p%d", env.Now(), env.Self(), m, from))
}
func (r *passer) Timeout(proc.Env, any) {}
func (r *passer) Input(env proc.Env, in proc.Input) {
	*r.log = append(*r.log, fmt.Sprintf("%v p%d asked %v", env.Now(), env.Self(), in))
	env.Send((env.Self()+1)%proc.ID(env.N()), num{in.(numIn).N})
}

type numIn struct{ N int }

func (numIn) Kind() string { return "num" }

// inputs is a workload of n inputs a quarter of a link's latency apart,
// at processes drawn from the workload's random source, scheduled all at
// once or as a series.
type inputs struct {
	n      int
	series bool
}

func (w inputs) Init(c Control) {
	rng := c.Rand()
	input := func(i int) (time.Duration, proc.ID, proc.Input) {
		return time.Duration(i) * time.Millisecond / 4, proc.ID(rng.IntN(c.N())), numIn{i}
	}
	if w.series {
		c.Series(w.n, input)
		return
	}
	for i := range w.n {
		at, node, in := input(i)
		c.Schedule(at-c.Now(), node, in)
	}
}
func (inputs) Observe(Control, proc.ID, proc.Output) {}

// TestSeriesKeepsTheOrderOfInputsScheduledAtOnce: inputs made one at a
// time fire at the same times, at the same processes, in the same order
// among simultaneous deliveries (1 ms links, inputs every 0.25 ms) as the
// same inputs all scheduled at the start — with a process paused, whose
// inputs wait while the series goes on.
func TestSeriesKeepsTheOrderOfInputsScheduledAtOnce(t *testing.T) {
	logOf := func(series bool) []string {
		var log []string
		run(t, Config{Nodes: 4, Seed: 3, Workload: inputs{200, series},
			New:    func(proc.ID, int) proc.Process { return &passer{log: &log} },
			Faults: []Fault{{Kind: Pause, Node: 2, At: 5 * time.Millisecond, Until: 12 * time.Millisecond}}})
		return log
	}
	all, one := logOf(false), logOf(true)
	if len(all) != 400 {
		t.Fatalf("%d events handled, want 200 inputs and 200 messages", len(all))
	}
	for i := range all {
		if i >= len(one) || all[i] != one[i] {
			t.Fatalf("a series changes the run at its event %d: %q, scheduled at once: %q", i, one[min(i, len(one)-1)], all[i])
		}
	}
	if len(one) != len(all) {
		t.Fatalf("a series handles %d events, scheduled at once %d", len(one), len(all))
	}
}
