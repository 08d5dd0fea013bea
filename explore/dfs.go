package explore

import (
	"errors"
	"math/bits"
	"slices"

	"github.com/cohort-go/cohort/sim"
)

// label names a step independently of the path that enables it (Seq
// numbers differ from path to path): the pending event's contents and the
// act, and the process it happens at.
type label struct {
	id   uint64
	node int32 // -1: dependent on every other step
}

// independent: steps at different processes commute — each changes only
// its own process's state and adds its own messages — and neither
// disables the other. In Sync a timer's being enabled depends on every
// message due, so a timer is dependent on everything.
func independent(a, b label) bool { return a.node >= 0 && b.node >= 0 && a.node != b.node }

func (r *run) label(ch choice) label { return r.labelAt(r.q.find(ch.seq), ch.act) }

// labelAt is the label of act on the i-th pending event.
func (r *run) labelAt(i int, act Act) label {
	return labelOf(r.q.ev(i), act, r.cfg.Timing == Sync)
}

// labelOf is the label of act on the pending event in, in Sync if sync.
func labelOf(in *pending, act Act, sync bool) label {
	node := int32(in.node)
	if sync && in.class == timerEvent {
		node = -1
	}
	if act != Fire {
		return label{id: actID(in.h, act), node: node}
	}
	return label{id: in.fire, node: node}
}

func actID(h uint64, act Act) uint64 { return add(h, uint64(act)) }

func (e *explorer) dfs() error {
	r, err := e.replay(nil)
	if err != nil {
		return err
	}
	if e.forking {
		// Backtracking: one run, saved where the search branches and
		// restored there, with processes copied on write.
		if err := r.copyable(e.cp, e.frame(0)); err != nil {
			if !errors.Is(err, sim.ErrNoFork) && !errors.Is(err, errNoClone) {
				return err
			}
			e.forking = false
			e.res.Engine = "replay (" + err.Error() + ")"
		} else {
			e.res.Engine = "undo"
			r.cp = e.cp
			r.shareAll()
		}
	}
	fp := r.fingerprint()
	e.seen = newFPSet(e.cfg.POR)
	_, slot := e.seen.Add(fp)
	if e.cfg.POR {
		e.sleeps = map[uint64][]label{}
	}
	if e.learnsQuiet = learnsQuiet(e.cfg); e.learnsQuiet {
		e.quiet = newFPSetOf(64, false) // a few hundred pairs, or thousands
	}
	e.foresees = foresees(e.cfg)
	r.w.dirty = 0
	if stop, err := e.judge(r, e.cfg.Safety, nil, false); stop || err != nil {
		return err
	}
	// One path buffer for the whole search: a step appends to its parent's
	// path in place.
	_, err = e.visit(r, make([]choice, 0, e.cfg.MaxDepth+1), nil, fp, slot, false)
	for _, s := range e.sleeps {
		e.extra += 24 + 16*cap(s)
	}
	e.extra += 40 * len(e.sleeps) // the map's own entries
	e.extra += e.quiet.Bytes() + e.effectBytes
	e.quiet.free()
	return err
}

