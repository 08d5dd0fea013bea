package epidemic_test

import (
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
)

// Each checker of the family catches a real violation made by a
// deliberately broken variant, and passes the correct algorithm on the
// same schedule.

// offByOnePush is push anti-entropy with the classic peer-selection bug:
// it draws from 0 .. N−2 and forgets to skip itself, so it sometimes
// pushes to itself and never to node N−1, which therefore never hears of
// anything.
type offByOnePush struct {
	entries []epidemic.Entry
}

func (p *offByOnePush) Start(env proc.Env) { env.SetTimer(10*time.Millisecond, "round") }
func (p *offByOnePush) Input(env proc.Env, in proc.Input) {
	if put, ok := in.(epidemic.Put); ok {
		p.adopt(env, epidemic.Entry{Key: put.Key, Value: put.Value, Version: 1<<32 | uint64(env.Self())})
	}
}
func (p *offByOnePush) Timeout(env proc.Env, _ any) {
	if len(p.entries) > 0 {
		env.Send(proc.ID(env.Rand().IntN(env.N()-1)), epidemic.Update{Entries: p.entries})
	}
	env.SetTimer(10*time.Millisecond, "round")
}
func (p *offByOnePush) Receive(env proc.Env, _ proc.ID, m proc.Message) {
	if u, ok := m.(epidemic.Update); ok {
		for _, e := range u.Entries {
			p.adopt(env, e)
		}
	}
}
func (p *offByOnePush) adopt(env proc.Env, e epidemic.Entry) {
	for _, have := range p.entries {
		if have.Key == e.Key && have.Version >= e.Version {
			return
		}
	}
	p.entries = []epidemic.Entry{e} // one key in this test
	env.Output(epidemic.Applied{Key: e.Key, Value: e.Value, Version: e.Version})
}

func TestConvergenceCatchesAPeerSelectionBug(t *testing.T) {
	cfg := sim.Config{Nodes: 8, Seed: 1, Deadline: time.Second,
		Workload: sim.Script{{At: 5 * time.Millisecond, Node: 0, Input: epidemic.Put{Key: "x", Value: "1"}}}}
	cfg.New = func(proc.ID, int) proc.Process { return &offByOnePush{} }
	r := simtest.Run(t, "gossip", cfg)
	v := r.Verdicts(t, "gossip-convergence")["gossip-convergence"]
	if v.Status != check.Violated || len(v.Events) == 0 {
		t.Fatalf("the off-by-one push: %s %s; want violated (p7 never hears)", v.Status, v.Detail)
	}
	t.Logf("caught: %s", v.Detail)
	cfg.New = algorithm(t, "push", epidemic.Params{}).New
	simtest.Run(t, "gossip", cfg).Hold(t, "gossip-convergence")
}

// Tombstones reaped at once (a reap age shorter than the time a deletion
// takes to spread) let nodes that still hold the old value hand it back to
// nodes that have forgotten the deletion.
func TestNoResurrectionCatchesTombstonesReapedTooSoon(t *testing.T) {
	script := sim.Script{
		{At: 5 * time.Millisecond, Node: 0, Input: epidemic.Put{Key: "x", Value: "1"}},
		{At: 205 * time.Millisecond, Node: 1, Input: epidemic.Delete{Key: "x"}},
	}
	caught := 0
	for seed := uint64(1); seed <= 5; seed++ {
		cfg := sim.Config{Nodes: 16, Seed: seed, Deadline: 600 * time.Millisecond, Workload: script,
			New: algorithm(t, "push-pull", epidemic.Params{ReapAfter: time.Nanosecond}).New}
		v := simtest.Run(t, "gossip", cfg).Verdicts(t, "gossip-no-resurrection")["gossip-no-resurrection"]
		if v.Status == check.Violated {
			caught++
			if caught == 1 {
				t.Logf("caught: %s", v.Detail)
			}
		}
		cfg.New = algorithm(t, "push-pull", epidemic.Params{}).New
		simtest.Run(t, "gossip", cfg).Hold(t, "gossip-no-resurrection", "gossip-convergence")
	}
	if caught == 0 {
		t.Errorf("reaping at once resurrected nothing in 5 seeds")
	}
}

