package sim

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/trace"
)

type num struct{ N int }

func (num) Kind() string     { return "num" }
func (m num) String() string { return fmt.Sprintf("NUM(%d)", m.N) }

type ping struct{}

func (ping) Kind() string { return "ping" }

// counter sends `count` numbered messages to process 1 at start (if it is
// process 0) and records what it receives.
type counter struct {
	count int
	got   []int
	times []time.Duration
}

func (c *counter) Start(env proc.Env) {
	if env.Self() == 0 {
		for i := 0; i < c.count; i++ {
			env.Send(1, num{i})
		}
	}
}
func (c *counter) Receive(env proc.Env, from proc.ID, m proc.Message) {
	c.got = append(c.got, m.(num).N)
	c.times = append(c.times, env.Now())
}
func (c *counter) Timeout(proc.Env, any)      {}
func (c *counter) Input(proc.Env, proc.Input) {}

func run(t *testing.T, cfg Config) (*Sim, Result) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run()
	if err != nil {
		t.Fatal(err)
	}
	return s, res
}

func counters(n, count int) func(proc.ID, int) proc.Process {
	return func(proc.ID, int) proc.Process { return &counter{count: count} }
}

func received(s *Sim, id proc.ID) []int { return s.Process(id).(*counter).got }

func inOrder(xs []int) bool {
	for i := 1; i < len(xs); i++ {
		if xs[i] < xs[i-1] {
			return false
		}
	}
	return true
}

func TestFIFOHoldsUnderJitterAndBreaksWithout(t *testing.T) {
	jitter := Uniform{Min: time.Millisecond, Max: 20 * time.Millisecond}
	for _, fifo := range []bool{true, false} {
		broken := 0
		for seed := uint64(1); seed <= 50; seed++ {
			s, _ := run(t, Config{Nodes: 2, Seed: seed, New: counters(2, 20),
				Network: Network{Latency: jitter, FIFO: fifo}})
			got := received(s, 1)
			if len(got) != 20 {
				t.Fatalf("fifo=%v seed %d: got %d messages, want 20", fifo, seed, len(got))
			}
			if !inOrder(got) {
				broken++
			}
		}
		if fifo && broken > 0 {
			t.Errorf("FIFO on: %d of 50 seeds delivered out of order", broken)
		}
		if !fifo && broken == 0 {
			t.Errorf("FIFO off with 1-20ms jitter: no seed of 50 reordered anything")
		}
	}
}

func TestReorderOvertakesEvenWithFIFO(t *testing.T) {
	broken := 0
	for seed := uint64(1); seed <= 20; seed++ {
		s, _ := run(t, Config{Nodes: 2, Seed: seed, New: counters(2, 20),
			Network: Network{FIFO: true, Reorder: 0.3}})
		if !inOrder(received(s, 1)) {
			broken++
		}
	}
	if broken == 0 {
		t.Error("reorder probability 0.3 never reordered anything in 20 seeds")
	}
}

func TestLossAndDuplicationRates(t *testing.T) {
	const sent = 20000
	_, res := run(t, Config{Nodes: 2, Seed: 7, New: counters(2, sent),
		Network: Network{Loss: 0.1, Duplicate: 0.05}})
	lossRate := float64(res.Dropped) / sent
	dupRate := float64(res.Duplicated) / float64(sent-res.Dropped)
	if lossRate < 0.09 || lossRate > 0.11 {
		t.Errorf("loss rate %.4f, want about 0.1", lossRate)
	}
	if dupRate < 0.04 || dupRate > 0.06 {
		t.Errorf("duplication rate %.4f, want about 0.05", dupRate)
	}
	if res.Delivered != sent-res.Dropped+res.Duplicated {
		t.Errorf("delivered %d, want sent-dropped+duplicated = %d", res.Delivered, sent-res.Dropped+res.Duplicated)
	}
}

func TestAsymmetricLinkLatency(t *testing.T) {
	s, _ := run(t, Config{Nodes: 2, Seed: 1, New: counters(2, 1),
		Network: Network{Latency: Constant(time.Millisecond),
			Links: []Link{{From: 0, To: 1, Latency: Constant(7 * time.Millisecond)}}}})
	if got := s.Process(1).(*counter).times; len(got) != 1 || got[0] != 7*time.Millisecond {
		t.Errorf("0→1 arrival times %v, want [7ms]", got)
	}
}

