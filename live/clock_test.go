package live_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/live/transport"

	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/proc"
)

// fired is the output of timed: a timer that went off, and how long after
// it was set.
type fired struct {
	Tag   string
	After time.Duration
	Want  time.Duration
	Due   time.Duration // when it was due, on the service's clock
}

func (fired) Kind() string { return "fired" }

// timed sets, on an input, 40 timers due at once (30 ms), one sooner
// (10 ms) whose handler sets one more (1 ms), and one (20 ms) it cancels
// at once; it outputs each timer that goes off.
type timed struct{ set map[string][2]time.Duration }

func (p *timed) Start(proc.Env)                          {}
func (p *timed) Receive(proc.Env, proc.ID, proc.Message) {}
func (p *timed) Input(env proc.Env, _ proc.Input) {
	for i := range 40 {
		p.after(env, fmt.Sprint(i), 30*time.Millisecond)
	}
	p.after(env, "soon", 10*time.Millisecond)
	env.CancelTimer(p.after(env, "cancelled", 20*time.Millisecond))
}
func (p *timed) after(env proc.Env, tag string, d time.Duration) proc.TimerID {
	p.set[tag] = [2]time.Duration{env.Now(), d}
	return env.SetTimer(d, tag)
}
func (p *timed) Timeout(env proc.Env, tag any) {
	s := p.set[tag.(string)]
	env.Output(fired{Tag: tag.(string), After: env.Now() - s[0], Want: s[1], Due: s[0] + s[1]})
	if tag == "soon" {
		p.after(env, "chained", time.Millisecond)
	}
}

// TestTimersShareOneClock: a service's timers, which share one runtime
// timer, go off in the order they are due, never early, and a cancelled
// one never. (On a loaded machine "soon" may go off after the 40 are
// due; then "chained", set by its handler, comes after them.)
func TestTimersShareOneClock(t *testing.T) {
	node := oneNode(t, live.Config{})
	s, err := node.Service("timed", proc.Algorithm{Family: "test", Name: "timed",
		New: func(proc.ID, int) proc.Process { return &timed{set: map[string][2]time.Duration{}} }})
	if err != nil {
		t.Fatal(err)
	}
	outs, cancel := s.Subscribe(64)
	defer cancel()
	if err := s.Input(num{I: 1}); err != nil {
		t.Fatal(err)
	}
	want := []string{"soon", "chained"}
	for i := range 40 {
		want = append(want, fmt.Sprint(i))
	}
	var got []string
	var due []time.Duration
	deadline := time.After(10 * time.Second)
	for len(got) < len(want) {
		select {
		case o := <-outs:
			f := o.(fired)
			if f.After < f.Want {
				t.Errorf("timer %s went off %v after it was set, before its %v", f.Tag, f.After, f.Want)
			}
			got, due = append(got, f.Tag), append(due, f.Due)
		case <-deadline:
			t.Fatalf("after 10 s the timers that went off are %v, want %v", got, want)
		}
	}
	if !slices.IsSorted(due) || !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		t.Fatalf("the timers went off in the order %v, due at %v; want %v, in the order they are due", got, due, want)
	}
	// The cancelled one (due at 20 ms, long past) never goes off; a
	// service that has fired or cancelled all its timers has none set.
	if err := s.Read(func(proc.Process) {}); err != nil {
		t.Fatal(err)
	}
	select {
	case o := <-outs:
		t.Fatalf("%v went off after the others", o)
	default:
	}
}

// gated outputs its inputs and timers in the order it handles them; an
// input with I < 0 blocks its handler until gate is closed, then sets a
// 1 ms timer and keeps the handler busy until the timer is well past due.
// The timer is set only once the test has queued its inputs, so that it
// cannot come due before they wait (under load the test's goroutine may
// lag by more than a millisecond).
type gated struct {
	set     chan time.Time
	gate    chan struct{}
	handled []int
}

func (g *gated) Start(proc.Env)                          {}
func (g *gated) Receive(proc.Env, proc.ID, proc.Message) {}
func (g *gated) Input(env proc.Env, in proc.Input) {
	n := in.(num).I
	env.Output(num{I: n})
	if n < 0 {
		g.set <- time.Now()
		<-g.gate
		set := time.Now()
		env.SetTimer(time.Millisecond, "timer")
		for time.Since(set) < 5*time.Millisecond { // the timer is due
			time.Sleep(time.Millisecond)
		}
	}
}
func (g *gated) Timeout(env proc.Env, _ any) { env.Output(num{I: 0}) }

