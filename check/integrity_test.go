package check_test

import (
	"testing"

	"github.com/cohort-go/cohort/check/checktest"
	"github.com/cohort-go/cohort/trace"
)

func TestIntegrity(t *testing.T) {
	runFixtures(t, "integrity", []fixture{
		{name: "exchange with loss, duplication and a self-send", build: func() (*trace.Trace, []int) {
			b := checktest.New(3)
			s1 := b.Send(0, 1, "req")
			s2 := b.Send(1, 2, "req")
			b.Drop(s2, "loss")
			b.Dup(s1)
			b.Recv(s1)
			b.Recv(s1)
			s3 := b.Send(2, 2, "tick")
			b.Recv(s3)
			return &b.Trace, nil
		}},
		{name: "empty", build: func() (*trace.Trace, []int) {
			return &checktest.New(2).Trace, nil
		}},
		{name: "receive with no send", detail: "m7: received from p0 to p1, never sent before", build: func() (*trace.Trace, []int) {
			b := checktest.New(2)
			b.Send(0, 1, "req")
			r := b.Add(trace.Event{Node: 1, Kind: trace.Recv, Msg: 7, Peer: 0, Type: "req"})
			return &b.Trace, []int{r}
		}},
		{name: "receive before its send", detail: "m1: received from p0 to p1, never sent before", build: func() (*trace.Trace, []int) {
			b := checktest.New(2)
			r := b.Add(trace.Event{Node: 1, Kind: trace.Recv, Msg: 1, Peer: 0, Type: "req"})
			b.Send(0, 1, "req")
			return &b.Trace, []int{r}
		}},
		{name: "receiver names the wrong sender", detail: "m1: sent from p0 to p1, received from p2 to p1", build: func() (*trace.Trace, []int) {
			b := checktest.New(3)
			s := b.Send(0, 1, "req")
			r := b.Recv(s)
			b.Trace.Events[r].Peer = 2
			return &b.Trace, []int{s, r}
		}},
		{name: "received by a process it was not sent to", detail: "m1: sent from p0 to p1, received from p0 to p2", build: func() (*trace.Trace, []int) {
			b := checktest.New(3)
			s := b.Send(0, 1, "req")
			r := b.Recv(s)
			b.Trace.Events[r].Node = 2
			return &b.Trace, []int{s, r}
		}},
		{name: "received as another type", detail: `m1: sent as "req", received as "ack"`, build: func() (*trace.Trace, []int) {
			b := checktest.New(2)
			s := b.Send(0, 1, "req")
			r := b.Recv(s)
			b.Trace.Events[r].Type = "ack"
			return &b.Trace, []int{s, r}
		}},
		{name: "message id sent twice", detail: "m1 sent twice: at #0 and at #1", build: func() (*trace.Trace, []int) {
			b := checktest.New(2)
			s1 := b.Send(0, 1, "req")
			s2 := b.Send(1, 0, "req")
			b.Trace.Events[s2].Msg = 1
			return &b.Trace, []int{s1, s2}
		}},
		{name: "drop of a message never sent", detail: "m9: dropped from p1 to p0, never sent before", build: func() (*trace.Trace, []int) {
			b := checktest.New(2)
			d := b.Add(trace.Event{Node: 0, Kind: trace.Drop, Msg: 9, Peer: 1})
			return &b.Trace, []int{d}
		}},
		{name: "duplicate on another link", detail: "m1: sent from p0 to p1, duplicated from p0 to p2", build: func() (*trace.Trace, []int) {
			b := checktest.New(3)
			s := b.Send(0, 1, "req")
			d := b.Dup(s)
			b.Trace.Events[d].Peer = 2
			b.Recv(s)
			return &b.Trace, []int{s, d}
		}},
	})
}
