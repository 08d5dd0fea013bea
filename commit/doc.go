// Package commit holds atomic commitment protocols: two-phase commit
// (Gray 1978; Coulouris et al. §17.3), written as the TLA+ specification
// TwoPhase (Gray & Lamport 2006) models it, so that an exhaustive
// exploration of it can be compared with other model checkers' state
// counts on the same model.
package commit
