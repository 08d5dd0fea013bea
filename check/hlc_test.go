package check_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/check/checktest"
	"github.com/cohort-go/cohort/clock"
	"github.com/cohort-go/cohort/logical"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

// The builder's local clocks read the true time: 1 ms per event, event i
// at (i+1) ms.
func hlc(l time.Duration, c uint32) logical.HLCTime { return logical.HLCTime{L: l, C: c} }

const ms = time.Millisecond

// exchange is p0 sending to p1 and p1 answering, stamped as hybrid clocks
// stamp them: p0's clock is 5 ms ahead of true time, p1's is right.
// tamper may change a stamp before it is recorded (by the index of the
// event it stamps).
func exchange(tamper func(event int, ts *logical.HLCTime)) (*trace.Trace, map[string]int) {
	b := checktest.New(2)
	idx := map[string]int{}
	stamp := func(name string, event int, node int32, ts logical.HLCTime) {
		if tamper != nil {
			tamper(event, &ts)
		}
		idx[name] = event
		idx[name+"-out"] = b.Output(node, ts)
	}
	s1 := b.Send(0, 1, "msg") // #0 at 1ms; p0 reads 6ms
	b.Trace.Events[s1].Local = int64(6 * ms)
	stamp("send1", s1, 0, hlc(6*ms, 0)) // #1
	r1 := b.Recv(s1)                    // #2 at 3ms: l := 6ms from the message
	stamp("recv1", r1, 1, hlc(6*ms, 1)) // #3
	s2 := b.Send(1, 0, "msg")           // #4 at 5ms: pt 5ms < l
	stamp("send2", s2, 1, hlc(6*ms, 2)) // #5
	r2 := b.Recv(s2)                    // #6 at 7ms; p0 reads 12ms
	b.Trace.Events[r2].Local = int64(12 * ms)
	stamp("recv2", r2, 0, hlc(12*ms, 0)) // #7
	return &b.Trace, idx
}

func TestHLCChecker(t *testing.T) {
	runFixtures(t, "hlc", []fixture{
		{name: "an exchange between a fast and a right clock", build: func() (*trace.Trace, []int) {
			tr, _ := exchange(nil)
			return tr, nil
		}},
		{name: "unstamped local events and a second stamp of one event", build: func() (*trace.Trace, []int) {
			b := checktest.New(2)
			b.Local(0, trace.Timer)
			s := b.Send(0, 1, "msg")  // at 2ms
			b.Output(0, hlc(7*ms, 0)) // superseded: the second stamp of the send counts
			b.Output(0, hlc(2*ms, 0))
			b.Local(1, trace.Timer)
			b.Recv(s) // at 6ms
			b.Output(1, hlc(6*ms, 0))
			return &b.Trace, nil
		}},
		{name: "a receive stamped before its send", detail: "m1: sent at (l,c)=(6ms,0) by p0, received at (l,c)=(5ms,0) by p1", build: func() (*trace.Trace, []int) {
			tr, idx := exchange(func(event int, ts *logical.HLCTime) {
				if event == 2 {
					*ts = hlc(5*ms, 0) // p1 took its own physical time and ignored l_m
				}
			})
			return tr, []int{idx["send1"], idx["send1-out"], idx["recv1"], idx["recv1-out"]}
		}},
		{name: "a counter that does not rise", detail: "p1: (l,c)=(6ms,1) at #2 (recv m1), then (l,c)=(6ms,1) at #4 (send m2)", build: func() (*trace.Trace, []int) {
			tr, idx := exchange(func(event int, ts *logical.HLCTime) {
				if event == 4 {
					ts.C = 1
				}
			})
			// The receive of m2 at p0 still rises above (6ms,1): one finding.
			return tr, []int{idx["recv1"], idx["recv1-out"], idx["send2"], idx["send2-out"]}
		}},
		{name: "l ahead of every clock in the causal past", detail: "#2 (p1 recv m1): l=9ms is ahead of every physical clock in its causal past (the latest reads 6ms, at #0)", build: func() (*trace.Trace, []int) {
			tr, idx := exchange(func(event int, ts *logical.HLCTime) {
				switch event {
				case 2:
					*ts = hlc(9*ms, 0)
				case 4:
					*ts = hlc(9*ms, 1)
				}
			})
			// p1's send of m2 is ahead too, later: the earliest finding is cited.
			return tr, []int{idx["send1"], idx["recv1"], idx["recv1-out"]}
		}},
		{name: "a stamp with nothing to stamp", detail: "#0: p0 stamps (1ms,0) with no send or receive before it", build: func() (*trace.Trace, []int) {
			b := checktest.New(1)
			o := b.Output(0, hlc(ms, 0))
			return &b.Trace, []int{o}
		}},
	})
}

