// Package halt follows whether a node's replica of a replicated service
// is halted (consensus.Halted: a committed entry it cannot apply) or
// serves again (consensus.Resumed: it restored the leader's snapshot),
// for the calls that wait on it; and says when a leader finds that a
// node lost the log it had acknowledged (consensus.LostState).
package halt

import (
	"log/slog"
	"sync"

	"github.com/cohort-go/cohort/consensus"
)

// State is a replica's halt: the zero value serves.
type State struct {
	mu sync.Mutex
	at *consensus.Halted
	ch chan struct{} // closed once halted; nil: none made since
}

// Halt records h and wakes every call waiting on Done; it reports
// whether the replica served until now (false: halted already).
func (s *State) Halt(h consensus.Halted) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.at != nil {
		return false
	}
	s.at = &h
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	close(s.ch)
	return true
}

// Resume ends the halt; it reports whether the replica was halted.
func (s *State) Resume() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.at == nil {
		return false
	}
	s.at, s.ch = nil, nil
	return true
}

// At is the halt, or nil while the replica serves.
func (s *State) At() *consensus.Halted {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.at
}

// Done is closed once the replica halts (closed already if it is halted).
func (s *State) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// LostState logs l, the leader's finding that a node lost the log it had
// acknowledged, as an error of the replicated service named by service
// ("replicated locks"), with what an operator should do about it.
func LostState(log *slog.Logger, service string, l consensus.LostState) {
	log.Error(service+": a node lost the log it had acknowledged (its data directory wiped or replaced?); the leader sends it the log again, but a node that lost its data must not rejoin as itself (it may have voted twice in a term): restore its directory, or remove the member and join anew",
		"node", l.Server, "acknowledged", l.Acked, "lacks", l.Hint)
}