// greedyPushSum forgets to halve its own pair: it sends half and keeps
// the whole, making mass out of nothing every round.
type greedyPushSum struct {
	s, w float64
	self bool // selfish: "sends" its share to itself (no mixing at all)
}

func (p *greedyPushSum) Start(env proc.Env) {
	p.w = 1
	env.Output(epidemic.State{S: p.s, W: p.w})
	env.SetTimer(10*time.Millisecond, "round")
}
func (p *greedyPushSum) Input(env proc.Env, in proc.Input) {
	if v, ok := in.(epidemic.Value); ok {
		p.s += v.X
		env.Output(epidemic.State{S: p.s, W: p.w})
	}
}
func (p *greedyPushSum) Timeout(env proc.Env, _ any) {
	if p.self { // halves as it should, but its target is itself
		p.s, p.w = p.s/2, p.w/2
		env.Output(epidemic.State{S: p.s, W: p.w})
		env.Send(env.Self(), epidemic.Share{S: p.s, W: p.w})
	} else { // greedy: sends half and keeps s and w whole
		env.Send(proc.ID(env.Rand().IntN(env.N())), epidemic.Share{S: p.s / 2, W: p.w / 2})
	}
	env.SetTimer(10*time.Millisecond, "round")
}
func (p *greedyPushSum) Receive(env proc.Env, _ proc.ID, m proc.Message) {
	if sh, ok := m.(epidemic.Share); ok {
		p.s += sh.S
		p.w += sh.W
		env.Output(epidemic.State{S: p.s, W: p.w})
	}
}

func pushSumValues(n int) sim.Script {
	var s sim.Script
	for i := range n {
		s = append(s, sim.TimedInput{At: time.Microsecond, Node: proc.ID(i), Input: epidemic.Value{X: float64(i + 1)}})
	}
	return s
}

func TestPushSumCheckersCatchBrokenVariants(t *testing.T) {
	cfg := sim.Config{Nodes: 16, Seed: 1, Deadline: time.Second, Workload: pushSumValues(16)}
	for _, c := range []struct {
		name    string
		new     func(proc.ID, int) proc.Process
		breaks  string
		keeps   string
		because string
	}{
		{"greedy", func(proc.ID, int) proc.Process { return &greedyPushSum{} }, "push-sum-mass", "",
			"it keeps the half it sends"},
		{"selfish", func(proc.ID, int) proc.Process { return &greedyPushSum{self: true} }, "push-sum-error", "push-sum-mass",
			"it sends every share to itself: mass is kept, but nothing mixes"},
	} {
		cfg.New = c.new
		r := simtest.Run(t, "gossip", cfg)
		v := r.Verdicts(t, c.breaks)[c.breaks]
		if v.Status != check.Violated || len(v.Events) == 0 {
			t.Errorf("%s (%s): %s %s; want violated", c.name, c.because, c.breaks, v.Status)
		} else {
			t.Logf("%s caught by %s: %s", c.name, c.breaks, v.Detail)
		}
		if c.keeps != "" {
			r.Hold(t, c.keeps)
		}
	}
	cfg.New = algorithm(t, "push-sum", epidemic.Params{}).New
	simtest.Run(t, "gossip", cfg).Hold(t, "push-sum-mass", "push-sum-error")
}

// A lost share takes its mass with it: push-sum assumes reliable
// channels, and the checker shows what a lossy one does.
func TestPushSumMassCatchesLoss(t *testing.T) {
	cfg := sim.Config{Nodes: 16, Seed: 1, Deadline: 300 * time.Millisecond, Workload: pushSumValues(16),
		New: algorithm(t, "push-sum", epidemic.Params{}).New, Network: sim.Network{Loss: 0.05}}
	r := simtest.Run(t, "gossip", cfg)
	if v := r.Verdicts(t, "push-sum-mass")["push-sum-mass"]; v.Status != check.Violated {
		t.Errorf("push-sum with 5%% loss: push-sum-mass %s; want violated", v.Status)
	}
}
