package lab

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/cohort-go/cohort/epidemic"
)

// membersDiscoveryPeriod is SWIM's period in the members algorithm's
// discovery runs: Serf's probe interval, long enough that an ack crosses
// a transit-stub network (round trips up to about 300 ms) within the
// probe timeout, half of it.
const membersDiscoveryPeriod = time.Second

// membersDiscovery runs the discovery workload on the members algorithm
// with coordinates (the live service's), on n nodes.
func membersDiscovery(t testing.TB, n int, seed uint64, plane bool) map[string]float64 {
	t.Helper()
	f, _ := Lookup("gossip")
	a, _ := f.Algorithm("members")
	p := epidemic.Params{Period: membersDiscoveryPeriod, Coordinates: true}
	o, err := ConfigureGossip(f, a, p)
	if err != nil {
		t.Fatal(err)
	}
	w := NewDiscoveryLoad(p)
	w.Plane = plane
	o.Workload = w
	o.Nodes, o.Seed, o.NoCheck, o.NoHash = n, &seed, true, true
	o.Deadline = time.Hour
	r, _, err := Sim(o)
	if err != nil {
		t.Fatal(err)
	}
	return r.Metrics
}

// TestMembersDiscoveryRanksByCoordinates: the members algorithm, whose
// coordinates ride on SWIM's acks, answers finds nearer than a random
// choice of holders on both networks, as the discovery algorithm does
// with probes of its own.
func TestMembersDiscoveryRanksByCoordinates(t *testing.T) {
	if testing.Short() {
		t.Skip("300 simulated seconds of SWIM")
	}
	for _, plane := range []bool{false, true} {
		m := membersDiscovery(t, 100, 2, plane)
		if !(m["precision_at_k"] > m["random_precision"]) || !(m["nearest_in_k"] > 0.5) {
			t.Errorf("plane %v: precision %v (random %v), nearest in k %v", plane, m["precision_at_k"], m["random_precision"], m["nearest_in_k"])
		}
		t.Logf("plane %v: %v", plane, m)
	}
}

// BenchmarkMembersDiscovery measures the members algorithm's finds at
// COHORT_DISCOVERY_NODES nodes (default 1000), seeds 1–3, on both
// networks; the metrics are nearest_first and rtt_error:
//
//	go test -run '^$' -bench MembersDiscovery -benchtime 1x ./lab
func BenchmarkMembersDiscovery(b *testing.B) {
	n := 1000
	if s := os.Getenv("COHORT_DISCOVERY_NODES"); s != "" {
		if v, err := strconv.Atoi(s); err == nil && v > 1 {
			n = v
		}
	}
	for _, plane := range []bool{false, true} {
		for seed := uint64(1); seed <= 3; seed++ {
			b.Run("plane="+strconv.FormatBool(plane)+"/seed="+strconv.FormatUint(seed, 10), func(b *testing.B) {
				for range b.N {
					m := membersDiscovery(b, n, seed, plane)
					b.ReportMetric(m["nearest_first"], "nearest_first")
					b.ReportMetric(m["nearest_in_k"], "nearest_in_k")
					b.ReportMetric(m["precision_at_k"], "precision@k")
					b.ReportMetric(m["rtt_error"], "rtt_error")
					b.ReportMetric(m["messages_per_node_round"], "msgs/node/round")
				}
			})
		}
	}
}
