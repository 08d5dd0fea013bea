package deadlock_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/deadlock"
	"github.com/cohort-go/cohort/lab"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
	"github.com/cohort-go/cohort/trace"
)

var orProperties = []string{"or-deadlock-detected", "or-deadlock-no-phantom"}

func cmhOR(proc.ID, int) proc.Process { return deadlock.NewCMHOR(deadlock.DefaultProbeWait) }

// runOR is a run of the OR workload: n processes, each having 8 waits
// answered, each for any one of want others, at contention c, on jittery
// FIFO channels (loss-free, as Chandy, Misra and Haas assume), stopped at
// 400 ms of virtual time at the latest.
func runOR(t testing.TB, newProc func(proc.ID, int) proc.Process, n int, seed uint64, c float64, want int) *simtest.Recorded {
	t.Helper()
	w := &lab.DeadlockORLoad{Waits: 8, Want: want, Contention: c}
	net := sim.Network{Latency: sim.Uniform{Min: 200 * time.Microsecond, Max: 3 * time.Millisecond}, FIFO: true}
	return simtest.Run(t, "deadlock", sim.Config{Nodes: n, Seed: seed, New: newProc, Network: net, Workload: w, Deadline: 400 * time.Millisecond})
}

// script runs timed inputs ("at 0 node 1 await 0 2" as sim.TimedInput)
// on constant 1 ms FIFO channels with the faults given.
func script(t testing.TB, newProc func(proc.ID, int) proc.Process, n int, ins sim.Script, faults ...sim.Fault) *simtest.Recorded {
	t.Helper()
	net := sim.Network{Latency: sim.Constant(time.Millisecond), FIFO: true}
	return simtest.Run(t, "deadlock", sim.Config{Nodes: n, Seed: 1, New: newProc, Network: net, Workload: ins, Faults: faults, Deadline: 200 * time.Millisecond})
}

func await(at time.Duration, p proc.ID, from ...proc.ID) sim.TimedInput {
	return sim.TimedInput{At: at, Node: p, Input: deadlock.Await{From: from}}
}

// declarations are the trace's "deadlock" outputs, by declaring process.
func declarations(t testing.TB, tr *trace.Trace) map[int32]deadlock.Knot {
	t.Helper()
	out := map[int32]deadlock.Knot{}
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.Kind == trace.Output && e.Type == "deadlock" {
			var k deadlock.Knot
			if err := json.Unmarshal(e.Data, &k); err != nil {
				t.Fatal(err)
			}
			out[e.Node] = k
		}
	}
	return out
}

// TestSweepCMHOR: over many seeds, sizes and contentions, on loss-free
// FIFO channels, the diffusing computation declares every knot within its
// bound, and almost never a deadlock that is not (a phantom needs a
// victim's answers to follow another declarer's replies down the same
// channels); every wait is answered in the end; knots do form (the sweep
// is not vacuous), and each is ended by one victim.
func TestSweepCMHOR(t *testing.T) {
	var formed, detected, declared, aborts, phantoms int
	for seed := uint64(1); seed <= seeds(); seed++ {
		n, c, want := setting(seed)
		r := runOR(t, cmhOR, n, seed, c, want)
		r.Hold(t, "or-deadlock-detected")
		if got := count(r.Trace, "resumed"); got != 8*n {
			t.Fatalf("seed %d: %d waits answered, want %d", seed, got, 8*n)
		}
		a, err := check.AnalyzeORDeadlocks(r.Trace)
		if err != nil {
			t.Fatal(err)
		}
		formed, detected, declared = formed+a.Formed, detected+a.Detected, declared+a.Declarations
		phantoms += len(a.Phantoms)
		aborts += count(r.Trace, "gave-up")
		if d := count(r.Trace, "deadlock"); d != count(r.Trace, "gave-up") {
			t.Errorf("seed %d: %d declarations, %d waits given up: want one victim per declaration", seed, d, count(r.Trace, "gave-up"))
		}
	}
	if formed == 0 || detected != formed {
		t.Errorf("%d knots formed, %d detected: want many, all", formed, detected)
	}
	// A process outside a knot, higher than all it reaches, declares
	// too: allow a few more declarations than knots, not many.
	if declared > formed*5/4 {
		t.Errorf("%d declarations for %d knots: want about one victim per knot", declared, formed)
	}
	if phantoms*20 > declared {
		t.Errorf("%d phantom declarations in %d: want at most 1 in 20", phantoms, declared)
	}
	t.Logf("%d seeds: %d knots formed, %d detected, %d declarations (%d phantoms), %d waits given up", seeds(), formed, detected, declared, phantoms, aborts)
}

