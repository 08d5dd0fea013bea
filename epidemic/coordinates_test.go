package epidemic_test

import (
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
	"github.com/cohort-go/cohort/trace"
)

// TestWireCoordRoundsToAMicrosecond: a coordinate crosses the wire within
// half a microsecond a component and 1/20,000 of error; the error never
// arrives as zero (a peer that claims certainty would pull with full
// weight), and values a float64 can hold but an int32 cannot are clamped.
func TestWireCoordRoundsToAMicrosecond(t *testing.T) {
	for _, c := range []epidemic.Coord{
		{X: 0, Y: 0, H: 0.01, Err: 1},
		{X: 12.3456789, Y: -187.0000004, H: 3.14159, Err: 0.123456},
		{X: 0.0421, Y: 0.0007, H: 0.01, Err: 0},
	} {
		got := epidemic.PackCoord(c).Coord()
		for _, d := range [][2]float64{{got.X, c.X}, {got.Y, c.Y}, {got.H, c.H}} {
			if math.Abs(d[0]-d[1]) > 0.0005 {
				t.Errorf("%v → %v: off by %g ms", c, got, d[0]-d[1])
			}
		}
		if math.Abs(got.Err-c.Err) > 0.00005 && !(c.Err == 0 && got.Err == 1e-4) {
			t.Errorf("%v → %v: error off", c, got)
		}
		if got.Err <= 0 {
			t.Errorf("%v → %v: error zero", c, got)
		}
	}
	if w := epidemic.PackCoord(epidemic.Coord{X: 1e12, Y: -1e12, H: math.NaN(), Err: 7}); w.X != math.MaxInt32 || w.Y != math.MinInt32 || w.H != 0 || w.Err != 10000 {
		t.Errorf("clamping: %+v", w)
	}
}

// TestMembersCoordinatesRideOnSwimAcks: with coordinates on, the members
// algorithm sends no message of its own for them — every sample is the
// ack of a SWIM ping, which carries the answering member's coordinate —
// and the coordinates still predict the round trips of a plane of
// cities: the finds' estimated RTTs are within 15% of the true ones at
// the median. Without coordinates every estimate is the origin's and the
// same test fails (the control below), so it measures the samples.
func TestMembersCoordinatesRideOnSwimAcks(t *testing.T) {
	const n = 24
	run := func(coords bool) (errs []float64, tr *trace.Trace) {
		a := algorithm(t, "members", epidemic.Params{Period: 500 * time.Millisecond, Coordinates: coords, AdRefresh: time.Hour})
		plane := sim.NewPlane(n, 3)
		var script sim.Script
		for i := range proc.ID(n) {
			script = append(script,
				sim.TimedInput{At: 60 * time.Second, Node: i, Input: epidemic.Advertise{Name: "x"}},
				sim.TimedInput{At: 64 * time.Second, Node: i, Input: epidemic.Find{ID: 1, Name: "x"}})
		}
		r := simtest.Run(t, "gossip", sim.Config{Nodes: n, Seed: 3, New: a.New, Workload: script, Deadline: 65 * time.Second,
			Network: sim.Network{Pairwise: plane}})
		for node, outs := range r.Outputs("found") {
			var f check.DiscoveryFound
			if err := json.Unmarshal(outs[0].Data, &f); err != nil {
				t.Fatal(err)
			}
			for _, h := range f.Holders {
				if h.Node == int32(node) {
					continue
				}
				truth := float64(plane.Latency(node, proc.ID(h.Node))+plane.Latency(proc.ID(h.Node), node)) / float64(time.Millisecond)
				errs = append(errs, math.Abs(h.RTT-truth)/truth)
			}
		}
		slices.Sort(errs)
		return errs, r.Trace
	}
	errs, tr := run(true)
	if len(errs) < n*(n-1)*9/10 {
		t.Fatalf("%d estimates, want about %d", len(errs), n*(n-1))
	}
	if med := errs[len(errs)/2]; med > 0.15 {
		t.Errorf("median relative RTT error %.3f, want at most 0.15", med)
	} else {
		t.Logf("median relative RTT error %.3f over %d estimates", med, len(errs))
	}
	for _, kind := range []string{"probe", "echo"} {
		if c := tr.Count(trace.Send, kind); c != 0 {
			t.Errorf("%d %s messages sent: the coordinates should need none", c, kind)
		}
	}
	if tr.Count(trace.Send, "ack") == 0 {
		t.Fatal("no acks sent")
	}
	control, _ := run(false)
	if med := control[len(control)/2]; med <= 0.15 {
		t.Errorf("without coordinates the median error is %.3f: the test does not measure them", med)
	}
}
