package mutex

import (
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

func TestCentralFailoverSurvivesTheCoordinatorsCrash(t *testing.T) {
	t.Parallel()
	elections := 0
	for _, n := range []int{2, 3, 5, 8} {
		for seed := uint64(1); seed <= 40; seed++ {
			r := runMutex(t, crashMidRun(n, seed, newCentralFailoverDefault))
			r.allGranted(t)
			r.holds(t, "integrity", "ME1", "ME2")
			if r.sent("coordinator") > 0 {
				elections++
			}
			if t.Failed() {
				t.FailNow()
			}
		}
	}
	if elections < 150 {
		t.Errorf("a new coordinator was announced in %d of 160 runs; the crash at 15ms should force one nearly always", elections)
	}
}

// TestCentralFailoverTwoCrashes: p0 crashes, the highest process takes
// over, and crashes too; the next highest takes over from it.
func TestCentralFailoverTwoCrashes(t *testing.T) {
	t.Parallel()
	second := 0
	for seed := uint64(1); seed <= 40; seed++ {
		cfg := crashMidRun(5, seed, newCentralFailoverDefault)
		cfg.Faults = append(cfg.Faults, sim.Fault{Kind: sim.Crash, Node: 4, At: 120 * time.Millisecond})
		cfg.Workload.(*closedLoop).Rounds = 20
		r := runMutex(t, cfg)
		r.allGranted(t)
		r.holds(t, "ME1", "ME2")
		if t.Failed() {
			t.FailNow()
		}
		for _, e := range r.Trace.Events {
			if e.Kind == trace.Send && e.Node == 3 && e.Label == "COORDINATOR(e2)" {
				second++
				break
			}
		}
	}
	if second < 35 {
		t.Errorf("p3 took over from the crashed p4 in %d of 40 runs, want nearly all", second)
	}
}

// TestCentralFailoverKeepsTheLockOfAHolder: p1 holds the lock when the
// coordinator crashes. The new coordinator, p2, learns it from p1's state
// and grants its own request only after p1 releases.
func TestCentralFailoverKeepsTheLockOfAHolder(t *testing.T) {
	r := runMutex(t, sim.Config{Nodes: 3, Seed: 1, New: newCentralFailoverDefault,
		Network: sim.Network{Latency: sim.Constant(time.Millisecond), FIFO: true},
		Faults:  []sim.Fault{{Kind: sim.Crash, Node: 0, At: 5 * time.Millisecond}},
		Workload: sim.Combine{sim.Script{
			clAt(0, 1, Acquire{}), clAt(100, 1, Release{}),
			clAt(10, 2, Acquire{}), clAt(150, 2, Release{}),
		}}})
	r.allGranted(t)
	r.holds(t, "ME1", "ME2")
	var got []string
	for _, e := range r.Trace.Events {
		if e.Node == 2 && e.Time >= int64(50*time.Millisecond) && (e.Kind == trace.Output || e.Kind == trace.Recv) {
			what := e.Label
			if what == "" {
				what = e.Type
			}
			got = append(got, trace.FormatNS(e.Time)+" "+e.Kind.String()+" "+what)
		}
	}
	// p2 suspects p0 at 10+40ms; it is the highest id, so it wins at once
	// and announces epoch 1. p1's state (holding) arrives at 52ms; p0's
	// never does, and at 50+10ms p2 stops waiting for it: the lock stays
	// lent to p1 (alive: it answers every heartbeat), and p2 enters when
	// p1's release reaches it at 101ms.
	want := []string{
		"52.000ms recv STATE(e1 holding)",
		"60.000ms output lent to p1",
		"60.000ms output waiting for {p1}",
		"72.000ms recv HELD(e1)", // p1 answers the heartbeats of 70, 80, 90ms
		"82.000ms recv HELD(e1)",
		"92.000ms recv HELD(e1)",
		"101.000ms recv REL(e1)",
		"101.000ms output lent to none",
		"101.000ms output lent to p2",
		"101.000ms output enter",
		"150.000ms output exit",
		"150.000ms output lent to none",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("p2 from 50ms on:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCentralFailoverWaitsForASlowHolder: as above, but p1 is paused
// from 45ms to 70ms, so its state (holding) reaches the new coordinator
// after Collect. p1 is only slow, not crashed: p2 must not grant itself
// the lock while p1 may still be inside, and enters only after p1's
// release. (Without the wait for silent processes, p2 entered at 60ms,
// beside p1.)
func TestCentralFailoverWaitsForASlowHolder(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		pause := time.Duration(20+seed) * time.Millisecond // 21–40ms: silent longer than Collect, not than Suspect
		r := runMutex(t, sim.Config{Nodes: 3, Seed: seed, New: newCentralFailoverDefault,
			Network: sim.Network{Latency: sim.Uniform{Min: 500 * time.Microsecond, Max: 1500 * time.Microsecond}, FIFO: true},
			Faults: []sim.Fault{{Kind: sim.Crash, Node: 0, At: 5 * time.Millisecond},
				{Kind: sim.Pause, Node: 1, At: 45 * time.Millisecond, Until: 45*time.Millisecond + pause}},
			Workload: sim.Combine{sim.Script{
				clAt(0, 1, Acquire{}), clAt(100, 1, Release{}),
				clAt(10, 2, Acquire{}), clAt(150, 2, Release{}),
			}}})
		r.allGranted(t)
		r.holds(t, "ME1", "ME2")
		if t.Failed() {
			t.Fatalf("seed %d, p1 paused %v from 45ms", seed, pause)
		}
	}
}

// TestCentralFailoverReclaimsFromACrashedHolder: p1 crashes inside the
// critical section. The coordinator hears no HELD from it while p2 waits,
// takes the permission back after Suspect, and grants it to p2.
func TestCentralFailoverReclaimsFromACrashedHolder(t *testing.T) {
	r := runMutex(t, sim.Config{Nodes: 3, Seed: 1, New: newCentralFailoverDefault,
		Network: sim.Network{Latency: sim.Constant(time.Millisecond), FIFO: true},
		Faults:  []sim.Fault{{Kind: sim.Crash, Node: 1, At: 5 * time.Millisecond}},
		Workload: sim.Combine{sim.Script{
			clAt(0, 1, Acquire{}), // p1 enters at 2ms and crashes inside at 5ms
			clAt(10, 2, Acquire{}),
		}, releaser(20 * time.Millisecond)}})
	r.allGranted(t)
	r.holds(t, "ME1", "ME2")
	// p2's request reaches p0 at 11ms and starts the heartbeats; the beat
	// at 61ms finds p1 silent for 50ms > Suspect and grants to p2.
	var enter int64
	for _, e := range r.Trace.Events {
		if e.Node == 2 && e.Kind == trace.Output && e.Type == "enter" {
			enter = e.Time
		}
	}
	if enter != int64(62*time.Millisecond) {
		t.Errorf("p2 entered at %s, want 62ms", trace.FormatNS(enter))
	}
	if got := r.sent("election"); got != 0 {
		t.Errorf("%d ELECTION messages: a client's crash needs no election", got)
	}
}

// TestCentralFailoverSurvivesAnyCrash: one process, coordinator or client,
// crashes at a random time of a contended run.
func TestCentralFailoverSurvivesAnyCrash(t *testing.T) {
	t.Parallel()
	for _, n := range []int{3, 5, 8} {
		for seed := uint64(1); seed <= 40; seed++ {
			cfg := crashMidRun(n, seed, newCentralFailoverDefault)
			cfg.Faults[0].Node = proc.ID(seed % uint64(n))
			cfg.Faults[0].At = time.Duration(seed%29+1) * time.Millisecond
			r := runMutex(t, cfg)
			r.allGranted(t)
			r.holds(t, "integrity", "ME1", "ME2")
			if t.Failed() {
				t.FailNow()
			}
		}
	}
}

// TestCentralFailoverCostsNothingWithoutFailures: with no crash the
// failover is the textbook algorithm plus heartbeats to waiting clients.
func TestCentralFailoverCostsNothingWithoutFailures(t *testing.T) {
	t.Parallel()
	for _, n := range clSizes {
		for seed := uint64(1); seed <= 20; seed++ {
			r := runMutex(t, sim.Config{Nodes: n, Seed: seed, New: newCentralFailoverDefault,
				Network: sim.Network{Latency: clJitter, FIFO: true}})
			r.allGranted(t)
			r.holds(t, "ME1", "ME2", "ME3")
			want := clientEntries(r)
			for _, kind := range []string{"request", "grant", "release"} {
				if got := r.sent(kind); got != want {
					t.Errorf("%s: %d %s messages for %d client entries, want one each", clName(n, seed), got, kind, want)
				}
			}
			if got := r.sent("election", "ok", "coordinator", "state"); got != 0 {
				t.Errorf("%s: %d election messages without a failure", clName(n, seed), got)
			}
		}
	}
}

// TestCentralFailoverWithTimeoutsShorterThanTheNetwork: the failover
// needs timeouts that match the network. With a 20ms link and timeouts of
// a few milliseconds, live coordinators are suspected, new ones grant
// without hearing from the holder, and ME1 fails on some seed.
func TestCentralFailoverWithTimeoutsShorterThanTheNetwork(t *testing.T) {
	mk, err := NewCentralFailover(FailoverConfig{Heartbeat: time.Millisecond, Suspect: 2 * time.Millisecond,
		Election: time.Millisecond, Announce: 2 * time.Millisecond, Collect: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	broken := 0
	for seed := uint64(1); seed <= 20; seed++ {
		r := runMutex(t, sim.Config{Nodes: 4, Seed: seed, New: mk, Deadline: 2 * time.Second,
			Network: sim.Network{Latency: sim.Uniform{Min: 5 * time.Millisecond, Max: 20 * time.Millisecond}, FIFO: true}})
		if r.violates(t, "ME1") {
			broken++
		}
	}
	if broken == 0 {
		t.Error("no seed broke ME1 with timeouts far below the network's delays")
	}
	t.Logf("ME1 violated on %d of 20 seeds", broken)
}

func TestFailoverConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg FailoverConfig
		ok  bool
	}{
		{FailoverConfig{}, true},
		{DefaultFailoverConfig(), true},
		{FailoverConfig{Heartbeat: 50 * time.Millisecond}, false}, // Suspect 40ms (default) <= 50ms
		{FailoverConfig{Collect: -time.Millisecond}, false},
	} {
		if _, err := NewCentralFailover(c.cfg); (err == nil) != c.ok {
			t.Errorf("NewCentralFailover(%+v): error %v, want ok=%v", c.cfg, err, c.ok)
		}
	}
}