// visit explores the state r is in (fingerprint fp, in slot of the
// visited set), reached by path, with the sleep set sleep: steps whose
// orders with the path's last steps were explored already (Godefroid
// 1996, ch. 5, with state caching: a state met again with a sleep set
// that is not a superset of the one it was explored with is explored
// again with their intersection). again: the state was visited before.
// It reports whether the search must stop.
//
// The sleep set a state was explored with is kept as a bit mask over the
// labels enabled in it ranked by their ids (a function of the state;
// with symmetry, of its representative: the labels renamed, inFrame), in
// its slot's tag or, past 31 labels, in a map beside (see storeSleep).
func (e *explorer) visit(r *run, path []choice, sleep []label, fp uint64, slot int, again bool) (bool, error) {
	cfg := e.cfg
	if again && cfg.POR && e.seen.Tag(slot) == 0 {
		return false, nil // explored with an empty sleep set, a subset of any
	}
	lv := e.level(len(path))
	quiet := e.learnsQuiet
	lv.chs, lv.labels = r.enabled(lv.chs, lv.labels[:0], cfg.POR || quiet)
	chs, labels := lv.chs, lv.labels
	// asleepAt marks, when masked, the steps whose labels are in sleep, by
	// their positions in chs.
	var asleepAt uint64
	masked := false
	switch {
	case cfg.POR && r.perm == nil && len(labels) <= 31:
		// The common case, in one pass over sleep (sleepBits): the
		// stored mask is over these labels (a function of the state,
		// not more than 31 of them: no overflow to the map).
		ranks, at := lv.sleepBits(labels, sleep)
		if again {
			m := e.seen.Tag(slot)
			if m&^ranks == 0 {
				return false, nil // pruned: all it would take was taken
			}
			// Explored again with the intersection.
			out := lv.stored[:0]
			for k, s := range sleep {
				if rk := lv.ranks[k]; rk >= 0 && m&(1<<uint(rk)) != 0 {
					out = append(out, s)
				}
			}
			lv.stored, sleep = out, out
			ranks, at = lv.sleepBits(labels, sleep)
		}
		if len(sleep) == 0 {
			ranks = 0
		}
		e.seen.SetTag(slot, ranks)
		asleepAt, masked = at, true
	case cfg.POR:
		// The bits rank labels, and sleep is read as key, in the frame
		// of the state's representative: with symmetry, another member
		// of its orbit may meet it again, whose labels are the same
		// steps renamed (ranked alike only once renamed back).
		ranked, key, from := lv.inFrame(r, chs, labels, sleep, true)
		if again {
			var pruned bool
			if sleep, pruned = e.againSleep(lv, ranked, key, from, fp, slot); pruned {
				return false, nil
			}
			_, key, _ = lv.inFrame(r, chs, labels, sleep, false)
		}
		e.storeSleep(lv, ranked, key, fp, slot)
	}
	e.res.MaxDepth = max(e.res.MaxDepth, len(path))
	if len(chs) == 0 {
		e.res.Terminal++
		return e.judge(r, cfg.atEnd, path, true)
	}
	if len(path) >= cfg.MaxDepth {
		e.res.CutOff++
		e.res.Exhausted = false
		return false, nil
	}
	if quiet {
		lv.ph = append(lv.ph[:0], r.ph...) // as fingerprinted: up to date
		lv.local = r.localStates(lv.local)
	}
	foresee := e.foresees && masked && e.forking // replaying, a step skipped is a path not replayed
	if foresee {
		lv.sum = r.stateSum()
	}
	done := lv.done[:0]
	// Each step is taken, or not: asleep (in the sleep set), or quiet
	// (known to lead back here, quiet.go). Told once per state: todo
	// lists the steps not asleep, in order, last the last one taken. A
	// step of todo may still be foreseen, and not taken either: known to
	// lead to a state met again and pruned (foresee.go).
	todo, last := e.classify(lv, labels, len(chs), sleep, masked, asleepAt, quiet)
	first := true
	var sv *saved
	for _, st := range todo {
		i := int(st.i)
		ch := chs[i]
		var l label
		if cfg.POR {
			l = labels[i]
		}
		if st.quiet {
			// As if taken: it leads back here, a state met again and
			// pruned (quiet.go).
			e.res.Transitions++
			e.res.Quiet++
			if cfg.POR {
				done = append(done, l)
				lv.done = done
			}
			continue
		}
		// The step's sleep set, before the step: a step foreseen is judged
		// with it.
		var childSleep []label
		var cl *level
		if cfg.POR {
			cl = e.level(len(path) + 1)
			childSleep = cl.sleep[:0]
			for _, s := range sleep {
				if independent(s, l) {
					childSleep = append(childSleep, s)
				}
			}
			for _, s := range done {
				if independent(s, l) {
					childSleep = append(childSleep, s)
				}
			}
			cl.sleep = childSleep
		}
		known := false // the step's effect (foresee.go)
		if foresee {
			var pruned bool
			if pruned, known = e.foresee(lv, cl, i, fp, childSleep); pruned {
				// As if taken: it leads to a state met again and
				// pruned.
				e.res.Transitions++
				e.res.Foreseen++
				done = append(done, l)
				lv.done = done
				continue
			}
		}
		// The first step goes on in r. Backtracking, r is saved before it
		// (if another step follows) and restored before each other step;
		// replaying, the others replay the path.
		child := r
		switch {
		case first && e.forking && i != last:
			sv = e.frame(len(path))
			if err := r.save(sv); err != nil {
				return false, err
			}
		case !first && e.forking:
			r.restore(sv)
		case !first:
			var err error
			if child, err = e.replay(path); err != nil {
				return false, err
			}
		}
		first = false
		var calls uint64
		if quiet {
			calls = child.s.EnvCalls()
		}
		learns := foresee && !known && e.beforeStep(lv, child)
		if err := child.apply(ch); err != nil {
			return false, err
		}
		e.res.Transitions++
		cfp := child.fingerprint()
		if quiet && cfp == fp {
			e.learnQuiet(lv.ph, lv.local, labels[i], child, calls)
		}
		if learns {
			e.learnEffect(lv, child, i)
		}
		next := append(path, ch) // path's spare room: no one keeps next
		isNew, cslot := e.seen.Add(cfp)
		if foresee && checkForeseen != nil && cl.checked {
			cl.checked = false
			checkForeseen(cl.foreseen, cfp, cl.pruned, !isNew && cl.prunes(e, child, cslot, childSleep))
		}
		if !isNew {
			if !cfg.POR {
				continue
			}
		} else {
			if stop, err := e.judgeNew(child, next); stop || err != nil {
				return stop, err
			}
			if e.seen.Len() >= cfg.MaxStates {
				e.res.Exhausted = false
				return true, nil
			}
		}
		if stop, err := e.visit(child, next, childSleep, cfp, cslot, !isNew); stop || err != nil {
			return stop, err
		}
		if cfg.POR {
			done = append(done, l)
			lv.done = done
		}
	}
	return false, nil
}

