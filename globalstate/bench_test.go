package globalstate_test

import (
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cohort-go/cohort/globalstate"
	"github.com/cohort-go/cohort/lab"
	"github.com/cohort-go/cohort/trace"
)

// raRun is the run `cohort sim mutex --algo ricart-agrawala --nodes n`
// makes: the family's default workload, five entries per process.
var raRuns sync.Map

func raRun(b *testing.B, n int) *trace.Trace {
	b.Helper()
	if t, ok := raRuns.Load(n); ok {
		return t.(*trace.Trace)
	}
	f, err := lab.Lookup("mutex")
	if err != nil {
		b.Fatal(err)
	}
	a, err := f.Algorithm("ricart-agrawala")
	if err != nil {
		b.Fatal(err)
	}
	o := f.Options(a)
	o.Nodes = n
	_, t, err := lab.Sim(o)
	if err != nil {
		b.Fatal(err)
	}
	raRuns.Store(n, t)
	return t
}

// cpuTime is the process's user and system time so far: on a shared
// machine, a rate per CPU second says more than one per wall second.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rate reports states per wall second and per CPU second.
func rate(b *testing.B, states int64, cpu0 time.Duration) {
	b.ReportMetric(float64(states)/b.Elapsed().Seconds(), "cuts/s")
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(float64(states)/cpu.Seconds(), "cuts/cpu-s")
	}
}

func benchLattice(b *testing.B, n int, opt globalstate.Options) *globalstate.Lattice {
	l, err := globalstate.New(raRun(b, n), opt)
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// BenchmarkLexical enumerates the 1,189,320 consistent global states of a
// 5-process Ricart–Agrawala run (633 events) in lexical order; cuts/s is
// the rate.
func BenchmarkLexical(b *testing.B) {
	l := benchLattice(b, 5, globalstate.Options{})
	var states int64
	cpu0 := cpuTime()
	for b.Loop() {
		st, err := l.Lex(func(trace.Cut) bool { return true })
		if err != nil {
			b.Fatal(err)
		}
		states += st.States
	}
	rate(b, states, cpu0)
}

// BenchmarkBreadthFirst enumerates the same lattice level by level.
func BenchmarkBreadthFirst(b *testing.B) {
	l := benchLattice(b, 5, globalstate.Options{})
	var states int64
	cpu0 := cpuTime()
	for b.Loop() {
		st, err := l.BFS(func(trace.Cut) bool { return true })
		if err != nil {
			b.Fatal(err)
		}
		states += st.States
	}
	rate(b, states, cpu0)
}

// BenchmarkPossiblyEnumerated is possibly(φ) for a φ that holds nowhere
// and is not conjunctive: every state is enumerated and evaluated.
func BenchmarkPossiblyEnumerated(b *testing.B) {
	l := benchLattice(b, 5, globalstate.Options{})
	p := globalstate.MustParse("sum(sent) < 0")
	var states int64
	cpu0 := cpuTime()
	for b.Loop() {
		a, err := l.Possibly(p)
		if err != nil || a.Holds {
			b.Fatal(a, err)
		}
		states += a.States
	}
	rate(b, states, cpu0)
}

// BenchmarkDefinitelyBreadthFirst is definitely(φ) by Cooper & Marzullo's
// search over the whole lattice (φ holds nowhere, and the shortcuts are
// off).
func BenchmarkDefinitelyBreadthFirst(b *testing.B) {
	l := benchLattice(b, 5, globalstate.Options{Enumerate: true})
	p := globalstate.MustParse("sum(sent) < 0")
	var states int64
	cpu0 := cpuTime()
	for b.Loop() {
		a, err := l.Definitely(p)
		if err != nil || a.Holds {
			b.Fatal(a, err)
		}
		states += a.States
	}
	rate(b, states, cpu0)
}

// BenchmarkPossiblyConjunctive is possibly(count(cs) >= 2), ME1 over every
// consistent global state, of a 32-process run (7,712 events) by Garg &
// Waldecker's algorithm over its 496 pairs.
func BenchmarkPossiblyConjunctive(b *testing.B) {
	l := benchLattice(b, 32, globalstate.Options{})
	p := globalstate.MustParse("count(cs) >= 2")
	for b.Loop() {
		a, err := l.Possibly(p)
		if err != nil || a.Holds {
			b.Fatal(a, err)
		}
	}
}