// TestCycleIsNotAKnot: p0 waits for p1, p1 for p0 or p2, and p2 is busy
// (paused) for 40 ms. p0 → p1 → p0 is a cycle for 40 ms, the AND model's
// deadlock; but p1 can still be answered by p2, so it is no OR deadlock,
// and cmh-or declares none: p2's answer ends both waits. A detector that
// declares on the cycle (its query came back) is caught by
// or-deadlock-no-phantom, which names the way out.
func TestCycleIsNotAKnot(t *testing.T) {
	ins := sim.Script{await(0, 0, 1), await(0, 1, 0, 2)}
	busy := sim.Fault{Kind: sim.Pause, Node: 2, At: 0, Until: 40 * time.Millisecond}

	r := script(t, cmhOR, 3, ins, busy)
	r.Hold(t, orProperties...)
	if d := declarations(t, r.Trace); len(d) != 0 {
		t.Errorf("cmh-or declared %v on a cycle with a way out", d)
	}
	if got := count(r.Trace, "resumed"); got != 2 {
		t.Errorf("%d waits answered, want both", got)
	}
	if q := r.Result.Messages("query"); q == 0 {
		t.Error("no query sent: the run does not exercise the detector")
	}

	cyc := func(proc.ID, int) proc.Process { return deadlock.NewCycleCMHOR(deadlock.DefaultProbeWait) }
	r = script(t, cyc, 3, ins, busy)
	if len(declarations(t, r.Trace)) == 0 {
		t.Fatal("the cycle detector declared nothing")
	}
	v := r.Verdicts(t, "or-deadlock-no-phantom")["or-deadlock-no-phantom"]
	if v.Status != check.Violated || !strings.Contains(v.Detail, "p1→p2") || len(v.Edges) == 0 {
		t.Errorf("or-deadlock-no-phantom: %s (edges %v): want the cycle detector caught, p1→p2 named", v, v.Edges)
	}
	t.Log(v.Detail)
}

// TestKnotDeclaredByItsHighest: p1 → p2 → p3 → p1 is a knot, and p0 waits
// on it. Only p3, the knot's highest, declares (the others' computations
// are discarded by higher processes), with one query and one reply per
// edge it reaches; giving its wait up, it answers p2, and the answers
// unwind the knot and free p0.
func TestKnotDeclaredByItsHighest(t *testing.T) {
	r := script(t, cmhOR, 4, sim.Script{await(0, 1, 2), await(0, 2, 3), await(0, 3, 1), await(0, 0, 1)})
	r.Hold(t, orProperties...)
	d := declarations(t, r.Trace)
	k, ok := d[3]
	if len(d) != 1 || !ok {
		t.Fatalf("declarations %v: want p3's alone", d)
	}
	if got := count(r.Trace, "resumed"); got != 3 {
		t.Errorf("%d waits answered, want p0's, p1's and p2's", got)
	}
	if q, rep := computationMessages(r.Trace, 3, k.Comp); q != 3 || rep != 3 {
		t.Errorf("p3's computation %d: %d queries, %d replies, want 3 and 3 (e = 3)", k.Comp, q, rep)
	}
}

// computationMessages counts the queries and replies of computation comp
// of initiator init.
func computationMessages(tr *trace.Trace, init proc.ID, comp int) (queries, replies int) {
	q, r := deadlock.Query{Init: init, Comp: comp}.String(), deadlock.Reply{Init: init, Comp: comp}.String()
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.Kind != trace.Send {
			continue
		}
		switch e.Label {
		case q:
			queries++
		case r:
			replies++
		}
	}
	return queries, replies
}

