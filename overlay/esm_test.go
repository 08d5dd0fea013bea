package overlay_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/overlay"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
	"github.com/cohort-go/cohort/trace"
)

// sessionStory is an ESM run: node 0 is the source; the others join the
// session 20 ms apart; the source sends a packet every 50 ms; crash nodes
// fail at once, then leave nodes leave gracefully, then more fail; the
// stream goes on throughout.
type sessionStory struct {
	n, crash, leave int
	seed            uint64
	cfg             overlay.ESMConfig
	new             func(proc.ID, int) proc.Process
	net             sim.Network
}

func (s sessionStory) run(t testing.TB) *simtest.Recorded {
	rng := rand.New(rand.NewPCG(s.seed, 0x65736d))
	var sc sim.Script
	for i := 1; i < s.n; i++ {
		sc = append(sc, sim.TimedInput{At: time.Duration(i) * 20 * time.Millisecond, Node: proc.ID(i), Input: overlay.ESMJoin{}})
	}
	joined := time.Duration(s.n)*20*time.Millisecond + overlay.ESMJoinBound
	// Failures and leaves: three waves, ESMRepairBound apart and more.
	others := rng.Perm(s.n - 1)
	var fs []sim.Fault
	wave := func(at time.Duration, k int, crash bool) {
		for range k {
			if len(others) == 0 {
				return
			}
			x := proc.ID(others[0] + 1)
			others = others[1:]
			if crash {
				fs = append(fs, sim.Fault{Kind: sim.Crash, Node: x, At: at})
			} else {
				sc = append(sc, sim.TimedInput{At: at, Node: x, Input: overlay.ESMLeave{}})
			}
		}
	}
	gap := overlay.ESMRepairBound + time.Second
	wave(joined+time.Second, s.crash, true)
	wave(joined+time.Second+gap, s.leave, false)
	wave(joined+time.Second+2*gap, s.crash, true)
	end := joined + time.Second + 3*gap
	id := uint64(0)
	for at := 100 * time.Millisecond; at < end; at += 50 * time.Millisecond {
		id++
		sc = append(sc, sim.TimedInput{At: at, Node: overlay.ESMSource, Input: overlay.ESMSend{ID: id}})
	}
	cfg := sim.Config{Nodes: s.n, Seed: s.seed, New: s.new, Faults: fs, Workload: sc, Network: s.net,
		Deadline: end + 2*overlay.ESMDeliveryBound}
	if cfg.New == nil {
		c := s.cfg
		if c.Degree == 0 {
			c = overlay.DefaultESM
		}
		cfg.New = func(id proc.ID, _ int) proc.Process { return overlay.NewESM(id, c) }
	}
	return simtest.Run(t, "overlay", cfg)
}

// TestESMSweep: over many seeds and sizes, with failures and graceful
// leaves, and latencies that vary, the ESM tree never has a cycle and
// every member receives every packet exactly once while the tree is
// intact — in two seeds of three with the members switching to better
// parents every 300 ms (a switch is no failure: the stream must go on
// whole through it).
func TestESMSweep(t *testing.T) {
	seeds := simtest.Seeds(12, 4)
	if raceEnabled {
		seeds = 2
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		n := []int{5, 12, 30, 60}[seed%4]
		s := sessionStory{n: n, crash: max(1, n/10), leave: max(1, n/10), seed: seed,
			cfg: overlay.ESMConfig{Degree: 2 + int(seed%3), Sample: 5, LatencyOnly: seed%5 == 0}}
		if seed%3 != 0 {
			s.cfg.Improve = 300 * time.Millisecond
		}
		if seed%2 == 0 {
			s.net = sim.Network{Latency: sim.Uniform{Min: time.Millisecond, Max: 30 * time.Millisecond}}
		}
		r := s.run(t)
		for name, v := range r.Verdicts(t, "esm-delivery", "esm-no-cycle") {
			if !v.OK() {
				t.Fatalf("seed %d, %d nodes: %s: %s", seed, n, name, v.Counterexample(r.Trace))
			}
		}
		t.Logf("seed %d, %d nodes, improve %v: %d receipts, %d parent changes, %d climbs", seed, n, s.cfg.Improve,
			r.Count("esm-received"), r.Count("esm-parent"), r.Trace.Count(trace.Send, "climbed"))
		if r.Count("esm-received") == 0 {
			t.Fatalf("seed %d: no packet received", seed)
		}
	}
}

