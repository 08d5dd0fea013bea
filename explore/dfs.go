package explore

import (
	"slices"
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

func (r *run) label(ch choice) label {
	i := r.q.find(ch.seq)
	in := r.q.ev(i)
	p := in.p
	id := add(in.h, uint64(ch.act))
	node := int32(p.Node)
	if r.cfg.Timing == Sync && isTimer(p) {
		node = -1
	}
	return label{id: id, node: node}
}

func (e *explorer) dfs() error {
	r, err := e.replay(nil)
	if err != nil {
		return err
	}
	fp := r.fingerprint()
	e.seen.Add(fp)
	if e.cfg.POR {
		e.sleeps = map[uint64][]label{}
	}
	r.w.dirty = 0
	if stop, err := e.judge(r, e.cfg.Safety, nil, false); stop || err != nil {
		return err
	}
	_, err = e.visit(r, nil, nil)
	for _, s := range e.sleeps {
		e.extra += 24 + 16*cap(s)
	}
	e.extra += 40 * len(e.sleeps) // the map's own entries
	return err
}

// visit explores the state r is in, reached by path, with the sleep set
// sleep: steps whose orders with the path's last steps were explored
// already (Godefroid 1996, ch. 5, with state caching: a state met again
// with a sleep set that is not a superset of the one it was explored with
// is explored again with their intersection). It reports whether the
// search must stop.
func (e *explorer) visit(r *run, path []choice, sleep []label) (bool, error) {
	cfg := e.cfg
	e.res.MaxDepth = max(e.res.MaxDepth, len(path))
	chs := slices.Clone(r.choices(e.buf))
	if len(chs) == 0 {
		e.res.Terminal++
		return e.judge(r, cfg.Checks, path, true)
	}
	if len(path) >= cfg.MaxDepth {
		e.res.CutOff++
		e.res.Exhausted = false
		return false, nil
	}
	labels := make([]label, len(chs))
	for i, ch := range chs {
		labels[i] = r.label(ch)
	}
	var done []label
	last := -1 // the last step taken from here
	for i := range chs {
		if !cfg.POR || !slices.Contains(sleep, labels[i]) {
			last = i
		}
	}
	first := true
	for i, ch := range chs {
		l := labels[i]
		if cfg.POR && slices.Contains(sleep, l) {
			continue
		}
		// Replaying, the first step goes on in r and the others replay
		// the path; forking, the others fork r and the last takes r.
		child := r
		if (e.forking && i != last) || (!e.forking && !first) {
			var err error
			if child, err = e.branch(r, path); err != nil {
				return false, err
			}
		}
		first = false
		if err := child.apply(ch); err != nil {
			return false, err
		}
		e.res.Transitions++
		var childSleep []label
		if cfg.POR {
			for _, s := range append(slices.Clone(sleep), done...) {
				if independent(s, l) {
					childSleep = append(childSleep, s)
				}
			}
		}
		fp := child.fingerprint()
		next := append(path[:len(path):len(path)], ch)
		if !e.seen.Add(fp) {
			if !cfg.POR {
				done = append(done, l)
				continue
			}
			stored := e.sleeps[fp]
			if subset(stored, childSleep) {
				done = append(done, l)
				continue
			}
			childSleep = intersect(stored, childSleep)
			e.sleeps[fp] = childSleep
		} else {
			if cfg.POR && len(childSleep) > 0 {
				e.sleeps[fp] = childSleep
			}
			if stop, err := e.judgeNew(child, next); stop || err != nil {
				return stop, err
			}
			if e.seen.Len() >= cfg.MaxStates {
				e.res.Exhausted = false
				return true, nil
			}
		}
		if stop, err := e.visit(child, next, childSleep); stop || err != nil {
			return stop, err
		}
		done = append(done, l)
	}
	return false, nil
}

func subset(a, b []label) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

func intersect(a, b []label) []label {
	var out []label
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
