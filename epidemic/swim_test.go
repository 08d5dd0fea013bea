package epidemic_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
	"github.com/cohort-go/cohort/trace"
)

// crashes is a fault schedule: c members crash at staggered moments.
func crashes(n, c int, seed uint64) []sim.Fault {
	rng := rand.New(rand.NewPCG(seed, 11))
	var fs []sim.Fault
	for _, p := range rng.Perm(n)[:c] {
		fs = append(fs, sim.Fault{Kind: sim.Crash, Node: proc.ID(p), At: time.Duration(50+rng.IntN(200)) * time.Millisecond})
	}
	return fs
}

// TestSwimDetectsCrashes: on a clean network every crash is detected by
// every live member, and nobody live is declared dead.
func TestSwimDetectsCrashes(t *testing.T) {
	for _, c := range []struct {
		name string
		p    epidemic.Params
	}{
		{"lifeguard", epidemic.Params{}},
		{"nolifeguard", epidemic.Params{NoLHM: true, NoDynamicSuspicion: true, NoBuddy: true}},
		{"live", epidemic.Params{Stagger: true, LateHealth: true}}, // the live service's
	} {
		t.Run(c.name, func(t *testing.T) {
			a := algorithm(t, "swim", c.p)
			for seed := uint64(1); seed <= 5; seed++ {
				n := 8 + int(seed)*3
				r := simtest.Run(t, "gossip", sim.Config{Nodes: n, Seed: seed, New: a.New, Faults: crashes(n, 2, seed), Deadline: 2 * time.Second})
				r.Hold(t, "integrity", "swim-completeness", "swim-accuracy")
			}
		})
	}
}

// TestSwimSweep runs SWIM, with and without Lifeguard, over many seeds
// under the faults its assumptions allow — loss, duplication,
// reordering, crashes and recoveries, pauses (simtest.Within) — with
// members joining late and one leaving: completeness and accuracy are
// never violated (each may be unknown: a false positive after loss or a
// pause is within SWIM's probabilistic accuracy).
func TestSwimSweep(t *testing.T) {
	seeds := simtest.Seeds(30, 4)
	for _, c := range []struct {
		name string
		p    epidemic.Params
	}{
		{"lifeguard", epidemic.Params{}},
		{"nolifeguard", epidemic.Params{NoLHM: true, NoDynamicSuspicion: true, NoBuddy: true}},
		{"live", epidemic.Params{Stagger: true, LateHealth: true}}, // the live service's
	} {
		a := algorithm(t, "swim", c.p)
		t.Run(c.name, func(t *testing.T) {
			for seed := uint64(1); seed <= uint64(seeds); seed++ {
				n := 8 + int(seed%13)
				net, faults := simtest.Within(a.Assumes, n, seed, 300*time.Millisecond)
				rng := rand.New(rand.NewPCG(seed, 7))
				touched := func(p int) bool {
					return slices.ContainsFunc(faults, func(f sim.Fault) bool { return int(f.Node) == p })
				}
				for _, p := range []int{n - 2, n - 3} {
					if !touched(p) {
						faults = append(faults, sim.Fault{Kind: sim.Join, Node: proc.ID(p), At: time.Duration(rng.Int64N(int64(400 * time.Millisecond)))})
					}
				}
				if !touched(n - 4) {
					faults = append(faults, sim.Fault{Kind: sim.Leave, Node: proc.ID(n - 4), At: 350 * time.Millisecond})
				}
				r := simtest.Run(t, "gossip", sim.Config{Nodes: n, Seed: seed, New: a.New, Network: net, Faults: faults, Deadline: 3 * time.Second})
				for _, v := range r.Verdicts(t, "integrity", "swim-completeness", "swim-accuracy") {
					if v.Status == check.Violated || v.Name == "integrity" && !v.OK() {
						t.Errorf("seed %d, %d nodes (%s): %s %s: %s\n%s", seed, n, simtest.Describe(net, faults), v.Name, v.Status, v.Detail, v.Counterexample(r.Trace))
					}
				}
			}
		})
	}
}

// broken wraps a SWIM process with a deliberate bug.
type broken struct {
	proc.Process
	deaf    bool // drops acks, and every alive fact: no probe succeeds, no refutation is heard
	noTimer bool // loses its suspicion timers: never declares anyone dead
}

func (b broken) Receive(env proc.Env, from proc.ID, m proc.Message) {
	if b.deaf {
		switch x := m.(type) {
		case epidemic.Ack:
			return
		case epidemic.Ping:
			x.Updates = slices.DeleteFunc(slices.Clone(x.Updates), func(f epidemic.Fact) bool { return f.State == epidemic.StateAlive })
			m = x
		}
	}
	b.Process.Receive(env, from, m)
}