// pairs is a latency per pair: 3 ms times the sum of the addresses.
type pairs struct{}

func (pairs) Latency(a, b proc.ID) time.Duration { return time.Duration(a+b) * 3 * time.Millisecond }
func (pairs) String() string                     { return "pairs" }

// TestPairwiseLatency: Pairwise gives each pair its latency, in place of
// Latency; a link's own latency still overrides it.
func TestPairwiseLatency(t *testing.T) {
	s, _ := run(t, Config{Nodes: 2, Seed: 1, New: counters(2, 1), Network: Network{Pairwise: pairs{}}})
	if got := s.Process(1).(*counter).times; len(got) != 1 || got[0] != 3*time.Millisecond {
		t.Errorf("0→1 arrival times %v, want [3ms]", got)
	}
	s, _ = run(t, Config{Nodes: 2, Seed: 1, New: counters(2, 1), Network: Network{Pairwise: pairs{},
		Links: []Link{{From: 0, To: 1, Latency: Constant(7 * time.Millisecond)}}}})
	if got := s.Process(1).(*counter).times; len(got) != 1 || got[0] != 7*time.Millisecond {
		t.Errorf("0→1 arrival times %v, want [7ms] from the link", got)
	}
}

// chatter sends one ping to everyone every millisecond until 10ms.
type chatter struct{ got map[proc.ID]int }

func (c *chatter) Start(env proc.Env) { c.got = map[proc.ID]int{}; env.SetTimer(0, "tick") }
func (c *chatter) Receive(env proc.Env, from proc.ID, m proc.Message) {
	c.got[from]++
}
func (c *chatter) Timeout(env proc.Env, tag any) {
	for _, p := range env.Neighbors() {
		env.Send(p, ping{})
	}
	if env.Now() < 9*time.Millisecond {
		env.SetTimer(time.Millisecond, "tick")
	}
}
func (c *chatter) Input(proc.Env, proc.Input) {}

func TestPartitionCutsOnlyAcrossGroupsAndOnlyWhileItHolds(t *testing.T) {
	s, _ := run(t, Config{Nodes: 4, Seed: 1, New: func(proc.ID, int) proc.Process { return &chatter{} },
		Network: Network{Latency: Constant(100 * time.Microsecond), Partitions: []Partition{
			{Groups: [][]proc.ID{{0, 1}, {2}}, From: 2 * time.Millisecond, To: 6 * time.Millisecond}}}})
	// Ticks at 0..9ms: ten pings per pair. Across the cut, the ticks at
	// 2,3,4,5ms are lost. Node 3 is in no named group: it is cut from all.
	c0 := s.Process(0).(*chatter)
	if c0.got[1] != 10 {
		t.Errorf("p0 got %d pings from p1 (same group), want 10", c0.got[1])
	}
	if c0.got[2] != 6 || c0.got[3] != 6 {
		t.Errorf("p0 got %d from p2 and %d from p3 across the cut, want 6 and 6", c0.got[2], c0.got[3])
	}
}

func TestCrashDropsAndRecoverRestartsFresh(t *testing.T) {
	rec := &trace.Recorder{}
	s, res := run(t, Config{Nodes: 2, Seed: 1, New: func(proc.ID, int) proc.Process { return &chatter{} },
		Network: Network{Latency: Constant(100 * time.Microsecond)},
		Faults: []Fault{{Kind: Crash, Node: 1, At: 3*time.Millisecond + 50*time.Microsecond},
			{Kind: Recover, Node: 1, At: 7 * time.Millisecond}},
		Trace: rec})
	// p1 restarts at 7ms with a fresh state and a new tick chain: it sees
	// p0's pings of 7, 8 and 9 ms only.
	if got := s.Process(1).(*chatter).got[0]; got != 3 {
		t.Errorf("recovered p1 counted %d pings, want 3 (fresh state)", got)
	}
	var kinds []string
	for _, e := range rec.Trace.Events {
		if e.Node == 1 && (e.Kind == trace.Crash || e.Kind == trace.Recover || e.Kind == trace.Start) {
			kinds = append(kinds, e.Kind.String())
		}
	}
	if strings.Join(kinds, ",") != "start,crash,recover" {
		t.Errorf("p1 lifecycle %v, want start,crash,recover", kinds)
	}
	if res.Dropped == 0 {
		t.Error("no message to the crashed p1 was dropped")
	}
}

