package lock

// WaitingForGrant is how many calls on this node wait for a grant.
func (r *Replicated) WaitingForGrant() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.grants)
}
