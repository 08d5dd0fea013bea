package mutex

import (
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

// TestRARejoinsAfterARestart: one process crashes at a random moment —
// while it defers replies, waits, or holds the section — and restarts
// from its stable storage a little later. Every other process still
// finishes its rounds (the restarted one says HELLO; the others drop its
// dead request and ask it again), and mutual exclusion holds. Without the
// rejoin, the others wait for its reply for ever in most of these runs;
// without replies naming their request, a reply to the crashed
// incarnation's request, delivered after the restart, lets the new one in
// beside a holder.
func TestRARejoinsAfterARestart(t *testing.T) {
	for _, name := range []string{"ricart-agrawala", "ricart-agrawala-jr"} {
		a := raAlgorithm(t, name)
		stuck := 0
		for seed := uint64(1); seed <= 150; seed++ {
			n := 3 + int(seed%3)
			crash := proc.ID(seed % uint64(n))
			at := time.Duration(2+seed%23) * time.Millisecond
			back := at + time.Duration(1+seed%7)*time.Millisecond
			latency := sim.Dist(clJitter)
			if seed%2 == 0 { // replies to the old incarnation still in flight after the restart
				latency, back = sim.Uniform{Min: time.Millisecond, Max: 15 * time.Millisecond}, at+time.Millisecond
			}
			w := &closedLoop{Rounds: 15, Think: sim.Uniform{Max: 4 * time.Millisecond}, Hold: sim.Uniform{Max: 2 * time.Millisecond}}
			r := runMutex(t, sim.Config{Nodes: n, Seed: seed, New: a.New,
				Network:  sim.Network{Latency: latency, FIFO: true},
				Workload: &rejoining{w, crash, back}, Deadline: 5 * time.Second,
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
					t.Fatalf("%s seed %d (p%d down %v–%v): %s", name, seed, crash, at, back, res)
				}
			}
			for p, d := range w.done {
				if proc.ID(p) != crash && d < w.Rounds {
					stuck++
					t.Errorf("%s seed %d (p%d down %v–%v): p%d did %d of %d rounds", name, seed, crash, at, back, p, d, w.Rounds)
					break
				}
			}
		}
		if stuck > 0 {
			t.Errorf("%s: %d of 150 runs stuck after a restart", name, stuck)
		}
	}
}

// rejoining is a closed loop in which the restarted process starts asking
// again right after its restart.
type rejoining struct {
	*closedLoop
	p    proc.ID
	back time.Duration
}

func (w *rejoining) Init(c sim.Control) {
	w.closedLoop.Init(c)
	c.After(w.back+time.Microsecond, func() { w.done[w.p] = 0; w.acquire(c, w.p) })
}

// holdLoop asks for the section once per process, p0 with a hold.
type holdLoop struct {
	hold  time.Duration
	enter []time.Duration // when each process entered (0: not yet)
}

func (w *holdLoop) Init(c sim.Control) {
	w.enter = make([]time.Duration, c.N())
	c.Schedule(0, 0, Acquire{Hold: w.hold})
	c.Schedule(5*time.Millisecond, 1, Acquire{})
}

func (w *holdLoop) Observe(c sim.Control, p proc.ID, o proc.Output) {
	if _, ok := o.(Enter); ok && w.enter[p] == 0 {
		w.enter[p] = c.Now()
		if p != 0 {
			c.Schedule(time.Millisecond, p, Release{})
		}
	}
}

// TestRAWaitsOutTheHoldOfACrashedHolder: p0 enters with a hold of 200 ms
// (a lease a remote client may still act under), crashes inside the
// section, and restarts at once. p1, waiting, enters only after the hold
// has passed since the restart — not as soon as p0 is back.
func TestRAWaitsOutTheHoldOfACrashedHolder(t *testing.T) {
	const hold = 200 * time.Millisecond
	w := &holdLoop{hold: hold}
	crash, back := 20*time.Millisecond, 21*time.Millisecond
	r := runMutex(t, sim.Config{Nodes: 3, Seed: 1, New: raAlgorithm(t, "ricart-agrawala").New,
		Network:  sim.Network{Latency: sim.Constant(time.Millisecond), FIFO: true},
		Workload: w, Deadline: time.Second,
		Faults: []sim.Fault{{Kind: sim.Crash, Node: 0, At: crash}, {Kind: sim.Recover, Node: 0, At: back}},
		Until:  func(*sim.Sim) bool { return w.enter[1] > 0 }})
	switch {
	case w.enter[0] == 0 || w.enter[0] > crash:
		t.Fatalf("p0 entered at %v, want before its crash at %v", w.enter[0], crash)
	case w.enter[1] == 0:
		t.Fatal("p1 never entered after p0's restart")
	case w.enter[1] < back+hold:
		t.Fatalf("p1 entered at %v, before p0's hold ran out (restart %v + %v)", w.enter[1], back, hold)
	}
	if res := raCheck(t, r.Trace, "ME1"); !res[0].OK() {
		t.Fatal(res[0])
	}
	var hellos int
	for _, e := range r.Trace.Events {
		if e.Kind == trace.Send && e.Type == "hello" {
			hellos++
		}
	}
	if hellos != 2 {
		t.Errorf("%d HELLOs sent, want 2 (the restarted p0 to each other)", hellos)
	}
}