func TestCrashAtZeroNeverStarts(t *testing.T) {
	s, res := run(t, Config{Nodes: 3, Seed: 1, New: func(proc.ID, int) proc.Process { return &chatter{} },
		Faults: []Fault{{Kind: Crash, Node: 2, At: 0}}})
	if s.Up(2) || s.Process(2) != nil {
		t.Error("p2 crashed at 0 is up")
	}
	if got := res.Messages("ping"); got != 2*2*10 {
		t.Errorf("sent %d pings, want 40 (only p0 and p1 tick, to both neighbours)", got)
	}
}

func TestPauseDefersEventsInOrder(t *testing.T) {
	s, _ := run(t, Config{Nodes: 2, Seed: 1, New: counters(2, 5),
		Faults: []Fault{{Kind: Pause, Node: 1, At: 0, Until: 10 * time.Millisecond}}})
	c := s.Process(1).(*counter)
	if !inOrder(c.got) || len(c.got) != 5 {
		t.Fatalf("paused p1 got %v, want 0..4 in order", c.got)
	}
	for _, at := range c.times {
		if at != 10*time.Millisecond {
			t.Errorf("paused p1 handled a message at %v, want 10ms (when it resumes)", at)
		}
	}
}

func TestSlowNodeTakesDelayPerEvent(t *testing.T) {
	s, _ := run(t, Config{Nodes: 2, Seed: 1, New: counters(2, 3),
		Faults: []Fault{{Kind: Slow, Node: 1, At: 0, Until: time.Second, Delay: 2 * time.Millisecond}}})
	want := []time.Duration{1 * time.Millisecond, 3 * time.Millisecond, 5 * time.Millisecond}
	if got := s.Process(1).(*counter).times; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("slow p1 handled messages at %v, want %v", got, want)
	}
}

// sleeper sets a timer of 10ms on its local clock and reports when it fired.
type sleeper struct{ firedLocal time.Duration }

func (p *sleeper) Start(env proc.Env)                      { env.SetTimer(10*time.Millisecond, nil) }
func (p *sleeper) Receive(proc.Env, proc.ID, proc.Message) {}
func (p *sleeper) Timeout(env proc.Env, _ any)             { p.firedLocal = env.Now() }
func (p *sleeper) Input(proc.Env, proc.Input)              {}

func TestDriftingClocksMeasureTimersLocally(t *testing.T) {
	clocks := func(id proc.ID) HWClock {
		return []HWClock{{}, {Offset: 5 * time.Millisecond, Drift: 1e-1}}[id]
	}
	s, res := run(t, Config{Nodes: 2, Seed: 1, Clocks: clocks, New: func(proc.ID, int) proc.Process { return &sleeper{} }})
	if got := s.Process(0).(*sleeper).firedLocal; got != 10*time.Millisecond {
		t.Errorf("perfect clock: timer fired at local %v, want 10ms", got)
	}
	// The fast clock (ρ=0.1, offset 5ms) covers 10ms of local time in
	// 10/1.1 ≈ 9.09ms of true time and then reads 5ms + 10ms.
	got := s.Process(1).(*sleeper).firedLocal
	if d := got - 15*time.Millisecond; d < -time.Microsecond || d > time.Microsecond {
		t.Errorf("drifting clock: timer fired at local %v, want 15ms", got)
	}
	if res.VirtualTime != 10*time.Millisecond {
		t.Errorf("run ended at %v, want 10ms (the slower, perfect clock's timer)", res.VirtualTime)
	}
}

// canceller sets two timers and cancels one.
type canceller struct{ fired []string }

func (p *canceller) Start(env proc.Env) {
	a := env.SetTimer(time.Millisecond, "a")
	env.SetTimer(2*time.Millisecond, "b")
	env.CancelTimer(a)
	env.CancelTimer(a) // twice is a no-op
}
func (p *canceller) Receive(proc.Env, proc.ID, proc.Message) {}
func (p *canceller) Timeout(env proc.Env, tag any)           { p.fired = append(p.fired, tag.(string)) }
func (p *canceller) Input(proc.Env, proc.Input)              {}

