package mutex

import (
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
	"github.com/cohort-go/cohort/trace"
)

// TestRejoinAfterARestart: one process crashes at a random moment —
// while it defers replies, waits, holds the section, or (central) is the
// coordinator — and restarts from its stable storage a little later, then
// asks for the section again. Every other process still finishes its
// rounds, and mutual exclusion holds, with FIFO channels and without.
// Without the rejoin (HELLO), the others wait for ever in most of these
// runs; without requests and grants naming each other, an answer to the
// crashed incarnation's request, delivered after the restart, lets the
// new one in beside a holder.
func TestRejoinAfterARestart(t *testing.T) {
	seeds := uint64(simtest.Seeds(200, 40))
	for _, name := range []string{"ricart-agrawala", "ricart-agrawala-jr", "lamport", "central", "central-failover"} {
		a := raAlgorithm(t, name)
		stuck := 0
		for seed := uint64(1); seed <= seeds; seed++ {
			n := 3 + int(seed%3)
			crash := proc.ID(seed / 2 % uint64(n))
			at := time.Duration(2+seed%23) * time.Millisecond
			back := at + time.Duration(1+seed%7)*time.Millisecond
			latency := sim.Dist(clJitter)
			if seed%4 < 2 { // answers to the old incarnation still in flight after the restart
				latency, back = sim.Uniform{Min: time.Millisecond, Max: 15 * time.Millisecond}, at+time.Millisecond
			}
			fifo := seed%2 == 0
			switch name {
			case "central-failover": // it assumes FIFO, and round trips well under its timeouts
				latency, fifo = clJitter, true
			case "lamport": // it assumes FIFO
				fifo = true
			}
			w := &closedLoop{Rounds: 15, Think: sim.Uniform{Max: 4 * time.Millisecond}, Hold: sim.Uniform{Max: 2 * time.Millisecond}}
			r := runMutex(t, sim.Config{Nodes: n, Seed: seed, New: a.New,
				Network:  sim.Network{Latency: latency, FIFO: fifo},
				Workload: &rejoining{w, crash, max(back, at+5*time.Millisecond)}, Deadline: 5 * time.Second,
				Faults: []sim.Fault{{Kind: sim.Crash, Node: crash, At: at}, {Kind: sim.Recover, Node: crash, At: back}},
				Until: func(s *sim.Sim) bool {
					for p, d := range w.done {
						if proc.ID(p) != crash && d < w.Rounds {
							return false
						}
					}
					return true
				}})
			for _, res := range raCheck(t, r.Trace, "ME1") {
				if !res.OK() {
					t.Fatalf("%s seed %d (p%d down %v–%v, fifo %v): %s", name, seed, crash, at, back, fifo, res)
				}
			}
			for p, d := range w.done {
				if proc.ID(p) != crash && d < w.Rounds {
					stuck++
					t.Errorf("%s seed %d (p%d down %v–%v, fifo %v): p%d did %d of %d rounds", name, seed, crash, at, back, fifo, p, d, w.Rounds)
					break
				}
			}
		}
		if stuck > 0 {
			t.Errorf("%s: %d of %d runs stuck after a restart", name, stuck, seeds)
		}
	}
}

// rejoining is a closed loop in which the restarted process starts asking
// again at back: after its restart, and once the inputs its loop had
// scheduled before the crash (think 4 ms, hold 2 ms at most) are past.
type rejoining struct {
	*closedLoop
	p    proc.ID
	back time.Duration
}

func (w *rejoining) Init(c sim.Control) {
	w.closedLoop.Init(c)
	c.After(w.back+time.Microsecond, func() { w.done[w.p] = 0; w.acquire(c, w.p) })
}

// holdLoop: holder asks for the section with a hold, waiter 5 ms later.
type holdLoop struct {
	hold           time.Duration
	holder, waiter proc.ID
	enter          []time.Duration // when each process entered (0: not yet)
}

func (w *holdLoop) Init(c sim.Control) {
	w.enter = make([]time.Duration, c.N())
	c.Schedule(time.Millisecond, w.holder, Acquire{Hold: w.hold})
	c.Schedule(5*time.Millisecond, w.waiter, Acquire{})
}

func (w *holdLoop) Observe(c sim.Control, p proc.ID, o proc.Output) {
	if _, ok := o.(Enter); ok && w.enter[p] == 0 {
		w.enter[p] = c.Now()
		if p == w.waiter {
			c.Schedule(time.Millisecond, p, Release{})
		}
	}
}