// classify tells which of a state's n steps (labelled labels with POR
// or quiet steps) are taken from it, explored with the sleep set sleep:
// it returns the steps not asleep, in order, each marked if quiet, and
// the position of the last one taken (-1: none). asleepAt marks the
// steps asleep if masked (sleepBits: n is then below 32), else they are
// looked up in sleep.
func (e *explorer) classify(lv *level, labels []label, n int, sleep []label, masked bool, asleepAt uint64, quiet bool) ([]stepAt, int) {
	var dep sleepDeps
	if quiet {
		dep = dependents(sleep)
	}
	todo, last := lv.todo[:0], -1
	if masked {
		for awake := ^asleepAt & (1<<uint(n) - 1); awake != 0; awake &= awake - 1 {
			i := bits.TrailingZeros64(awake)
			if quiet && e.isQuiet(lv.local, labels[i], dep) {
				todo = append(todo, stepAt{int32(i), true})
				continue
			}
			todo = append(todo, stepAt{int32(i), false})
			last = i
		}
		lv.todo = todo
		return todo, last
	}
	por := e.cfg.POR
	for i := 0; i < n; i++ {
		switch {
		case por && slices.Contains(sleep, labels[i]):
			// asleep
		case quiet && e.isQuiet(lv.local, labels[i], dep):
			todo = append(todo, stepAt{int32(i), true})
		default:
			todo = append(todo, stepAt{int32(i), false})
			last = i
		}
	}
	lv.todo = todo
	return todo, last
}

// stepAt is a step taken from a state, or skipped as quiet: the i-th
// enabled.
type stepAt struct {
	i     int32
	quiet bool
}

// frame returns the saved state of depth d, reused along the search.
func (e *explorer) frame(d int) *saved {
	for len(e.frames) <= d {
		e.frames = append(e.frames, &saved{})
	}
	return e.frames[d]
}

