package deadlock

import "time"

// NewDeafCMH is a broken CMH that never declares: its probes come back
// unheard, and its deadlocks stay.
func NewDeafCMH(wait time.Duration) *CMH {
	p := NewCMH(wait)
	p.deaf = true
	return p
}

// NewHastyCMH is a broken CMH that declares a deadlock as soon as its
// first probe timer fires, before any probe could come back.
func NewHastyCMH(wait time.Duration) *CMH {
	p := NewCMH(wait)
	p.hasty = true
	return p
}

// NewCycleCMHOR is a broken OR detector that declares as soon as one of
// its own queries comes back to it: a cycle through it, which proves a
// deadlock in the AND model but not in the OR model.
func NewCycleCMHOR(wait time.Duration) *CMHOR {
	p := NewCMHOR(wait)
	p.onCycle = true
	return p
}

// NewDeafCMHOR is a broken OR detector that never declares.
func NewDeafCMHOR(wait time.Duration) *CMHOR {
	p := NewCMHOR(wait)
	p.deaf = true
	return p
}
