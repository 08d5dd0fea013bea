package proc

// Joiner is implemented by processes of algorithms whose membership
// changes during a run (overlays, gossip, failure detectors). When a
// process joins a running system the host calls Join instead of Start,
// once, with the ID of one member that is present at that moment — the
// bootstrap contact of Pastry's join, of a SWIM or gossip member. Contact is
// None when no member is present (the joiner is the first). A process that
// is not a Joiner is started with Start when it joins.
type Joiner interface {
	Join(env Env, contact ID)
}

// Leave is the input a host gives a process that leaves the run
// gracefully. The process may send messages while handling it (to hand
// over its state, to say goodbye); afterwards it is gone: the host delivers
// nothing more to it and its timers never fire.
type Leave struct{}

// Kind implements Input.
func (Leave) Kind() string { return "leave" }
