package commit

import "github.com/cohort-go/cohort/proc"

// A copy into the storage of an earlier one (explore.Recycler): what a
// model checker's backtracking needs, kept apart from the protocol's steps.

// CloneInto copies the state into dst, an earlier copy no one holds any
// more, reusing its storage (a model checker's backtracking makes a copy
// a step without garbage).
func (t *twoPhase) CloneInto(dst proc.Process) proc.Process {
	c, ok := dst.(*twoPhase)
	if !ok {
		return nil
	}
	prepared := c.prepared
	*c = *t
	c.prepared = nil
	if t.prepared != nil { // nil stays nil, as slices.Clone keeps it
		c.prepared = append(prepared[:0], t.prepared...)
		if c.prepared == nil {
			c.prepared = []bool{}
		}
	}
	return c
}
