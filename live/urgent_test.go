package live_test

import (
	"slices"
	"testing"
	"time"

	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/wire"
)

// plain and hurry are laner's messages; hurry is urgent (proc.Urgent).
type plain struct{ I int }
type hurry struct{ I int }

func (plain) Kind() string { return "plain" }
func (hurry) Kind() string { return "hurry" }
func (hurry) Lossy()       {}
func (hurry) Urgent()      {}

// got is laner's output: the message it received.
type got struct{ I int }

func (got) Kind() string { return "got" }

// laner sends, on an input num{I} with I > 0, plain{I} to p1, and with
// I < −1 hurry{I}; num{−1} blocks its handler until gate is closed. It
// outputs every message it receives.
type laner struct{ entered, gate chan struct{} }

func (l *laner) Start(proc.Env) {}
func (l *laner) Input(env proc.Env, in proc.Input) {
	switch i := in.(num).I; {
	case i == -1:
		close(l.entered)
		<-l.gate
	case i > 0:
		env.Send(1, plain{I: i})
	default:
		env.Send(1, hurry{I: i})
	}
}
func (l *laner) Receive(env proc.Env, _ proc.ID, m proc.Message) {
	switch m := m.(type) {
	case plain:
		env.Output(got{I: m.I})
	case hurry:
		env.Output(got{I: m.I})
	}
}
func (l *laner) Timeout(proc.Env, any) {}

// TestUrgentMessagesGoFirst: an urgent message (proc.Urgent: a probe's
// ping or ack) is handled ahead of the messages that waited before it in
// the inbox — plain messages wait while p1's handler is busy, an urgent
// one comes last and is handled before them, the plain ones then in
// their order. Without the urgent lane it is handled last.
func TestUrgentMessagesGoFirst(t *testing.T) {
	nw, err := transport.NewInProc(2, transport.InProcConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ls := []*laner{{entered: make(chan struct{}), gate: make(chan struct{})}, {entered: make(chan struct{}), gate: make(chan struct{})}}
	var svcs []*live.Service
	for i := range 2 {
		ep, _ := nw.Endpoint(proc.ID(i))
		node, err := live.NewNode(live.Config{Self: proc.ID(i), N: 2, Transport: ep,
			NewCodec: func(m []proc.Message) (live.Codec, error) { return wire.NewCodec(m) }})
		if err != nil {
			t.Fatal(err)
		}
		if err := node.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { node.Close() })
		l := ls[i]
		s, err := node.Service("lanes", proc.Algorithm{Family: "test", Name: "laner", Messages: []proc.Message{plain{}, hurry{}},
			New: func(proc.ID, int) proc.Process { return l }})
		if err != nil {
			t.Fatal(err)
		}
		svcs = append(svcs, s)
	}
	outs, cancel := svcs[1].Subscribe(16)
	defer cancel()
	go svcs[1].Input(num{I: -1})
	select {
	case <-ls[1].entered:
	case <-time.After(10 * time.Second):
		t.Fatal("p1's blocking input was never handled")
	}
	for _, i := range []int{1, 2, 3, 4, 5, -6} {
		if err := svcs[0].Input(num{I: i}); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); svcs[1].Stats().Queued < 6; {
		if time.Now().After(deadline) {
			t.Fatalf("p1 holds %d events, want the 6 messages", svcs[1].Stats().Queued)
		}
		time.Sleep(time.Millisecond)
	}
	close(ls[1].gate)
	var order []int
	for len(order) < 6 {
		select {
		case o := <-outs:
			order = append(order, o.(got).I)
		case <-time.After(10 * time.Second):
			t.Fatalf("received %v, want 6 messages", order)
		}
	}
	// The first plain message may have gone straight to the actor, if it
	// waited for the inbox (it then waits for its turn); the others wait
	// in the inbox, and the urgent one goes ahead of them.
	if want := []int{1, -6, 2, 3, 4, 5}; !slices.Equal(order, want) && !slices.Equal(order, []int{-6, 1, 2, 3, 4, 5}) {
		t.Fatalf("handled %v, want %v: the urgent message ahead of those in the inbox", order, want)
	}
}
