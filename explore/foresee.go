package explore

import "slices"

// Foreseen steps. Depth first with sleep sets meets most states more than
// once (2PC with 7 RMs: 148 k revisits beside 296 k states), and a state
// met again is almost always pruned at once, its sleep set covering the
// one it was explored with. Each such revisit still costs a whole step —
// a restore, a copy on write, the simulator's delivery and its trace, a
// fingerprint — to learn the state it leads to, only to leave it.
//
// Yet a step's effects repeat: what a process does with an event follows
// from its local state (its hash and its pending timers, quiet.go) and
// the event, provided it asked its environment nothing whose answer is
// not its own (sim.EnvReads: the clock, a random source, a disk). Its new
// state, the messages it sends, the timers it sets and cancels are then
// the same wherever the pair is the same (two-phase commit with 7 RMs
// takes 444 k steps over fewer than 2,000 pairs). So depth first
// remembers each pair's effect — the process's new hash, the events sent
// and set, the timers gone — as it takes a step, and before taking a step
// whose effect it knows, it computes the fingerprint of the state the
// step leads to (a sum of terms: the process's term replaced, the new
// events' terms added, the gone timers' taken out) and that state's
// labels. If that state was visited and would be pruned — explored with
// an empty sleep set, or with one that the step's sleep set covers — the
// step is counted and not taken, as a quiet step is: the search goes on
// as it would have after the pruned revisit. Otherwise it is taken as any
// other, and nothing changes but the lookup's cost.
//
// An effect is learned from the first taking of a step with its pair
// and checked on it: foreseen from the state the step left, it must give
// the sum and the labels of the state the step reached; an effect that
// fails, or a step that read its environment, is remembered as not to be
// foreseen. Effects are learned while they take less than half a byte a
// visited state. Like the fingerprints and quiet steps, a pair is a
// 64-bit hash: two pairs that collide would be one.
//
// The search's states, transitions, verdicts and counterexamples are
// unchanged (TestForeseenStepsChangeNothing; TestForeseenStepsAreExact
// takes each foreseen step all the same and compares). Steps are
// foreseen where quiet steps are learned (an asynchronous set network
// without symmetry), backtracking with sleep sets, without faults (a
// message once sent is then in flight for good: sent means pending), and
// with a workload that does not answer outputs (an output then changes
// nothing but the trace, which a state met again and pruned never reads).

// effect is what a step does, as learned from one taking of it: ok if it
// may be foreseen (no reads, and its events as below); ph is its
// process's hash after it; events[from:from+sent] are the messages it
// sends (those already in flight change nothing), then set timers it
// sets, then gone timers that leave the queue (the one it fires, those it
// cancels).
type effect struct {
	ph              uint64
	from            int32
	sent, set, gone uint8
	ok              bool
}

// term is an event's part in a fingerprint and in a state's labels.
type term struct {
	mixed, fire uint64
	node        int32
}

// foresees reports whether a search of cfg may foresee steps.
func foresees(cfg *Config) bool {
	wl := cfg.workload()
	return skipForeseen && learnsQuiet(cfg) && cfg.POR && !cfg.Cycles && !cfg.FIFO &&
		cfg.Crashes == 0 && cfg.Losses == 0 && cfg.Dups == 0 && wl.Gate == "" && wl.Answer == nil
}

// skipForeseen: foreseen steps are skipped (for tests that compare).
var skipForeseen = true

// checkForeseen, if set, is told of every step foreseen, which is then
// taken all the same: the fingerprint foreseen and whether the state it
// leads to was foreseen pruned, and what the step found (for tests).
var checkForeseen func(foreseen, got uint64, pruned, gotPruned bool)

// effectBytes is about what one effect costs in memory, and termBytes one
// of its events: beforeStep keeps them below half a byte a state.
const effectBytes, termBytes = 48, 24

