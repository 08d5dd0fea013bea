package sim

import (
	"errors"
	"os"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/trace"
)

// relay sends its neighbour a message on every message, for ever.
type relay struct{}

func (relay) Start(env proc.Env) { env.Send((env.Self()+1)%proc.ID(env.N()), ping{}) }
func (relay) Receive(env proc.Env, _ proc.ID, _ proc.Message) {
	env.Send((env.Self()+1)%proc.ID(env.N()), ping{})
}
func (relay) Timeout(proc.Env, any)      {}
func (relay) Input(proc.Env, proc.Input) {}

// TestRunStopsAtItsMemoryBudget: a run whose trace grows without end stops
// with ErrTooBig once its live heap passes the budget, instead of
// exhausting the machine.
func TestRunStopsAtItsMemoryBudget(t *testing.T) {
	rec := &trace.Recorder{}
	s, err := New(Config{Nodes: 4, Seed: 1, New: func(proc.ID, int) proc.Process { return relay{} },
		Trace: rec, MemoryBudget: 32 << 20, Deadline: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Run()
	if !errors.Is(err, ErrTooBig) {
		t.Fatalf("a run with an endless trace: %v, want ErrTooBig", err)
	}
	t.Log(err)
}

// TestCheckMemory: a run whose processes' state grows with n is refused
// at a size that cannot fit, naming it; a small one is not estimated.
func TestCheckMemory(t *testing.T) {
	vector := func(_ proc.ID, n int) proc.Process { return &vectorProc{v: make([]uint64, n)} }
	if err := CheckMemory(budgetFrom, vector); err != nil {
		t.Fatalf("%d processes: %v", budgetFrom, err)
	}
	err := CheckMemory(10_000_000, vector) // 8·10¹⁴ bytes
	if !errors.Is(err, ErrTooBig) {
		t.Fatalf("10⁷ processes with 10⁷ clocks each: %v, want ErrTooBig", err)
	}
	t.Log(err)
	if b, ok := EstimateBytes(1_000_000, vector); !ok || b < 8e12 || b > 1.2e13 {
		t.Errorf("estimate for 10⁶ vectors of 10⁶: %.3g bytes, want about 8e12", b)
	}
}

type vectorProc struct {
	relay
	v []uint64
}

// MakeHuge is make with a hint: n zero values, whatever the size.
func TestMakeHugeIsMake(t *testing.T) {
	for _, n := range []int{0, 1, 3 << 20} {
		s := MakeHuge[int32](n)
		if len(s) != n || cap(s) != n {
			t.Fatalf("MakeHuge(%d): len %d, cap %d", n, len(s), cap(s))
		}
		for i, v := range s {
			if v != 0 {
				t.Fatalf("MakeHuge(%d)[%d] = %d, want 0", n, i, v)
			}
		}
	}
}

// TestNoGarbageChangesNoResult: a run told that its processes make no
// garbage has the trace of the same run without, and leaves the
// collector's setting as it found it.
func TestNoGarbageChangesNoResult(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC is set: NoGarbage does nothing")
	}
	run := func(noGarbage bool) string {
		h := trace.NewHasher(trace.Header{Nodes: 50})
		s, err := New(Config{Nodes: 50, Seed: 3, New: func(proc.ID, int) proc.Process { return relay{} },
			Trace: h, MaxEvents: 5000, NoGarbage: noGarbage, MemoryBudget: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Run(); err != nil {
			t.Fatal(err)
		}
		return h.Sum()
	}
	if a, b := run(false), run(true); a != b {
		t.Errorf("trace with NoGarbage %s, without %s", b, a)
	}
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("after a NoGarbage run the collector's setting is %d, want 100 as before", p)
	}
}

// TestGCPercentDuringTheRun: a run given a collector's target runs with
// it, has the trace of the same run without, and leaves the collector's
// setting as it found it.
func TestGCPercentDuringTheRun(t *testing.T) {
	t.Setenv("GOGC", "") // the program's own setting, whatever the environment
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	run := func(percent int) (hash string, during int) {
		h := trace.NewHasher(trace.Header{Nodes: 50})
		s, err := New(Config{Nodes: 50, Seed: 3, New: func(proc.ID, int) proc.Process { return relay{} },
			Trace: h, MaxEvents: 5000, GCPercent: percent, MemoryBudget: 1 << 30,
			Until: func(*Sim) bool {
				during = debug.SetGCPercent(-1)
				debug.SetGCPercent(during)
				return false
			}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Run(); err != nil {
			t.Fatal(err)
		}
		return h.Sum(), during
	}
	a, during := run(0)
	if during != 100 {
		t.Errorf("without GCPercent the collector's setting during the run is %d, want the program's 100", during)
	}
	b, during := run(250)
	if a != b {
		t.Errorf("trace with GCPercent %s, without %s", b, a)
	}
	if during != 250 {
		t.Errorf("with GCPercent 250 the collector's setting during the run is %d", during)
	}
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("after the run the collector's setting is %d, want 100 as before", p)
	}
	if _, err := New(Config{Nodes: 2, GCPercent: -1}); err == nil || !strings.Contains(err.Error(), "GCPercent = -1") {
		t.Errorf("GCPercent -1: error %v, want one naming it", err)
	}
}