func (b broken) Timeout(env proc.Env, tag any) {
	if s, ok := tag.(fmt.Stringer); ok && b.noTimer && s.String() == "suspicion" {
		return
	}
	b.Process.Timeout(env, tag)
}

func (b broken) Join(env proc.Env, contact proc.ID) { b.Process.(proc.Joiner).Join(env, contact) }

// TestSwimCheckersCatchBrokenVariants: a member deaf to acks and
// refutations declares healthy members dead on a clean network
// (swim-accuracy violated); members that lose their suspicion timers
// never declare a crashed member dead (swim-completeness violated).
func TestSwimCheckersCatchBrokenVariants(t *testing.T) {
	a := algorithm(t, "swim", epidemic.Params{})
	n := 10
	deaf := func(id proc.ID, n int) proc.Process { return broken{Process: a.New(id, n), deaf: id == 0} }
	r := simtest.Run(t, "gossip", sim.Config{Nodes: n, Seed: 1, New: deaf, Deadline: time.Second})
	if v := r.Verdicts(t, "swim-accuracy")["swim-accuracy"]; v.Status != check.Violated {
		t.Errorf("deaf member: swim-accuracy %s (%s), want violated", v.Status, v.Detail)
	}
	forgetful := func(id proc.ID, n int) proc.Process { return broken{Process: a.New(id, n), noTimer: true} }
	r = simtest.Run(t, "gossip", sim.Config{Nodes: n, Seed: 1, New: forgetful, Faults: crashes(n, 1, 1), Deadline: 2 * time.Second})
	if v := r.Verdicts(t, "swim-completeness")["swim-completeness"]; v.Status != check.Violated {
		t.Errorf("no suspicion timers: swim-completeness %s (%s), want violated", v.Status, v.Detail)
	}
	// The same runs with the real processes hold.
	r = simtest.Run(t, "gossip", sim.Config{Nodes: n, Seed: 1, New: a.New, Faults: crashes(n, 1, 1), Deadline: 2 * time.Second})
	r.Hold(t, "swim-completeness", "swim-accuracy")
}

// The same seed gives the same trace; another seed another one.
func TestSwimIsDeterministic(t *testing.T) {
	a := algorithm(t, "swim", epidemic.Params{})
	run := func(seed uint64) string {
		net, faults := simtest.Within(a.Assumes, 12, seed, 200*time.Millisecond)
		r := simtest.Run(t, "gossip", sim.Config{Nodes: 12, Seed: seed, New: a.New, Network: net, Faults: faults, Deadline: 500 * time.Millisecond})
		return fmt.Sprint(r.Trace.Events)
	}
	if x, y := run(3), run(3); x != y {
		t.Error("two runs of seed 3 differ")
	}
	if x, y := run(3), run(4); x == y {
		t.Error("seeds 3 and 4 give the same trace")
	}
}

// slowRun runs n members, member 0 slowed to delay per event from 100 ms
// to 1.1 s, and counts the suspicions and the dead verdicts about the
// other, healthy members.
func slowRun(t *testing.T, p epidemic.Params, n int, delay time.Duration, seed uint64) (suspicions, deaths int) {
	a := algorithm(t, "swim", p)
	r := simtest.Run(t, "gossip", sim.Config{Nodes: n, Seed: seed, New: a.New, Deadline: 1500 * time.Millisecond,
		Faults: []sim.Fault{{Kind: sim.Slow, Node: 0, At: 100 * time.Millisecond, Until: 1100 * time.Millisecond, Delay: delay}}})
	for _, e := range r.Trace.Events {
		if e.Kind == trace.Output && (e.Type == "suspect" || e.Type == "dead") && !strings.Contains(e.Label, " p0@") {
			if e.Type == "suspect" {
				suspicions++
			} else {
				deaths++
			}
		}
	}
	return suspicions, deaths
}

