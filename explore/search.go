package explore

import (
	"errors"
	"fmt"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/sim"
)

// Explore searches every state reachable within cfg's bounds and checks
// cfg.Checks in them. It returns an error for a bad cfg or a process that
// panicked (a broken invariant is a bug, reported as such, not a verdict).
func Explore(cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxStates == 0 {
		cfg.MaxStates = 1_000_000
	}
	if cfg.MaxDepth == 0 {
		cfg.MaxDepth = 200
	}
	cfg.watchers = watchersOf(cfg.Safety)
	e := &explorer{cfg: &cfg, h: newHasher(), res: &Result{Exhausted: true, Engine: "fork"}, forking: !cfg.Replay, cp: newCopier()}
	if cfg.Replay {
		e.res.Engine = "replay"
	}
	start := time.Now()
	var err error
	if cfg.Strategy == DFS {
		err = e.dfs()
	} else {
		err = e.bfs()
	}
	e.res.Elapsed = time.Since(start)
	e.res.States = int64(e.seen.Len())
	if e.res.States > 0 {
		e.res.BytesPerState = float64(e.seen.Bytes()+e.extra) / float64(e.res.States)
		e.res.Omission = omission(e.res.States)
	}
	if e.res.Violation != nil {
		e.res.Exhausted = false
	}
	return e.res, err
}

type explorer struct {
	cfg   *Config
	h     *hasher
	seen  fpSet
	res   *Result
	extra int // bytes beyond the fingerprints: BFS's trail, DFS's sleep sets
	buf   []choice
	// sleeps holds, with POR, the sleep set each state was explored with.
	sleeps map[uint64][]label
	wide   maskTable // with POR, the sleep sets of 16 to 32 bits
	// forking: states are forked, not replayed (until a run cannot be).
	forking bool
	cp      *copier
	// frames are depth first's saved states, one per depth (dfs.go).
	frames []*saved
	levels []*level
	// g is the state graph, with Config.Cycles.
	g     *graph
	names []string // scratch
}

// heldRuns bounds the runs BFS holds for states it has yet to expand;
// beyond it, a state is reached by replaying its path.
const heldRuns = 1 << 16

// branch returns a run in r's state, reached by path, for another step
// from it: a fork of r, or a replay of path. A model whose runs cannot be
// forked is explored by replay from then on (Result.Engine says so).
func (e *explorer) branch(r *run, path []choice) (*run, error) {
	if e.forking {
		f, err := r.fork(e.cp)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, sim.ErrNoFork) && !errors.Is(err, errNoClone) {
			return nil, err
		}
		e.forking = false
		e.res.Engine = "replay (" + err.Error() + ")"
	}
	return e.replay(path)
}

// trailNode is a BFS state: how it was first reached, in 8 bytes.
type trailNode struct {
	parent int32
	ch     uint32 // packed choice (pack32)
}

// replay re-executes a path from the start.
func (e *explorer) replay(path []choice) (*run, error) {
	r, err := e.cfg.newRun(e.h)
	if err != nil {
		return nil, err
	}
	for _, ch := range path {
		if err := r.apply(ch); err != nil {
			return nil, err
		}
		e.res.Transitions++
	}
	return r, nil
}

// fullChecks runs every safety checker on every new state, as if none
// were known to watch.go (for tests that compare the two).
var fullChecks = false

// judgeNew judges a state found for the first time: the safety checkers
// that the steps since the last state judged on its path may have broken
// (watch.go).
func (e *explorer) judgeNew(r *run, path []choice) (bool, error) {
	names := r.w.due(e.cfg.watchers, e.cfg.Safety, e.names)
	e.names = names
	if fullChecks {
		names = e.cfg.Safety
	}
	return e.judge(r, names, path, false)
}

// judge runs the named checkers on r's trace; a violation ends the search.
func (e *explorer) judge(r *run, names []string, path []choice, terminal bool) (bool, error) {
	if len(names) == 0 {
		return false, nil
	}
	tr := r.rec.view()
	results, err := check.Run(tr, names...)
	if err != nil {
		return false, err
	}
	for _, c := range results {
		switch c.Status {
		case check.Violated:
			sched, err := e.schedule(path)
			if err != nil {
				return false, err
			}
			e.res.Violation = &Violation{Check: c, Schedule: sched, Trace: r.rec.Trace(), Terminal: terminal}
			return true, nil
		case check.Unknown:
			e.res.Unknown++
		}
	}
	return false, nil
}

