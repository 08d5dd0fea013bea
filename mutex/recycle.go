package mutex

import (
	"maps"

	"github.com/cohort-go/cohort/proc"
)

// Copies into the storage of earlier ones (explore.Recycler): what a model
// checker's backtracking needs, kept apart from the algorithms' steps.

// CloneInto copies the state into dst, an earlier copy no one holds any
// more, reusing its storage (a model checker's backtracking makes a copy
// a step without garbage).
func (r *ricartAgrawala) CloneInto(dst proc.Process) proc.Process {
	c, ok := dst.(*ricartAgrawala)
	if !ok {
		return nil
	}
	replied, queue, wants := c.replied, c.queue, c.wants
	*c = *r
	c.replied = nil
	if r.replied != nil {
		if replied == nil {
			replied = make(map[proc.ID]bool, len(r.replied))
		}
		clear(replied)
		maps.Copy(replied, r.replied)
		c.replied = replied
	}
	c.queue = nil
	if r.queue != nil { // nil stays nil, as slices.Clone keeps it
		c.queue = append(queue[:0], r.queue...)
		if c.queue == nil {
			c.queue = []Stamp{}
		}
	}
	c.wants = nil
	if r.wants != nil {
		if wants == nil {
			wants = new(Acquire)
		}
		*wants = *r.wants
		c.wants = wants
	}
	return c
}

// CloneInto copies the wrapped process into dst's, if it can (see Clone).
func (w withApp) CloneInto(dst proc.Process) proc.Process {
	d, ok := dst.(withApp)
	if !ok {
		return nil
	}
	if c, ok := w.Process.(interface {
		CloneInto(proc.Process) proc.Process
	}); ok {
		if p := c.CloneInto(d.Process); p == d.Process {
			return dst // the same storage: dst's box, not a new one
		} else if p != nil {
			return withApp{p}
		}
	}
	return nil
}
