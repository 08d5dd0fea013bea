package pool

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestPoolRunsEveryTask(t *testing.T) {
	for _, size := range []int{0, 1, 4} {
		p, err := New(Config{Size: size})
		if err != nil {
			t.Fatal(err)
		}
		var n atomic.Int64
		var wg sync.WaitGroup
		for range 200 {
			wg.Add(1)
			if err := p.Go(func() { n.Add(1); wg.Done() }); err != nil {
				t.Fatal(err)
			}
		}
		wg.Wait()
		st := p.Stats()
		p.Close()
		if n.Load() != 200 || st.Handoffs+st.Spawned != 200 {
			t.Fatalf("size %d: ran %d, stats %+v", size, n.Load(), st)
		}
		if size == 0 && st.Handoffs != 0 {
			t.Fatalf("a pool of none handed off %d tasks", st.Handoffs)
		}
		if p.Go(func() {}) != ErrClosed {
			t.Fatal("Go on a closed pool")
		}
	}
}

// Close waits for the tasks in progress.
func TestPoolCloseWaits(t *testing.T) {
	p, _ := New(Config{Size: 2})
	var done atomic.Int64
	for range 5 {
		p.Go(func() { time.Sleep(5 * time.Millisecond); done.Add(1) })
	}
	p.Close()
	if done.Load() != 5 {
		t.Fatalf("Close returned with %d of 5 tasks done", done.Load())
	}
}

// A self-sized pool under bursts of 16 concurrent tasks: when a new
// worker is dear (CreateCost, 10 ms: far above the measured part of c₁,
// a difference of two scheduling delays that a loaded machine, or the
// race detector, swings by tenths of a millisecond either way) and idle
// ones cheap, it grows from 0 to
// about the burst; priced dear to keep (IdleCost), it stays at 0; and a
// bare pool follows its own measurement — size 0 when a ready goroutine
// saves nothing (c₁ ≤ 0, as it usually is in Go).
func TestPoolSizesItself(t *testing.T) {
	run := func(cfg Config) Stats {
		cfg.Auto, cfg.Every = true, 2*time.Millisecond
		p, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		deadline := time.Now().Add(2 * time.Second)
		for p.Stats().Resizes < 10 && time.Now().Before(deadline) {
			var wg sync.WaitGroup
			for range 16 {
				wg.Add(1)
				p.Go(func() { time.Sleep(200 * time.Microsecond); wg.Done() })
			}
			wg.Wait()
			time.Sleep(time.Millisecond)
		}
		return p.Stats()
	}
	cheap := run(Config{CreateCost: 1e7})
	if cheap.Resizes == 0 || cheap.Size < 8 || cheap.Size > 17 {
		t.Fatalf("dear to create, cheap to keep: %+v; want a size near the burst of 16", cheap)
	}
	dear := run(Config{CreateCost: 1e7, IdleCost: 1e13}) // 10,000 s of work per second
	if dear.Size != 0 {
		t.Fatalf("dear idle workers: %+v; want size 0", dear)
	}
	bare := run(Config{})
	if bare.C1 <= 0 && bare.Size != 0 {
		t.Fatalf("bare goroutines, c1 = %v ≤ 0: %+v; want size 0", bare.C1, bare)
	}
	t.Logf("bare goroutines: c1 = %.0fns, c2 = %.3gns per arrival, size %d", bare.C1, bare.C2, bare.Size)
}

func TestPoolConfig(t *testing.T) {
	for _, c := range []Config{{Size: -1}, {Max: -1}, {Max: MaxMax + 1}, {Every: -1}, {IdleCost: -1}, {CreateCost: -1}} {
		if _, err := New(c); err == nil {
			t.Errorf("New accepted %+v", c)
		}
	}
}