// schedule describes a path as a Schedule, replaying it to name its steps.
func (e *explorer) schedule(path []choice) (*Schedule, error) {
	r, err := e.cfg.newRun(e.h)
	if err != nil {
		return nil, err
	}
	s := e.cfg.schedule()
	for _, ch := range path {
		i := r.q.find(ch.seq)
		if i < 0 {
			return nil, fmt.Errorf("replaying the counterexample: no pending event #%d", ch.seq)
		}
		s.Steps = append(s.Steps, Step{Act: ch.act, Seq: ch.seq, What: describe(r.s, r.q.keys[i], ch.act)})
		if err := r.apply(ch); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (e *explorer) bfs() error {
	cfg := e.cfg
	root, err := e.replay(nil)
	if err != nil {
		return err
	}
	rootFP := root.fingerprint()
	e.seen = newFPSet(false)
	e.seen.Add(rootFP)
	if cfg.Cycles {
		e.g = &graph{index: map[uint64]int32{}}
		e.g.node(rootFP, root.waiting)
	}
	trail := []trailNode{{parent: -1}}
	held := map[int32]*run{0: root} // with forking, the runs of states not yet expanded
	root.w.dirty = 0
	if stop, err := e.judge(root, cfg.Safety, nil, false); stop || err != nil {
		return err
	}
	var path []choice
	for i := 0; i < len(trail); i++ {
		path = path[:0]
		for j := int32(i); j > 0; j = trail[j].parent {
			path = append(path, unpack32(trail[j].ch))
		}
		for a, b := 0, len(path)-1; a < b; a, b = a+1, b-1 {
			path[a], path[b] = path[b], path[a]
		}
		r := held[int32(i)]
		if r != nil {
			delete(held, int32(i))
		} else if r, err = e.replay(path); err != nil {
			return err
		}
		e.res.MaxDepth = max(e.res.MaxDepth, len(path))
		chs := append([]choice(nil), r.choices(e.buf)...)
		if len(chs) == 0 {
			e.res.Terminal++
			if stop, err := e.judge(r, cfg.Checks, path, true); stop || err != nil {
				return err
			}
			continue
		}
		if len(path) >= cfg.MaxDepth {
			e.res.CutOff++
			e.res.Exhausted = false
			continue
		}
		var labels []label
		if e.g != nil {
			for _, ch := range chs {
				l := r.label(ch)
				labels = append(labels, l)
				if r.fair(ch) {
					e.g.enabled[i] = append(e.g.enabled[i], l.id)
				}
			}
		}
		for k, ch := range chs {
			child := r
			if k < len(chs)-1 { // the last step takes r itself
				if child, err = e.branch(r, path); err != nil {
					return err
				}
			}
			if err := child.apply(ch); err != nil {
				return err
			}
			e.res.Transitions++
			fp := child.fingerprint()
			if isNew, _ := e.seen.Add(fp); !isNew {
				if e.g != nil {
					e.g.succ[i] = append(e.g.succ[i], edge{e.g.index[fp], labels[k].id})
				}
				continue
			}
			if e.g != nil {
				e.g.succ[i] = append(e.g.succ[i], edge{e.g.node(fp, child.waiting), labels[k].id})
			}
			packed, err := ch.pack32()
			if err != nil {
				return err
			}
			trail = append(trail, trailNode{parent: int32(i), ch: packed})
			if e.forking && len(held) < heldRuns {
				held[int32(len(trail)-1)] = child
			}
			if stop, err := e.judgeNew(child, append(path, ch)); stop || err != nil {
				return err
			}
			if e.seen.Len() >= cfg.MaxStates {
				e.res.Exhausted = false
				e.extra = 8*cap(trail) + 48*len(held)
				return nil
			}
		}
	}
	e.extra = 8*cap(trail) + 48*len(held)
	if e.g != nil {
		e.extra += e.g.bytes()
		if e.res.Exhausted {
			return e.judgeCycles(trail)
		}
	}
	return nil
}
