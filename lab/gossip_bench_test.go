package lab

import (
	"fmt"
	"testing"
)

// BenchmarkGossipDissemination spreads one update to every node of a
// 10^5-node run, without a trace (the way a million-node run goes), per
// anti-entropy algorithm: the simulator's cost per process and message.
func BenchmarkGossipDissemination(b *testing.B) {
	f, err := Lookup("gossip")
	if err != nil {
		b.Fatal(err)
	}
	for _, algo := range []string{"push", "pull", "push-pull"} {
		a, err := f.Algorithm(algo)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%s/n=1e5", algo), func(b *testing.B) {
			for range b.N {
				o := f.Options(a)
				o.Nodes, o.NoCheck = 100_000, true
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
