package snapshot

import "github.com/cohort-go/cohort/proc"

// NewForgetfulChandyLamport is a broken Chandy–Lamport that records every
// channel's state as empty: the money in flight across the cut is lost
// from its snapshots.
func NewForgetfulChandyLamport(app proc.Process) *ChandyLamport {
	p := NewChandyLamport(app)
	p.forgetChannels = true
	return p
}
