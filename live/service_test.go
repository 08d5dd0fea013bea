package live_test

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/wire"
)

// num is an input and an output of the test algorithm: goroutine G's I-th
// input comes back as the output num{G, I}.
type num struct {
	G, I    int
	Started bool // the algorithm had started when it handled the input
}

func (num) Kind() string { return "num" }

// echo outputs every input it is given. It checks that no two of its
// handlers ever run at once, and counts the events it handled.
type echo struct {
	started bool
	inside  *atomic.Int32
	handled *atomic.Int64
	overlap *atomic.Bool
	yield   bool          // give up the thread inside each handler, to invite overlaps
	pause   time.Duration // and take this long
}

func (e *echo) enter() {
	if e.inside.Add(1) != 1 {
		e.overlap.Store(true)
	}
	if e.yield {
		runtime.Gosched()
	}
	time.Sleep(e.pause)
}

func (e *echo) exit() {
	e.handled.Add(1)
	e.inside.Add(-1)
}

func (e *echo) Start(proc.Env) {
	e.enter()
	defer e.exit()
	e.started = true
}
func (e *echo) Receive(proc.Env, proc.ID, proc.Message) {}
func (e *echo) Timeout(proc.Env, any)                   {}
func (e *echo) Input(env proc.Env, in proc.Input) {
	e.enter()
	defer e.exit()
	n := in.(num)
	n.Started = e.started
	env.Output(n)
}

// echoNode starts a one-node cluster; the returned function makes a new
// echo service on it.
func echoNode(t *testing.T, yield bool, pause time.Duration) (*live.Node, func(name string) (*live.Service, *echo)) {
	t.Helper()
	node := oneNode(t, live.Config{NewCodec: func(m []proc.Message) (live.Codec, error) { return wire.NewCodec(m) }})
	return node, func(name string) (*live.Service, *echo) {
		e := &echo{inside: new(atomic.Int32), handled: new(atomic.Int64), overlap: new(atomic.Bool), yield: yield, pause: pause}
		a := proc.Algorithm{Family: "test", Name: "echo", New: func(proc.ID, int) proc.Process { return e }}
		s, err := node.Service(name, a)
		if err != nil {
			t.Fatal(err)
		}
		return s, e
	}
}