func TestCancelledTimerNeverFires(t *testing.T) {
	s, res := run(t, Config{Nodes: 1, New: func(proc.ID, int) proc.Process { return &canceller{} }})
	if got := s.Process(0).(*canceller).fired; fmt.Sprint(got) != "[b]" {
		t.Errorf("fired %v, want [b]", got)
	}
	if res.Events != 1 {
		t.Errorf("events = %d, want 1 (a cancelled timer is not an event)", res.Events)
	}
}

func TestDeadlineAndPredicateStop(t *testing.T) {
	cfg := Config{Nodes: 3, New: func(proc.ID, int) proc.Process { return &chatter{} }, Deadline: 4 * time.Millisecond}
	_, res := run(t, cfg)
	if res.Stop != StopDeadline || res.VirtualTime != 4*time.Millisecond {
		t.Errorf("stop %q at %v, want deadline at 4ms", res.Stop, res.VirtualTime)
	}
	cfg.Deadline = 0
	cfg.Until = func(s *Sim) bool { return s.Now() >= 2*time.Millisecond }
	_, res = run(t, cfg)
	if res.Stop != StopPredicate || res.VirtualTime != 2*time.Millisecond {
		t.Errorf("stop %q at %v, want predicate at 2ms", res.Stop, res.VirtualTime)
	}
	cfg.Until = nil
	cfg.MaxEvents = 5
	_, res = run(t, cfg)
	if res.Stop != StopMaxEvents || res.Events != 5 {
		t.Errorf("stop %q after %d events, want max-events after 5", res.Stop, res.Events)
	}
}

type panicker struct{ chatter }

// Receive panics in p1 only, so that the error must name the process that
// panicked, not the one the simulator called before it.
func (p *panicker) Receive(env proc.Env, from proc.ID, m proc.Message) {
	if env.Self() == 1 {
		panic("invariant broken")
	}
}

func TestPanicBecomesAnErrorNamingNodeAndSeed(t *testing.T) {
	s, err := New(Config{Nodes: 2, Seed: 42, New: func(proc.ID, int) proc.Process { return &panicker{} }})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Run()
	if err == nil || !strings.Contains(err.Error(), "process p1 ") || !strings.Contains(err.Error(), "seed 42") || !strings.Contains(err.Error(), "invariant broken") {
		t.Errorf("err = %v, want one naming p1, the seed and the panic", err)
	}
}

func TestValidateNamesTheBadField(t *testing.T) {
	mk := func(proc.ID, int) proc.Process { return &chatter{} }
	loss := 1.5
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Nodes: 0, New: mk}, "nodes = 0"},
		{Config{Nodes: 2}, "constructor"},
		{Config{Nodes: 2, New: mk, Network: Network{Loss: -0.1}}, "loss = -0.1"},
		{Config{Nodes: 2, New: mk, Network: Network{Links: []Link{{From: 0, To: 1, Loss: &loss}}}}, "link 0→1 loss = 1.5"},
		{Config{Nodes: 2, New: mk, Network: Network{Links: []Link{{From: 0, To: 5}}}}, "node out of range"},
		{Config{Nodes: 2, New: mk, Faults: []Fault{{Kind: Crash, Node: 2}}}, "node 2 out of range"},
		{Config{Nodes: 2, New: mk, Faults: []Fault{{Kind: Pause, Node: 1, At: 5, Until: 5}}}, "not after it starts"},
		{Config{Nodes: 2, New: mk, Network: Network{Partitions: []Partition{{Groups: [][]proc.ID{{0, 1}, {1}}}}}}, "node 1 is in two groups"},
		{Config{Nodes: 2, New: mk, Clocks: func(proc.ID) HWClock { return HWClock{Drift: -2} }}, "drift -2"},
	}
	for _, c := range cases {
		_, err := New(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one containing %q", err, c.want)
		}
	}
}

