package sim

import (
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// envUser calls on its environment: p0 sets a timer at its start; when it
// fires, p0 pokes p1, sets and cancels a timer, draws a number, outputs
// and opens its storage; p1 answers a poke with a hush (and reads the
// clock); p0 takes the hush doing nothing. Every handler reads Self, N
// and Neighbors.
type envUser struct{}

type (
	poke struct{}
	hush struct{}
)

func (poke) Kind() string { return "poke" }
func (hush) Kind() string { return "hush" }

func (u *envUser) Start(env proc.Env) {
	if u.reads(env) == 0 {
		env.SetTimer(time.Millisecond, "go")
	}
}

func (u *envUser) Timeout(env proc.Env, _ any) {
	u.reads(env)
	env.Send(1, poke{})
	env.CancelTimer(env.SetTimer(time.Hour, "never"))
	env.Rand()
	env.Output(poke{})
	env.Storage()
}

func (u *envUser) Receive(env proc.Env, from proc.ID, m proc.Message) {
	u.reads(env)
	if _, ok := m.(poke); ok {
		env.Send(from, hush{})
		env.Now()
	}
}

func (u *envUser) Input(proc.Env, proc.Input) {}

func (u *envUser) reads(env proc.Env) proc.ID {
	_, _ = env.N(), env.Neighbors()
	return env.Self()
}

// EnvCalls counts every call on the environment but for Self, N and
// Neighbors, the ones that only read the configuration: a step across
// which it stays is one whose process touched nothing but its own state.
func TestEnvCallsCountsWhatAStepDoes(t *testing.T) {
	s, err := New(Config{Nodes: 2, Seed: 1, New: func(proc.ID, int) proc.Process { return &envUser{} }})
	if err != nil {
		t.Fatal(err)
	}
	s.Begin()
	if got := s.EnvCalls(); got != 1 {
		t.Fatalf("after the starts: %d calls, want 1 (a timer set)", got)
	}
	for i, want := range []uint64{7, 9, 9} { // the timer, the poke, the hush
		if !s.Step() {
			t.Fatalf("step %d: nothing to do", i)
		}
		if got := s.EnvCalls(); got != want {
			t.Fatalf("after step %d: %d calls, want %d", i, got, want)
		}
	}
}

// EnvReads counts the calls whose answer is not the process's own: Now,
// Rand and Storage — not Send, SetTimer, CancelTimer or Output, whose
// effects follow from the process's state.
func TestEnvReadsCountsTheCallsThatLookOutside(t *testing.T) {
	s, err := New(Config{Nodes: 2, Seed: 1, New: func(proc.ID, int) proc.Process { return &envUser{} }})
	if err != nil {
		t.Fatal(err)
	}
	s.Begin()
	if got := s.EnvReads(); got != 0 {
		t.Fatalf("after the starts: %d reads, want 0 (a timer set)", got)
	}
	for i, want := range []uint64{2, 3, 3} { // the timer (Rand, Storage), the poke (Now), the hush
		if !s.Step() {
			t.Fatalf("step %d: nothing to do", i)
		}
		if got := s.EnvReads(); got != want {
			t.Fatalf("after step %d: %d reads, want %d", i, got, want)
		}
	}
}
