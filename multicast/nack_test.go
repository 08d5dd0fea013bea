package multicast

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

// sendEnv is a stubEnv that keeps what the process sends.
type sendEnv struct {
	stubEnv
	sent []sentMsg
}

type sentMsg struct {
	to proc.ID
	m  proc.Message
}

func (e *sendEnv) Send(to proc.ID, m proc.Message) { e.sent = append(e.sent, sentMsg{to, m}) }

// take returns what was sent since the last call.
func (e *sendEnv) take() []sentMsg {
	s := e.sent
	e.sent = nil
	return s
}

// The sender's buffer keeps exactly what some receiver has not reported:
// STABLE reports and the Upto of NACKs trim it to the lowest watermark; a
// NACK for a trimmed number is answered with a SESSION naming the oldest
// number left, one for a kept number with a repair.
func TestNackTrimsWhatEveryReceiverHas(t *testing.T) {
	p := NewNack(NackConfig{})(0, 3).(*reliableNack)
	env := &sendEnv{stubEnv: stubEnv{self: 0, n: 3}}
	for i := range 100 {
		p.Input(env, Multicast{Group: "all", Body: fmt.Sprintf("m%d", i+1)})
	}
	env.take()
	b := p.buffer["all"]
	if b.first != 1 || len(b.bodies) != 100 {
		t.Fatalf("before any report: first %d, %d kept", b.first, len(b.bodies))
	}
	p.Receive(env, 1, nStable{Group: "all", Origin: 0, Upto: 50})
	if b.first != 1 {
		t.Fatalf("p1's report alone trimmed to %d: p2 has reported nothing", b.first)
	}
	p.Receive(env, 2, nNack{Group: "all", Origin: 0, Upto: 40, Missing: []uint64{41, 44}})
	if b.first != 41 || len(b.bodies) != 60 || b.bodies[0] != "m41" {
		t.Fatalf("after p1 at 50 and p2 at 40: first %d, %d kept, oldest %q", b.first, len(b.bodies), b.bodies[0])
	}
	if got := env.take(); len(got) != 2 || got[0].m != (nRepair{Group: "all", Origin: 0, Seq: 41, Body: "m41"}) || got[1].to != 2 {
		t.Fatalf("repairs %v", got)
	}
	// Reports that go back, come from outsiders or claim more than was
	// sent change nothing.
	p.Receive(env, 1, nStable{Group: "all", Origin: 0, Upto: 10})
	p.Receive(env, 0, nStable{Group: "all", Origin: 0, Upto: 99})
	p.Receive(env, 7, nStable{Group: "all", Origin: 0, Upto: 99})
	p.Receive(env, 1, nStable{Group: "nope", Origin: 0, Upto: 99})
	if b.first != 41 || b.has[1] != 50 {
		t.Fatalf("bad reports moved the buffer to %d (p1 at %d)", b.first, b.has[1])
	}
	p.Receive(env, 2, nStable{Group: "all", Origin: 0, Upto: 1 << 40})
	if b.first != 51 || b.has[2] != 100 {
		t.Fatalf("p2's report beyond the last number: first %d, p2 at %d", b.first, b.has[2])
	}
	p.Receive(env, 1, nNack{Group: "all", Origin: 0, Upto: 50, Missing: []uint64{3, 51}})
	got := env.take()
	want := []sentMsg{
		{1, nRepair{Group: "all", Origin: 0, Seq: 51, Body: "m51"}},
		{1, nSession{Group: "all", Origin: 0, Last: 100, First: 51}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("answer to a NACK for a trimmed and a kept number: %v, want %v", got, want)
	}
	p.Receive(env, 1, nStable{Group: "all", Origin: 0, Upto: 100})
	if len(b.bodies) != 0 || b.first != 101 {
		t.Fatalf("everyone has everything: %d kept, first %d", len(b.bodies), b.first)
	}
}

// A receiver reports after every StableEvery deliveries from a sender, and
// not before; a NACK carries its watermark too.
func TestNackReceiverReportsEveryStableEvery(t *testing.T) {
	p := NewNack(NackConfig{StableEvery: 4})(1, 3).(*reliableNack)
	env := &sendEnv{stubEnv: stubEnv{self: 1, n: 3}}
	for seq := uint64(1); seq <= 9; seq++ {
		if seq == 6 {
			continue // lost
		}
		p.Receive(env, 0, nData{Group: "all", Origin: 0, Seq: seq, Body: "x"})
	}
	if got := env.take(); !reflect.DeepEqual(got, []sentMsg{{0, nStable{Group: "all", Origin: 0, Upto: 4}}}) {
		t.Fatalf("after 1..5 and 7..9: sent %v, want one report at 4", got)
	}
	p.Timeout(env, nackGapTick{source{"all", 0}})
	if got := env.take(); !reflect.DeepEqual(got, []sentMsg{{0, nNack{Group: "all", Origin: 0, Missing: []uint64{6}, Upto: 5}}}) {
		t.Fatalf("NACK %v", got)
	}
	p.Receive(env, 0, nRepair{Group: "all", Origin: 0, Seq: 6, Body: "x"})
	if got := env.take(); !reflect.DeepEqual(got, []sentMsg{{0, nStable{Group: "all", Origin: 0, Upto: 9}}}) {
		t.Fatalf("after the repair: %v, want a report at 9 (4 past the NACK's 5)", got)
	}
}

// nackPeak wraps reliable-nack processes to record the largest
// retransmission buffer any of them held, over every group.
func nackPeak(cfg NackConfig, peak *int) func(proc.ID, int) proc.Process {
	mk := NewNack(cfg)
	return func(id proc.ID, n int) proc.Process {
		return &measuredNack{mk(id, n).(*reliableNack), peak}
	}
}

type measuredNack struct {
	*reliableNack
	peak *int
}

func (m *measuredNack) note() {
	for _, b := range m.buffer {
		*m.peak = max(*m.peak, len(b.bodies))
	}
}

func (m *measuredNack) Input(env proc.Env, in proc.Input) { m.reliableNack.Input(env, in); m.note() }
func (m *measuredNack) Receive(env proc.Env, from proc.ID, msg proc.Message) {
	m.reliableNack.Receive(env, from, msg)
	m.note()
}
func (m *measuredNack) Timeout(env proc.Env, tag any) { m.reliableNack.Timeout(env, tag); m.note() }

// guaranteed are reliable-nack's properties in a run without crashes:
// every one but the orders across senders.
var nackGuaranteed = []string{"integrity", "no-duplicates", "mc-integrity", "mc-validity", "mc-agreement", "fifo-order"}

func holdAll(t *testing.T, r simRun, tr *trace.Trace, props []string) {
	t.Helper()
	res, err := check.Run(tr, props...)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range res {
		if !v.OK() {
			t.Fatalf("%s: %s", describe(r), v.Counterexample(tr))
		}
	}
}

func sendsOf(tr *trace.Trace, kind string) int { return tr.Count(trace.Send, kind) }

// A sender's buffer stays small in a long run over a lossy, duplicating,
// reordering network — 400 multicasts per process, each trimmed once
// every receiver reports it — while every property holds.
func TestNackBufferStaysBoundedInALongLossyRun(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		peak := 0
		r := simRun{Algo: "reliable-nack", Nodes: 4, Seed: seed, New: nackPeak(DefaultNack, &peak),
			Network: sim.Network{Latency: sim.Uniform{Min: 500 * time.Microsecond, Max: 3 * time.Millisecond},
				Loss: 0.1, Duplicate: 0.05, Reorder: 0.2},
			Load: &load{Count: 400, Think: 400 * time.Microsecond, Groups: []string{"all", "all", "g1", "g2"}}}
		tr := r.run(t)
		holdAll(t, r, tr, nackGuaranteed)
		if stable := sendsOf(tr, "stable"); stable == 0 {
			t.Errorf("seed %d: no STABLE report in 1600 multicasts", seed)
		}
		// The buffer holds StableEvery messages, those in flight and those
		// some receiver still misses: a few dozen, not the ~200 a sender
		// sends to "all".
		if peak == 0 || peak > 100 {
			t.Errorf("seed %d: largest buffer %d messages, want 1..100", seed, peak)
		}
		t.Logf("seed %d: largest buffer %d, %d STABLE reports, %d NACKs", seed, peak, sendsOf(tr, "stable"), sendsOf(tr, "nack"))
	}
}

