package simtest

import (
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

type ping struct{}

func (ping) Kind() string { return "ping" }

type pong struct{}

func (pong) Kind() string { return "pong" }

// echo answers every ping with a pong output; p0 pings everyone at start.
type echo struct{}

func (echo) Start(env proc.Env) {
	if env.Self() == 0 {
		for i := 1; i < env.N(); i++ {
			env.Send(proc.ID(i), ping{})
		}
	}
}
func (echo) Receive(env proc.Env, _ proc.ID, _ proc.Message) { env.Output(pong{}) }
func (echo) Timeout(proc.Env, any)                           {}
func (echo) Input(proc.Env, proc.Input)                      {}

func TestRunRecordsAndJudges(t *testing.T) {
	r := Run(t, "test", sim.Config{Nodes: 4, Seed: 3, New: func(proc.ID, int) proc.Process { return echo{} },
		Network: sim.Network{Duplicate: 1}})
	if r.Trace.Header.Nodes != 4 || r.Trace.Header.Family != "test" || r.Seed != 3 {
		t.Errorf("header %+v", r.Trace.Header)
	}
	// Every ping is duplicated: two pongs at each of p1..p3.
	outs := r.Outputs("pong")
	if r.Count("pong") != 6 || len(outs[0]) != 0 || len(outs[3]) != 2 {
		t.Errorf("pongs: %d in all, by process %v", r.Count("pong"), outs)
	}
	v := r.Verdicts(t, "integrity", "no-duplicates")
	if !v["integrity"].OK() || !v["no-duplicates"].OK() { // the network's duplicates are not the algorithm's
		t.Errorf("verdicts %v", v)
	}
	// A trace that receives a message twice without the network having
	// duplicated it violates no-duplicates: Verdicts reports it.
	tr := *r.Trace
	tr.Events = nil
	for _, e := range r.Trace.Events {
		if e.Kind.String() != "dup" {
			tr.Events = append(tr.Events, e)
		}
	}
	for i := range tr.Events {
		tr.Events[i].Index = i
	}
	if v := Verdicts(t, &tr, "no-duplicates")["no-duplicates"]; v.Status != check.Violated {
		t.Errorf("no-duplicates on a trace with unexplained second receipts: %v", v)
	}
}

// Within never steps outside the assumptions it is given.
func TestWithinStaysInsideTheAssumptions(t *testing.T) {
	for _, as := range []proc.Assumptions{
		{Reliable: true, FIFO: true},
		{Reliable: true, Failures: "crash-stop"},
		{Failures: "crash-recover"},
		{Reliable: true, Synchronous: true, Failures: "crash-stop"},
	} {
		sawCrash, sawLoss := false, false
		for seed := uint64(1); seed <= 200; seed++ {
			net, faults := Within(as, 7, seed, 50*time.Millisecond)
			if as.Reliable && (net.Loss > 0 || net.Duplicate > 0) {
				t.Fatalf("%v seed %d: loses or duplicates: %s", as, seed, Describe(net, faults))
			}
			if as.FIFO && (!net.FIFO || net.Reorder > 0) {
				t.Fatalf("%v seed %d: not FIFO: %s", as, seed, Describe(net, faults))
			}
			sawLoss = sawLoss || net.Loss > 0
			for _, f := range faults {
				switch f.Kind {
				case sim.Crash:
					sawCrash = true
					if as.Failures == "" || as.Failures == "none" {
						t.Fatalf("%v seed %d: a crash", as, seed)
					}
				case sim.Recover:
					if as.Failures != "crash-recover" {
						t.Fatalf("%v seed %d: a recovery", as, seed)
					}
				case sim.Pause:
					if as.Synchronous {
						t.Fatalf("%v seed %d: a pause", as, seed)
					}
				}
			}
		}
		if (as.Failures != "") != sawCrash || !as.Reliable != sawLoss {
			t.Errorf("%v: over 200 seeds, crashes %v, loss %v: Within does not use what the assumptions allow", as, sawCrash, sawLoss)
		}
	}
}

// A run's trace keeps every event, in order, and grows its array by
// doubling: 10⁵ events in 7 arrays, 1024, 3072, … 130,048 (append,
// growing arrays this large by a quarter, made 29 and copied the events
// four times over).
func TestRecorderDoubles(t *testing.T) {
	const n = 100_000
	r := &recorder{}
	arrays := 0
	for i := range n {
		c := cap(r.Events)
		r.Record(&trace.Event{Index: i})
		if cap(r.Events) != c {
			arrays++
		}
	}
	if arrays > 7 {
		t.Errorf("recording %d events made %d arrays, want at most 7", n, arrays)
	}
	if len(r.Events) != n {
		t.Fatalf("%d events recorded, want %d", len(r.Events), n)
	}
	for i, e := range r.Events {
		if e.Index != i {
			t.Fatalf("event %d has index %d", i, e.Index)
		}
	}
}
