package lab

import (
	"testing"

	"github.com/cohort-go/cohort/epidemic"
)

// TestDiscoveryLoadScoresTheAnswers: the discovery workload, on both of
// its networks, ends with every node's answer, every check holding, and
// answers nearer than a random choice of holders.
func TestDiscoveryLoadScoresTheAnswers(t *testing.T) {
	for _, plane := range []bool{false, true} {
		f, _ := Lookup("gossip")
		a, _ := f.Algorithm("discovery")
		o, err := ConfigureGossip(f, a, epidemic.Params{})
		if err != nil {
			t.Fatal(err)
		}
		o.Workload.(*DiscoveryLoad).Plane = plane
		seed := uint64(2)
		o.Nodes, o.Seed = 100, &seed
		r, _, err := Sim(o)
		if err != nil {
			t.Fatal(err)
		}
		if r.Failed() {
			t.Fatalf("plane %v: checks failed: %+v", plane, r.Checks)
		}
		m := r.Metrics
		for _, k := range []string{"rounds_to_findable", "nearest_first", "nearest_in_k", "precision_at_k", "stretch", "rtt_error"} {
			if _, ok := m[k]; !ok {
				t.Errorf("plane %v: no %s in %v", plane, k, m)
			}
		}
		if !(m["precision_at_k"] > m["random_precision"]) || !(m["nearest_in_k"] > 0.5) {
			t.Errorf("plane %v: precision %v (random %v), nearest in k %v", plane, m["precision_at_k"], m["random_precision"], m["nearest_in_k"])
		}
		t.Logf("plane %v: %v", plane, m)
	}
}