// TestSwimLifeguardRefinements: with one member slowed to 2.5 ms per
// event (its pings' acks wait behind its backlog), its local health
// multiplier keeps it from blaming the healthy members it probes, and the
// dynamic suspicion timeout gives them time to refute what it does
// blame: Lifeguard's two main claims (Dadgar et al. 2018 §V), measured
// over four seeds against the same run with each refinement off.
func TestSwimLifeguardRefinements(t *testing.T) {
	count := func(p epidemic.Params) (s, d int) {
		for seed := uint64(1); seed <= 4; seed++ {
			a, b := slowRun(t, p, 24, 2500*time.Microsecond, seed)
			s, d = s+a, d+b
		}
		return s, d
	}
	ls, ld := count(epidemic.Params{})
	ns, _ := count(epidemic.Params{NoLHM: true})
	_, dd := count(epidemic.Params{NoDynamicSuspicion: true})
	_, nd := count(epidemic.Params{NoLHM: true, NoDynamicSuspicion: true, NoBuddy: true})
	t.Logf("healthy members suspected: %d with Lifeguard, %d without the LHM; declared dead: %d with Lifeguard, %d without the dynamic timeout, %d without Lifeguard", ls, ns, ld, dd, nd)
	if ns < 2*ls {
		t.Errorf("local health: %d suspicions without it, %d with it; want at least twice as many without", ns, ls)
	}
	if dd < 3*max(ld, 1) || nd < 3*max(ld, 1) {
		t.Errorf("dynamic suspicion: %d false deaths with Lifeguard, %d without the dynamic timeout, %d without Lifeguard; want three times as many without", ld, dd, nd)
	}
}

// TestSwimMembershipChanges: members absent at the start (probed and
// declared dead meanwhile) join through a contact and refute their
// obituary; a crashed member that recovers refutes its own; a member
// that leaves is held left by everyone. At the end every live member
// holds the joiners and the recovered member alive, and the leaver left.
func TestSwimMembershipChanges(t *testing.T) {
	a := algorithm(t, "swim", epidemic.Params{})
	n := 12
	for seed := uint64(1); seed <= 5; seed++ {
		r := simtest.Run(t, "gossip", sim.Config{Nodes: n, Initial: 10, Seed: seed, New: a.New, Deadline: 2 * time.Second,
			Faults: []sim.Fault{
				{Kind: sim.Join, Node: 10, At: 300 * time.Millisecond},
				{Kind: sim.Join, Node: 11, At: 420 * time.Millisecond},
				{Kind: sim.Crash, Node: 3, At: 100 * time.Millisecond},
				{Kind: sim.Recover, Node: 3, At: 700 * time.Millisecond},
				{Kind: sim.Leave, Node: 5, At: 800 * time.Millisecond},
			}})
		last := map[[2]int32]string{} // (observer, member) → its last verdict
		for _, e := range r.Trace.Events {
			if e.Kind.Begins() {
				for k := range last {
					if k[0] == e.Node {
						delete(last, k)
					}
				}
			}
			if e.Kind != trace.Output || (e.Type != "dead" && e.Type != "alive") {
				continue
			}
			var f struct {
				Member int32 `json:"member"`
				Left   bool  `json:"left"`
			}
			if err := json.Unmarshal(e.Data, &f); err != nil {
				t.Fatal(err)
			}
			v := e.Type
			if f.Left {
				v = "left"
			}
			last[[2]int32{e.Node, f.Member}] = v
		}
		for o := range int32(n) {
			if o == 5 {
				continue
			}
			for _, m := range []int32{10, 11, 3} {
				if m != o && last[[2]int32{o, m}] == "dead" {
					t.Errorf("seed %d: p%d ends holding p%d dead", seed, o, m)
				}
			}
			if last[[2]int32{o, 5}] != "left" {
				t.Errorf("seed %d: p%d ends holding p5 %q, want left", seed, o, last[[2]int32{o, 5}])
			}
		}
		if r.Count("alive") == 0 {
			t.Errorf("seed %d: no member was ever held alive again: nothing was refuted", seed)
		}
		r.Hold(t, "integrity", "swim-completeness")
	}
}

// refutation runs n members, member 0 paused from 100 ms to 140 ms while
// crashes crowd the dissemination buffers, and returns how long after
// its pause member 0 refuted its suspicion (−1: never).
func refutation(t *testing.T, p epidemic.Params, n int, seed uint64) time.Duration {
	a := algorithm(t, "swim", p)
	faults := []sim.Fault{{Kind: sim.Pause, Node: 0, At: 100 * time.Millisecond, Until: 160 * time.Millisecond}}
	for i := 1; i <= 12; i++ {
		faults = append(faults, sim.Fault{Kind: sim.Crash, Node: proc.ID(n - i), At: time.Duration(80+2*i) * time.Millisecond})
	}
	r := simtest.Run(t, "gossip", sim.Config{Nodes: n, Seed: seed, New: a.New, Deadline: 600 * time.Millisecond, Faults: faults})
	for _, e := range r.Trace.Events {
		if e.Kind == trace.Output && e.Node == 0 && e.Type == "alive" && strings.HasPrefix(e.Label, "alive p0@") {
			return time.Duration(e.Time) - 160*time.Millisecond
		}
	}
	return -1
}

