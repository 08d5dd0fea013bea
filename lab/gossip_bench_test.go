package lab

import (
	"fmt"
	"testing"
)

// BenchmarkGossipDissemination spreads one update to every node of a
// 10^5-node run, without a trace or its hash (the way a million-node run
// goes), per anti-entropy algorithm, and push-pull's to 10^6 nodes: the
// simulator's cost per process and message.
func BenchmarkGossipDissemination(b *testing.B) {
	f, err := Lookup("gossip")
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		algo string
		n    int
	}{{"push", 100_000}, {"pull", 100_000}, {"push-pull", 100_000}, {"push-pull", 1_000_000}} {
		a, err := f.Algorithm(c.algo)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%s/n=%d", c.algo, c.n), func(b *testing.B) {
			for range b.N {
				o := f.Options(a)
				o.Nodes, o.NoCheck, o.NoHash = c.n, true, true
				r, _, err := Sim(o)
				if err != nil {
					b.Fatal(err)
				}
				if r.Metrics["residue"] != 0 {
					b.Fatalf("residue %v", r.Metrics["residue"])
				}
				b.ReportMetric(r.Metrics["rounds_to_all"], "rounds")
				b.ReportMetric(float64(r.Events)/b.Elapsed().Seconds()*float64(b.N), "events/s")
			}
		})
	}
}