// With a report after every delivery the buffer is trimmed as eagerly as
// it can be; over every condition of the family's sweep (loss and
// duplication, reordering, a crash mid-multicast) no message a receiver
// still needs ever leaves it: the properties hold as with the default.
func TestNackEagerTrimmingSweep(t *testing.T) {
	a := algorithm(t, "reliable-nack")
	for _, c := range conditions {
		if !c.within(a) {
			continue
		}
		props := []string{"mc-integrity", "mc-validity", "fifo-order"}
		if c.name != "crash" {
			props = append(props, "mc-agreement")
		}
		reports := 0
		for seed := uint64(1); seed <= 2*sweepSeeds(); seed++ {
			r := sweepRun(a, c, seed)
			r.New = NewNack(NackConfig{StableEvery: 1})
			tr := r.run(t)
			holdAll(t, r, tr, props)
			reports += sendsOf(tr, "stable")
		}
		if reports == 0 {
			t.Errorf("%s: no STABLE report", c.name)
		}
	}
}

// A member that crashes for good stops reporting; MaxBuffer then bounds
// the buffer, and the correct members still deliver everything.
func TestNackCrashedMemberCannotPinTheBuffer(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		peak := 0
		r := simRun{Algo: "reliable-nack", Nodes: 4, Seed: seed, New: nackPeak(NackConfig{MaxBuffer: 64}, &peak),
			Network: sim.Network{Latency: sim.Uniform{Min: 500 * time.Microsecond, Max: 3 * time.Millisecond}, Loss: 0.05},
			Faults:  []sim.Fault{{Kind: sim.Crash, Node: 3, At: 20 * time.Millisecond}},
			Load:    &load{Count: 300, Think: 400 * time.Microsecond, Groups: []string{"all"}}}
		tr := r.run(t)
		holdAll(t, r, tr, []string{"mc-integrity", "mc-validity", "fifo-order"})
		if peak != 64 {
			t.Errorf("seed %d: largest buffer %d, want MaxBuffer (64) reached and kept", seed, peak)
		}
	}
}

