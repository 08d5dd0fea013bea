package live_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/proc"
)

// fired is the output of timed: a timer that went off, and how long after
// it was set.
type fired struct {
	Tag   string
	After time.Duration
	Want  time.Duration
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
	env.Output(fired{Tag: tag.(string), After: env.Now() - s[0], Want: s[1]})
	if tag == "soon" {
		p.after(env, "chained", time.Millisecond)
	}
}

// TestTimersShareOneClock: a service's timers, which share one runtime
// timer, go off in the order they are due (those due together in the
// order they were set), never early, and a cancelled one never.
func TestTimersShareOneClock(t *testing.T) {
	nw, err := transport.NewInProc(1, transport.InProcConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ep, _ := nw.Endpoint(0)
	node, err := live.NewNode(live.Config{Self: 0, N: 1, Transport: ep})
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	defer node.Close()
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
	deadline := time.After(10 * time.Second)
	for len(got) < len(want) {
		select {
		case o := <-outs:
			f := o.(fired)
			if f.After < f.Want {
				t.Errorf("timer %s went off %v after it was set, before its %v", f.Tag, f.After, f.Want)
			}
			got = append(got, f.Tag)
		case <-deadline:
			t.Fatalf("after 10 s the timers that went off are %v, want %v", got, want)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the timers went off in the order %v, want %v", got, want)
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
