package check_test

import (
	"testing"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/check/checktest"
	"github.com/cohort-go/cohort/trace"
)

// drifting is the textbook example of three processes whose clocks tick 6,
// 8 and 10 units (Tanenbaum & van Steen §6.2): P1, P2, P3 are p0, p1, p2,
// and each send and receive is stamped with the clock reading. Without
// Lamport's correction m3 is sent at 60 and received at 56; with it, the
// receiving clock moves to 61 and keeps ticking from there. It returns the
// trace and the indexes of m3's send and receive and of their stamp
// outputs.
func drifting(corrected bool) (*trace.Trace, []int) {
	recv3, send4, recv4 := uint64(56), uint64(64), uint64(54)
	if corrected {
		recv3, send4, recv4 = 61, 69, 70
	}
	b := checktest.New(3)
	s1 := b.Send(0, 1, "m")
	b.Stamp(0, 6)
	b.Recv(s1)
	b.Stamp(1, 16)
	s2 := b.Send(1, 2, "m")
	b.Stamp(1, 24)
	b.Recv(s2)
	b.Stamp(2, 40)
	s3 := b.Send(2, 1, "m")
	o3 := b.Stamp(2, 60)
	r3 := b.Recv(s3)
	p3 := b.Stamp(1, recv3)
	s4 := b.Send(1, 0, "m")
	b.Stamp(1, send4)
	b.Recv(s4)
	b.Stamp(0, recv4)
	return &b.Trace, []int{s3, o3, r3, p3}
}

func TestClockCondition(t *testing.T) {
	runFixtures(t, "clock-condition", []fixture{
		{name: "lamport and vector timestamps of an exchange", build: func() (*trace.Trace, []int) {
			b := checktest.New(3).WithVC()
			s1 := b.Send(0, 1, "req")
			s2 := b.Send(2, 0, "req")
			b.Recv(s1)
			b.Local(1, trace.Crash)
			b.Local(1, trace.Recover)
			s3 := b.Send(1, 2, "req")
			b.Dup(s2)
			b.Recv(s2)
			b.Recv(s2)
			b.Recv(s3)
			s4 := b.Send(2, 2, "tick")
			b.Recv(s4)
			return &b.Trace, nil
		}},
		{name: "drifting clocks after Lamport's correction", build: func() (*trace.Trace, []int) {
			tr, _ := drifting(true)
			return tr, nil
		}},
		{name: "stamps of concurrent events in any order", build: func() (*trace.Trace, []int) {
			b := checktest.New(2)
			b.Send(0, 1, "req")
			b.Stamp(0, 10)
			b.Send(1, 0, "req")
			b.Stamp(1, 5)
			return &b.Trace, nil
		}},
		{name: "drifting clocks without correction", detail: "m3: sent at C=60 by p2, received at C=56 by p1 (and 3 more)", build: func() (*trace.Trace, []int) {
			return drifting(false)
		}},
		{name: "stamps out of order along a chain", detail: "#0 (p0 send m1) at C=10 happened before #4 (p2 recv m2) at C=5", build: func() (*trace.Trace, []int) {
			b := checktest.New(3)
			s1 := b.Send(0, 1, "m")
			o1 := b.Stamp(0, 10)
			b.Recv(s1) // not stamped
			s2 := b.Send(1, 2, "m")
			r2 := b.Recv(s2)
			o2 := b.Stamp(2, 5)
			return &b.Trace, []int{s1, o1, r2, o2}
		}},
		{name: "receive stamped equal to its send", detail: "m1: sent at C=7 by p0, received at C=7 by p1", build: func() (*trace.Trace, []int) {
			b := checktest.New(2)
			s := b.Send(0, 1, "m")
			o1 := b.Stamp(0, 7)
			r := b.Recv(s)
			o2 := b.Stamp(1, 7)
			return &b.Trace, []int{s, o1, r, o2}
		}},
		{name: "stamp with nothing to stamp", detail: "#1: p1 stamps C=3 with no send or receive before it", build: func() (*trace.Trace, []int) {
			b := checktest.New(2)
			b.Send(0, 1, "m")
			o := b.Stamp(1, 3)
			return &b.Trace, []int{o}
		}},
		{name: "stamp that does not decode", detail: "#1: p0 stamp output", build: func() (*trace.Trace, []int) {
			b := checktest.New(2)
			b.Send(0, 1, "m")
			o := b.Stamp(0, 3)
			b.Trace.Events[o].Data = []byte(`{"c":"three"}`)
			return &b.Trace, []int{o}
		}},
		{name: "lamport timestamp of a receive below its send", detail: "m1: sent at L=3 by p0, received at L=2 by p1", build: func() (*trace.Trace, []int) {
			b := checktest.New(2)
			b.Local(0, trace.Timer)
			b.Local(0, trace.Input)
			s := b.Send(0, 1, "req")
			r := b.Recv(s)
			b.Trace.Events[r].Lamport = 2
			b.Local(1, trace.Output)
			return &b.Trace, []int{s, r}
		}},
		{name: "lamport timestamp standing still in a process", detail: "p0: L=1 at #0 (timer), then L=1 at #1 (send m1)", build: func() (*trace.Trace, []int) {
			b := checktest.New(2)
			a := b.Local(0, trace.Timer)
			s := b.Send(0, 1, "req")
			b.Trace.Events[s].Lamport = 1
			return &b.Trace, []int{a, s}
		}},
		{name: "vector timestamp missing the sender", detail: "m1: sent at VC=[1,0,0] by p0, received at VC=[0,2,0] by p1", build: func() (*trace.Trace, []int) {
			b := checktest.New(3).WithVC()
			b.Local(1, trace.Timer)
			s := b.Send(0, 1, "req")
			r := b.Recv(s)
			b.Trace.Events[r].VC = trace.DenseVC([]uint64{0, 2, 0})
			return &b.Trace, []int{s, r}
		}},
		{name: "vector timestamp claiming a predecessor it does not have", detail: "#2 (p2 timer): recorded VC=[1,0,1], happened-before implies VC=[0,0,1]", build: func() (*trace.Trace, []int) {
			b := checktest.New(3).WithVC()
			s := b.Send(0, 1, "req")
			b.Recv(s)
			tm := b.Local(2, trace.Timer)
			b.Trace.Events[tm].VC = trace.DenseVC([]uint64{1, 0, 1})
			return &b.Trace, []int{tm}
		}},
	})
}

func TestClockConditionUnknown(t *testing.T) {
	b := checktest.New(2)
	b.Send(0, 1, "req")
	b.Trace.Events[0].Node = 5
	c, _ := check.Lookup("clock-condition")
	if r := c.Check(&b.Trace); r.Status != check.Unknown || r.Detail == "" {
		t.Errorf("malformed trace: got %s, want unknown with a reason", r)
	}
}
