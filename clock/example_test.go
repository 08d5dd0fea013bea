package clock_test

import (
	"fmt"

	"github.com/cohort-go/cohort/logical"
)

// Two processes exchange one message; P1 stamps its events with a Lamport
// clock and a vector clock by the rules of Lamport 1978 and Fidge/Mattern
// (Tanenbaum & van Steen §6.2).
func Example() {
	var l0, l1 logical.Lamport
	v0, v1 := logical.New(2), logical.New(2)

	// P0: a local event, then a send.
	l0.Tick()
	v0.Increment(0)
	lts := l0.Send()
	v0.Increment(0)
	vts := v0.Copy()

	// P1: a local event, then the receipt.
	l1.Tick()
	v1.Increment(1)
	fmt.Println("P1 before receipt:", l1.Now(), v1, logical.Compare(vts, v1))
	l1.Recv(lts)
	v1.Merge(vts)
	v1.Increment(1)
	fmt.Println("P1 after receipt:", l1.Now(), v1, logical.Compare(vts, v1))
	// Output:
	// P1 before receipt: 1 (0,1) concurrent
	// P1 after receipt: 3 (2,2) before
}

func ExampleScalar() {
	// T(e) = 10·L(e) + id for processes 1..3.
	for _, ts := range []logical.Timestamp{{C: 42, P: 1}, {C: 11, P: 2}, {C: 14, P: 3}} {
		fmt.Println(ts, logical.Scalar(ts.C, ts.P, 10))
	}
	// Output:
	// (42,p1) 421
	// (11,p2) 112
	// (14,p3) 143
}
