package explore

import (
	"strings"
	"testing"

	"github.com/cohort-go/cohort/mutex"
	"github.com/cohort-go/cohort/proc"
)

// polite is a broken mutual exclusion for two processes: a process that
// wants the section asks the other, which says no while it wants it too;
// told no, a process asks again. Two that want it at once refuse each
// other forever (a livelock): no deadlock, no terminal state, every
// message delivered — and nobody enters.
type polite struct{ trying, in bool }

type (
	ask struct{}
	yes struct{}
	no  struct{}
)

func (ask) Kind() string { return "ask" }
func (yes) Kind() string { return "yes" }
func (no) Kind() string  { return "no" }

func (p *polite) Start(proc.Env) {}

func (p *polite) Input(env proc.Env, in proc.Input) {
	switch in.(type) {
	case mutex.Acquire:
		p.trying = true
		env.Send(1-env.Self(), ask{})
	case mutex.Release:
		p.in = false
		env.Output(mutex.Exit{})
	}
}

func (p *polite) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m.(type) {
	case ask:
		if p.trying || p.in {
			env.Send(from, no{})
		} else {
			env.Send(from, yes{})
		}
	case yes:
		if p.trying {
			p.trying, p.in = false, true
			env.Output(mutex.Enter{})
		}
	case no:
		if p.trying {
			env.Send(from, ask{})
		}
	}
}

func (p *polite) Timeout(proc.Env, any) {}

func politeConfig(t *testing.T) Config {
	c := setup(t, "mutex", "central", 2, nil) // the family's workload: acquire, then release on enter
	c.Algo = proc.Algorithm{Family: "mutex", Name: "polite", New: func(proc.ID, int) proc.Process { return &polite{} }}
	c.Checks, c.Safety = []string{"ME1"}, []string{"ME1"}
	return c
}

// The lasso check catches the livelock: a fair cycle in which a process
// that asked never enters. Without it the explorer sees no violation (no
// terminal state is ever reached where the two wait).
func TestCyclesCatchLivelock(t *testing.T) {
	c := politeConfig(t)
	r := explore(t, c)
	if r.Violation != nil || !r.Exhausted {
		t.Fatalf("without cycles: violation %v, exhausted %v; want none, exhausted", r.Violation, r.Exhausted)
	}
	c.Cycles = true
	r = explore(t, c)
	v := r.Violation
	if v == nil || v.Check.Name != "ME2" || v.Cycle == 0 || !strings.Contains(v.Check.Detail, "never enters") {
		t.Fatalf("no livelock found: %+v", r)
	}
	// The schedule replays: the cycle's end state is its start state.
	run, err := c.newRun(newHasher())
	if err != nil {
		t.Fatal(err)
	}
	var at uint64
	for i, st := range v.Schedule.Steps {
		if i == len(v.Schedule.Steps)-v.Cycle {
			at = run.fingerprint()
		}
		if err := run.apply(choice{st.Seq, st.Act}); err != nil {
			t.Fatal(err)
		}
	}
	if run.fingerprint() != at {
		t.Errorf("the cycle does not return to its start")
	}
	t.Logf("%d states\n%s", r.States, v.Counterexample())
}

// Correct algorithms have no such cycle: the token ring's token goes round
// forever, but everybody who asks enters; Ricart–Agrawala ends.
func TestCyclesPassCorrectAlgorithms(t *testing.T) {
	for _, algo := range []string{"ricart-agrawala", "central", "maekawa"} {
		c := setup(t, "mutex", algo, 2, nil)
		c.Cycles = true
		r := explore(t, c)
		if r.Violation != nil || !r.Exhausted {
			t.Errorf("%s: violation %v, exhausted %v; want none, exhausted", algo, r.Violation, r.Exhausted)
			continue
		}
		t.Logf("%s: %d states, %d terminal, %.0f bytes/state", algo, r.States, r.Terminal, r.BytesPerState)
	}
}
