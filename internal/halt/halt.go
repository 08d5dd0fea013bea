// Package halt follows whether a node's replica of a replicated service
// is halted (consensus.Halted: a committed entry it cannot apply) or
// serves again (consensus.Resumed: it restored the leader's snapshot),
// for the calls that wait on it; and says when a leader finds that a
// node lost the log it had acknowledged (consensus.LostState). Its Latch
// serves any such condition (a node removed from a log's voters).
package halt

import (
	"log/slog"
	"sync"

	"github.com/cohort-go/cohort/consensus"
)

// Latch is a condition that calls wait on, set with a value and cleared
// again: the zero value is clear, and Done is closed while it is set.
type Latch[T any] struct {
	mu sync.Mutex
	v  *T
	ch chan struct{} // closed once set; nil: none made since
}

// Set records v and wakes every call waiting on Done; it reports whether
// the latch was clear until now (false: set already, v not recorded).
func (l *Latch[T]) Set(v T) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.v != nil {
		return false
	}
	l.v = &v
	if l.ch == nil {
		l.ch = make(chan struct{})
	}
	close(l.ch)
	return true
}

// Clear clears the latch; it reports whether it was set.
func (l *Latch[T]) Clear() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.v == nil {
		return false
	}
	l.v, l.ch = nil, nil
	return true
}

// Get is the value set, or nil while the latch is clear.
func (l *Latch[T]) Get() *T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.v
}

// Done is closed once the latch is set (closed already if it is).
func (l *Latch[T]) Done() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ch == nil {
		l.ch = make(chan struct{})
	}
	return l.ch
}

// State is a replica's halt: the zero value serves.
type State struct{ l Latch[consensus.Halted] }

// Halt records h and wakes every call waiting on Done; it reports
// whether the replica served until now (false: halted already).
func (s *State) Halt(h consensus.Halted) bool { return s.l.Set(h) }

// Resume ends the halt; it reports whether the replica was halted.
func (s *State) Resume() bool { return s.l.Clear() }

// At is the halt, or nil while the replica serves.
func (s *State) At() *consensus.Halted { return s.l.Get() }

// Done is closed once the replica halts (closed already if it is halted).
func (s *State) Done() <-chan struct{} { return s.l.Done() }

// LostState logs l, the leader's finding that a node lost the log it had
// acknowledged, as an error of the replicated service named by service
// ("replicated locks"), with what an operator should do about it.
func LostState(log *slog.Logger, service string, l consensus.LostState) {
	log.Error(service+": a node lost the log it had acknowledged (its data directory wiped or replaced?); the leader sends it the log again, but a node that lost its data must not rejoin as itself (it may have voted twice in a term): restore its directory, or remove the member and join anew",
		"node", l.Server, "acknowledged", l.Acked, "lacks", l.Hint)
}
