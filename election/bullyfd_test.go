package election

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
	"github.com/cohort-go/cohort/trace"
)

// changes lists the Elected outputs of tr at or after from: "t p→leader".
type change struct {
	at     time.Duration
	node   proc.ID
	leader proc.ID
}

func changes(tr *trace.Trace, from time.Duration) []change {
	var cs []change
	for _, e := range tr.Events {
		if e.Kind == trace.Output && e.Type == "elected" && e.Time >= int64(from) {
			var o Elected
			if json.Unmarshal(e.Data, &o) == nil {
				cs = append(cs, change{time.Duration(e.Time), proc.ID(e.Node), o.Leader})
			}
		}
	}
	return cs
}

// agreedAt is when every process in live last changed its mind to leader
// (and kept it to the end); false if some live process ends elsewhere.
func agreedAt(tr *trace.Trace, live []proc.ID, leader proc.ID) (time.Duration, bool) {
	last := map[proc.ID]change{}
	for _, c := range changes(tr, 0) {
		last[c.node] = c
	}
	var at time.Duration
	for _, p := range live {
		c, ok := last[p]
		if !ok || c.leader != leader {
			return 0, false
		}
		at = max(at, c.at)
	}
	return at, true
}

func ids(from, to int) []proc.ID {
	var s []proc.ID
	for i := from; i <= to; i++ {
		s = append(s, proc.ID(i))
	}
	return s
}

// The leader crashes; every survivor agrees on the next-highest within the
// detection time (Timeout after the last heartbeat, plus a tick) and a few
// message delays; the old leader recovers and bullies its way back.
func TestBullyFDFailoverAndComeback(t *testing.T) {
	cfg := SimLeader
	crash, back := 300*time.Millisecond, 700*time.Millisecond
	for seed := uint64(1); seed <= uint64(simtest.Seeds(30, 3)); seed++ {
		r := electionRun{Nodes: 8, Seed: seed, New: NewBullyFD(cfg), FIFO: true,
			Latency: sim.Uniform{Min: time.Millisecond, Max: 3 * time.Millisecond},
			Faults: []sim.Fault{
				{Kind: sim.Crash, Node: 7, At: crash},
				{Kind: sim.Recover, Node: 7, At: back},
			},
			Deadline: time.Second}
		tr, _ := r.run(t)
		if bad := judge(t, tr); len(bad) > 0 {
			t.Fatalf("seed %d: %v", seed, bad)
		}
		// Before the comeback, everyone but 7 followed 6.
		cut := &trace.Trace{Header: tr.Header}
		for _, e := range tr.Events {
			if e.Time < int64(back) {
				cut.Events = append(cut.Events, e)
			}
		}
		at, ok := agreedAt(cut, ids(0, 6), 6)
		if !ok {
			t.Fatalf("seed %d: survivors did not agree on p6 before 7 came back: %v", seed, changes(tr, crash))
		}
		limit := cfg.Timeout + 2*cfg.Heartbeat + 4*3*time.Millisecond
		if at-crash > limit {
			t.Errorf("seed %d: failover took %v, want at most %v", seed, at-crash, limit)
		}
		if at-crash < cfg.Timeout-cfg.Heartbeat {
			t.Errorf("seed %d: failover after %v: faster than the detector allows (%v)", seed, at-crash, cfg.Timeout-cfg.Heartbeat)
		}
		if _, ok := agreedAt(tr, ids(0, 7), 7); !ok {
			t.Fatalf("seed %d: p7 did not bully its way back: %v", seed, changes(tr, back))
		}
	}
}

// E1, E2 and agreement hold at the end of runs with random crashes and
// recoveries of any process, once the faults are over.
func TestBullyFDSweepUnderCrashes(t *testing.T) {
	for seed := uint64(1); seed <= uint64(simtest.Seeds(100, 10)); seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		n := 2 + rng.IntN(9)
		var faults []sim.Fault
		for _, p := range rng.Perm(n)[:rng.IntN(n)] {
			at := time.Duration(rng.Int64N(int64(400 * time.Millisecond)))
			faults = append(faults, sim.Fault{Kind: sim.Crash, Node: proc.ID(p), At: at})
			if rng.IntN(2) == 0 {
				faults = append(faults, sim.Fault{Kind: sim.Recover, Node: proc.ID(p), At: at + time.Duration(rng.Int64N(int64(300*time.Millisecond)))})
			}
		}
		r := electionRun{Nodes: n, Seed: seed, New: NewBullyFD(SimLeader), FIFO: true,
			Latency: sim.Exponential{MeanD: time.Millisecond}, Faults: faults, Deadline: 1200 * time.Millisecond}
		tr, _ := r.run(t)
		if bad := judge(t, tr); len(bad) > 0 {
			t.Fatalf("seed %d, %d nodes, faults %v: %v", seed, n, faults, bad)
		}
	}
}

