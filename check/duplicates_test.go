package check_test

import (
	"testing"

	"github.com/cohort-go/cohort/check/checktest"
	"github.com/cohort-go/cohort/trace"
)

func TestNoDuplicates(t *testing.T) {
	runFixtures(t, "no-duplicates", []fixture{
		{name: "each message received once", build: func() (*trace.Trace, []int) {
			b := checktest.New(3)
			s1 := b.Send(0, 1, "req")
			s2 := b.Send(0, 2, "req")
			b.Recv(s2)
			b.Recv(s1)
			b.Drop(b.Send(1, 2, "req"), "loss")
			return &b.Trace, nil
		}},
		{name: "duplicated and received twice", build: func() (*trace.Trace, []int) {
			b := checktest.New(2)
			s := b.Send(0, 1, "req")
			b.Dup(s)
			b.Recv(s)
			b.Recv(s)
			return &b.Trace, nil
		}},
		{name: "received twice, never duplicated", detail: "m1 received 2 times by p1, never duplicated", build: func() (*trace.Trace, []int) {
			b := checktest.New(2)
			s := b.Send(0, 1, "req")
			r1 := b.Recv(s)
			b.Local(1, trace.Timer)
			r2 := b.Recv(s)
			return &b.Trace, []int{s, r1, r2}
		}},
		{name: "duplicated once, received three times", detail: "m1 received 3 times by p1, duplicated once", build: func() (*trace.Trace, []int) {
			b := checktest.New(2)
			s := b.Send(0, 1, "req")
			b.Dup(s)
			r1 := b.Recv(s)
			r2 := b.Recv(s)
			r3 := b.Recv(s)
			return &b.Trace, []int{s, r1, r2, r3}
		}},
		{name: "duplicate announced after the second receipt", detail: "m1 received 2 times by p1, never duplicated", build: func() (*trace.Trace, []int) {
			b := checktest.New(2)
			s := b.Send(0, 1, "req")
			r1 := b.Recv(s)
			r2 := b.Recv(s)
			b.Dup(s)
			return &b.Trace, []int{s, r1, r2}
		}},
		{name: "received twice, never sent", detail: "m4 received 2 times by p0", build: func() (*trace.Trace, []int) {
			b := checktest.New(2)
			r1 := b.Add(trace.Event{Node: 0, Kind: trace.Recv, Msg: 4, Peer: 1})
			r2 := b.Add(trace.Event{Node: 0, Kind: trace.Recv, Msg: 4, Peer: 1})
			return &b.Trace, []int{r1, r2}
		}},
	})
}
