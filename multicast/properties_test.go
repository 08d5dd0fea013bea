package multicast

import (
	"slices"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
)

// condition is a kind of network and fault schedule the sweeps run under.
type condition struct {
	name string
	// within reports whether the algorithm's assumptions allow it.
	within func(a proc.Algorithm) bool
	// apply sets the condition on a run.
	apply func(r *simRun)
}

var half = 0.5

var conditions = []condition{
	{
		// Reliable channels that do not keep order: copies of concurrent
		// multicasts arrive in different orders at different members.
		name:   "jitter",
		within: func(a proc.Algorithm) bool { return !a.Assumes.FIFO },
		apply:  func(r *simRun) {},
	},
	{
		name:   "fifo",
		within: func(a proc.Algorithm) bool { return true },
		apply:  func(r *simRun) { r.Network.FIFO = true },
	},
	{
		// Some messages are held back and overtaken: one sender's messages
		// arrive out of order.
		name:   "reorder",
		within: func(a proc.Algorithm) bool { return !a.Assumes.FIFO },
		apply:  func(r *simRun) { r.Network.Reorder = 0.3 },
	},
	{
		// A process crashes, and while it lives its copies reach each
		// other process with probability one half: it crashes in the
		// middle of its multicasts.
		name:   "crash",
		within: func(a proc.Algorithm) bool { return a.Assumes.Failures == "crash-stop" },
		apply: func(r *simRun) {
			c := proc.ID(r.Seed % uint64(r.Nodes))
			for q := range r.Nodes {
				if proc.ID(q) != c {
					r.Network.Links = append(r.Network.Links, sim.Link{From: c, To: proc.ID(q), Loss: &half})
				}
			}
			at := time.Duration(2+r.Seed%5) * time.Millisecond
			r.Faults = append(r.Faults, sim.Fault{Kind: sim.Crash, Node: c, At: at})
		},
	},
	{
		// Lossy, duplicating channels.
		name:   "loss",
		within: func(a proc.Algorithm) bool { return !a.Assumes.Reliable },
		apply:  func(r *simRun) { r.Network.Loss, r.Network.Duplicate = 0.1, 0.05 },
	},
}

// sweepRun is seed's run of algorithm a under condition c: 2 to 8
// processes multicasting concurrently to all three groups (outsiders to
// g1 are refused; to g2, an open group, they are not).
func sweepRun(a proc.Algorithm, c condition, seed uint64) simRun {
	sizes := []int{2, 3, 4, 5, 8}
	r := simRun{Algo: a.Name, Nodes: sizes[seed%uint64(len(sizes))], Seed: seed,
		Load: &load{Count: 3, Think: 1500 * time.Microsecond, Groups: []string{"all", "all", "g1", "g2"}}}
	c.apply(&r)
	return r
}

func sweepSeeds() uint64 {
	if testing.Short() {
		return 10
	}
	return 30
}

// Every algorithm keeps every property it claims, under every condition
// its assumptions allow, over many seeded schedules; and without crashes,
// every one of them is reliable (validity and agreement).
func TestSweepGuaranteesHold(t *testing.T) {
	for _, a := range Algorithms {
		t.Run(a.Name, func(t *testing.T) {
			for _, c := range conditions {
				if !c.within(a) {
					continue
				}
				// The properties to hold: those claimed, and without crashes
				// validity and agreement too (every algorithm is reliable then).
				var props []string
				for _, p := range a.Checks {
					reliability := c.name != "crash" && (p == "mc-validity" || p == "mc-agreement")
					if reliability || !slices.Contains(a.Breaks, p) {
						props = append(props, p)
					}
				}
				for seed := uint64(1); seed <= sweepSeeds(); seed++ {
					r := sweepRun(a, c, seed)
					tr := r.run(t)
					res, err := check.Run(tr, props...)
					if err != nil {
						t.Fatal(err)
					}
					for _, v := range res {
						if !v.OK() {
							t.Fatalf("%s (%s): %s", c.name, describe(r), v.Counterexample(tr))
						}
					}
				}
			}
		})
	}
}

// holds lists, for each algorithm, the properties it keeps and the
// conditions it keeps them in; the test checks the list against the
// registry's Breaks, so that the table in the comments stays true.
func TestClaimsMatchTheRegistry(t *testing.T) {
	want := map[string][]string{
		"basic":           {"mc-integrity", "mc-validity"},
		"reliable":        {"mc-integrity", "mc-validity", "mc-agreement"},
		"reliable-nack":   {"mc-integrity", "mc-validity", "fifo-order"},
		"fifo":            {"mc-integrity", "mc-validity", "fifo-order"},
		"causal":          {"mc-integrity", "fifo-order", "causal-order"},
		"total-sequencer": {"mc-integrity", "mc-validity", "mc-agreement", "total-order"},
		"total-isis":      {"mc-integrity", "mc-validity", "mc-agreement", "total-order"},
		"total-lamport":   {"mc-integrity", "mc-validity", "mc-agreement", "fifo-order", "causal-order", "total-order"},
		"fifo-total":      {"mc-integrity", "mc-validity", "mc-agreement", "fifo-order", "causal-order", "total-order"},
		"causal-total":    {"mc-integrity", "mc-validity", "mc-agreement", "fifo-order", "causal-order", "total-order"},
	}
	for _, a := range Algorithms {
		var keeps []string
		for _, c := range a.Checks {
			if c != "integrity" && c != "no-duplicates" && !slices.Contains(a.Breaks, c) {
				keeps = append(keeps, c)
			}
		}
		if !slices.Equal(keeps, want[a.Name]) {
			t.Errorf("%s keeps %v, want %v", a.Name, keeps, want[a.Name])
		}
	}
}