// Under churn — processes joining, failing and leaving at random for
// 400 ms — bully with a failure detector still ends with every present
// process agreeing on the largest present id once membership settles.
func TestBullyFDSweepUnderChurn(t *testing.T) {
	var joins, leaves, crashes int64
	seeds := simtest.Seeds(40, 8)
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		rng := rand.New(rand.NewPCG(seed, 8))
		n := 4 + rng.IntN(12)
		r := electionRun{Nodes: n, Seed: seed, New: NewBullyFD(SimLeader), FIFO: true,
			Latency: sim.Exponential{MeanD: time.Millisecond}, Initial: 2 + rng.IntN(n-2),
			Churn:    []sim.Churn{{Join: 20, Fail: 5, Leave: 10, Until: 400 * time.Millisecond}},
			Deadline: 1400 * time.Millisecond}
		tr, res := r.run(t)
		if bad := judge(t, tr); len(bad) > 0 {
			t.Fatalf("seed %d, %d nodes, %d joins, %d leaves: %v", seed, n, res.Joins, res.Leaves, bad)
		}
		joins, leaves = joins+res.Joins, leaves+res.Leaves
		for _, e := range tr.Events {
			if e.Kind == trace.Crash {
				crashes++
			}
		}
	}
	// At least 2.5 joins, 1 leave and 0.5 crashes a run on average.
	if joins < int64(5*seeds/2) || leaves < int64(seeds) || crashes < int64(seeds/2) {
		t.Errorf("churn too thin to mean anything: %d joins, %d leaves, %d crashes over %d runs", joins, leaves, crashes, seeds)
	}
}

// A healthy cluster with jittery latency well inside the timeout never
// changes its leader after the first election: no false suspicions. Both
// detectors.
func TestBullyFDNoFalseSuspicions(t *testing.T) {
	for _, phi := range []float64{0, 8} {
		cfg := SimLeader
		cfg.Phi = phi
		for seed := uint64(1); seed <= uint64(simtest.Seeds(5, 1)); seed++ {
			r := electionRun{Nodes: 5, Seed: seed, New: NewBullyFD(cfg), FIFO: true,
				Latency: sim.Uniform{Min: 500 * time.Microsecond, Max: 8 * time.Millisecond},
				Clocks:  sim.Skew(time.Millisecond, 1e-4, seed), Deadline: 20 * time.Second}
			tr, _ := r.run(t)
			settle := 200 * time.Millisecond
			if cs := changes(tr, settle); len(cs) > 0 {
				t.Errorf("phi %v seed %d: %d leader changes after %v, first %+v", phi, seed, len(cs), settle, cs[0])
			}
			if _, ok := agreedAt(tr, ids(0, 4), 4); !ok {
				t.Errorf("phi %v seed %d: no agreement on p4: %v", phi, seed, changes(tr, 0))
			}
		}
	}
}

// The same cluster with a timeout below the network's jitter suspects live
// leaders and changes its mind: the measure above can fail.
func TestBullyFDTooShortTimeoutFlaps(t *testing.T) {
	cfg := SimLeader
	cfg.Heartbeat, cfg.Timeout = 2*time.Millisecond, 5*time.Millisecond
	r := electionRun{Nodes: 5, Seed: 1, New: NewBullyFD(cfg), FIFO: true,
		Latency: sim.Uniform{Min: 500 * time.Microsecond, Max: 8 * time.Millisecond}, Deadline: 2 * time.Second}
	tr, _ := r.run(t)
	if cs := changes(tr, 200*time.Millisecond); len(cs) == 0 {
		t.Error("a 5 ms timeout under up to 8 ms of latency caused no leader change")
	}
}

// Phi-accrual adapts to the heartbeat rhythm: a crash is detected, and the
// failover completes, as with the fixed timeout.
func TestBullyFDPhiDetectsCrash(t *testing.T) {
	cfg := SimLeader
	cfg.Phi = 8
	crash := 500 * time.Millisecond
	r := electionRun{Nodes: 5, Seed: 3, New: NewBullyFD(cfg), FIFO: true,
		Latency: sim.Uniform{Min: time.Millisecond, Max: 2 * time.Millisecond},
		Faults:  []sim.Fault{{Kind: sim.Crash, Node: 4, At: crash}}, Deadline: 2 * time.Second}
	tr, _ := r.run(t)
	at, ok := agreedAt(tr, ids(0, 3), 3)
	if !ok {
		t.Fatalf("no agreement on p3 after p4 crashed: %v", changes(tr, crash))
	}
	if d := at - crash; d > 200*time.Millisecond {
		t.Errorf("phi failover took %v", d)
	}
	t.Logf("phi-accrual failover: %v", at-crash)
}