// foresee reports whether the i-th step of the state of lv (fingerprint
// fp) is known to lead to a visited state that would be pruned, reached
// with the sleep set childSleep (cl is the next depth's scratch), and
// whether its effect is known (else it may be learned: beforeStep).
func (e *explorer) foresee(lv, cl *level, i int, fp uint64, childSleep []label) (pruned, known bool) {
	l := lv.labels[i]
	if l.node < 0 || int(l.node) >= len(lv.local) {
		return false, true // not to be learned either
	}
	ef, known := e.effects[quietKey(lv.local[l.node], l)]
	if !ef.ok {
		return false, known
	}
	sum, ok := e.afterSum(lv, l, ef)
	cfp := add(seed, sum)
	if !ok || cfp == fp {
		return false, true // back here: a quiet step, learned by taking it
	}
	if slot, found := e.seen.Find(cfp); found {
		// Pruned as visit would prune it, met again.
		m := e.seen.Tag(slot)
		if pruned = m == 0; !pruned {
			labels, ok := e.afterLabels(lv, ef, cl.next[:0])
			cl.next = labels
			pruned = ok && len(labels) <= 31 && covers(labels, childSleep, m)
		}
	}
	if checkForeseen != nil {
		cl.checked, cl.foreseen, cl.pruned = true, cfp, pruned
		return false, true
	}
	return pruned, true
}

// prunes reports whether visit prunes the state child is in at once,
// met again (in slot) with the sleep set sleep: checkForeseen's answer.
func (cl *level) prunes(e *explorer, child *run, slot int, sleep []label) bool {
	m := e.seen.Tag(slot)
	if m == 0 {
		return true
	}
	_, labels := child.enabled(nil, cl.scratch[:0], true)
	cl.scratch = labels
	if len(labels) > 31 {
		return false
	}
	ranks, _ := cl.sleepBits(labels, sleep)
	return m&^ranks == 0
}

// covers reports whether the sleep set sleep holds every label of labels
// whose rank is a bit of m (visit's test of a state met again, with
// sleepBits's ranking), ranking its labels two at a time only until it
// does.
func covers(labels, sleep []label, m uint32) bool {
	var in uint32 // the bits of sleep's labels ranked so far
	k := 0
	for ; k+2 <= len(sleep) && m&^in != 0; k += 2 {
		n0, w0, n1, w1 := rank2(labels, sleep[k].id, sleep[k+1].id)
		b0, _ := noted(n0, w0)
		b1, _ := noted(n1, w1)
		in |= b0 | b1
	}
	if k < len(sleep) && m&^in != 0 {
		b0, _ := noted(rankAt(labels, sleep[k].id))
		in |= b0
	}
	return m&^in == 0
}

// afterSum returns the sum of the fingerprint's terms (run.stateSum) of
// the state that the step labelled l leads to from the state of lv, if
// its effect is ef; not ok if a timer it cancels is not pending there.
func (e *explorer) afterSum(lv *level, l label, ef effect) (uint64, bool) {
	evs := e.events[ef.from : ef.from+int32(ef.sent)+int32(ef.set)+int32(ef.gone)]
	sum := lv.sum - procTerm(int(l.node), lv.ph[l.node]) + procTerm(int(l.node), ef.ph)
	for k, t := range evs {
		switch {
		case k < int(ef.sent):
			if !e.sentBefore(lv, evs, k) {
				sum += t.mixed
			}
		case k < int(ef.sent)+int(ef.set):
			sum += t.mixed
		default:
			if indexFire(lv.labels, t.fire) < 0 {
				return 0, false
			}
			sum -= t.mixed
		}
	}
	return sum, true
}

// sentBefore reports whether the k-th message that the effect evs sends
// is in flight in the state of lv already, or sent before it in evs: a
// message of a set network once.
func (e *explorer) sentBefore(lv *level, evs []term, k int) bool {
	fire := evs[k].fire
	if indexFire(lv.labels, fire) >= 0 {
		return true
	}
	for _, t := range evs[:k] {
		if t.fire == fire {
			return true
		}
	}
	return false
}

// afterLabels appends to labels those of the state that a step with the
// effect ef leads to from the state of lv; not ok if a timer it cancels
// is not pending there.
func (e *explorer) afterLabels(lv *level, ef effect, labels []label) ([]label, bool) {
	evs := e.events[ef.from : ef.from+int32(ef.sent)+int32(ef.set)+int32(ef.gone)]
	labels = append(labels, lv.labels...)
	for k, t := range evs {
		switch {
		case k < int(ef.sent) && e.sentBefore(lv, evs, k):
		case k < int(ef.sent)+int(ef.set):
			labels = append(labels, label{id: t.fire, node: t.node})
		default:
			j := indexFire(labels, t.fire)
			if j < 0 {
				return labels, false
			}
			labels = slices.Delete(labels, j, j+1)
		}
	}
	return labels, true
}

// indexFire is the position of the first label of labels with the id
// fire, -1 if none.
func indexFire(labels []label, fire uint64) int {
	for j, l := range labels {
		if l.id == fire {
			return j
		}
	}
	return -1
}

