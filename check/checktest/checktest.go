// Package checktest builds small traces by hand for the tests of checkers,
// renderers and anything else that reads traces.
//
// A Builder appends events the way a host records them: consecutive
// indexes, true time rising by Step per event, Lamport timestamps by
// Lamport's rules (tick on every process event; a receive first takes the
// maximum with its send's) and, if asked, vector timestamps likewise. To
// build a broken trace, build a correct one and then edit the events in
// b.Trace directly:
//
//	b := checktest.New(3)
//	s := b.Send(2, 1, "m")
//	r := b.Recv(s)
//	b.Trace.Events[r].Lamport = 1 // the receive claims a time before its send
package checktest

import (
	"encoding/json"
	"fmt"

	"github.com/cohort-go/cohort/logical"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/trace"
)

// Step is the true time between consecutive events (ns).
const Step = 1_000_000

// Builder appends events to Trace. Its zero value is not usable; call New.
type Builder struct {
	Trace trace.Trace

	lamport []uint64   // per node: the last Lamport timestamp
	vc      [][]uint64 // per node: the last vector timestamp; nil if not recorded
	sends   map[uint64]int
	nextMsg uint64
}

// New returns a Builder for an n-process trace without vector timestamps.
func New(n int) *Builder {
	b := &Builder{lamport: make([]uint64, n), sends: map[uint64]int{}}
	b.Trace.Header = trace.Header{Format: trace.FormatName, Nodes: n}
	return b
}

// WithVC makes the builder record vector timestamps on the process events
// it adds, and returns it. Call it before adding any event.
func (b *Builder) WithVC() *Builder {
	b.vc = make([][]uint64, len(b.lamport))
	for p := range b.vc {
		b.vc[p] = make([]uint64, len(b.lamport))
	}
	return b
}

// Add appends e and returns its index. It sets Index, Time (Step after the
// previous event), Local (equal to Time) and, for a process event, Lamport
// and (if recorded) VC. A receive takes into account the timestamps of the
// first earlier send of its message id, if there is one. Peer defaults to
// 0, so set it to -1 for events without one.
func (b *Builder) Add(e trace.Event) int {
	i := len(b.Trace.Events)
	e.Index = i
	e.Time = int64(i+1) * Step
	e.Local = e.Time
	if e.Kind.IsProcess() {
		p := e.Node
		if s, sent := b.sends[e.Msg]; sent && e.Kind == trace.Recv {
			send := &b.Trace.Events[s]
			b.lamport[p] = max(b.lamport[p], send.Lamport)
			if b.vc != nil {
				logical.MergeInto(b.vc[p], send.VC.Dense())
			}
		}
		b.lamport[p]++
		e.Lamport = b.lamport[p]
		if b.vc != nil {
			b.vc[p][p]++
			e.VC = trace.DenseVC(append([]uint64(nil), b.vc[p]...))
		}
	}
	if _, sent := b.sends[e.Msg]; e.Kind == trace.Send && !sent {
		b.sends[e.Msg] = i
	}
	b.Trace.Events = append(b.Trace.Events, e)
	return i
}

// Send appends a send of a new message of type typ from node from to node
// to, and returns its index. Message ids are 1, 2, 3 ... in the order of
// sends, so the k-th message sent is "m<k>".
func (b *Builder) Send(from, to int32, typ string) int {
	b.nextMsg++
	return b.Add(trace.Event{Node: from, Kind: trace.Send, Msg: b.nextMsg, Peer: to, Type: typ})
}

// Recv appends the receipt of the message sent by event send and returns
// its index.
func (b *Builder) Recv(send int) int {
	s := b.Trace.Events[send]
	return b.Add(trace.Event{Node: s.Peer, Kind: trace.Recv, Msg: s.Msg, Peer: s.Node, Type: s.Type})
}

// Dup appends the network's announcement that the message sent by event
// send will be delivered twice, and returns its index.
func (b *Builder) Dup(send int) int {
	s := b.Trace.Events[send]
	return b.Add(trace.Event{Node: s.Node, Kind: trace.Dup, Msg: s.Msg, Peer: s.Peer, Type: s.Type})
}

// Drop appends the loss of the message sent by event send and returns its
// index.
func (b *Builder) Drop(send int, reason string) int {
	s := b.Trace.Events[send]
	return b.Add(trace.Event{Node: s.Peer, Kind: trace.Drop, Msg: s.Msg, Peer: s.Node, Type: s.Type, Reason: reason})
}

// Local appends an event of node that involves no message (Timer, Input,
// Crash, Recover, Start ...) and returns its index.
func (b *Builder) Local(node int32, kind trace.Kind) int {
	return b.Add(trace.Event{Node: node, Kind: kind, Peer: -1})
}

// Output appends output o of node, recorded as a host records it (Type is
// o.Kind(), Data its JSON, Label its String() if it has one), and returns
// its index.
func (b *Builder) Output(node int32, o proc.Output) int {
	data, err := json.Marshal(o)
	if err != nil {
		panic(fmt.Sprintf("checktest: output %T: %v", o, err))
	}
	e := trace.Event{Node: node, Kind: trace.Output, Peer: -1, Type: o.Kind(), Data: data}
	if s, ok := o.(fmt.Stringer); ok {
		e.Label = s.String()
	}
	return b.Add(e)
}

// Stamp appends a proc.Stamp output of node with timestamp c and returns its
// index.
func (b *Builder) Stamp(node int32, c uint64) int { return b.Output(node, proc.Stamp{C: c}) }