// TestWaitsOutTheHoldOfACrashedHolder: a process enters with a hold of
// 200 ms (a lease a remote client may still act under), crashes inside
// the section, and restarts at once. The waiter enters only after the
// hold has passed since the restart — not as soon as the holder is back.
func TestWaitsOutTheHoldOfACrashedHolder(t *testing.T) {
	const hold = 200 * time.Millisecond
	for _, c := range []struct {
		algo           string
		holder, waiter proc.ID
		hellos         int // sent by the restarted holder (-1: it sends none)
	}{
		{"ricart-agrawala", 0, 1, 2},
		{"lamport", 0, 1, 2},
		{"central", 0, 1, 2}, // the coordinator holds
		{"central", 1, 2, 1}, // a client holds
		{"central-failover", 1, 2, -1},
		{"central-failover", 2, 1, -1}, // the holder would win the election
	} {
		w := &holdLoop{hold: hold, holder: c.holder, waiter: c.waiter}
		crash, back := 20*time.Millisecond, 21*time.Millisecond
		r := runMutex(t, sim.Config{Nodes: 3, Seed: 1, New: raAlgorithm(t, c.algo).New,
			Network:  sim.Network{Latency: sim.Constant(time.Millisecond), FIFO: true},
			Workload: w, Deadline: time.Second,
			Faults: []sim.Fault{{Kind: sim.Crash, Node: c.holder, At: crash}, {Kind: sim.Recover, Node: c.holder, At: back}},
			Until:  func(*sim.Sim) bool { return w.enter[c.waiter] > 0 }})
		switch {
		case w.enter[c.holder] == 0 || w.enter[c.holder] > crash:
			t.Fatalf("%s: p%d entered at %v, want before its crash at %v", c.algo, c.holder, w.enter[c.holder], crash)
		case w.enter[c.waiter] == 0:
			t.Fatalf("%s: p%d never entered after p%d's restart", c.algo, c.waiter, c.holder)
		case w.enter[c.waiter] < back+hold:
			t.Fatalf("%s: p%d entered at %v, before p%d's hold ran out (restart %v + %v)", c.algo, c.waiter, w.enter[c.waiter], c.holder, back, hold)
		}
		if res := raCheck(t, r.Trace, "ME1"); !res[0].OK() {
			t.Fatalf("%s: %s", c.algo, res[0])
		}
		var hellos int
		for _, e := range r.Trace.Events {
			if e.Kind == trace.Send && e.Type == "hello" && proc.ID(e.Node) == c.holder {
				hellos++
			}
		}
		if c.hellos >= 0 && hellos != c.hellos {
			t.Errorf("%s: %d HELLOs sent by the restarted p%d, want %d", c.algo, hellos, c.holder, c.hellos)
		}
	}
}

// pausedHolder: p1 asks with a hold and keeps the section for 130 ms; p2
// asks 5 ms later.
type pausedHolder struct{ hold time.Duration }

func (w *pausedHolder) Init(c sim.Control) {
	c.Schedule(time.Millisecond, 1, Acquire{Hold: w.hold})
	c.Schedule(5*time.Millisecond, 2, Acquire{})
}

func (w *pausedHolder) Observe(c sim.Control, p proc.ID, o proc.Output) {
	if _, ok := o.(Enter); ok {
		c.Schedule(130*time.Millisecond, p, Release{})
	}
}

// TestFailoverWaitsOutAPausedHoldersHold: central-failover's holder, with
// a hold of 200 ms (its client's lease), is paused for 100 ms — longer
// than Suspect (40 ms). The coordinator does not take the permission back
// while the hold may still run (found by hand: a holder stalled for 60 ms
// lost the lock to a waiter while its command ran on); without a hold it
// does, and ME1 breaks, as the algorithm's timing assumption says.
func TestFailoverWaitsOutAPausedHoldersHold(t *testing.T) {
	for _, hold := range []time.Duration{200 * time.Millisecond, 0} {
		r := runMutex(t, sim.Config{Nodes: 3, Seed: 1, New: raAlgorithm(t, "central-failover").New,
			Network:  sim.Network{Latency: sim.Constant(time.Millisecond), FIFO: true},
			Workload: &pausedHolder{hold}, Deadline: time.Second,
			Faults: []sim.Fault{{Kind: sim.Pause, Node: 1, At: 20 * time.Millisecond, Until: 120 * time.Millisecond}}})
		res := raCheck(t, r.Trace, "ME1")[0]
		if hold > 0 && !res.OK() {
			t.Errorf("hold %v: %s", hold, res)
		}
		if hold == 0 && res.OK() {
			t.Error("no hold: the paused holder kept the permission, though silent for longer than Suspect")
		}
		if r.Enters[2] != 1 {
			t.Errorf("hold %v: p2 entered %d times, want 1", hold, r.Enters[2])
		}
	}
}

// lateHolder: p1 asks with a hold and keeps the section for 250 ms; p2
// asks, with the same hold, 25 ms later.
type lateHolder struct{ hold time.Duration }

func (w *lateHolder) Init(c sim.Control) {
	c.Schedule(time.Millisecond, 1, Acquire{Hold: w.hold})
	c.Schedule(25*time.Millisecond, 2, Acquire{Hold: w.hold})
}

func (w *lateHolder) Observe(c sim.Control, p proc.ID, o proc.Output) {
	if _, ok := o.(Enter); ok && p == 1 {
		c.Schedule(250*time.Millisecond, p, Release{})
	}
}

