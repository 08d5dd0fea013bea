package epidemic_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
)

// discoveryScript: after a warm-up in which the coordinates settle,
// holders advertise "x"; every node finds its 3 nearest; then one holder
// crashes, and later (less than the advertisements' time to live before
// the end, so that only its tombstone can take it away) another
// withdraws; at the end every node finds them all.
type discoveryRun struct {
	n                   int
	holders             []proc.ID
	withdrawn, crashed  proc.ID
	advertise, firstFnd time.Duration
	lastFind, deadline  time.Duration
}

func newDiscoveryRun(n int, seed uint64) discoveryRun {
	r := discoveryRun{n: n, advertise: 3 * time.Second, firstFnd: 4 * time.Second, lastFind: 9 * time.Second, deadline: 10 * time.Second}
	for i := range 6 {
		r.holders = append(r.holders, proc.ID((int(seed)*7+i*5)%n))
	}
	slices.Sort(r.holders)
	r.holders = slices.Compact(r.holders)
	r.withdrawn, r.crashed = r.holders[0], r.holders[1]
	return r
}

func (r discoveryRun) config(seed uint64, a proc.Algorithm) sim.Config {
	var script sim.Script
	for _, h := range r.holders {
		script = append(script, sim.TimedInput{At: r.advertise, Node: h, Input: epidemic.Advertise{Name: "x", Attrs: []epidemic.Attr{{Key: "port", Value: "80"}}}})
	}
	for i := range proc.ID(r.n) {
		script = append(script, sim.TimedInput{At: r.firstFnd, Node: i, Input: epidemic.Find{ID: 1, Name: "x", K: 3}})
	}
	script = append(script, sim.TimedInput{At: r.lastFind - 1500*time.Millisecond, Node: r.withdrawn, Input: epidemic.Withdraw{Name: "x"}})
	for i := range proc.ID(r.n) {
		if i != r.crashed {
			script = append(script, sim.TimedInput{At: r.lastFind, Node: i, Input: epidemic.Find{ID: 2, Name: "x"}})
		}
	}
	return sim.Config{
		Nodes: r.n, Seed: seed, New: a.New, Workload: script, Deadline: r.deadline,
		Network: sim.Network{Pairwise: sim.NewTransitStub(r.n, seed)},
		Faults:  []sim.Fault{{Kind: sim.Crash, Node: r.crashed, At: r.firstFnd + time.Second}},
	}
}

func discoveryParams() epidemic.Params { return epidemic.Params{Period: 50 * time.Millisecond} }

// TestDiscoveryFindsTheLiveHoldersNearestFirst: on a transit-stub
// network, every node finds every live holder, none withdrawn or crashed
// (both checkers hold, over seeds); and the first answers, ranked by
// Vivaldi coordinates alone, put the truly nearest holder first far more
// often than a random choice would.
func TestDiscoveryFindsTheLiveHoldersNearestFirst(t *testing.T) {
	a := algorithm(t, "discovery", discoveryParams())
	var hits, asked, random float64
	for seed := uint64(1); seed <= uint64(simtest.Seeds(10, 3)); seed++ {
		n := 24 + int(seed*5%17)
		run := newDiscoveryRun(n, seed)
		cfg := run.config(seed, a)
		r := simtest.Run(t, "gossip", cfg)
		r.Hold(t, "integrity", "discovery-findable", "discovery-fresh")
		ts := cfg.Network.Pairwise
		for node, outs := range r.Outputs("found") {
			var f check.DiscoveryFound
			if err := json.Unmarshal(outs[0].Data, &f); err != nil {
				t.Fatal(err)
			}
			if f.ID != 1 || slices.Contains(run.holders, node) {
				continue
			}
			best := slices.MinFunc(run.holders, func(x, y proc.ID) int {
				return int(ts.Latency(node, x)+ts.Latency(x, node)) - int(ts.Latency(node, y)+ts.Latency(y, node))
			})
			asked++
			random += 1 / float64(len(run.holders))
			if len(f.Holders) > 0 && proc.ID(f.Holders[0].Node) == best {
				hits++
			}
		}
	}
	if hits/asked < 2*random/asked {
		t.Errorf("the truly nearest holder came first in %.0f of %.0f finds: not twice a random pick's %.1f", hits, asked, random)
	}
	t.Logf("nearest first in %.0f of %.0f finds (a random pick: %.1f)", hits, asked, random)
}

