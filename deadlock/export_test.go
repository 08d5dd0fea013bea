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
