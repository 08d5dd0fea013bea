package overlay_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/overlay"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
)

// handoverStory is a Scribe run on a transit-stub network: nodes
// 0..n−2 join, groups are created and joined, and multicasts are sent
// from random members every 5 ms; meanwhile node n−1, X, joins the
// overlay. Group 0's groupId differs from X's nodeId in its last bit
// alone, so X is closer to it than any other node: X must become its
// root, with the tree moved under it, while the multicasts go on.
type handoverStory struct {
	n, groups, members int
	seed               uint64
	cfg                overlay.Config
	new                func(overlay.Config) func(proc.ID, int) proc.Process
}

func (s handoverStory) run(t testing.TB) (*simtest.Recorded, overlay.GUID) {
	rng := rand.New(rand.NewPCG(s.seed, 0x68616e64))
	topo := sim.NewTransitStub(s.n, s.seed)
	maxLat := topo.MaxLatency()
	cfg := s.cfg
	cfg.HopTimeout = 2*maxLat + 10*time.Millisecond
	gap := 10*time.Millisecond + 20*maxLat
	x := proc.ID(s.n - 1)
	var fs []sim.Fault
	for i := range s.n - 1 {
		fs = append(fs, sim.Fault{Kind: sim.Join, Node: proc.ID(i), At: time.Duration(i) * gap})
	}
	settled := time.Duration(s.n-1)*gap + time.Second
	var sc sim.Script
	xid := overlay.NodeID(x)
	groups := []overlay.GUID{{Hi: xid.Hi, Lo: xid.Lo ^ 1}}
	for len(groups) < s.groups {
		groups = append(groups, overlay.GUID{Hi: rng.Uint64(), Lo: rng.Uint64()})
	}
	members := make([][]proc.ID, len(groups))
	for g, key := range groups {
		sc = append(sc, sim.TimedInput{At: settled, Node: proc.ID(rng.IntN(s.n - 1)), Input: overlay.CreateGroup{Group: key}})
		for _, i := range rng.Perm(s.n - 1)[:s.members] {
			members[g] = append(members[g], proc.ID(i))
			sc = append(sc, sim.TimedInput{At: settled + 100*time.Millisecond + time.Duration(rng.IntN(200))*time.Millisecond,
				Node: proc.ID(i), Input: overlay.JoinGroup{Group: key}})
		}
	}
	joinX := settled + 2*time.Second
	fs = append(fs, sim.Fault{Kind: sim.Join, Node: x, At: joinX})
	id := uint64(0)
	castsEnd := joinX + gap + 2*time.Second
	for at := settled + 1500*time.Millisecond; at < castsEnd; at += 5 * time.Millisecond {
		id++
		g := rng.IntN(len(groups))
		sc = append(sc, sim.TimedInput{At: at, Node: members[g][rng.IntN(len(members[g]))], Input: overlay.Multicast{Group: groups[g], ID: id}})
	}
	c := sim.Config{Nodes: s.n, Seed: s.seed, Faults: fs, Workload: sc, Deadline: castsEnd + 2*overlay.ScribeDeliveryBound}
	c.Network.Pairwise = topo
	c.New = func(id proc.ID, _ int) proc.Process { return overlay.NewScribe(id, cfg) }
	if s.new != nil {
		c.New = s.new(cfg)
	}
	return simtest.Run(t, "overlay", c), groups[0]
}

// TestScribeRootHandover: over many seeds and the three configurations
// (no failure handling, failure handling, proximity-aware tables), a
// node that joins closer to a groupId than the group's root becomes its
// root, and every multicast sent across the handover reaches every member
// exactly once (scribe-delivery).
func TestScribeRootHandover(t *testing.T) {
	seeds := simtest.Seeds(12, 3)
	if raceEnabled {
		seeds = 3
	}
	cfgs := []overlay.Config{overlay.FailureFree, overlay.Repairing, proximate(overlay.FailureFree)}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		n := []int{12, 24, 40}[seed%3]
		cfg := cfgs[seed%3]
		s := handoverStory{n: n, groups: 3, members: n / 3, seed: seed, cfg: cfg}
		t.Run(fmt.Sprintf("seed%d-n%d-cfg%d", seed, n, seed%3), func(t *testing.T) {
			r, g := s.run(t)
			r.Hold(t, "scribe-delivery")
			x := proc.ID(n - 1)
			var rooted bool
			for _, e := range r.Outputs("group-root")[x] {
				rooted = rooted || string(e.Data) == fmt.Sprintf(`{"group":"%s"}`, g)
			}
			if !rooted {
				t.Fatalf("p%d joined closest to group %s but never became its root", x, g)
			}
			if r.Count("received") == 0 {
				t.Fatal("no multicast received")
			}
		})
	}
}

// TestScribeCheckerCatchesNoHandover: a Scribe whose root keeps its
// groups when a closer node joins loses the multicasts routed to the
// newcomer, and scribe-delivery says so.
func TestScribeCheckerCatchesNoHandover(t *testing.T) {
	caught := 0
	for seed := uint64(1); seed <= 3; seed++ {
		s := handoverStory{n: 24, groups: 2, members: 8, seed: seed, cfg: overlay.FailureFree, new: overlay.ScribeNoHandover}
		r, _ := s.run(t)
		if v := r.Verdicts(t, "scribe-delivery")["scribe-delivery"]; v.Status == check.Violated {
			caught++
			if seed == 1 {
				t.Log(v.Counterexample(r.Trace))
			}
		}
	}
	if caught < 3 {
		t.Fatalf("scribe-delivery caught the Scribe without handover in %d of 3 runs", caught)
	}
}

func proximate(c overlay.Config) overlay.Config {
	c.Proximity = true
	return c
}