// sleepBits returns, for the labels enabled in a state (not more than
// 31) and its sleep set, the sleep set's mask (storeSleep's: a bit for
// each label of sleep enabled here, at its rank) and which steps are
// asleep (a bit for each position of labels whose label is in sleep),
// in one pass over sleep; lv.ranks[k] is the rank of sleep[k], -1 if it
// is not enabled here. This is storeSleep's and againSleep's ranking
// and visit's test of each step against the sleep set, at once.
func (lv *level) sleepBits(labels, sleep []label) (ranks uint32, at uint64) {
	rk := slices.Grow(lv.ranks[:0], len(sleep))[:len(sleep)]
	lv.ranks = rk
	// Two labels of sleep at a time, in one pass over labels.
	k := 0
	for ; k+2 <= len(sleep); k += 2 {
		n0, w0, n1, w1 := rank2(labels, sleep[k].id, sleep[k+1].id)
		b0, r0 := noted(n0, w0)
		b1, r1 := noted(n1, w1)
		ranks |= b0 | b1
		at |= w0 | w1
		rk[k], rk[k+1] = r0, r1
	}
	if k < len(sleep) {
		n0, w0 := rankAt(labels, sleep[k].id)
		b0, r0 := noted(n0, w0)
		ranks |= b0
		at |= w0
		rk[k] = r0
	}
	return ranks, at
}

// noted is the bit in a sleep set's mask and the rank (-1: none) of a
// label of sleep of rank n enabled at the positions where (none if 0).
func noted(n int, where uint64) (uint32, int8) {
	if where == 0 {
		return 0, -1
	}
	return 1 << uint(n), int8(n)
}

// rank2 is rankAt for two ids at once: one pass over labels, whose loads
// and loop the two counts share.
//
//go:noinline
func rank2(labels []label, a, b uint64) (na int, wa uint64, nb int, wb uint64) {
	for j, l := range labels {
		x := l.id
		if x < a {
			na++
		}
		if x < b {
			nb++
		}
		if x == a {
			wa |= 1 << uint(j&63)
		}
		if x == b {
			wb |= 1 << uint(j&63)
		}
	}
	return na, wa, nb, wb
}

// rankAt is rank, with the positions of labels that have the id (a bit
// each): one id is one label (it hashes the event, the process it is at
// among them, and the act).
//
//go:noinline
func rankAt(labels []label, id uint64) (n int, at uint64) {
	for j, l := range labels {
		if l.id < id {
			n++
		}
		if l.id == id {
			at |= 1 << uint(j&63)
		}
	}
	return n, at
}

// level is depth first's scratch for one depth, reused along the search.
type level struct {
	chs            []choice
	labels, stored []label
	done           []label
	sleep          []label // the sleep set of this depth's state
	// With symmetry: the labels in the representative's frame, and the
	// sleep set's enabled labels in it (key) and as they are (from).
	canon, key, from []label
	// ph and local are the state's process hashes and local states,
	// with quiet steps (quiet.go).
	ph, local []uint64
	// todo lists the steps taken from here or skipped as quiet
	// (classify).
	todo []stepAt
	// ranks are the ranks of the sleep set's labels (sleepBits).
	ranks []int8
	// With foreseen steps (foresee.go): the sum of the state's
	// fingerprint's terms; before a step learned, its pending events and
	// reads; the labels of a state foreseen, and scratch; and, checking,
	// what was foreseen of the step to this depth.
	sum           uint64
	before        []pending
	reads         uint64
	next, scratch []label
	foreseen      uint64
	pruned        bool
	checked       bool
}