// TestSwimBuddySystem: with updates piggybacked only twice (λ = 1 at
// n = 64), the suspicion of a member paused for six periods has mostly
// died out of the buffers when it resumes. With the buddy system the
// first ping it gets carries the suspicion, and it refutes within a
// period; without, it hears of it late or never (counted as the rest of
// the run, 440 ms).
func TestSwimBuddySystem(t *testing.T) {
	mean := func(p epidemic.Params) time.Duration {
		var sum time.Duration
		for seed := uint64(1); seed <= 10; seed++ {
			d := refutation(t, p, 64, seed)
			if d < 0 {
				d = 440 * time.Millisecond
			}
			sum += d
		}
		return sum / 10
	}
	with, without := mean(epidemic.Params{Retransmit: 1}), mean(epidemic.Params{Retransmit: 1, NoBuddy: true})
	t.Logf("refuted %v after the pause with the buddy system, %v without", with, without)
	if with > 60*time.Millisecond || without < 3*with {
		t.Errorf("refuted %v after the pause with the buddy system, %v without: want within 60 ms with, and three times as long without", with, without)
	}
}

// TestSwimStaggerSpreadsProbes: with Params.Stagger the members' pings
// leave at their own phases of the period, not all in its first tenth,
// as they do on the multiples of the period without it; completeness
// and accuracy hold either way (TestSwimSweep).
func TestSwimStaggerSpreadsProbes(t *testing.T) {
	early := func(p epidemic.Params) float64 {
		a := algorithm(t, "swim", p)
		r := simtest.Run(t, "gossip", sim.Config{Nodes: 64, Seed: 1, New: a.New, Deadline: 200 * time.Millisecond})
		period := int64(epidemic.DefaultPeriod)
		pings, first := 0, 0
		for _, e := range r.Trace.Events {
			if e.Kind == trace.Send && e.Type == "ping" {
				pings++
				if e.Local%period < period/10 {
					first++
				}
			}
		}
		if pings < 64*10 {
			t.Fatalf("%d pings in 20 periods of 64 members", pings)
		}
		return float64(first) / float64(pings)
	}
	aligned, staggered := early(epidemic.Params{}), early(epidemic.Params{Stagger: true})
	t.Logf("pings in the first tenth of a period: %.2f on the multiples, %.2f staggered", aligned, staggered)
	if aligned < 0.9 {
		t.Errorf("without Stagger %.2f of the pings leave in the first tenth of a period, want almost all", aligned)
	}
	if staggered > 0.2 {
		t.Errorf("with Stagger %.2f of the pings leave in the first tenth of a period, want about a tenth", staggered)
	}
}

// TestSwimLateHealth: every member slowed to 1.5 ms an event from
// 100 ms to 1.1 s — one host starved of CPU, each member's answers and
// its own timers late alike — and nobody has failed. With
// Params.LateHealth a member that finds its period timer late by more
// than a quarter of a probe's timeout blames itself, not the member it
// probed: fewer suspicions, and at most half the deaths, than with
// Lifeguard alone.
func TestSwimLateHealth(t *testing.T) {
	count := func(p epidemic.Params) (suspicions, deaths int) {
		a := algorithm(t, "swim", p)
		for seed := uint64(1); seed <= 4; seed++ {
			n := 24
			var faults []sim.Fault
			for i := range n {
				faults = append(faults, sim.Fault{Kind: sim.Slow, Node: proc.ID(i), At: 100 * time.Millisecond, Until: 1100 * time.Millisecond, Delay: 1500 * time.Microsecond})
			}
			r := simtest.Run(t, "gossip", sim.Config{Nodes: n, Seed: seed, New: a.New, Deadline: 1500 * time.Millisecond, Faults: faults})
			suspicions += r.Count("suspect")
			deaths += r.Count("dead")
		}
		return suspicions, deaths
	}
	ws, wd := count(epidemic.Params{})
	ls, ld := count(epidemic.Params{LateHealth: true})
	t.Logf("a starved host: %d suspicions, %d deaths with Lifeguard; %d and %d with its local health fed by lateness too", ws, wd, ls, ld)
	if 4*ls > 3*ws || 2*ld > wd {
		t.Errorf("%d suspicions and %d deaths with LateHealth, %d and %d without; want a quarter fewer suspicions, half the deaths", ls, ld, ws, wd)
	}
}