// The clock of a reading never goes back, except across a crash.
func TestMonotonicClockChecker(t *testing.T) {
	reading := func(c time.Duration) clock.Reading { return clock.Reading{Clock: c, Synced: true} }
	runFixtures(t, "monotonic-clock", []fixture{
		{name: "readings that rise or stand still", build: func() (*trace.Trace, []int) {
			b := checktest.New(2)
			b.Output(0, reading(5*ms))
			b.Output(1, reading(1*ms))
			b.Output(0, reading(5*ms))
			b.Output(0, reading(9*ms))
			b.Output(1, reading(2*ms))
			return &b.Trace, nil
		}},
		{name: "a fresh clock after a recovery", build: func() (*trace.Trace, []int) {
			b := checktest.New(1)
			b.Output(0, reading(50*ms))
			b.Local(0, trace.Crash)
			b.Local(0, trace.Recover)
			b.Output(0, reading(3*ms))
			return &b.Trace, nil
		}},
		{name: "a clock set back", detail: "p1: the clock read 9ms at #1, then 7ms at #3: it went back 2ms", build: func() (*trace.Trace, []int) {
			b := checktest.New(2)
			b.Output(0, reading(1*ms))
			a := b.Output(1, reading(9*ms))
			b.Output(0, reading(2*ms))
			c := b.Output(1, reading(7*ms))
			return &b.Trace, []int{a, c}
		}},
	})
}

// stampPhysical is a broken hybrid clock: it stamps events with its
// physical time alone, (pt, 0), ignoring the timestamps it receives.
type stampPhysical struct{ ticks int }

func (p *stampPhysical) Start(env proc.Env) { env.SetTimer(ms, nil) }
func (p *stampPhysical) Timeout(env proc.Env, _ any) {
	if p.ticks++; p.ticks > 20 {
		return
	}
	to := proc.ID((int(env.Self()) + 1) % env.N())
	ts := logical.HLCTime{L: env.Now()}
	env.Send(to, clock.HLCMsg{Name: "m", TS: ts})
	env.Output(ts)
	env.SetTimer(ms, nil)
}
func (p *stampPhysical) Receive(env proc.Env, _ proc.ID, _ proc.Message) {
	env.Output(logical.HLCTime{L: env.Now()})
}
func (p *stampPhysical) Input(proc.Env, proc.Input) {}

// stepBack runs Cristian's algorithm with clocks that are set back when
// they are ahead.
func stepBack() func(proc.ID, int) proc.Process {
	cfg := clock.DefaultCristian
	cfg.Discipline.StepBack = true
	f, err := clock.NewTimeSync(cfg)
	if err != nil {
		panic(err)
	}
	return f
}

// Both checkers catch real violations in simulated runs: physical clocks
// used as hybrid timestamps break the clock condition when a fast clock
// sends to a slow one, and a client of Cristian's algorithm that sets its
// fast clock back makes time run backwards; the real algorithms pass.
func TestClockCheckersCatchRealRuns(t *testing.T) {
	skewed := func(id proc.ID) sim.HWClock {
		return sim.HWClock{Offset: time.Duration(id) * 3 * ms, Drift: 1e-4 * float64(id)}
	}
	hybrid, _ := clock.NewHLCDemo(clock.DefaultHLC)
	cristian, _ := clock.NewTimeSync(clock.DefaultCristian)
	cases := []struct {
		name, checker string
		cfg           sim.Config
		want          string // "" if the property must hold
	}{
		{"physical timestamps", "hlc", sim.Config{Nodes: 3, New: func(proc.ID, int) proc.Process { return &stampPhysical{} }}, "received at (l,c)="},
		{"hybrid timestamps", "hlc", sim.Config{Nodes: 3, New: hybrid}, ""},
		{"cristian stepping back", "monotonic-clock", sim.Config{Nodes: 3, New: stepBack(), Deadline: time.Second}, "it went back"},
		{"cristian slewing", "monotonic-clock", sim.Config{Nodes: 3, New: cristian, Deadline: time.Second}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := &trace.Recorder{Trace: trace.Trace{Header: trace.Header{Nodes: c.cfg.Nodes}}}
			cfg := c.cfg
			cfg.Seed, cfg.Clocks, cfg.Trace = 4, skewed, rec
			s, err := sim.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Run(); err != nil {
				t.Fatal(err)
			}
			res, err := check.Run(&rec.Trace, c.checker)
			if err != nil {
				t.Fatal(err)
			}
			r := res[0]
			if c.want == "" {
				if !r.OK() {
					t.Fatalf("the real algorithm fails: %s", r.Counterexample(&rec.Trace))
				}
				return
			}
			if r.Status != check.Violated || !strings.Contains(r.Detail, c.want) || len(r.Events) == 0 {
				t.Fatalf("got %s, want a violation saying %q", r, c.want)
			}
			t.Logf("%s", r.Counterexample(&rec.Trace))
		})
	}
}
