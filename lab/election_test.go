package lab

import (
	"testing"

	"github.com/cohort-go/cohort/check/checktest"
)

func TestTurnaroundCountsSerialMessages(t *testing.T) {
	// p0 sends to p1 and p2 at once (one transmission time), p1 relays to
	// p3, p3 answers p0: the longest chain is p0→p1→p3→p0, three messages.
	b := checktest.New(4)
	a := b.Send(0, 1, "election")
	c := b.Send(0, 2, "election")
	b.Recv(a)
	b.Recv(c)
	d := b.Send(1, 3, "election")
	b.Recv(d)
	e := b.Send(3, 0, "ok")
	b.Recv(e)
	if got := Turnaround(&b.Trace); got != 3 {
		t.Errorf("turnaround = %d, want 3", got)
	}
	parallel := checktest.New(3)
	x := parallel.Send(0, 1, "coordinator")
	y := parallel.Send(0, 2, "coordinator")
	parallel.Recv(x)
	parallel.Recv(y)
	if got := Turnaround(&parallel.Trace); got != 1 {
		t.Errorf("turnaround of parallel sends = %d, want 1", got)
	}
}