func traceHash(t *testing.T, seed uint64) string {
	h := trace.NewHasher(trace.Header{Nodes: 5, Seed: seed})
	run(t, Config{Nodes: 5, Seed: seed, New: func(proc.ID, int) proc.Process { return &gossiper{} },
		Network:      Network{Latency: Exponential{MeanD: time.Millisecond}, Loss: 0.05, Duplicate: 0.05},
		Clocks:       Skew(time.Millisecond, 1e-4, seed),
		VectorClocks: true,
		Faults:       []Fault{{Kind: Crash, Node: 3, At: 2 * time.Millisecond}, {Kind: Recover, Node: 3, At: 4 * time.Millisecond}},
		Trace:        h, Deadline: 20 * time.Millisecond})
	return h.Sum()
}

// gossiper forwards a counter to a random process on every receipt, and
// ticks a random timer.
type gossiper struct{}

func (g *gossiper) Start(env proc.Env) {
	env.Send(proc.ID(env.Rand().IntN(env.N())), num{0})
	env.SetTimer(time.Duration(env.Rand().IntN(1000))*time.Microsecond, "t")
}
func (g *gossiper) Receive(env proc.Env, from proc.ID, m proc.Message) {
	if n := m.(num).N; n < 50 {
		env.Send(proc.ID(env.Rand().IntN(env.N())), num{n + 1})
	}
}
func (g *gossiper) Timeout(env proc.Env, _ any) {
	env.Output(proc.Stamp{C: uint64(env.Now())})
	env.SetTimer(time.Millisecond, "t")
}
func (g *gossiper) Input(proc.Env, proc.Input) {}

func TestSameSeedSameTraceHash(t *testing.T) {
	a, b := traceHash(t, 11), traceHash(t, 11)
	if a != b {
		t.Fatalf("same seed, different traces: %s vs %s", a, b)
	}
	if c := traceHash(t, 12); c == a {
		t.Fatalf("seeds 11 and 12 gave the same trace %s", a)
	}
}

func TestTopologies(t *testing.T) {
	cases := []struct {
		g        *Graph
		edges    int
		diameter int
	}{
		{Ring(6), 6, 3},
		{Line(5), 4, 4},
		{Grid(9), 12, 4},
		{Grid(10), 13, 5},
	}
	for _, c := range cases {
		if c.g.Edges() != c.edges || c.g.Diameter() != c.diameter {
			t.Errorf("%s: %d edges, diameter %d; want %d and %d", c.g, c.g.Edges(), c.g.Diameter(), c.edges, c.diameter)
		}
	}
	for seed := uint64(1); seed <= 20; seed++ {
		g, err := RandomGraph(50, 3, seed)
		if err != nil {
			t.Fatal(err)
		}
		if g.Diameter() < 0 {
			t.Fatalf("seed %d: random graph is disconnected", seed)
		}
		for i := 0; i < 50; i++ {
			if len(g.Neighbors(proc.ID(i))) < 3 {
				t.Fatalf("seed %d: node %d has degree %d < 3", seed, i, len(g.Neighbors(proc.ID(i))))
			}
		}
	}
	if _, err := RandomGraph(5, 5, 1); err == nil {
		t.Error("degree 5 on 5 nodes accepted")
	}
}

func TestParseDist(t *testing.T) {
	good := map[string]string{
		"2ms": "const:2ms", "const:1ms": "const:1ms", "uniform:1ms,3ms": "uniform:1ms,3ms",
		"exp:2ms": "exp:2ms", "normal:5ms,1ms": "normal:5ms,1ms", "lognormal:5ms,0.5": "lognormal:5ms,0.5",
	}
	for in, want := range good {
		d, err := ParseDist(in)
		if err != nil || d.String() != want {
			t.Errorf("ParseDist(%q) = %v, %v; want %s", in, d, err, want)
		}
	}
	bad := map[string]string{
		"fast": `bad duration "fast"`, "uniform:3ms,1ms": "below min", "poisson:1ms": `unknown kind "poisson"`,
		"exp:1ms,2ms": "takes 1 parameter", "lognormal:1ms,-1": "sigma", "-5ms": "negative",
	}
	for in, want := range bad {
		if _, err := ParseDist(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseDist(%q) error %v, want one containing %q", in, err, want)
		}
	}
}

// deadliner re-arms its timer until its local clock reads its deadline.
type deadliner struct {
	deadline time.Duration
	fires    int
}

