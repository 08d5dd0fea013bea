package explore

// Quiet steps. In a set network (Config.SetNetwork) a message, once sent,
// stays in flight, so a state offers again every delivery offered before
// it, and most of them change nothing: two-phase commit's TM receives a
// vote it has counted already, an RM a decision it has taken. About two
// thirds of the steps of a search of two-phase commit with 5 or 7 RMs
// lead back to the state they leave, and each cost a whole step (a copy
// on write, the simulator's delivery and trace, a fingerprint, a lookup
// in the visited set, a restore) to find that out.
//
// A step is quiet when the process it happens at calls nothing on its
// environment (sim.EnvCalls: no send, timer, output, clock, randomness
// or storage), its state hashes as before, and the state the step leads
// to is the one it leaves. Such a step's effect is its process's and its
// event's alone (a process is a deterministic state machine, and the
// delivered message stays in flight): the same step at a process in the
// same local state is quiet in every state. A process's local state is
// its hash and its pending timers' (by contents, as a fingerprint has
// them): a state hash leaves timer handles out, and a process may act on
// whether the handle it holds is pending (a cancel then does something)
// or not. The search remembers these pairs, the local state and the
// step's label, and does not take such a step again: it counts it, and
// does what taking it would have done, that is nothing, as the state it
// leads to is the one being explored. With POR that holds when every
// step of the sleep set is independent of it (the state met again is
// then pruned, its sleep set a subset of the step's); otherwise the step
// is taken as any other.
//
// Only asynchronous (in Sync a step may move time, and with it how soon
// the other events are due), and not with symmetry (whose fingerprint is
// the representative's: it keeps no process hashes).

// maxQuiet bounds the pairs remembered (8 bytes a slot, in a set as the
// visited states are; its bytes are counted in Result.BytesPerState).
const maxQuiet = 1 << 16

// skipQuiet: quiet steps are skipped (for tests that compare).
var skipQuiet = true

// learnsQuiet reports whether a search of cfg may skip quiet steps.
func learnsQuiet(cfg *Config) bool {
	return skipQuiet && cfg.SetNetwork && cfg.Timing == Async && !cfg.Symmetry
}

// quietKey is a step's pair: its process's local state before it, its
// label.
func quietKey(local uint64, l label) uint64 { return add(local, l.id) }

// localStates sets local[i] to process i's local state: its hash (ph[i])
// and its pending timers'.
func (r *run) localStates(local []uint64) []uint64 {
	local = append(local[:0], r.ph...)
	for i := range r.q.keys {
		if in := r.q.ev(i); in.class == timerEvent && in.node >= 0 && int(in.node) < len(local) {
			local[in.node] = add(local[in.node], in.mixed)
		}
	}
	return local
}

// sleepDeps tells which steps a sleep set holds a step dependent on:
// those at a process of nodes (a bit each, the first 64), all of them if
// any.
type sleepDeps struct {
	nodes uint64
	any   bool
}

// dependents returns what the sleep set sleep depends on.
func dependents(sleep []label) sleepDeps {
	var d sleepDeps
	for _, s := range sleep {
		if s.node < 0 || s.node >= 64 {
			d.any = true // dependent on every step, or past the mask
			continue
		}
		d.nodes |= 1 << uint(s.node)
	}
	return d
}

// isQuiet reports whether the step labelled l, at a state whose processes'
// local states are local and explored with a sleep set that depends on
// dep, is known to be quiet and may be skipped.
func (e *explorer) isQuiet(local []uint64, l label, dep sleepDeps) bool {
	if l.node < 0 || int(l.node) >= len(local) || l.node >= 64 {
		return false
	}
	// Every step of the sleep set independent of l.
	if dep.any || dep.nodes&(1<<uint(l.node)) != 0 {
		return false
	}
	return e.quiet.Has(quietKey(local[l.node], l))
}

// learnQuiet remembers the step labelled l as quiet if it was: taken from
// a state whose processes hashed to ph (local states: local), it led to
// child, fingerprinted (child.ph is up to date), with calls the
// environment calls before it, back to the state it left.
func (e *explorer) learnQuiet(ph, local []uint64, l label, child *run, calls uint64) {
	if l.node < 0 || int(l.node) >= len(ph) || e.quiet.Len() >= maxQuiet {
		return
	}
	if child.s.EnvCalls() != calls || child.ph[l.node] != ph[l.node] {
		return
	}
	e.quiet.Add(quietKey(local[l.node], l))
}