// beforeStep notes, for learnEffect, what r is before a step whose
// effect is not known yet, if the effects are within their budget: its
// pending events and its reads, and it starts r's queue logging the
// messages sent. It reports whether it did.
func (e *explorer) beforeStep(lv *level, r *run) bool {
	if e.effectBytes >= e.seen.Len()/2 {
		return false
	}
	lv.before = append(lv.before[:0], r.q.info...)
	lv.reads = r.s.EnvReads()
	r.q.sends, r.q.logging = r.q.sends[:0], true
	return true
}

// learnEffect remembers the effect of the i-th step of lv's state, taken
// in child (fingerprinted), which beforeStep saw before it. An effect
// that cannot be foreseen is remembered as such (not ok), so that the
// pair is not looked at again.
func (e *explorer) learnEffect(lv *level, child *run, i int) {
	child.q.logging = false
	l := lv.labels[i]
	ef := effect{ph: child.ph[l.node], from: int32(len(e.events))}
	ok := child.s.EnvReads() == lv.reads
	// The messages sent; the timers set and gone: the pending timers
	// after, less those before, and the other way round. No other event
	// may come or go.
	for _, in := range child.q.sends {
		e.events = append(e.events, termOf(&in))
	}
	after := child.q.info
	n := len(e.events)
	e.events, ok = diff(after, lv.before, timerEvent, e.events, ok)
	set := len(e.events) - n
	e.events, ok = diff(lv.before, after, timerEvent, e.events, ok)
	var other []term
	for _, c := range []eventClass{otherEvent, crashEvent} {
		other, ok = diff(after, lv.before, c, other, ok)
		other, ok = diff(lv.before, after, c, other, ok)
	}
	var lost []term
	lost, ok = diff(lv.before, after, deliverEvent, lost, ok)
	sent, gone := len(child.q.sends), len(e.events)-n-set
	ok = ok && len(other) == 0 && len(lost) == 0 && sent < 256 && set < 256 && gone < 256
	ef.sent, ef.set, ef.gone, ef.ok = uint8(sent), uint8(set), uint8(gone), ok
	if ok {
		// Foreseen, the step must lead where it led: its state's sum
		// and labels (as run.enabled lists them without faults). Else
		// something beside the pair decided it.
		sum, fits := e.afterSum(lv, l, ef)
		labels, fitted := e.afterLabels(lv, ef, lv.scratch[:0])
		lv.scratch = labels
		ef.ok = fits && fitted && sum == child.stateSum() && sameIDs(labels, after)
	}
	if !ef.ok {
		e.events = e.events[:ef.from]
		ef = effect{}
	}
	if e.effects == nil {
		e.effects = map[uint64]effect{}
	}
	e.effects[quietKey(lv.local[l.node], l)] = ef
	e.effectBytes += effectBytes + termBytes*(len(e.events)-int(ef.from))
}

func termOf(in *pending) term { return term{mixed: in.mixed, fire: in.fire, node: int32(in.node)} }

// sameIDs reports whether labels are the labels of the pending events
// evs, as multisets of ids.
func sameIDs(labels []label, evs []pending) bool {
	if len(labels) != len(evs) || len(evs) > 64 {
		return false
	}
	var used uint64
	for _, in := range evs {
		j := slices.IndexFunc(labels, func(l label) bool { return l.id == in.fire })
		for j >= 0 && used&(1<<j) != 0 {
			k := slices.IndexFunc(labels[j+1:], func(l label) bool { return l.id == in.fire })
			if k < 0 {
				return false
			}
			j += 1 + k
		}
		if j < 0 || labels[j].node != int32(in.node) {
			return false
		}
		used |= 1 << j
	}
	return true
}

// diff appends to out the events of class c in a and not in b (as
// multisets, by contents); ok is false if an event is not described or
// b is too long to match.
func diff(a, b []pending, c eventClass, out []term, ok bool) ([]term, bool) {
	if len(b) > 64 {
		return out, false
	}
	var used uint64 // b's events matched
	for _, x := range a {
		if !x.ok {
			return out, false
		}
		if x.class != c {
			continue
		}
		matched := false
		for j, y := range b {
			if used&(1<<j) == 0 && y.ok && y.class == c && y.h == x.h {
				used |= 1 << j
				matched = true
				break
			}
		}
		if !matched {
			out = append(out, termOf(&x))
		}
	}
	return out, ok
}
