package backoff

import (
	"testing"
	"time"
)

// The waits double from the first up to Max, each shortened by at most a
// quarter; Reset starts them over; one seed and operation replay the
// same waits.
func TestWaitsDoubleUpToMaxWithJitter(t *testing.T) {
	const first = 300 * time.Millisecond
	b, again := New(first, 7, 1), New(first, 7, 1)
	other := New(first, 7, 2)
	ceiling, differ := first, false
	for i := range 12 {
		w := b.Next()
		if w <= ceiling-ceiling/4 || w > ceiling {
			t.Fatalf("wait %d: %v, want in (%v, %v]", i, w, ceiling-ceiling/4, ceiling)
		}
		if a := again.Next(); a != w {
			t.Fatalf("wait %d: %v, then %v with the same seed and operation", i, w, a)
		}
		differ = differ || other.Next() != w
		ceiling = min(2*ceiling, Max)
	}
	if !differ {
		t.Error("another operation drew the same waits: no jitter between operations")
	}
	b.Reset()
	if w := b.Next(); w > first {
		t.Errorf("after Reset: %v, want at most the first wait %v", w, first)
	}
	long := New(8*time.Second, 1, 1)
	for range 3 {
		if w := long.Next(); w > 8*time.Second || w <= 6*time.Second {
			t.Errorf("a first wait above Max: %v, want it kept, less the jitter", w)
		}
	}
}

// NewUpTo's waits double up to its limit rather than Max, and never
// below the first wait.
func TestNewUpToBoundsTheWaitsByItsLimit(t *testing.T) {
	b := NewUpTo(10*time.Millisecond, 40*time.Millisecond, 3, 4)
	var longest time.Duration
	for range 10 {
		longest = max(longest, b.Next())
	}
	if longest > 40*time.Millisecond || longest <= 30*time.Millisecond {
		t.Fatalf("longest wait %v, want in (30ms, 40ms]: the limit, less the jitter", longest)
	}
	short := NewUpTo(time.Second, time.Millisecond, 3, 4)
	for range 3 {
		if w := short.Next(); w <= 750*time.Millisecond || w > time.Second {
			t.Fatalf("a limit below the first wait: %v, want the first wait, less the jitter", w)
		}
	}
}

// Most bounds the proposals a Backoff makes over a span.
func TestMostBoundsTheProposals(t *testing.T) {
	const first = 300 * time.Millisecond
	for _, tc := range []struct {
		span time.Duration
		want int
	}{
		{0, 1},
		{first / 2, 1},
		{first, 2},
		{6 * time.Second, 5},   // at 0, 0.225, 0.675, 1.575 and 3.375 s at the soonest
		{60 * time.Second, 20}, // and then every 3.75 s at the soonest
	} {
		if got := Most(tc.span, first); got != tc.want {
			t.Errorf("Most(%v, %v) = %d, want %d", tc.span, first, got, tc.want)
		}
		for seed := range uint64(20) {
			b, n, at := New(first, seed, 0), 1, time.Duration(0)
			for at += b.Next(); at <= tc.span; at += b.Next() {
				n++
			}
			if n > tc.want {
				t.Errorf("seed %d: %d proposals in %v, more than Most's %d", seed, n, tc.span, tc.want)
			}
		}
	}
}

// Progress wakes the waiting operations when the log moves after a quiet
// spell, and only then.
func TestProgressWakesAfterAQuietSpell(t *testing.T) {
	p := NewProgress(time.Hour)
	woken := p.Resumed()
	p.Moved()
	select {
	case <-woken:
		t.Fatal("woken by a log that never went quiet")
	default:
	}
	p = NewProgress(0)
	woken = p.Resumed()
	p.Moved()
	select {
	case <-woken:
	default:
		t.Fatal("not woken when the log moved after a quiet spell")
	}
	if p.Resumed() == woken {
		t.Error("the next wake-up shares the channel of the last")
	}
}