func (p *deadliner) Start(env proc.Env) {
	p.deadline = env.Now() + 10*time.Millisecond + 1
	env.SetTimer(p.deadline-env.Now(), nil)
}
func (p *deadliner) Receive(proc.Env, proc.ID, proc.Message) {}
func (p *deadliner) Input(proc.Env, proc.Input)              {}
func (p *deadliner) Timeout(env proc.Env, _ any) {
	p.fires++
	if now := env.Now(); now < p.deadline {
		env.SetTimer(p.deadline-now, nil)
	}
}

// TestTimerNeverFiresEarlyOnADriftingClock: a timer of d fires once d has
// passed on the local clock, even when the clock runs fast and d is a few
// nanoseconds; a process waiting for a deadline is not woken at the same
// instant for ever.
func TestTimerNeverFiresEarlyOnADriftingClock(t *testing.T) {
	for _, drift := range []float64{0.005, 0.01, -0.01, 1e-7} {
		s, res := run(t, Config{Nodes: 1, Seed: 1, MaxEvents: 100,
			New:    func(proc.ID, int) proc.Process { return &deadliner{} },
			Clocks: func(proc.ID) HWClock { return HWClock{Offset: 3, Drift: drift} }})
		if res.Stop != StopQuiescent || s.Process(0).(*deadliner).fires > 3 {
			t.Errorf("drift %v: %d fires, stop %s", drift, s.Process(0).(*deadliner).fires, res.Stop)
		}
	}
}

// TestPrefetchChangesNothing: prefetching is a hint to the processor; a
// run with it has the trace of the run without it.
func TestPrefetchChangesNothing(t *testing.T) {
	defer func(old int) { prefetchFrom = old }(prefetchFrom)
	prefetchFrom = 1 << 30
	without := traceHash(t, 11)
	prefetchFrom = 1
	if with := traceHash(t, 11); with != without {
		t.Fatalf("trace with prefetching %s, without %s", with, without)
	}
}

// NoLabels leaves the labels out of the trace and nothing else: the same
// run with and without them records the same events, but for Label.
func TestNoLabelsChangesOnlyLabels(t *testing.T) {
	var traces [2]*trace.Recorder
	for i, off := range []bool{false, true} {
		traces[i] = &trace.Recorder{}
		run(t, Config{Nodes: 2, Seed: 3, New: counters(2, 5), NoLabels: off, Trace: traces[i],
			Network: Network{Latency: Uniform{time.Millisecond, 3 * time.Millisecond}, Loss: 0.2, Duplicate: 0.2}})
	}
	with, without := traces[0].Trace.Events, traces[1].Trace.Events
	if len(with) != len(without) || len(with) == 0 {
		t.Fatalf("%d events with labels, %d without", len(with), len(without))
	}
	labelled := 0
	for i := range with {
		if without[i].Label != "" {
			t.Fatalf("event %d: label %q without labels", i, without[i].Label)
		}
		if with[i].Label != "" {
			labelled++
		}
		e := with[i]
		e.Label = ""
		a, b := e.AppendJSON(nil), without[i].AppendJSON(nil)
		if string(a) != string(b) {
			t.Fatalf("event %d differs beyond its label:\n%s\n%s", i, a, b)
		}
	}
	if labelled == 0 {
		t.Fatal("no event had a label to leave out")
	}
}

// TraceOnly hands the sink the events of its kinds, as the full trace has
// them but for their indices, and changes nothing else in the run.
func TestTraceOnlyRecordsItsKinds(t *testing.T) {
	only := uint64(1<<trace.Recv | 1<<trace.Dup)
	var traces [2]*trace.Recorder
	var results [2]Result
	for i, mask := range []uint64{0, only} {
		traces[i] = &trace.Recorder{}
		_, results[i] = run(t, Config{Nodes: 2, Seed: 3, New: counters(2, 5), TraceOnly: mask, Trace: traces[i],
			Network: Network{Latency: Uniform{time.Millisecond, 3 * time.Millisecond}, Loss: 0.2, Duplicate: 0.2}})
	}
	var want []trace.Event
	kinds := map[trace.Kind]bool{}
	for _, e := range traces[0].Trace.Events {
		kinds[e.Kind] = true
		if only&(1<<e.Kind) != 0 {
			e.Index = len(want)
			want = append(want, e)
		}
	}
	got := traces[1].Trace.Events
	if len(kinds) < 3 || len(want) == 0 || len(got) != len(want) {
		t.Fatalf("%d events of %d kinds in full, %d of them of the kinds asked for; %d recorded", len(traces[0].Trace.Events), len(kinds), len(want), len(got))
	}
	for i := range got {
		if a, b := got[i].AppendJSON(nil), want[i].AppendJSON(nil); string(a) != string(b) {
			t.Fatalf("event %d:\n%s\nwant\n%s", i, a, b)
		}
	}
	if a, b := fmt.Sprint(results[0]), fmt.Sprint(results[1]); a != b {
		t.Fatalf("the run changed: %s, was %s", b, a)
	}
}

