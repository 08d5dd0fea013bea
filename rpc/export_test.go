package rpc

import "github.com/cohort-go/cohort/proc"

// NewBroken builds the processes of a broken variant of the stubs:
// "volatile" (the server's duplicate table is not on stable storage),
// "no-filter" (the server runs every request) or "claim" (a client whose
// retries are exhausted returns a result anyway).
func NewBroken(c Config, how string) func(id proc.ID, n int) proc.Process {
	c = c.withDefaults()
	return func(id proc.ID, _ int) proc.Process {
		if id == c.Server {
			s := NewServer(c)
			s.volatile, s.noFilter = how == "volatile", how == "no-filter"
			return s
		}
		cl := NewClient(c)
		cl.claim = how == "claim"
		return cl
	}
}
