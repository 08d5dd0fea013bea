package lab

import (
	"math"
	"slices"
	"testing"
	"time"
)

// overlayRun runs overlay algorithm name at n nodes with seed 2 and fails
// t unless every checker holds and is guaranteed.
func overlayRun(t *testing.T, name string, n int) *Report {
	t.Helper()
	f, err := Lookup("overlay")
	if err != nil {
		t.Fatal(err)
	}
	a, err := f.Algorithm(name)
	if err != nil {
		t.Fatal(err)
	}
	o := f.Options(a)
	seed := uint64(2)
	o.Nodes, o.Seed = n, &seed
	r, _, err := Sim(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Checks {
		if !c.OK || !c.Guaranteed {
			t.Errorf("%s: %+v", name, c)
		}
	}
	t.Logf("%s at %d: %v", name, n, r.Metrics)
	return r
}

// TestOverlayRuns runs each overlay algorithm's default workload — joins
// one after another through random members, then 1000 lookups — and
// checks it: every lookup delivered at its home, the hops and the state
// beside the theory (Pastry: fewer than ⌈log₁₆ N⌉ hops, at most
// (2^b − 1)·⌈log₁₆ N⌉ + 2l entries; circular: within a fifth of N/4l, 2l
// entries).
func TestOverlayRuns(t *testing.T) {
	for _, name := range []string{"pastry", "circular"} {
		n := 500
		r := overlayRun(t, name, n)
		m := r.Metrics
		if m["delivered_fraction"] != 1 {
			t.Errorf("%s: delivered_fraction %v", name, m["delivered_fraction"])
		}
		hops, state := *r.Theory["hops_mean"], *r.Theory["state_entries_per_node"]
		switch name {
		case "pastry":
			if m["hops_mean"] >= math.Ceil(hops) || m["state_entries_per_node"] > state {
				t.Errorf("pastry: hops %v (theory %v), state %v (theory %v)", m["hops_mean"], hops, m["state_entries_per_node"], state)
			}
		case "circular":
			if math.Abs(m["hops_mean"]-hops) > hops/5 || m["state_entries_per_node"] != state {
				t.Errorf("circular: hops %v (theory %v), state %v (theory %v)", m["hops_mean"], hops, m["state_entries_per_node"], state)
			}
		}
	}
}

// TestOverlayFailure: Rowstron & Druschel's experiment at 150 nodes —
// every lookup delivered in each phase, at the live home after repair,
// the checkers green (the tables exact after repair).
func TestOverlayFailure(t *testing.T) {
	f, err := Lookup("overlay")
	if err != nil {
		t.Fatal(err)
	}
	a, err := f.Algorithm("pastry")
	if err != nil {
		t.Fatal(err)
	}
	o := f.Options(a)
	seed := uint64(3)
	o.Nodes, o.Seed = 150, &seed
	w := o.Workload.(*OverlayLoad)
	w.Fail, w.Lookups = 0.1, 100
	r, _, err := Sim(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Checks {
		if !c.OK {
			t.Errorf("%+v", c)
		}
	}
	m := r.Metrics
	t.Logf("%v", m)
	for _, k := range []string{"delivered_fraction_before", "delivered_fraction_failed", "delivered_fraction_repaired", "correct_fraction_before", "correct_fraction_repaired"} {
		if m[k] != 1 {
			t.Errorf("%s = %v, want 1", k, m[k])
		}
	}
}

// TestOverlayTrees runs Scribe and ESM on their transit-stub network:
// every multicast delivered, the checkers green, Scribe's depth within
// ⌈log₁₆ N⌉ + 1, ESM's worst link stress below naive unicast's.
func TestOverlayTrees(t *testing.T) {
	for _, name := range []string{"scribe", "esm"} {
		n := 48
		r := overlayRun(t, name, n)
		m := r.Metrics
		if m["received_fraction"] != 1 || m["rdp_mean"] < 1 || m["stress_max"] < 1 {
			t.Errorf("%s: %v", name, m)
		}
		switch name {
		case "scribe":
			if m["depth_max"] > math.Ceil(overlayLog16(n))+1 {
				t.Errorf("scribe: depth %v, above ⌈log₁₆ N⌉ + 1", m["depth_max"])
			}
		case "esm":
			if m["stress_max"] >= m["unicast_stress_max"] {
				t.Errorf("esm: stress %v, unicast %v", m["stress_max"], m["unicast_stress_max"])
			}
		}
	}
}

func overlayLog16(n int) float64 { return math.Log(float64(n)) / math.Log(16) }

// TestOverlayProximity runs Pastry's lookups and Scribe's trees on a
// transit-stub network with tables that keep the first candidate and
// with proximity-aware ones: the checkers hold in both, the routes keep
// their hops, and proximity shortens the lookups' delay penalty and the
// Scribe tree's from its root.
func TestOverlayProximity(t *testing.T) {
	f, err := Lookup("overlay")
	if err != nil {
		t.Fatal(err)
	}
	run := func(name string, proximity bool) map[string]float64 {
		a, err := f.Algorithm(name)
		if err != nil {
			t.Fatal(err)
		}
		o := f.Options(a)
		seed := uint64(3)
		o.Nodes, o.Seed = 128, &seed
		switch w := o.Workload.(type) {
		case *OverlayLoad:
			w.Network, w.Proximity, w.Lookups = true, proximity, 300
		case *ScribeLoad:
			w.Proximity = proximity
		}
		r, _, err := Sim(o)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range r.Checks {
			if !c.OK || !c.Guaranteed {
				t.Errorf("%s, proximity %t: %+v", name, proximity, c)
			}
		}
		t.Logf("%s, proximity %t: %v", name, proximity, r.Metrics)
		return r.Metrics
	}
	plain, near := run("pastry", false), run("pastry", true)
	if near["delivered_fraction"] != 1 || near["hops_mean"] > plain["hops_mean"]+0.15 || !(near["rdp_mean"] < 0.75*plain["rdp_mean"]) {
		t.Errorf("pastry lookups: without proximity %v, with %v", plain, near)
	}
	plain, near = run("scribe", false), run("scribe", true)
	if near["received_fraction"] != 1 || !(near["rdp_root_mean"] < plain["rdp_root_mean"]) {
		t.Errorf("scribe trees: without proximity %v, with %v", plain, near)
	}
}

// TestOverlayESMBandwidth runs ESM on the transit-stub network, whose
// hosts' uploads range from half the stream's rate to ten times it, with
// parents chosen by bandwidth then delay and by delay alone: the checkers
// hold in both; by bandwidth every member receives the whole stream, by
// delay alone most get a share of a slow host's upload — at a shorter
// delay.
func TestOverlayESMBandwidth(t *testing.T) {
	f, err := Lookup("overlay")
	if err != nil {
		t.Fatal(err)
	}
	a, err := f.Algorithm("esm")
	if err != nil {
		t.Fatal(err)
	}
	run := func(latencyOnly bool) map[string]float64 {
		o := f.Options(a)
		seed := uint64(2)
		o.Nodes, o.Seed = 160, &seed
		o.Workload.(*ESMLoad).LatencyOnly = latencyOnly
		r, _, err := Sim(o)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range r.Checks {
			if !c.OK || !c.Guaranteed {
				t.Errorf("latency only %t: %+v", latencyOnly, c)
			}
		}
		t.Logf("latency only %t: %v", latencyOnly, r.Metrics)
		return r.Metrics
	}
	bw, lat := run(false), run(true)
	if bw["received_fraction"] != 1 || lat["received_fraction"] != 1 {
		t.Errorf("received: %v by bandwidth, %v by delay alone", bw["received_fraction"], lat["received_fraction"])
	}
	if bw["full_rate_fraction"] != 1 || bw["stream_rate_min"] != ESMStream {
		t.Errorf("parents by bandwidth: %v, want every member at the full rate", bw)
	}
	if !(lat["stream_rate_mean"] < 0.75*ESMStream) || !(lat["full_rate_fraction"] < 0.5) {
		t.Errorf("parents by delay alone: %v, want most members below the full rate", lat)
	}
	if !(lat["rdp_mean"] < bw["rdp_mean"]) {
		t.Errorf("delay penalty %v by delay alone, %v by bandwidth: want it smaller by delay", lat["rdp_mean"], bw["rdp_mean"])
	}
}

// TestOverlayESMImproves: the tree built by the joins, then three
// periods of the members' search for better parents (the tree measured
// before and after, in the same run): the checkers hold throughout (no
// cycle; every packet to every member, switches or not); the delay
// penalty and the link stress fall, never rise by more than noise in any
// run; by bandwidth every member keeps the whole stream.
func TestOverlayESMImproves(t *testing.T) {
	f, err := Lookup("overlay")
	if err != nil {
		t.Fatal(err)
	}
	a, err := f.Algorithm("esm")
	if err != nil {
		t.Fatal(err)
	}
	for _, latencyOnly := range []bool{false, true} {
		var before, after, switches float64
		for seed := uint64(1); seed <= 3; seed++ {
			o := f.Options(a)
			o.Nodes, o.Seed = 64, &seed
			w := o.Workload.(*ESMLoad)
			w.LatencyOnly, w.Settle = latencyOnly, 3
			r, _, err := Sim(o)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range r.Checks {
				if !c.OK || !c.Guaranteed {
					t.Errorf("latency only %t, seed %d: %+v", latencyOnly, seed, c)
				}
			}
			m := r.Metrics
			t.Logf("latency only %t, seed %d: rdp %.3f → %.3f, stress %.3f → %.3f, %d climbs answered", latencyOnly, seed,
				m["rdp_mean_before"], m["rdp_mean"], m["stress_mean_before"], m["stress_mean"], r.Messages.ByType["climbed"])
			if m["received_fraction"] != 1 || m["rdp_mean"] > 1.01*m["rdp_mean_before"] || m["stress_mean"] > 1.01*m["stress_mean_before"] {
				t.Errorf("latency only %t, seed %d: %v", latencyOnly, seed, m)
			}
			if !latencyOnly && m["full_rate_fraction"] != 1 {
				t.Errorf("by bandwidth, seed %d: full-rate fraction %v after the switches, want 1", seed, m["full_rate_fraction"])
			}
			before, after = before+m["rdp_mean_before"], after+m["rdp_mean"]
			switches += float64(r.Messages.ByType["climbed"])
		}
		if !(after < 0.98*before) || switches == 0 {
			t.Errorf("latency only %t: delay penalty %.3f before, %.3f after (sums over the seeds), %v climbs: want 2%% less",
				latencyOnly, before, after, switches)
		}
	}
}

// TestOverlayPhases: a run of the overlay workload reports its build and
// its lookups apart, and they add up: the lookups' events are exactly
// the lookups asked and the hops their routes made (a failure-free run
// sends nothing else once the joins have settled), the build's the
// rest; the phases' wall-clock times add up to no more than the run's.
// With Fail, the failure and the repaired lookups are phases too.
func TestOverlayPhases(t *testing.T) {
	f, err := Lookup("overlay")
	if err != nil {
		t.Fatal(err)
	}
	a, err := f.Algorithm("pastry")
	if err != nil {
		t.Fatal(err)
	}
	o := f.Options(a)
	seed := uint64(4)
	o.Nodes, o.Seed, o.NoCheck = 3000, &seed, true
	o.Workload.(*OverlayLoad).Lookups = 5000
	start := time.Now()
	r, _, err := Sim(o)
	wall := time.Since(start).Seconds()
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Phases) != 2 || r.Phases[0].Name != "build" || r.Phases[1].Name != "lookups" {
		t.Fatalf("phases %+v, want build then lookups", r.Phases)
	}
	build, lookups := r.Phases[0], r.Phases[1]
	if want := 5000 + r.Messages.ByType["route"]; lookups.Events != want {
		t.Errorf("lookups phase: %d events, want %d (5000 lookups, %d route hops)", lookups.Events, want, r.Messages.ByType["route"])
	}
	if build.Events+lookups.Events != r.Events {
		t.Errorf("phases' events %d + %d, want the run's %d", build.Events, lookups.Events, r.Events)
	}
	if lookups.FromNS <= 0 || lookups.FromNS > r.VirtualNS {
		t.Errorf("lookups from %d ns, run of %d ns", lookups.FromNS, r.VirtualNS)
	}
	if build.WallS <= 0 || lookups.WallS <= 0 || build.WallS+lookups.WallS > wall {
		t.Errorf("phases' wall times %v + %v s, the run's %v s", build.WallS, lookups.WallS, wall)
	}
	if build.CPUS < 0 || lookups.CPUS < 0 || build.CPUS+lookups.CPUS == 0 {
		t.Errorf("phases' CPU times %v, %v s", build.CPUS, lookups.CPUS)
	}

	o = f.Options(a)
	o.Nodes, o.Seed, o.NoCheck = 100, &seed, true
	w := o.Workload.(*OverlayLoad)
	w.Fail, w.Lookups = 0.1, 50
	if r, _, err = Sim(o); err != nil {
		t.Fatal(err)
	}
	var names []string
	var events int64
	for _, p := range r.Phases {
		names = append(names, p.Name)
		events += p.Events
	}
	if !slices.Equal(names, []string{"build", "lookups", "failed", "repaired"}) || events != r.Events {
		t.Errorf("with failures: phases %v of %d events in all, want build, lookups, failed, repaired of %d", names, events, r.Events)
	}
}

// TestCompareOverlayBuildsCircularOnlyWhereItEnds: the comparison builds
// the circular baseline only up to overlayCircularUpTo (a build there takes
// about N²/4l events: hours at 10⁶), and says so; Pastry at every size.
func TestCompareOverlayBuildsCircularOnlyWhereItEnds(t *testing.T) {
	for _, c := range overlayCases {
		if c.name != "joins then lookups" {
			continue
		}
		for _, n := range []int{1000, overlayCircularUpTo, overlayCircularUpTo + 1, 1_000_000} {
			skipped := c.skip != nil && c.skip(n) != ""
			want := slices.Contains(c.algos, "circular") && n > overlayCircularUpTo
			if skipped != want {
				t.Errorf("%v at %d nodes: skipped %v, want %v", c.algos, n, skipped, want)
			}
		}
	}
}