// TestPlainSendIsTheGeneralPath: a send that only counts and schedules
// (no trace, no clocks, a plain network: Sim.sendPlain) has the result of
// the general path that a traced run takes, prefetching or not.
func TestPlainSendIsTheGeneralPath(t *testing.T) {
	defer func(old int) { prefetchFrom = old }(prefetchFrom)
	for _, from := range []int{1, 1 << 30} {
		prefetchFrom = from
		var results [2]Result
		for i, traced := range []bool{false, true} {
			cfg := Config{Nodes: 50, Seed: 7, New: func(proc.ID, int) proc.Process { return &gossiper{} },
				Network: Network{Latency: Exponential{MeanD: time.Millisecond}}, Deadline: 30 * time.Millisecond}
			if traced {
				cfg.Trace = trace.NewHasher(trace.Header{Nodes: 50, Seed: 7})
			}
			s, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if s.plainSend == traced {
				t.Fatalf("traced %v: plainSend %v", traced, s.plainSend)
			}
			if results[i], err = s.Run(); err != nil {
				t.Fatal(err)
			}
		}
		if results[0].Delivered < 1000 || !reflect.DeepEqual(results[0], results[1]) {
			t.Errorf("prefetch from %d: plain path %+v, general path %+v", from, results[0], results[1])
		}
	}
}

// badSender sends to a process that does not exist, or a nil message.
type badSender struct{ nilMsg bool }

func (b *badSender) Start(env proc.Env) {
	if b.nilMsg {
		env.Send(1, nil)
	}
	env.Send(7, num{1})
}
func (*badSender) Receive(proc.Env, proc.ID, proc.Message) {}
func (*badSender) Timeout(proc.Env, any)                   {}
func (*badSender) Input(proc.Env, proc.Input)              {}

// TestBadSendEndsTheRunNamingIt: a send to no process, or of no message,
// ends the run with an error that says which, on either send path.
func TestBadSendEndsTheRunNamingIt(t *testing.T) {
	for _, traced := range []bool{false, true} {
		for _, nilMsg := range []bool{false, true} {
			cfg := Config{Nodes: 2, Seed: 1, New: func(proc.ID, int) proc.Process { return &badSender{nilMsg: nilMsg} }}
			if traced {
				cfg.Trace = trace.NewHasher(trace.Header{Nodes: 2, Seed: 1})
			}
			s, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Run()
			want := "send to p7: no such process (n=2)"
			if nilMsg {
				want = "send of a nil message"
			}
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("traced %v, nil message %v: error %v, want one saying %q", traced, nilMsg, err, want)
			}
		}
	}
}

// Config.Sent sees every message a process sends, lost ones too, with its
// sender and destination, on the fast path (no trace) as on the slow one.
func TestSentSeesEverySend(t *testing.T) {
	for _, traced := range []bool{false, true} {
		var seen int64
		bad := 0
		cfg := Config{Nodes: 2, Seed: 3, New: counters(2, 500), Network: Network{Loss: 0.2},
			Sent: func(from, to proc.ID, m proc.Message) {
				seen++
				if from == to || m == nil {
					bad++
				}
			}}
		if traced {
			cfg.Trace = trace.NewHasher(trace.Header{Nodes: 2, Seed: 3})
		}
		_, res := run(t, cfg)
		if seen != res.Sent || res.Dropped == 0 || bad > 0 {
			t.Errorf("traced %v: Sent saw %d messages (%d odd), the run sent %d and lost %d", traced, seen, bad, res.Sent, res.Dropped)
		}
	}
}