// Only candidates are elected; observers follow; a resigning leader hands
// over to the next candidate, and a new, higher candidate takes over.
func TestBullyFDCandidatesAndObservers(t *testing.T) {
	cfg := SimLeader
	cfg.Candidate = false
	in := func(at time.Duration, p proc.ID, x proc.Input) sim.TimedInput {
		return sim.TimedInput{At: at, Node: p, Input: x}
	}
	r := electionRun{Nodes: 6, Seed: 5, New: NewBullyFD(cfg), FIFO: true,
		Latency: sim.Uniform{Min: time.Millisecond, Max: 2 * time.Millisecond},
		Inputs: sim.Script{
			in(0, 1, Campaign{}), in(0, 3, Campaign{}),
			in(300*time.Millisecond, 3, Resign{}),
			in(600*time.Millisecond, 4, Campaign{}),
		}, Deadline: 900 * time.Millisecond}
	tr, _ := r.run(t)
	at := func(until time.Duration) *trace.Trace {
		cut := &trace.Trace{Header: tr.Header}
		for _, e := range tr.Events {
			if e.Time < int64(until) {
				cut.Events = append(cut.Events, e)
			}
		}
		return cut
	}
	for _, step := range []struct {
		until  time.Duration
		leader proc.ID
	}{{300 * time.Millisecond, 3}, {600 * time.Millisecond, 1}, {900 * time.Millisecond, 4}} {
		if _, ok := agreedAt(at(step.until), ids(0, 5), step.leader); !ok {
			t.Fatalf("before %v: want every process on %s, changes %v", step.until, step.leader, changes(at(step.until), 0))
		}
	}
}

// Two partitions elect a leader each; when the partition heals, the lower
// leader steps down and everyone agrees on the highest.
func TestBullyFDPartitionHeals(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		heal := 600 * time.Millisecond
		r := electionRun{Nodes: 8, Seed: seed, New: NewBullyFD(SimLeader), FIFO: true,
			Latency:  sim.Uniform{Min: time.Millisecond, Max: 3 * time.Millisecond},
			Deadline: time.Second}
		r.Cuts = []sim.Partition{{Groups: [][]proc.ID{ids(0, 3), ids(4, 7)}, From: 100 * time.Millisecond, To: heal}}
		tr, _ := r.run(t)
		cut := &trace.Trace{Header: tr.Header}
		for _, e := range tr.Events {
			if e.Time < int64(heal) {
				cut.Events = append(cut.Events, e)
			}
		}
		if _, ok := agreedAt(cut, ids(0, 3), 3); !ok {
			t.Fatalf("seed %d: the minority side did not elect p3 during the partition: %v", seed, changes(cut, 0))
		}
		if _, ok := agreedAt(tr, ids(0, 7), 7); !ok {
			t.Fatalf("seed %d: no agreement on p7 after the heal: %v", seed, changes(tr, heal))
		}
		if bad := judge(t, tr); len(bad) > 0 {
			t.Fatalf("seed %d: %v", seed, bad)
		}
	}
}

func TestPhi(t *testing.T) {
	mean, sd := float64(50*time.Millisecond), float64(5*time.Millisecond)
	if got := Phi(50*time.Millisecond, mean, sd, 0); math.Abs(got-math.Log10(2)) > 1e-9 {
		t.Errorf("phi at the mean = %v, want log10(2)", got)
	}
	prev := 0.0
	for s := 50 * time.Millisecond; s <= 200*time.Millisecond; s += 10 * time.Millisecond {
		p := Phi(s, mean, sd, 0)
		if p < prev {
			t.Errorf("phi(%v) = %v < phi of a shorter silence %v", s, p, prev)
		}
		prev = p
	}
	if p := Phi(time.Second, mean, sd, 0); !math.IsInf(p, 1) && p < 100 {
		t.Errorf("phi of a 20σ silence = %v", p)
	}
	if a, b := Phi(80*time.Millisecond, mean, sd, 0), Phi(80*time.Millisecond, mean, sd, 30*time.Millisecond); b >= a {
		t.Errorf("an acceptable pause must lower phi: %v vs %v", b, a)
	}
}