// Goroutines give a service inputs at once. Some find it idle and handle
// their input themselves, others queue: still one handler at a time, and
// each goroutine's inputs are handled in the order it gave them.
func TestEventsOfOneGoroutineKeepTheirOrder(t *testing.T) {
	_, service := echoNode(t, true, 0)
	s, e := service("order")
	const goroutines, inputs = 4, 2000
	var mu sync.Mutex
	var got [goroutines][]int
	s.OnOutput(func(o proc.Output) {
		n := o.(num)
		mu.Lock()
		got[n.G] = append(got[n.G], n.I)
		mu.Unlock()
	})
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range inputs {
				if err := s.Input(num{G: g, I: i}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for e.handled.Load() < goroutines*inputs+1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if e.overlap.Load() {
		t.Fatal("two handlers ran at once")
	}
	mu.Lock()
	defer mu.Unlock()
	for g, seq := range got {
		if len(seq) != inputs {
			t.Fatalf("goroutine %d: %d of its %d inputs handled", g, len(seq), inputs)
		}
		for i, v := range seq {
			if v != i {
				t.Fatalf("goroutine %d: input %d handled in place %d", g, v, i)
			}
		}
	}
}

// An input given to an idle service is handled before Input returns, in
// the caller's goroutine: its output is already out.
func TestIdleServiceHandlesInputAtOnce(t *testing.T) {
	_, service := echoNode(t, false, 0)
	s, _ := service("idle")
	var last atomic.Int64
	last.Store(-1)
	s.OnOutput(func(o proc.Output) { last.Store(int64(o.(num).I)) })
	at := 0
	for i := range 1000 {
		if err := s.Input(num{I: i}); err != nil {
			t.Fatal(err)
		}
		if last.Load() == int64(i) {
			at++
		}
		time.Sleep(100 * time.Microsecond) // let the service go idle
	}
	if at < 500 {
		t.Errorf("the output came before Input returned for %d of 1000 inputs, want most", at)
	}
}

// However soon an input follows the service's creation, the algorithm
// has started when it handles it.
func TestNothingIsHandledBeforeStart(t *testing.T) {
	_, service := echoNode(t, false, 0)
	for i := range 200 {
		s, _ := service(fmt.Sprintf("start-%d", i))
		out := make(chan num, 1)
		s.OnOutput(func(o proc.Output) { out <- o.(num) })
		if err := s.Input(num{I: i}); err != nil {
			t.Fatal(err)
		}
		if n := <-out; !n.Started {
			t.Fatalf("service %d handled an input before it started", i)
		}
	}
}

// A hook that gives the service an input does not deadlock: the input is
// queued and handled after the event in progress.
func TestInputFromAHookIsQueued(t *testing.T) {
	_, service := echoNode(t, false, 0)
	s, _ := service("reentrant")
	got := make(chan int, 2)
	s.OnOutput(func(o proc.Output) {
		n := o.(num)
		got <- n.I
		if n.I == 1 {
			if err := s.Input(num{I: 2}); err != nil {
				t.Error(err)
			}
		}
	})
	if err := s.Input(num{I: 1}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []int{1, 2} {
		select {
		case i := <-got:
			if i != want {
				t.Fatalf("output %d, want %d", i, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no output %d", want)
		}
	}
}

// Once the node is closed, inputs fail and nothing more is handled, even
// inputs given while it was closing, and handled by their callers.
func TestClosedServiceHandlesNothing(t *testing.T) {
	node, service := echoNode(t, false, 100*time.Microsecond)
	s, e := service("closing")
	// The goroutine waits for the output of each input before it gives the
	// next, so the service is idle and the goroutine handles its inputs
	// itself.
	out := make(chan struct{}, 1)
	s.OnOutput(func(proc.Output) { out <- struct{}{} })
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			if err := s.Input(num{I: i}); err != nil {
				if !errors.Is(err, live.ErrClosed) {
					t.Errorf("Input: %v, want ErrClosed", err)
				}
				return
			}
			select {
			case <-out:
			case <-stop:
				return
			}
		}
	})
	time.Sleep(20 * time.Millisecond)
	if err := node.Close(); err != nil {
		t.Fatal(err)
	}
	handled := e.handled.Load()
	close(stop)
	wg.Wait()
	if err := s.Input(num{}); !errors.Is(err, live.ErrClosed) {
		t.Errorf("Input after Close: %v, want ErrClosed", err)
	}
	select {
	case <-s.Done():
	default:
		t.Error("Done is not closed after Close")
	}
	if now := e.handled.Load(); now != handled {
		t.Errorf("%d events handled after Close returned", now-handled)
	}
}

// Hooks and subscriptions get every output, in the order they were
// registered; a cancelled one gets no more, and Close closes the
// subscriptions left.
func TestOutputsReachHooksAndSubscriptions(t *testing.T) {
	node, service := echoNode(t, false, 0)
	s, _ := service("sinks")
	var order []string
	first := s.OnOutput(func(proc.Output) { order = append(order, "first") })
	s.OnOutput(func(proc.Output) { order = append(order, "second") })
	sub, cancelSub := s.Subscribe(4)
	kept, _ := s.Subscribe(4)
	for i := range 2 {
		if err := s.Input(num{I: i}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-kept: // the sinks before it have had the output
		case <-time.After(5 * time.Second):
			t.Fatalf("the subscription missed output %d", i)
		}
		if i == 0 {
			first()
			cancelSub()
			cancelSub() // a second cancel does nothing
		}
	}
	if got := fmt.Sprint(order); got != "[first second second]" {
		t.Errorf("hooks called %v, want [first second second]", got)
	}
	if o, ok := <-sub; !ok || o.(num).I != 0 {
		t.Errorf("cancelled subscription: %v %v, want output 0 and then closed", o, ok)
	}
	if _, ok := <-sub; ok {
		t.Error("cancelled subscription still open")
	}
	node.Close()
	if _, ok := <-kept; ok {
		t.Error("subscription open after Close")
	}
}

// A subscriber that does not keep up is cut off, rather than buffered
// without bound or left with a gap it cannot see: the output that finds
// its channel full closes it. Other subscribers go on.
func TestASlowSubscriberIsCutOff(t *testing.T) {
	_, service := echoNode(t, false, 0)
	s, _ := service("slow")
	slow, cancelSlow := s.Subscribe(2)
	fast, _ := s.Subscribe(8)
	for i := range 4 {
		if err := s.Input(num{I: i}); err != nil {
			t.Fatal(err)
		}
		select {
		case o := <-fast:
			if o.(num).I != i {
				t.Fatalf("the other subscriber got %v, want output %d", o, i)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("the other subscriber missed output %d", i)
		}
	}
	var got []int
	for o := range slow {
		got = append(got, o.(num).I)
	}
	if fmt.Sprint(got) != "[0 1]" {
		t.Errorf("the slow subscriber got %v and then its channel closed, want [0 1]", got)
	}
	cancelSlow() // after a cut, cancel does nothing (no second close)
}