// inFrame returns the labels enabled in r's state (labels, of the steps
// chs) as a sleep set's bits rank them, and the sleep set as key, the
// labels of its steps in that frame, and from, the same steps as they are:
// without symmetry, labels and sleep themselves; with it, in the frame of
// the state's representative (run.canonical), sleep's labels not enabled
// here left out (they have no bit). relabel: labels are new (else those
// of the last call, kept in lv).
func (lv *level) inFrame(r *run, chs []choice, labels, sleep []label, relabel bool) (ranked, key, from []label) {
	if r.perm == nil {
		return labels, sleep, sleep
	}
	if relabel {
		lv.canon = r.canonical(chs, labels, lv.canon[:0])
	}
	key, from = lv.key[:0], lv.from[:0]
	for _, s := range sleep {
		if j := slices.Index(labels, s); j >= 0 {
			key, from = append(key, lv.canon[j]), append(from, s)
		}
	}
	lv.key, lv.from = key, from
	return lv.canon, key, from
}

func (e *explorer) level(d int) *level {
	for len(e.levels) <= d {
		e.levels = append(e.levels, &level{})
	}
	return e.levels[d]
}

// A sleep set is kept as a bit mask over the labels enabled in the state
// (a function of the state), each label's bit its rank: how many of the
// enabled labels have a smaller id, counted with repeats (two enabled
// steps with one id are one label, whose rank is that of both). Ranks
// tell distinct ids apart and are below the number of labels, so up to
// 31 labels the mask is its slot's tag (the visited set widens its tags
// to 32 bits when a mask first needs more than 16); beyond, the sleep set
// goes to a map (tag overflowTag, no mask of 31 bits). An empty sleep set
// is tag 0 however many labels.
const overflowTag = 0xFFFF_FFFF

// rank returns id's rank among labels (how many have a smaller id), and
// whether it is one of them. Counting, without branches to mispredict,
// costs less than sorting the ids for binary search: a state has at most
// 32 labels here, and a sleep set rarely more than 20. (Kept out of line:
// inlined in its callers' loops, its counters lived on the stack.)
//
//go:noinline
func rank(labels []label, id uint64) (int, bool) {
	n, found := 0, 0
	for _, l := range labels {
		if l.id < id {
			n++
		}
		if l.id == id {
			found = 1
		}
	}
	return n, found != 0
}

func (e *explorer) storeSleep(lv *level, labels, sleep []label, fp uint64, slot int) {
	if len(sleep) == 0 {
		e.seen.SetTag(slot, 0)
		return
	}
	if len(labels) > 31 {
		e.seen.SetTag(slot, overflowTag)
		e.sleeps[fp] = slices.Clone(sleep)
		return
	}
	var m uint32
	for _, s := range sleep {
		if i, ok := rank(labels, s.id); ok {
			m |= 1 << uint(i)
		}
	}
	e.seen.SetTag(slot, m)
}

// againSleep compares the sleep set of a state met again with the one
// stored for it (not empty): pruned if the stored one is a subset of
// sleep (all the steps it would take were taken from there), else their
// intersection, in lv's storage, to explore it with. The stored set and
// labels are in one frame, sleep in it is key, and from is sleep as it
// is (key and from are sleep itself without symmetry): a label of key
// kept returns as the label of from at its position.
func (e *explorer) againSleep(lv *level, labels, key, from []label, fp uint64, slot int) ([]label, bool) {
	var m uint32
	switch t := e.seen.Tag(slot); t {
	case overflowTag:
		stored := e.sleeps[fp]
		if subset(stored, key) {
			return nil, true
		}
		return intersect(stored, key, from), false
	default:
		m = t
	}
	var in uint32 // the bits of sleep's enabled labels, so far
	out := lv.stored[:0]
	for k, s := range key {
		if m&^in == 0 {
			return nil, true // pruned: no need to rank the rest
		}
		if i, ok := rank(labels, s.id); ok {
			in |= 1 << uint(i)
			if m&(1<<uint(i)) != 0 {
				out = append(out, from[k])
			}
		}
	}
	lv.stored = out
	return out, m&^in == 0
}

func subset(a, b []label) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// intersect returns the labels of from whose positions in b hold a label
// of a.
func intersect(a, b, from []label) []label {
	var out []label
	for k, x := range b {
		if slices.Contains(a, x) {
			out = append(out, from[k])
		}
	}
	return out
}
