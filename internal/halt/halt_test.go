package halt

import (
	"testing"

	"github.com/cohort-go/cohort/consensus"
)

// A halt wakes the waiters taken before it, is reported once, and a
// resume serves again: a new wait blocks until the next halt.
func TestHaltWakesAndResumeServesAgain(t *testing.T) {
	var s State
	before := s.Done()
	if !s.Halt(consensus.Halted{Index: 3}) || s.Halt(consensus.Halted{Index: 4}) {
		t.Fatal("Halt: want true once, then false")
	}
	select {
	case <-before:
	default:
		t.Fatal("a wait taken before the halt was not woken")
	}
	if h := s.At(); h == nil || h.Index != 3 {
		t.Fatalf("At %v, want the first halt, at entry 3", h)
	}
	if !s.Resume() || s.Resume() || s.At() != nil {
		t.Fatal("Resume: want true once, then false, and no halt")
	}
	select {
	case <-s.Done():
		t.Fatal("a wait taken after the resume is done")
	default:
	}
	s.Halt(consensus.Halted{Index: 9})
	if h := s.At(); h == nil || h.Index != 9 {
		t.Fatalf("At %v after a second halt, want entry 9", h)
	}
}
