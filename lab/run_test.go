package lab

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

// mutexOptions is a run of a mutex algorithm with the family's workload.
func mutexOptions(t *testing.T, algo string) Options {
	t.Helper()
	f, err := Lookup("mutex")
	if err != nil {
		t.Fatal(err)
	}
	a, err := f.Algorithm(algo)
	if err != nil {
		t.Fatal(err)
	}
	return f.Options(a)
}

func seed(s uint64) *uint64 { return &s }

// The same options give the same trace, event for event; another seed
// gives another; the trace written as it is made is the one kept in memory,
// and its hash is the report's.
func TestSimIsDeterministicAndWritesItsTrace(t *testing.T) {
	sim := func(s uint64) (*Report, *trace.Trace, string) {
		o := mutexOptions(t, "ricart-agrawala")
		o.Nodes, o.Seed = 4, seed(s)
		var buf bytes.Buffer
		o.Trace = &buf
		r, tr, err := Sim(o)
		if err != nil {
			t.Fatal(err)
		}
		return r, tr, buf.String()
	}
	r1, t1, w1 := sim(7)
	r2, _, w2 := sim(7)
	r3, _, _ := sim(8)
	if r1.TraceSHA != r2.TraceSHA || w1 != w2 {
		t.Errorf("seed 7 twice: hashes %s and %s, written traces equal: %v", r1.TraceSHA, r2.TraceSHA, w1 == w2)
	}
	if r1.TraceSHA == r3.TraceSHA {
		t.Errorf("seeds 7 and 8 give the same trace %s", r1.TraceSHA)
	}
	if r1.Nodes != 4 || r1.Seed != 7 || r1.Family != "mutex" || r1.Algo != "ricart-agrawala" {
		t.Errorf("report says %s/%s, %d nodes, seed %d; want mutex/ricart-agrawala, 4 nodes, seed 7", r1.Family, r1.Algo, r1.Nodes, r1.Seed)
	}
	written, err := trace.Read(strings.NewReader(w1))
	if err != nil {
		t.Fatal(err)
	}
	if len(written.Events) == 0 || len(written.Events) != len(t1.Events) {
		t.Errorf("written trace has %d events, the one in memory %d", len(written.Events), len(t1.Events))
	}
	if r1.Failed() || r1.Metrics["entries"] == 0 || r1.Theory["messages_per_entry"] == nil {
		t.Errorf("a plain Ricart–Agrawala run: failed %v, metrics %v, theory %v", r1.Failed(), r1.Metrics, r1.Theory)
	}
}

// NoCheck runs without keeping the trace: no trace, no checks, the same
// hash.
func TestSimNoCheck(t *testing.T) {
	o := mutexOptions(t, "central")
	o.Seed = seed(3)
	full, _, err := Sim(o)
	if err != nil {
		t.Fatal(err)
	}
	o.NoCheck = true
	bare, tr, err := Sim(o)
	if err != nil {
		t.Fatal(err)
	}
	if tr != nil || len(bare.Checks) != 0 || len(bare.Metrics) != 0 {
		t.Errorf("NoCheck kept a trace (%v), %d checks, metrics %v", tr != nil, len(bare.Checks), bare.Metrics)
	}
	if bare.TraceSHA != full.TraceSHA || len(full.Checks) == 0 {
		t.Errorf("NoCheck hash %s, checked %s (%d checks)", bare.TraceSHA, full.TraceSHA, len(full.Checks))
	}
}

// A setting outside the algorithm's assumptions is reported, and then no
// check is guaranteed; the network flags and faults reach the simulator.
func TestSimOutsideAssumptions(t *testing.T) {
	o := mutexOptions(t, "ricart-agrawala")
	o.Seed = seed(1)
	loss := 0.2
	o.Network.Loss = &loss
	o.Faults = []string{"crash 1 at 5ms"}
	o.Deadline = time.Second
	r, _, err := Sim(o)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Network, "loss 0.2") {
		t.Errorf("network %q does not say loss 0.2", r.Network)
	}
	out := strings.Join(r.Outside, "; ")
	if !strings.Contains(out, "loses messages") || !strings.Contains(out, "crashes processes") {
		t.Errorf("outside assumptions: %q; want the loss and the crash", out)
	}
	if r.Messages.Dropped == 0 {
		t.Error("a lossy network dropped nothing")
	}
	for _, c := range r.Checks {
		if c.Guaranteed || c.Failed() {
			t.Errorf("check %s is guaranteed (%v) or failed (%v) outside the assumptions", c.Name, c.Guaranteed, c.Failed())
		}
	}
}

// A virtual deadline ends a run that would go on; a workload that knows
// when it is done ends the run then (an idle token ring never falls silent).
func TestSimStops(t *testing.T) {
	o := mutexOptions(t, "token-ring")
	o.Seed = seed(1)
	r, _, err := Sim(o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Stop != string(sim.StopPredicate) {
		t.Errorf("token ring with the mutex workload stopped by %q, want %q", r.Stop, sim.StopPredicate)
	}
	o = mutexOptions(t, "token-ring")
	o.Seed, o.Workload, o.Deadline = seed(1), nil, 50*time.Millisecond
	r, _, err = Sim(o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Stop != string(sim.StopDeadline) || time.Duration(r.VirtualNS) > 50*time.Millisecond {
		t.Errorf("idle token ring: stop %q at %v, want %q by 50ms", r.Stop, time.Duration(r.VirtualNS), sim.StopDeadline)
	}
}

// Vector timestamps are recorded when asked, and not when not.
func TestSimVectorClocks(t *testing.T) {
	for _, tc := range []struct {
		toggle Toggle
		want   bool
	}{{Auto, true}, {On, true}, {Off, false}} {
		o := mutexOptions(t, "central")
		o.Seed, o.VectorClocks = seed(2), tc.toggle
		_, tr, err := Sim(o)
		if err != nil {
			t.Fatal(err)
		}
		has := false
		for _, e := range tr.Events {
			has = has || !e.VC.IsZero()
		}
		if has != tc.want {
			t.Errorf("VectorClocks %d: vector timestamps recorded %v, want %v", tc.toggle, has, tc.want)
		}
	}
}

// The user's bad settings are ErrInput errors that name the bad value.
func TestSimBadInput(t *testing.T) {
	clocks, err := Lookup("clocks")
	if err != nil {
		t.Fatal(err)
	}
	figure, err := clocks.Algorithm("lamport-figure")
	if err != nil {
		t.Fatal(err)
	}
	badFault := mutexOptions(t, "central")
	badFault.Faults = []string{"explode 1 at 5ms"}
	for name, o := range map[string]Options{
		"fault":      badFault,
		"node count": {Algo: figure, Nodes: 5},
	} {
		_, _, err := Sim(o)
		if !errors.Is(err, ErrInput) {
			t.Errorf("%s: error %v, want ErrInput", name, err)
			continue
		}
		if want := map[string]string{"fault": "explode", "node count": "with 5 nodes"}[name]; !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q does not name %q", name, err, want)
		}
	}
}

// Report.Failed counts only the properties the algorithm claims.
func TestReportFailed(t *testing.T) {
	r := Report{Checks: []Check{{Name: "safety", Status: "violated", Guaranteed: false}}}
	if r.Failed() {
		t.Error("a violation of a property not guaranteed fails the report")
	}
	r.Checks = append(r.Checks, Check{Name: "liveness", Status: "violated", Guaranteed: true})
	if !r.Failed() {
		t.Error("a violation of a guaranteed property does not fail the report")
	}
}