// TestNewCoordinatorWaitsForALateHolder: central-failover's coordinator
// p0 crashes while p1 holds the permission for a remote client (a hold of
// 200 ms); p2, waiting, takes over, but p1 answers its COORDINATOR late
// (paused 30–200 ms, a loaded machine). The new coordinator must not take
// p1's silence for a crash after Suspect alone: p1's client acts for its
// hold, so it waits that long — the longest hold it has seen asked for,
// p2's own — and learns of the holder in time. (Found live: under load
// the restarted cluster granted the lock to a second client while the
// first held it.) Without holds, Suspect is all it waits, and ME1 fails,
// as it must for a silence that long.
func TestNewCoordinatorWaitsForALateHolder(t *testing.T) {
	for _, hold := range []time.Duration{200 * time.Millisecond, 0} {
		r := runMutex(t, sim.Config{Nodes: 3, Seed: 1, New: raAlgorithm(t, "central-failover").New,
			Network:  sim.Network{Latency: sim.Constant(time.Millisecond), FIFO: true},
			Workload: &lateHolder{hold}, Deadline: time.Second,
			Faults: []sim.Fault{{Kind: sim.Crash, Node: 0, At: 20 * time.Millisecond},
				{Kind: sim.Pause, Node: 1, At: 30 * time.Millisecond, Until: 200 * time.Millisecond}}})
		res := raCheck(t, r.Trace, "ME1")[0]
		if hold > 0 && !res.OK() {
			t.Errorf("hold %v: %s", hold, res)
		}
		if hold == 0 && res.OK() {
			t.Error("no hold: the late holder kept the permission, though silent for longer than Suspect")
		}
		if r.Enters[2] != 1 {
			t.Errorf("hold %v: p2 entered %d times, want 1", hold, r.Enters[2])
		}
	}
}

// slowLinkRestart: p1 asks with a hold and keeps the section for 600 ms;
// the restarted p0 asks at 100 ms, p2 at 200 ms.
type slowLinkRestart struct{}

func (slowLinkRestart) Init(c sim.Control) {
	c.Schedule(time.Millisecond, 1, Acquire{Hold: 300 * time.Millisecond})
	c.Schedule(100*time.Millisecond, 0, Acquire{Hold: 300 * time.Millisecond})
	c.Schedule(200*time.Millisecond, 2, Acquire{Hold: 300 * time.Millisecond})
}

func (slowLinkRestart) Observe(c sim.Control, p proc.ID, o proc.Output) {
	if _, ok := o.(Enter); ok {
		d := 30 * time.Millisecond
		if p == 1 {
			d = 600 * time.Millisecond
		}
		c.Schedule(d, p, Release{})
	}
}

// TestRestartedWinnerWaitsOutTheLongestHold: central-failover's p0
// restarts and calls an election; p2 wins it (epoch 1), but the OKs and
// the announcement take 110 ms to reach p0 (the others' links to it
// coming back slowly after its restart), so p0, hearing no OK within
// Election, wins epoch 1 as well, and hears from nobody. It used to take
// them all for crashed after Suspect and grant its own client while p1
// held the permission — with p2's first token of epoch 1, which p2
// handed out too (found live, in a trace of
// TestCentralLockSurvivesACoordinatorRestart). Now it waits the longest
// hold it saw asked for before its crash (p1's), kept on stable storage,
// and follows p2 when its announcement arrives.
func TestRestartedWinnerWaitsOutTheLongestHold(t *testing.T) {
	net := sim.Network{FIFO: true, Latency: sim.Constant(time.Millisecond), Links: []sim.Link{
		// p1's request before the crash is quick; what follows is slow.
		{From: 1, To: 0, Latency: &raSeqLatency{ds: []time.Duration{time.Millisecond, 110 * time.Millisecond}}},
		{From: 2, To: 0, Latency: sim.Constant(110 * time.Millisecond)},
	}}
	r := runMutex(t, sim.Config{Nodes: 3, Seed: 1, New: raAlgorithm(t, "central-failover").New,
		Network: net, Workload: slowLinkRestart{}, Deadline: 2 * time.Second,
		Faults: []sim.Fault{{Kind: sim.Crash, Node: 0, At: 20 * time.Millisecond}, {Kind: sim.Recover, Node: 0, At: 30 * time.Millisecond}}})
	if res := raCheck(t, r.Trace, "ME1")[0]; !res.OK() {
		t.Fatal(res)
	}
	if r.Enters[0] != 1 || r.Enters[2] != 1 {
		t.Errorf("p0 entered %d times and p2 %d, want once each", r.Enters[0], r.Enters[2])
	}
	winners := 0
	for _, e := range r.Trace.Events {
		if e.Kind == trace.Send && e.Type == "coordinator" && e.Label == "COORDINATOR(e1)" && e.Node == 0 {
			winners++
		}
	}
	if winners == 0 {
		t.Error("p0 never announced epoch 1: the run does not have two winners of an epoch")
	}
}