func TestLeaderInputs(t *testing.T) {
	for name, want := range map[string]proc.Input{"campaign": Campaign{}, "resign": Resign{}, "elect": Elect{}} {
		if got, err := leaderInputs(name, nil); err != nil || got != want {
			t.Errorf("%s: %v, %v", name, got, err)
		}
	}
	if _, err := leaderInputs("campaign", []string{"x"}); err == nil {
		t.Error("campaign x: no error")
	}
	if _, err := leaderInputs("vote", nil); err == nil || fmt.Sprint(err) == "" {
		t.Error("vote: no error")
	}
}

// fakeEnv drives one process by hand.
type fakeEnv struct {
	self proc.ID
	n    int
	now  time.Duration
	outs []proc.Output
}

func (e *fakeEnv) Self() proc.ID                            { return e.self }
func (e *fakeEnv) N() int                                   { return e.n }
func (e *fakeEnv) Neighbors() []proc.ID                     { return nil }
func (e *fakeEnv) Now() time.Duration                       { return e.now }
func (e *fakeEnv) Send(proc.ID, proc.Message)               {}
func (e *fakeEnv) SetTimer(time.Duration, any) proc.TimerID { return 1 }
func (e *fakeEnv) CancelTimer(proc.TimerID)                 {}
func (e *fakeEnv) Storage() proc.Storage                    { return nil }
func (e *fakeEnv) Rand() *rand.Rand                         { return rand.New(rand.NewPCG(1, 2)) }
func (e *fakeEnv) Output(o proc.Output)                     { e.outs = append(e.outs, o) }

// A process that was itself stalled does not blame its leader for the
// silence: the tick that comes late suspects nobody, and the heartbeats
// that waited behind it clear the leader. A leader that stays silent after
// the stall is suspected at the next tick.
func TestBullyFDStalledObserverSuspectsNobody(t *testing.T) {
	cfg := SimLeader
	for _, leaderAlive := range []bool{true, false} {
		env := &fakeEnv{self: 0, n: 2}
		b := NewBullyFD(cfg)(0, 2).(*bullyFD)
		b.Start(env)
		env.now = cfg.Heartbeat
		b.Receive(env, 1, bullyCoordinator{})
		b.Timeout(env, fdTick{})
		if b.elected != 1 {
			t.Fatalf("elected %s, want p1", b.elected)
		}
		// Stalled for 10 timeouts: the overdue tick comes first.
		env.now += 10 * cfg.Timeout
		b.Timeout(env, fdTick{})
		if b.elected != 1 {
			t.Fatalf("the overdue tick dropped the leader")
		}
		if leaderAlive {
			b.Receive(env, 1, fdBeat{Candidate: true, Leader: 1})
		}
		env.now += cfg.Heartbeat
		b.Timeout(env, fdTick{})
		if got := b.elected == 1; got != leaderAlive {
			t.Errorf("leader alive %v: after the next tick elected = %s", leaderAlive, b.elected)
		}
	}
}

// leaderships lists, in true time, each interval in which a process
// believed itself the leader, with its term; an open interval ends at the
// end of the trace (or the process's crash).
type leadership struct {
	node       proc.ID
	term       uint64
	from, till time.Duration
}

func leaderships(tr *trace.Trace) []leadership {
	var out []leadership
	open := map[proc.ID]int{}
	var end time.Duration
	closeAt := func(p proc.ID, at time.Duration) {
		if i, ok := open[p]; ok {
			out[i].till = at
			delete(open, p)
		}
	}
	for _, e := range tr.Events {
		at, p := time.Duration(e.Time), proc.ID(e.Node)
		end = at
		switch {
		case e.Kind == trace.Crash:
			closeAt(p, at)
		case e.Kind == trace.Output && e.Type == "elected":
			var o Elected
			if json.Unmarshal(e.Data, &o) != nil {
				continue
			}
			closeAt(p, at)
			if o.Leader == p {
				open[p] = len(out)
				out = append(out, leadership{node: p, term: o.Term, from: at, till: -1})
			}
		}
	}
	for p := range open {
		closeAt(p, end)
	}
	return out
}

