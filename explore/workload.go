package explore

import (
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
)

// Input is one application input to a process.
type Input struct {
	Node proc.ID
	In   proc.Input
	Text string // as given: "acquire", "tell 2"
}

// Workload gives each process its inputs in order. Without a Gate every
// input is pending from the start (the explorer fires them in every order
// among the other events); with one, a process's next input is given when
// it outputs Gate ("exit": the next Acquire after the last section ended).
// Answer, if set, answers outputs with inputs (an Enter with a Release).
// Its state (how far each process is) is part of the explored state.
type Workload struct {
	Inputs [][]proc.Input
	Gate   string
	Answer func(o proc.Output) proc.Input
	next   []int
}

func (w *Workload) state() any { return w.next }

// Init gives every process its first input (all of them, without a Gate).
func (w *Workload) Init(c sim.Control) {
	w.next = make([]int, len(w.Inputs))
	for id := range w.Inputs {
		if w.Gate == "" {
			for _, in := range w.Inputs[id] {
				c.Schedule(0, proc.ID(id), in)
			}
			w.next[id] = len(w.Inputs[id])
			continue
		}
		w.give(c, proc.ID(id))
	}
}

func (w *Workload) give(c sim.Control, id proc.ID) {
	if w.next[id] < len(w.Inputs[id]) {
		c.Schedule(0, id, w.Inputs[id][w.next[id]])
		w.next[id]++
	}
}

// Observe answers outputs and opens the gate.
func (w *Workload) Observe(c sim.Control, id proc.ID, o proc.Output) {
	if w.Answer != nil {
		if in := w.Answer(o); in != nil {
			c.Schedule(latency, id, in)
		}
	}
	if w.Gate != "" && o.Kind() == w.Gate {
		w.give(c, id)
	}
}

// Restarted: a process restarted with fresh state gets no more inputs
// (its request died with it).
func (w *Workload) Restarted(sim.Control, proc.ID) {}

var _ = time.Millisecond