// A member that restarts with fresh state (as a live node does) asks for
// numbers the sender has dropped; the sender's SESSION names the oldest it
// still has, and the member goes on from there instead of holding back
// the sender's messages for ever.
func TestNackRestartedMemberJoinsMidStream(t *testing.T) {
	var procs [3]*reliableNack
	mk := NewNack(NackConfig{StableEvery: 8})
	var script sim.Script
	for i := range 300 {
		script = append(script, sim.TimedInput{At: time.Duration(i+1) * 300 * time.Microsecond, Node: 0, Input: Multicast{Body: fmt.Sprint(i + 1)}})
	}
	r := simRun{Algo: "reliable-nack", Nodes: 3, Seed: 1, Inputs: script,
		Network: sim.Network{Latency: sim.Uniform{Min: 500 * time.Microsecond, Max: 3 * time.Millisecond}, Loss: 0.05},
		Faults: []sim.Fault{{Kind: sim.Crash, Node: 2, At: 20 * time.Millisecond},
			{Kind: sim.Recover, Node: 2, At: 40 * time.Millisecond}},
		New: func(id proc.ID, n int) proc.Process {
			p := mk(id, n).(*reliableNack)
			procs[id] = p
			return p
		}}
	tr := r.run(t)
	var after []string // p2's deliveries after it restarted
	restarted := false
	for _, e := range tr.Events {
		if e.Node == 2 && e.Kind == trace.Recover {
			restarted = true
		}
		if restarted && e.Node == 2 && e.Kind == trace.Output && e.Type == "deliver" {
			after = append(after, e.Label)
		}
	}
	if len(after) == 0 || after[len(after)-1] != "deliver p0#300" {
		t.Fatalf("after its restart p2 delivered %d messages, the last %v; want up to p0#300", len(after), after[max(0, len(after)-1):])
	}
	var first uint64
	fmt.Sscanf(after[0], "deliver p0#%d", &first)
	if first <= 1 || len(after) != int(300-first+1) {
		t.Errorf("p2 resumed at p0#%d and delivered %d messages: want a gap-free tail", first, len(after))
	}
	if s := procs[2].sources[source{"all", 0}]; procs[2].held != 0 || s.next != 301 {
		t.Errorf("p2 holds %d messages back, next %d", procs[2].held, s.next)
	}
	if b := procs[0].buffer["all"]; len(b.bodies) > 16 {
		t.Errorf("p0 keeps %d messages after everyone has everything", len(b.bodies))
	}
}