// TestTimerGoesOffBehindTheQueue: a timer that comes due while the
// service is busy goes off after the events that were waiting in its
// inbox, as a timer's event would have joined the inbox behind them.
func TestTimerGoesOffBehindTheQueue(t *testing.T) {
	node := oneNode(t, live.Config{})
	g := &gated{set: make(chan time.Time, 1), gate: make(chan struct{})}
	s, err := node.Service("gated", proc.Algorithm{Family: "test", Name: "gated",
		New: func(proc.ID, int) proc.Process { return g }})
	if err != nil {
		t.Fatal(err)
	}
	outs, cancel := s.Subscribe(64)
	defer cancel()
	go s.Input(num{I: -1})
	select {
	case <-g.set:
	case <-time.After(10 * time.Second):
		t.Fatal("the first input was never handled")
	}
	for i := 1; i <= 9; i++ { // queued behind the blocked handler
		if err := s.Input(num{I: i}); err != nil {
			t.Fatal(err)
		}
	}
	close(g.gate) // the handler sets its timer and stays busy until it is due
	var got []int
	for len(got) < 11 {
		select {
		case o := <-outs:
			got = append(got, o.(num).I)
		case <-time.After(10 * time.Second):
			t.Fatalf("handled %v", got)
		}
	}
	if want := []int{-1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0}; !slices.Equal(got, want) {
		t.Fatalf("handled %v, want %v (the timer, 0, after the inputs that waited)", got, want)
	}
}

// rated sets one timer of d on an input and outputs, when it goes off,
// how far the service's clock moved meanwhile.
type rated struct {
	d   time.Duration
	set time.Duration
}

func (p *rated) Start(proc.Env)                          {}
func (p *rated) Receive(proc.Env, proc.ID, proc.Message) {}
func (p *rated) Input(env proc.Env, _ proc.Input)        { p.set = env.Now(); env.SetTimer(p.d, "t") }
func (p *rated) Timeout(env proc.Env, _ any) {
	env.Output(fired{Tag: "t", After: env.Now() - p.set, Want: p.d})
}

// TestClockRate: a node whose clock runs four times as fast (injected
// drift) reads four seconds of it in about one of real time, and its
// timers go off by its clock: one of 2 s of it after about 0.5 s. A rate
// that is not a number, negative or absurd is refused, naming it.
func TestClockRate(t *testing.T) {
	node := oneNode(t, live.Config{ClockRate: 4})
	s, err := node.Service("rated", proc.Algorithm{Family: "test", Name: "rated",
		New: func(proc.ID, int) proc.Process { return &rated{d: 2 * time.Second} }})
	if err != nil {
		t.Fatal(err)
	}
	outs, cancel := s.Subscribe(1)
	defer cancel()
	start := time.Now()
	if err := s.Input(num{I: 1}); err != nil {
		t.Fatal(err)
	}
	select {
	case o := <-outs:
		f, real := o.(fired), time.Since(start)
		if f.After < f.Want {
			t.Errorf("the timer of %v went off after %v of the node's clock", f.Want, f.After)
		}
		if real >= f.Want {
			t.Errorf("the timer of %v of a clock four times as fast took %v of real time", f.Want, real)
		}
		t.Logf("a timer of %v on a clock at rate 4: %v of its clock, %v of real time", f.Want, f.After, real)
	case <-time.After(10 * time.Second):
		t.Fatal("the timer never went off")
	}
	for _, bad := range []float64{-1, 1000, math.NaN()} {
		nw, _ := transport.NewInProc(1, transport.InProcConfig{})
		tr, _ := nw.Endpoint(0)
		if _, err := live.NewNode(live.Config{N: 1, Transport: tr, ClockRate: bad}); err == nil || !strings.Contains(err.Error(), fmt.Sprint(bad)) {
			t.Errorf("clock rate %v: %v, want an error naming it", bad, err)
		}
	}
}