// With Quorum, a leader cut off in a minority steps down before the
// majority elects another: while the partition lasts, no two processes
// lead at once. When it heals, the highest process bullies its way back
// under a higher term; the leader it deposes learns it one message later,
// and that moment of overlap is all there is, told apart by the terms.
// Terms rise with every new leadership.
func TestBullyFDQuorumNoOverlap(t *testing.T) {
	cfg := SimLeader
	cfg.Quorum = true
	for seed := uint64(1); seed <= 20; seed++ {
		heal := 900 * time.Millisecond
		r := electionRun{Nodes: 5, Seed: seed, New: NewBullyFD(cfg), FIFO: true,
			Latency:  sim.Uniform{Min: time.Millisecond, Max: 3 * time.Millisecond},
			Cuts:     []sim.Partition{{Groups: [][]proc.ID{ids(0, 2), ids(3, 4)}, From: 300 * time.Millisecond, To: heal}},
			Deadline: 1500 * time.Millisecond}
		tr, _ := r.run(t)
		ls := leaderships(tr)
		for i, a := range ls {
			for _, b := range ls[i+1:] {
				if a.node == b.node || !(a.from < b.till && b.from < a.till) {
					continue
				}
				lo, hi := max(a.from, b.from), min(a.till, b.till)
				if lo < heal || hi-lo > 10*time.Millisecond {
					t.Fatalf("seed %d: %s (term %d, %v–%v) and %s (term %d, %v–%v) led at once",
						seed, a.node, a.term, a.from, a.till, b.node, b.term, b.from, b.till)
				}
			}
		}
		var last uint64
		for _, l := range ls {
			if l.term <= last {
				t.Fatalf("seed %d: term %d of %s at %v after term %d: terms must rise", seed, l.term, l.node, l.from, last)
			}
			last = l.term
		}
		mid := &trace.Trace{Header: tr.Header}
		for _, e := range tr.Events {
			if e.Time < int64(heal) {
				mid.Events = append(mid.Events, e)
			}
		}
		if _, ok := agreedAt(mid, ids(0, 2), 2); !ok {
			t.Fatalf("seed %d: the majority did not elect p2: %v", seed, changes(mid, 300*time.Millisecond))
		}
		if _, ok := agreedAt(mid, ids(3, 4), proc.None); !ok {
			t.Fatalf("seed %d: the minority kept a leader: %v", seed, changes(mid, 300*time.Millisecond))
		}
		if _, ok := agreedAt(tr, ids(0, 4), 4); !ok {
			t.Fatalf("seed %d: no agreement on p4 after the heal: %v", seed, changes(tr, heal))
		}
	}
}

// Without Quorum the minority keeps its leader: the same partition shows
// two leaders at once, which is what the quorum rule prevents.
func TestBullyFDWithoutQuorumTwoLeaders(t *testing.T) {
	r := electionRun{Nodes: 5, Seed: 1, New: NewBullyFD(SimLeader), FIFO: true,
		Latency:  sim.Uniform{Min: time.Millisecond, Max: 3 * time.Millisecond},
		Cuts:     []sim.Partition{{Groups: [][]proc.ID{ids(0, 2), ids(3, 4)}, From: 300 * time.Millisecond, To: 900 * time.Millisecond}},
		Deadline: 1500 * time.Millisecond}
	tr, _ := r.run(t)
	ls := leaderships(tr)
	overlap := false
	for i, a := range ls {
		for _, b := range ls[i+1:] {
			overlap = overlap || (a.node != b.node && a.from < b.till && b.from < a.till)
		}
	}
	if !overlap {
		t.Fatalf("no two leaders at once without a quorum: %+v", ls)
	}
}

// Terms rise across every leadership in runs with random crashes and
// recoveries, with and without a quorum.
func TestBullyFDTermsRise(t *testing.T) {
	for _, quorum := range []bool{false, true} {
		cfg := SimLeader
		cfg.Quorum = quorum
		for seed := uint64(1); seed <= uint64(simtest.Seeds(40, 4)); seed++ {
			rng := rand.New(rand.NewPCG(seed, 9))
			n := 3 + rng.IntN(5)
			var faults []sim.Fault
			for _, p := range rng.Perm(n)[:rng.IntN(n/2+1)] {
				at := time.Duration(rng.Int64N(int64(400 * time.Millisecond)))
				faults = append(faults, sim.Fault{Kind: sim.Crash, Node: proc.ID(p), At: at},
					sim.Fault{Kind: sim.Recover, Node: proc.ID(p), At: at + time.Duration(rng.Int64N(int64(300*time.Millisecond)))})
			}
			r := electionRun{Nodes: n, Seed: seed, New: NewBullyFD(cfg), FIFO: true,
				Latency: sim.Exponential{MeanD: time.Millisecond}, Faults: faults, Deadline: 1200 * time.Millisecond}
			tr, _ := r.run(t)
			if bad := judge(t, tr); len(bad) > 0 {
				t.Fatalf("quorum %v seed %d: %v", quorum, seed, bad)
			}
			var last uint64
			for _, l := range leaderships(tr) {
				if l.term <= last {
					t.Fatalf("quorum %v seed %d, faults %v: term %d of %s at %v after term %d", quorum, seed, faults, l.term, l.node, l.from, last)
				}
				last = l.term
			}
		}
	}
}