// TestESMCheckersCatchDescendantParent: ESM that may take one of its own
// descendants as its parent, when its parent fails, closes cycles (which
// esm-no-cycle finds), and the members on them receive nothing more
// (which esm-delivery finds when the cycle outlives the last failures).
// With a degree bound of 1 the tree is a chain, and after a failure in
// its middle the only unsaturated node is the chain's tail, a descendant
// of the orphan, until the failed node's parent drops it
// (ESMChildSuspect): an orphan that looks before then takes the tail.
func TestESMCheckersCatchDescendantParent(t *testing.T) {
	caught := map[string]int{}
	runs := uint64(16)
	need := map[string]int{"esm-no-cycle": 4, "esm-delivery": 1}
	if raceEnabled {
		runs, need["esm-no-cycle"], need["esm-delivery"] = 6, 1, 0
	}
	for seed := uint64(1); seed <= runs; seed++ {
		cfg := overlay.ESMConfig{Degree: 1, Sample: 24}
		s := sessionStory{n: 24, crash: 4, leave: 3, seed: seed, new: overlay.PicksDescendant(cfg)}
		r := s.run(t)
		for name, v := range r.Verdicts(t, "esm-delivery", "esm-no-cycle") {
			if v.Status == check.Violated {
				caught[name]++
				if caught[name] == 1 {
					t.Logf("seed %d: %s", seed, v.Counterexample(r.Trace))
				}
			}
		}
	}
	for _, name := range []string{"esm-no-cycle", "esm-delivery"} {
		if caught[name] < need[name] {
			t.Errorf("%s caught the descendant-taking ESM in %d of %d runs", name, caught[name], runs)
		}
	}

}

// TestESMBandwidthProbing: hosts whose uploads are half the stream's
// rate, once, twice and ten times it, in turn. Choosing parents by the
// bandwidth their probes answer, then delay, every member receives the
// whole stream (no host takes more children than its upload can feed,
// and the slow hosts are leaves); by delay alone some get a share of a
// slow host's upload. Both trees deliver every packet and have no cycle.
func TestESMBandwidthProbing(t *testing.T) {
	uploads := []float64{0.5, 1, 2, 10}
	for _, latencyOnly := range []bool{false, true} {
		const n = 40
		procs := make([]proc.Process, n)
		s := sessionStory{n: n, seed: 1, new: func(id proc.ID, _ int) proc.Process {
			c := overlay.DefaultESM
			c.LatencyOnly, c.Upload = latencyOnly, uploads[int(id)%len(uploads)]
			if id == overlay.ESMSource {
				c.Upload = 4
			}
			procs[id] = overlay.NewESM(id, c)
			return procs[id]
		}}
		s.run(t).Hold(t, "esm-delivery", "esm-no-cycle")
		rates := overlay.ESMRates(procs)
		full := 0
		for _, r := range rates {
			if r >= 1 {
				full++
			}
		}
		t.Logf("latency only %t: %d of %d members at the full rate", latencyOnly, full, len(rates))
		if len(rates) != n-1 {
			t.Errorf("latency only %t: %d members on the tree, want %d", latencyOnly, len(rates), n-1)
		}
		if !latencyOnly && full != len(rates) {
			t.Errorf("by bandwidth: %d of %d members at the full rate, want all", full, len(rates))
		}
		if latencyOnly && full == len(rates) {
			t.Errorf("by delay alone: every member at the full rate, want some below it")
		}
	}
}

