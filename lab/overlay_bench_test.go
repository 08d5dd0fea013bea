package lab

import (
	"fmt"
	"testing"
)

// BenchmarkPastryJoins builds a Pastry overlay of n nodes by joins
// through the protocol, one after another, then routes 1000 lookups —
// the default overlay workload, without a trace or its hash (the way a
// large run goes): the cost of a join, and of the simulator per message.
func BenchmarkPastryJoins(b *testing.B) {
	f, err := Lookup("overlay")
	if err != nil {
		b.Fatal(err)
	}
	a, err := f.Algorithm("pastry")
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for range b.N {
				o := f.Options(a)
				o.Nodes, o.NoCheck, o.NoHash = n, true, true
				r, _, err := Sim(o)
				if err != nil {
					b.Fatal(err)
				}
				if r.Metrics["delivered_fraction"] != 1 {
					b.Fatalf("delivered %v", r.Metrics["delivered_fraction"])
				}
				b.ReportMetric(float64(r.Events)/b.Elapsed().Seconds()*float64(b.N), "events/s")
			}
		})
	}
}

// BenchmarkScribeGroups builds a Pastry overlay of n nodes by joins, then
// Castro et al.'s groups (ScribeLoad.Zipf: group r has ⌊N·r^−1.25 + 0.5⌋
// members) and one multicast per group; every member must receive it.
func BenchmarkScribeGroups(b *testing.B) {
	f, err := Lookup("overlay")
	if err != nil {
		b.Fatal(err)
	}
	a, err := f.Algorithm("scribe")
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ n, groups int }{{10_000, 1500}, {100_000, 1500}} {
		b.Run(fmt.Sprintf("n=%d/groups=%d", c.n, c.groups), func(b *testing.B) {
			for range b.N {
				o := f.Options(a)
				o.Nodes, o.NoCheck, o.NoHash = c.n, true, true
				w := o.Workload.(*ScribeLoad)
				w.Groups, w.Zipf, w.Casts = c.groups, true, 1
				r, _, err := Sim(o)
				if err != nil {
					b.Fatal(err)
				}
				if r.Metrics["received_fraction"] != 1 {
					b.Fatalf("received %v", r.Metrics["received_fraction"])
				}
				b.ReportMetric(float64(w.expected), "memberships")
				b.ReportMetric(float64(r.Events)/b.Elapsed().Seconds()*float64(b.N), "events/s")
			}
		})
	}
}
