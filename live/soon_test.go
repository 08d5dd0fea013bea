package live_test

import (
	"testing"
	"time"

	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/proc"
)

// batch is the output of batcher: the inputs one zero-delay timer
// gathered.
type batch struct{ Inputs []int }

func (batch) Kind() string { return "batch" }

// batcher gathers its inputs and outputs them as one batch when a timer
// set to fire at once goes off — the pattern of a Raft leader that
// flushes its new entries together. An input with I < 0 blocks its
// handler until gate is closed; one with I == 0 sets a zero timer and
// cancels it.
type batcher struct {
	pending []int
	armed   bool
	entered chan struct{}
	gate    chan struct{}
}

func (b *batcher) Start(proc.Env)                          {}
func (b *batcher) Receive(proc.Env, proc.ID, proc.Message) {}
func (b *batcher) Input(env proc.Env, in proc.Input) {
	n := in.(num).I
	if n == 0 {
		env.CancelTimer(env.SetTimer(0, "cancelled"))
		return
	}
	b.pending = append(b.pending, n)
	if !b.armed {
		b.armed = true
		env.SetTimer(0, "flush")
	}
	if n < 0 {
		close(b.entered)
		<-b.gate
	}
}
func (b *batcher) Timeout(env proc.Env, tag any) {
	if tag != "flush" {
		env.Output(batch{Inputs: []int{-1000}}) // a cancelled timer fired
		return
	}
	env.Output(batch{Inputs: b.pending})
	b.pending, b.armed = nil, false
}

// TestZeroTimerWaitsForTheInbox: a timer set to fire at once fires after
// the events already waiting in the inbox — nine inputs that arrived while
// a handler ran join the batch it started — and a cancelled one never
// fires.
func TestZeroTimerWaitsForTheInbox(t *testing.T) {
	node := oneNode(t, live.Config{})
	b := &batcher{entered: make(chan struct{}), gate: make(chan struct{})}
	s, err := node.Service("batcher", proc.Algorithm{Family: "test", Name: "batcher",
		New: func(proc.ID, int) proc.Process { return b }})
	if err != nil {
		t.Fatal(err)
	}
	outs, cancel := s.Subscribe(16)
	defer cancel()
	go s.Input(num{I: -1})
	select {
	case <-b.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the first input was never handled")
	}
	for i := 1; i <= 9; i++ {
		if err := s.Input(num{I: i}); err != nil {
			t.Fatal(err)
		}
	}
	close(b.gate)
	got := <-outs
	if want := []int{-1, 1, 2, 3, 4, 5, 6, 7, 8, 9}; len(got.(batch).Inputs) != len(want) {
		t.Fatalf("the zero timer fired with %v, want the batch %v", got.(batch).Inputs, want)
	}
	// A cancelled zero timer, then a batch of one: only the batch comes.
	if err := s.Inputs(num{I: 0}, num{I: 7}); err != nil {
		t.Fatal(err)
	}
	select {
	case o := <-outs:
		if in := o.(batch).Inputs; len(in) != 1 || in[0] != 7 {
			t.Fatalf("got %v, want the batch [7] (a cancelled timer fired?)", in)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second batch never came")
	}
}