// TestESMCapableHostsNearTheSource: hosts of 1, 2, 10 and 0.5 Mbit/s
// join in turn, so the source's four places go first to hosts that
// forward the whole stream to one child, two, four and none. With
// displacement, the 10 Mbit/s hosts that join later take those places
// (their holders moved one level down), and the tree is shallower; the
// tree without it keeps the first four for good. Both deliver every
// packet and have no cycle.
func TestESMCapableHostsNearTheSource(t *testing.T) {
	uploads := []float64{0.5, 1, 2, 10}
	depth := map[bool]float64{}
	for _, displace := range []bool{true, false} {
		const n = 40
		procs := make([]proc.Process, n)
		s := sessionStory{n: n, seed: 1, new: func(id proc.ID, k int) proc.Process {
			c := overlay.DefaultESM
			c.Upload = uploads[int(id)%len(uploads)]
			if id == overlay.ESMSource {
				c.Upload = 4
			}
			if displace {
				procs[id] = overlay.NewESM(id, c)
			} else {
				procs[id] = overlay.KeepsPlaces(c)(id, k)
			}
			return procs[id]
		}}
		s.run(t).Hold(t, "esm-delivery", "esm-no-cycle")
		_, members, depths := overlay.ESMTree(procs)
		if len(members) != n-1 {
			t.Errorf("displacement %t: %d members on the tree, want %d", displace, len(members), n-1)
		}
		var top []proc.ID
		sum := 0
		for i, m := range members {
			if depths[i] == 1 {
				top = append(top, m)
			}
			sum += depths[i]
		}
		depth[displace] = float64(sum) / float64(len(members))
		capable := 0
		for _, m := range top {
			if uploads[int(m)%len(uploads)] == 10 {
				capable++
			}
		}
		t.Logf("displacement %t: the source's children %v, %d of them 10 Mbit/s hosts; mean depth %.2f", displace, top, capable, depth[displace])
		if displace && capable != len(top) {
			t.Errorf("with displacement: the source's children %v, %d of them 10 Mbit/s hosts, want all", top, capable)
		}
		if !displace && capable == len(top) {
			t.Errorf("without displacement: the source's children %v all 10 Mbit/s hosts; the test no longer shows displacement", top)
		}
	}
	if depth[true] >= depth[false] {
		t.Errorf("mean depth %.2f with displacement, %.2f without: want shallower", depth[true], depth[false])
	}
}

// TestESMDisplacementSweep: choosing by bandwidth on the transit-stub
// network, with the hosts' uploads of 0.5–10 Mbit/s, members switching
// every 300 ms, failures and graceful leaves, capable hosts take weaker
// hosts' places all through the run, and the tree never has a cycle and
// delivers every packet while intact. (The network's latencies are its
// shortest paths, so a packet sent to a child directly never arrives
// after the news that it was displaced, which goes through its new
// parent.)
func TestESMDisplacementSweep(t *testing.T) {
	seeds := simtest.Seeds(4, 2)
	if raceEnabled {
		seeds = 1
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		n := []int{24, 48}[seed%2]
		topo := sim.NewTransitStub(n, seed)
		s := sessionStory{n: n, crash: n / 8, leave: n / 8, seed: seed, net: sim.Network{Pairwise: topo},
			new: func(id proc.ID, _ int) proc.Process {
				c := overlay.ESMConfig{Degree: 4, Sample: 6, Stream: 1, Upload: topo.Upload(id), Improve: 300 * time.Millisecond}
				if id == overlay.ESMSource {
					c.Upload = max(c.Upload, 4)
				}
				return overlay.NewESM(id, c)
			}}
		r := s.run(t)
		for name, v := range r.Verdicts(t, "esm-delivery", "esm-no-cycle") {
			if !v.OK() {
				t.Fatalf("seed %d, %d nodes: %s: %s", seed, n, name, v.Counterexample(r.Trace))
			}
		}
		moved := r.Trace.Count(trace.Send, "displaced")
		t.Logf("seed %d, %d nodes: %d receipts, %d parent changes, %d displaced", seed, n,
			r.Count("esm-received"), r.Count("esm-parent"), moved)
		if moved == 0 {
			t.Errorf("seed %d: no host displaced; the sweep no longer exercises displacement", seed)
		}
	}
}
