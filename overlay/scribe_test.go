package overlay_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/overlay"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
)

// groupStory is a Scribe run: n Pastry nodes join one after another,
// groups are created, members join them, multicasts are sent from random
// nodes every few milliseconds; crash nodes fail at once (none of the
// sources after it); multicasts go on through the repair; some members
// leave.
type groupStory struct {
	n, groups, members, casts int
	crash                     int       // nodes that fail at once
	leaves                    int       // members that leave, after the repair
	kill                      []proc.ID // if set, the nodes that fail (instead of crash random ones)
	seed                      uint64
	new                       func(proc.ID, int) proc.Process
}

func (s groupStory) run(t testing.TB) *simtest.Recorded {
	rng := rand.New(rand.NewPCG(s.seed, 0x73637269))
	var fs []sim.Fault
	for i := range s.n {
		fs = append(fs, sim.Fault{Kind: sim.Join, Node: proc.ID(i), At: time.Duration(i) * 10 * time.Millisecond})
	}
	settled := time.Duration(s.n)*10*time.Millisecond + 100*time.Millisecond
	var sc sim.Script
	groups := make([]overlay.GUID, s.groups)
	members := make([][]proc.ID, s.groups)
	for g := range groups {
		groups[g] = overlay.GUID{Hi: rng.Uint64(), Lo: rng.Uint64()}
		sc = append(sc, sim.TimedInput{At: settled, Node: proc.ID(rng.IntN(s.n)), Input: overlay.CreateGroup{Group: groups[g]}})
		for _, i := range rng.Perm(s.n)[:min(s.members, s.n)] {
			members[g] = append(members[g], proc.ID(i))
			sc = append(sc, sim.TimedInput{At: settled + 100*time.Millisecond + time.Duration(rng.IntN(200))*time.Millisecond,
				Node: proc.ID(i), Input: overlay.JoinGroup{Group: groups[g]}})
		}
	}
	start := settled + 2*time.Second
	fail := start + time.Duration(s.casts)*10*time.Millisecond
	var crashed []proc.ID
	for _, i := range rng.Perm(s.n)[:s.crash] {
		crashed = append(crashed, proc.ID(i))
	}
	if s.kill != nil {
		crashed = s.kill
	}
	for _, i := range crashed {
		fs = append(fs, sim.Fault{Kind: sim.Crash, Node: i, At: fail})
	}
	live := func() proc.ID {
		for {
			if x := proc.ID(rng.IntN(s.n)); !slices.Contains(crashed, x) {
				return x
			}
		}
	}
	id := uint64(0)
	cast := func(at time.Duration) {
		id++
		sc = append(sc, sim.TimedInput{At: at, Node: live(), Input: overlay.Multicast{Group: groups[rng.IntN(s.groups)], ID: id}})
	}
	for i := range s.casts {
		cast(start + time.Duration(i)*10*time.Millisecond)
	}
	// Through the repair and after it: a multicast every 50 ms.
	after := fail + 2*overlay.ScribeRepairBound
	for at := fail + 10*time.Millisecond; at < after; at += 50 * time.Millisecond {
		cast(at)
	}
	leaveAt := after
	for range s.leaves {
		g := rng.IntN(s.groups)
		m := members[g][rng.IntN(len(members[g]))]
		sc = append(sc, sim.TimedInput{At: leaveAt, Node: m, Input: overlay.LeaveGroup{Group: groups[g]}})
	}
	for i := range s.casts {
		cast(leaveAt + 100*time.Millisecond + time.Duration(i)*10*time.Millisecond)
	}
	end := leaveAt + 100*time.Millisecond + time.Duration(s.casts)*10*time.Millisecond + 2*overlay.ScribeDeliveryBound
	cfg := sim.Config{Nodes: s.n, Seed: s.seed, New: s.new, Faults: fs, Workload: sc, Deadline: end}
	if cfg.New == nil {
		cfg.New = func(id proc.ID, _ int) proc.Process { return overlay.NewScribe(id, overlay.Repairing) }
	}
	return simtest.Run(t, "overlay", cfg)
}

// TestScribeSweep: over many seeds, Scribe trees on Pastry overlays of
// various sizes deliver every multicast to every member exactly once,
// before failures, and again once repair is done; with the root of a
// group among the failed nodes too.
func TestScribeSweep(t *testing.T) {
	seeds := simtest.Seeds(16, 4)
	if raceEnabled {
		seeds = 2
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		n := []int{8, 20, 40, 64}[seed%4]
		s := groupStory{n: n, groups: 3, members: n / 2, casts: 30, crash: n / 10, leaves: 2, seed: seed}
		r := s.run(t)
		for name, v := range r.Verdicts(t, "scribe-delivery") {
			if !v.OK() {
				t.Fatalf("seed %d, %d nodes: %s: %s", seed, n, name, v.Counterexample(r.Trace))
			}
		}
		t.Logf("seed %d, %d nodes: %d receipts, %d roots", seed, n, r.Count("received"), r.Count("group-root"))
		if r.Count("received") == 0 {
			t.Fatalf("seed %d: no multicast received", seed)
		}
	}
}

// TestScribeRootFails: the root of every group fails; the members'
// JOINs reach the nodes now closest to the groupIds, which become the
// roots, and the multicasts after the repair reach every member.
func TestScribeRootFails(t *testing.T) {
	seeds := uint64(3)
	if raceEnabled {
		seeds = 1
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		s := groupStory{n: 30, groups: 2, members: 12, casts: 20, seed: seed}
		s.new = func(id proc.ID, _ int) proc.Process { return overlay.NewScribe(id, overlay.Repairing) }
		// Find the roots: run once, then crash them in a second run.
		r := s.run(t)
		roots := r.Outputs("group-root")
		if len(roots) == 0 {
			t.Fatalf("seed %d: no group root", seed)
		}
		var ids []proc.ID
		for id := range roots {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		s.kill = ids
		r = s.run(t)
		if v := r.Verdicts(t, "scribe-delivery")["scribe-delivery"]; !v.OK() {
			t.Fatalf("seed %d, roots %v failed: %s", seed, ids, v.Counterexample(r.Trace))
		}
		if got := len(r.Outputs("group-root")); got <= len(ids) {
			t.Fatalf("seed %d: %d nodes were roots, want new roots after %v failed", seed, got, ids)
		}
	}
}

// TestScribeCheckerCatchesBrokenScribe: a Scribe that sends each
// multicast to its children twice, and one that never repairs, are both
// caught by scribe-delivery.
func TestScribeCheckerCatchesBrokenScribe(t *testing.T) {
	for _, c := range []struct {
		name  string
		new   func(overlay.Config) func(proc.ID, int) proc.Process
		crash int
	}{{"twice", overlay.ScribeTwice, 0}, {"no-repair", overlay.ScribeNoRepair, 4}} {
		t.Run(c.name, func(t *testing.T) {
			caught, n := 0, 40
			if raceEnabled {
				n = 16
			}
			for seed := uint64(1); seed <= 3; seed++ {
				s := groupStory{n: n, groups: 3, members: n / 2, casts: 20, crash: c.crash, seed: seed, new: c.new(overlay.Repairing)}
				r := s.run(t)
				if v := r.Verdicts(t, "scribe-delivery")["scribe-delivery"]; v.Status == check.Violated {
					caught++
					if seed == 1 {
						t.Log(v.Counterexample(r.Trace))
					}
				}
			}
			if caught < 2 {
				t.Fatalf("scribe-delivery caught the broken Scribe in %d of 3 runs", caught)
			}
		})
	}
}
