package explore

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cohort-go/cohort/check"
)

func setup(t testing.TB, family, algo string, n int, inputs []string) Config {
	t.Helper()
	c, err := Setup(family, algo, n, inputs)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func explore(t testing.TB, c Config) *Result {
	t.Helper()
	r, err := Explore(c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Two-phase commit as TLA+ TwoPhase has 288 reachable states with 3 RMs
// (Stateright's and TLC's count of the same model); every strategy finds
// all of them, and consistency holds in each.
func TestTwoPhaseCommitStateCount(t *testing.T) {
	for _, c := range []struct {
		strategy Strategy
		por      bool
	}{{BFS, false}, {DFS, false}, {DFS, true}} {
		if raceEnabled && c.strategy == BFS {
			continue // the slowest, and the same code as the others
		}
		cfg := setup(t, "commit", "two-phase-commit", 4, nil)
		cfg.Strategy, cfg.POR = c.strategy, c.por
		r := explore(t, cfg)
		if r.States != 288 || !r.Exhausted || r.Violation != nil {
			t.Errorf("%v por=%v: %d states, exhausted %v, violation %v; want 288, exhausted, none",
				c.strategy, c.por, r.States, r.Exhausted, r.Violation)
		}
	}
}

func TestOnePhaseCommitBreaksConsistency(t *testing.T) {
	cfg := setup(t, "commit", "one-phase-commit", 3, nil)
	cfg.Checks = []string{"commit-consistency"}
	cfg.Safety = SafetyOf(cfg.Checks)
	r := explore(t, cfg)
	if r.Violation == nil || r.Violation.Check.Name != "commit-consistency" {
		t.Fatalf("no violation of commit-consistency: %+v", r)
	}
	// The shortest: the TM commits (COMMIT to p1), p2 chooses to abort,
	// p1 receives COMMIT.
	if n := len(r.Violation.Schedule.Steps); n != 3 {
		t.Errorf("counterexample of %d steps, want 3:\n%s", n, r.Violation.Counterexample())
	}
}

// Ricart–Agrawala keeps ME1, ME2 and ME3 in every state of every schedule
// of one Acquire per process.
func TestRicartAgrawalaExhausted(t *testing.T) {
	n, want := 3, int64(37617)
	if raceEnabled || testing.Short() {
		n, want = 2, 0
	}
	cfg := setup(t, "mutex", "ricart-agrawala", n, nil)
	cfg.Strategy, cfg.POR = DFS, true
	r := explore(t, cfg)
	if !r.Exhausted || r.Violation != nil || (want > 0 && r.States != want) {
		t.Fatalf("%d states, exhausted %v, violation %v; want %d, exhausted, none", r.States, r.Exhausted, r.Violation, want)
	}
	t.Logf("%d nodes: %d states, %d transitions, %d terminal, %v", n, r.States, r.Transitions, r.Terminal, r.Elapsed)
}

// Maekawa's deadlock (Coulouris et al.'s example, N = 4, three requests),
// found with a shortest schedule: three inputs, six requests delivered,
// p3's vote to p1.
func TestMaekawaDeadlockFound(t *testing.T) {
	cfg := setup(t, "mutex", "maekawa", 4, []string{"0:acquire", "1:acquire", "2:acquire"})
	cfg.Checks = []string{"ME2"}
	r := explore(t, cfg)
	v := r.Violation
	if v == nil || v.Check.Name != "ME2" || !strings.Contains(v.Check.Detail, "deadlock") || !v.Terminal {
		t.Fatalf("no deadlock found: %+v", r)
	}
	if n := len(v.Schedule.Steps); n != 10 {
		t.Errorf("counterexample of %d steps, want 10:\n%s", n, v.Counterexample())
	}
}

// JUST-RELEASED loses ME3: p0 re-enters ahead of p1, whose request
// happened before p0's second one.
func TestJustReleasedME3Found(t *testing.T) {
	cfg := setup(t, "mutex", "ricart-agrawala-jr", 3, []string{"0:acquire", "1:acquire", "0:acquire"})
	cfg.Checks, cfg.Safety = []string{"ME3"}, []string{"ME3"}
	r := explore(t, cfg)
	v := r.Violation
	if v == nil || v.Check.Name != "ME3" {
		t.Fatalf("no ME3 violation: %+v", r)
	}
	if n := len(v.Schedule.Steps); n != 8 {
		t.Errorf("counterexample of %d steps, want 8:\n%s", n, v.Counterexample())
	}
}

// Bully assumes synchrony; with timeouts that may fire before the answers
// due (asynchrony), a process ends believing in a leader that is not the
// largest id.
func TestBullyUnreliableTimeoutsFound(t *testing.T) {
	cfg := setup(t, "election", "bully", 3, nil)
	cfg.Timing, cfg.Strategy, cfg.POR = Async, DFS, true
	cfg.MaxStates = 100_000
	r := explore(t, cfg)
	if r.Violation == nil || r.Violation.Check.Name != "E1" {
		t.Fatalf("no E1 violation: %+v", r)
	}
}

// A counterexample's schedule, written and read back, replays the same
// trace, event for event.
func TestScheduleReplaysTheCounterexample(t *testing.T) {
	cfg := setup(t, "mutex", "ricart-agrawala-jr", 3, []string{"0:acquire", "1:acquire", "0:acquire"})
	cfg.Checks, cfg.Safety = []string{"ME3"}, []string{"ME3"}
	v := explore(t, cfg).Violation
	if v == nil {
		t.Fatal("no violation")
	}
	var buf bytes.Buffer
	if err := v.Schedule.Write(&buf); err != nil {
		t.Fatal(err)
	}
	s, err := ParseSchedule(&buf)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Replay(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Events) != len(v.Trace.Events) {
		t.Fatalf("replay has %d events, the exploration's run %d", len(tr.Events), len(v.Trace.Events))
	}
	for i := range tr.Events {
		if tr.Events[i].String() != v.Trace.Events[i].String() {
			t.Fatalf("event %d: %s, want %s", i, tr.Events[i].String(), v.Trace.Events[i].String())
		}
	}
	rs, err := check.Run(tr, "ME3")
	if err != nil || rs[0].Status != check.Violated {
		t.Errorf("replayed ME3: %v, %v", rs, err)
	}
}

func TestParseScheduleNamesTheBadLine(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"hello\n", "line 1"},
		{scheduleMagic + "\nfamily mutex\nalgo x\nnodes 99\n", "line 4: nodes"},
		{scheduleMagic + "\nfamily mutex\nalgo x\nnodes 3\nstep jump 3\n", "line 5: step"},
		{scheduleMagic + "\nfamily mutex\nnodes 3\n", `no "algo" line`},
	} {
		if _, err := ParseSchedule(strings.NewReader(c.text)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error naming %q", c.text, err, c.want)
		}
	}
}

// BenchmarkTwoPhaseCommit explores two-phase commit with 5 RMs (8,832
// states) and reports unique states per second and bytes per state.
func BenchmarkTwoPhaseCommit(b *testing.B) {
	for _, c := range []struct {
		name     string
		strategy Strategy
		por      bool
	}{{"bfs", BFS, false}, {"dfs-por", DFS, true}} {
		b.Run(c.name, func(b *testing.B) {
			var r *Result
			for i := 0; i < b.N; i++ {
				cfg := setup(b, "commit", "two-phase-commit", 6, nil)
				cfg.Strategy, cfg.POR = c.strategy, c.por
				r = explore(b, cfg)
			}
			if r.States != 8832 {
				b.Fatalf("%d states, want 8832", r.States)
			}
			b.ReportMetric(float64(r.States)/r.Elapsed.Seconds(), "states/s")
			b.ReportMetric(r.BytesPerState, "bytes/state")
		})
	}
}

// A duplicate the explorer chooses is the network's: its trace records it
// as the simulator's duplicating network does, so no-duplicates (which
// forbids a process receiving one message twice unless the network
// duplicated it) holds in every state, and the explorer still reaches
// the states where a message arrives twice.
func TestExploredDuplicatesAreTheNetworks(t *testing.T) {
	cfg := setup(t, "mutex", "ricart-agrawala", 2, nil)
	cfg.Dups = 1
	cfg.Checks = []string{"no-duplicates", "integrity"}
	cfg.Safety = cfg.Checks
	r := explore(t, cfg)
	if r.Violation != nil {
		t.Fatalf("%s: %s", r.Violation.Check.Name, r.Violation.Check.Detail)
	}
	plain := setup(t, "mutex", "ricart-agrawala", 2, nil)
	plain.Checks, plain.Safety = cfg.Checks, cfg.Checks
	without := explore(t, plain)
	if !r.Exhausted || r.States <= without.States {
		t.Errorf("with one duplicate: %d states (exhausted %v), without: %d; want more", r.States, r.Exhausted, without.States)
	}
}

// Chandy–Misra–Haas for the OR model, with its usual inputs (p1 and p2
// wait for each other, a knot, and p0 for p2): in every schedule the knot
// is declared within the detector's bound, and never a deadlock that is
// not.
func TestCMHORExhausted(t *testing.T) {
	n := 3
	if raceEnabled || testing.Short() {
		n = 2
	}
	cfg := setup(t, "deadlock", "cmh-or", n, nil)
	if cfg.Timing != Sync || len(cfg.Inputs) != n {
		t.Fatalf("timing %v, inputs %v: want sync, one wait per process", cfg.Timing, cfg.Inputs)
	}
	cfg.Checks = []string{"or-deadlock-detected", "or-deadlock-no-phantom"}
	cfg.Safety = SafetyOf(cfg.Checks)
	r := explore(t, cfg)
	if !r.Exhausted || r.Violation != nil || r.Terminal == 0 {
		t.Fatalf("%d states, exhausted %v, %d terminal, violation %v; want exhausted, none", r.States, r.Exhausted, r.Terminal, r.Violation)
	}
	t.Logf("%d nodes: %d states, %d transitions, %d terminal, %v", n, r.States, r.Transitions, r.Terminal, r.Elapsed)
}