// tombstoneDeaf is discovery that never adopts a deletion from a peer:
// withdrawals and expiries never spread.
type tombstoneDeaf struct{ proc.Process }

func (b tombstoneDeaf) Receive(env proc.Env, from proc.ID, m proc.Message) {
	keep := func(es []epidemic.Entry) []epidemic.Entry {
		return slices.DeleteFunc(slices.Clone(es), func(e epidemic.Entry) bool { return e.Deleted })
	}
	switch x := m.(type) {
	case epidemic.Update:
		m = epidemic.Update{Entries: keep(x.Entries)}
	case epidemic.Reply:
		m = epidemic.Reply{Entries: keep(x.Entries), Want: x.Want}
	}
	b.Process.Receive(env, from, m)
}

// shortFind answers one holder too few: the off-by-one of a slice bound
// that drops the farthest holder.
type shortFind struct{ proc.Process }

type shortEnv struct{ proc.Env }

func (e shortEnv) Output(o proc.Output) {
	if f, ok := o.(epidemic.Found); ok && len(f.Holders) > 0 {
		f.Holders = f.Holders[:len(f.Holders)-1]
		o = f
	}
	e.Env.Output(o)
}

func (b shortFind) Input(env proc.Env, in proc.Input) { b.Process.Input(shortEnv{env}, in) }

func TestDiscoveryCheckersCatchBrokenVariants(t *testing.T) {
	a := algorithm(t, "discovery", discoveryParams())
	run := newDiscoveryRun(24, 1)
	for _, c := range []struct {
		checker string
		wrap    func(proc.Process) proc.Process
	}{
		{"discovery-fresh", func(p proc.Process) proc.Process { return tombstoneDeaf{p} }},
		{"discovery-findable", func(p proc.Process) proc.Process { return shortFind{p} }},
	} {
		cfg := run.config(1, a)
		r := simtest.Run(t, "gossip", cfg)
		if v := r.Verdicts(t, c.checker)[c.checker]; v.Status != check.OK {
			t.Fatalf("%s on the correct algorithm: %v", c.checker, v)
		}
		cfg = run.config(1, a)
		cfg.New = func(id proc.ID, n int) proc.Process { return c.wrap(a.New(id, n)) }
		r = simtest.Run(t, "gossip", cfg)
		v := r.Verdicts(t, c.checker)[c.checker]
		if v.Status != check.Violated {
			t.Fatalf("%s missed the broken variant: %v", c.checker, v)
		}
		t.Logf("%s: %s", c.checker, v.Detail)
	}
}

// TestMembersFindSkipsTheDead: the members algorithm runs the same
// discovery over SWIM; a crashed holder is skipped as soon as SWIM holds
// it dead, before its advertisement expires.
func TestMembersFindSkipsTheDead(t *testing.T) {
	a := algorithm(t, "members", epidemic.Params{Coordinates: true, AdRefresh: time.Hour})
	n := 16
	script := sim.Script{
		{At: 100 * time.Millisecond, Node: 3, Input: epidemic.Advertise{Name: "db"}},
		{At: 100 * time.Millisecond, Node: 5, Input: epidemic.Advertise{Name: "db"}},
	}
	for i := range proc.ID(n) {
		if i != 3 {
			script = append(script, sim.TimedInput{At: 2 * time.Second, Node: i, Input: epidemic.Find{ID: 1, Name: "db"}})
		}
	}
	r := simtest.Run(t, "gossip", sim.Config{Nodes: n, Seed: 4, New: a.New, Workload: script, Deadline: 2100 * time.Millisecond,
		Faults: []sim.Fault{{Kind: sim.Crash, Node: 3, At: 500 * time.Millisecond}}})
	r.Hold(t, "integrity", "discovery-findable", "discovery-fresh")
	if got := r.Count("found"); got != n-1 {
		t.Fatalf("%d answers, want %d", got, n-1)
	}
}