// TestMessagesPerDetection: in a knot of k processes each waiting for all
// the others (e = k(k−1) edges), the declaring computation sends exactly
// e queries and e replies: 2e messages, as Chandy, Misra and Haas count.
func TestMessagesPerDetection(t *testing.T) {
	for k := 2; k <= 6; k++ {
		var ins sim.Script
		for p := range k {
			var from []proc.ID
			for q := range k {
				if q != p {
					from = append(from, proc.ID(q))
				}
			}
			ins = append(ins, await(0, proc.ID(p), from...))
		}
		r := script(t, cmhOR, k, ins)
		r.Hold(t, orProperties...)
		d := declarations(t, r.Trace)
		top := int32(k - 1)
		if len(d) != 1 {
			t.Fatalf("k=%d: declarations %v, want one", k, d)
		}
		e := k * (k - 1)
		q, rep := computationMessages(r.Trace, proc.ID(top), d[top].Comp)
		if q != e || rep != e {
			t.Errorf("k=%d: %d queries and %d replies, want e = %d of each", k, q, rep, e)
		}
		t.Logf("k=%d e=%d: declaring computation %d messages, all detection messages %d", k, e, q+rep,
			r.Result.Messages("query")+r.Result.Messages("reply"))
	}
}

// TestDeafCMHORIsCaught: a detector that never declares leaves a knot
// standing: or-deadlock-detected catches it, with the knot's edges.
func TestDeafCMHORIsCaught(t *testing.T) {
	deaf := func(proc.ID, int) proc.Process { return deadlock.NewDeafCMHOR(deadlock.DefaultProbeWait) }
	r := script(t, deaf, 3, sim.Script{await(0, 0, 1), await(0, 1, 2), await(0, 2, 0)})
	v := r.Verdicts(t, orProperties...)
	if d := v["or-deadlock-detected"]; d.Status != check.Violated || len(d.Edges) != 3 {
		t.Errorf("or-deadlock-detected: %s (edges %v): want the standing knot p0→p1→p2→p0", d, d.Edges)
	}
	if !v["or-deadlock-no-phantom"].OK() {
		t.Errorf("a detector that declares nothing declares no phantom: %s", v["or-deadlock-no-phantom"])
	}
}

// TestORSameSeedSameTrace: a run replays byte for byte from its seed.
func TestORSameSeedSameTrace(t *testing.T) {
	hash := func() string {
		h := trace.NewHasher(trace.Header{Nodes: 6, Seed: 9})
		w := &lab.DeadlockORLoad{Contention: 0.9}
		net := sim.Network{Latency: sim.Exponential{MeanD: time.Millisecond}, FIFO: true}
		simtest.Run(t, "deadlock", sim.Config{Nodes: 6, Seed: 9, New: cmhOR, Network: net, Workload: w, Trace: h})
		return h.Sum()
	}
	if h1, h2 := hash(), hash(); h1 != h2 {
		t.Errorf("seed 9 gave traces %s and %s", h1, h2)
	}
}

// TestResolutionPhantomIsCaught: with dependent sets of one (every wait
// for a single process) and exponential delays, a process outside a knot,
// higher than all it reaches, sometimes gathers its replies just ahead of
// the answers that the knot's victim set off down the same channels: it
// declares a knot that is already unwinding. or-deadlock-no-phantom
// catches it, at the declaration and in its causal past — why cmh-or
// does not promise it.
func TestResolutionPhantomIsCaught(t *testing.T) {
	caught := 0
	for seed := uint64(1); seed <= 60 && caught == 0; seed++ {
		w := &lab.DeadlockORLoad{Waits: 10, Want: 1, Contention: 0.7}
		net := sim.Network{Latency: sim.Exponential{MeanD: time.Millisecond}, FIFO: true}
		r := simtest.Run(t, "deadlock", sim.Config{Nodes: 8 + int(seed%7), Seed: seed, New: cmhOR, Network: net, Workload: w, Deadline: 400 * time.Millisecond})
		r.Hold(t, "or-deadlock-detected")
		if v := r.Verdicts(t, "or-deadlock-no-phantom")["or-deadlock-no-phantom"]; v.Status == check.Violated {
			caught++
			t.Logf("seed %d: %s", seed, v.Detail)
		}
	}
	if caught == 0 {
		t.Error("no phantom declaration in 60 seeds of dependent sets of one")
	}
}
