package sim

import (
	"bytes"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/trace"
)

// plainOut is a plain output: nothing behind a reference but a string.
type plainOut struct {
	N    int
	Name string
}

func (plainOut) Kind() string { return "plain" }

// listOut shares its slice with the process that outputs it, which
// changes it afterwards.
type listOut struct{ Xs []int }

func (listOut) Kind() string { return "list" }

type go1 struct{}

func (go1) Kind() string { return "go" }

// outputter outputs a plain value and its growing list at each input.
type outputter struct{ xs []int }

func (o *outputter) Start(proc.Env)                          {}
func (o *outputter) Receive(proc.Env, proc.ID, proc.Message) {}
func (o *outputter) Timeout(proc.Env, any)                   {}
func (o *outputter) Input(env proc.Env, _ proc.Input) {
	o.xs = append(o.xs, 0) // in the same array: its capacity is 8
	for i := range o.xs {
		o.xs[i]++ // in place: an output that kept the slice would change
	}
	env.Output(plainOut{len(o.xs), "p"})
	env.Output(listOut{o.xs})
}

type threeInputs struct{}

func (threeInputs) Init(c Control) {
	for i := 0; i < 3; i++ {
		c.Schedule(time.Duration(i)*time.Millisecond, proc.ID(i%2), go1{})
	}
}
func (threeInputs) Observe(Control, proc.ID, proc.Output) {}

// deferring is a DeferringSink that encodes the plain values it was
// handed only when asked to, and the others at once.
type deferring struct {
	events []trace.Event
	vals   map[int]any
}

func (d *deferring) Record(e *trace.Event) { d.events = append(d.events, *e) }
func (d *deferring) RecordDeferred(e *trace.Event, v any, plain bool) {
	if e.Data != nil {
		panic("deferred event with Data")
	}
	if plain {
		d.vals[len(d.events)] = v
	} else {
		e.Data = EncodeData(v)
	}
	d.events = append(d.events, *e)
}

// A DeferringSink is handed inputs' and outputs' values; those it is told
// are plain, encoded at the end of the run, give the Data the simulator
// would have recorded, and a value that changes after it is output is
// not called plain.
func TestDeferredDataIsTheRecordedData(t *testing.T) {
	cfg := func(sink trace.Sink) Config {
		return Config{Nodes: 2, Seed: 1, Trace: sink, Workload: threeInputs{},
			New: func(proc.ID, int) proc.Process { return &outputter{xs: make([]int, 0, 8)} }}
	}
	var want trace.Recorder
	run(t, cfg(&want))
	d := &deferring{vals: map[int]any{}}
	run(t, cfg(d))
	if len(d.events) != len(want.Trace.Events) {
		t.Fatalf("%d events, want %d", len(d.events), len(want.Trace.Events))
	}
	kinds := map[string]int{}
	for i, v := range d.vals {
		kinds[d.events[i].Type]++
		d.events[i].Data = EncodeData(v)
	}
	if kinds["plain"] != 3 || kinds["list"] != 0 {
		t.Errorf("deferred as plain: %v; want the 3 plain outputs and no list", kinds)
	}
	for i, e := range d.events {
		w := want.Trace.Events[i]
		if !bytes.Equal(e.Data, w.Data) || e.Type != w.Type || e.Kind != w.Kind {
			t.Errorf("event %d: %s %s %s, want %s %s %s", i, e.Kind, e.Type, e.Data, w.Kind, w.Type, w.Data)
		}
	}
}
