package explore

import (
	"errors"
	"fmt"
	"runtime/metrics"
	"slices"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

// Explore searches every state reachable within cfg's bounds and checks
// cfg.Checks in them. It returns an error for a bad cfg or a process that
// panicked (a broken invariant is a bug, reported as such, not a verdict).
func Explore(cfg Config) (*Result, error) {
	e, err := search(cfg)
	if e == nil {
		return nil, err
	}
	e.seen.free()
	return e.res, err
}

// search explores cfg and returns the explorer, its visited set with it
// (nil if cfg is not valid), to be freed (fpSet.free).
func search(cfg Config) (*explorer, error) {
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
	cfg.noLabels = unlabelled(cfg.Checks) && unlabelled(cfg.Safety)
	for _, name := range cfg.Checks {
		if !slices.Contains(cfg.Safety, name) {
			cfg.atEnd = append(cfg.atEnd, name)
		}
	}
	cfg.traceOnly = partialTrace(&cfg)
	e := &explorer{cfg: &cfg, h: newHasher(), res: &Result{Exhausted: true, Engine: "fork"}, forking: !cfg.Replay, cp: newCopier()}
	cfg.values = e.cp
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
	return e, err
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
	// quiet holds the steps known to change nothing (quiet.go), by
	// their processes' hashes and labels, if learnsQuiet.
	quiet       fpSet
	learnsQuiet bool
	// effects holds the effects of steps (foresee.go), by their
	// processes' local states and labels, if foresees: their events in
	// events, effectBytes their memory.
	effects     map[uint64]effect
	events      []term
	effectBytes int
	foresees    bool
	// forking: states are forked, not replayed (until a run cannot be).
	forking bool
	cp      *copier
	// frames are depth first's saved states, one per depth (dfs.go).
	frames []*saved
	levels []*level
	// g is the state graph, with Config.Cycles.
	g     *graph
	names []string // scratch
	// Breadth first's heap check (roomToHold): states until the next
	// reading, and whether the last found the heap past heldHeap.
	sinceCheck int
	heapFull   bool
}

// heldRuns bounds the runs BFS holds for states it has yet to expand;
// beyond it, a state is reached by replaying its path.
var heldRuns = 1 << 16 // a variable for tests

// heldHeap bounds them in bytes too: a run's size grows with its depth
// and its processes' state (bully's, explored asynchronously, held 4 GB
// at 65,536), so no new run is held while the live heap (as the last
// collection found it) is past it — read every heldCheck states held,
// cheaply (runtime/metrics, no pause).
// Holding or replaying changes the search's cost, never its states,
// verdicts or counterexamples.
var heldHeap uint64 = 1 << 30 // a variable for tests

const heldCheck = 1024

// roomToHold reports whether the heap leaves room to hold one more run.
func (e *explorer) roomToHold() bool {
	if e.sinceCheck == 0 {
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}} // as the last collection marked it
		metrics.Read(sample)
		e.heapFull = sample[0].Value.Kind() == metrics.KindUint64 && sample[0].Value.Uint64() > heldHeap
		e.sinceCheck = heldCheck
	}
	e.sinceCheck--
	return !e.heapFull
}

// trail is breadth first's record of how each state was first reached:
// its parent's index and the step's position among the parent's choices
// (run.choices, a function of the state), 5 bytes a state, in chunks of
// trailChunk so that it never holds more than one chunk unused. A state's
// path is found again by replaying these positions from the start.
type trail struct {
	parents [][]int32
	steps   [][]uint8
	n       int
	far     map[int32]int // positions of 255 and beyond (step 255), by state
}

const trailChunk = 1 << 10

func (t *trail) Len() int { return t.n }

// Bytes is the memory the trail holds.
func (t *trail) Bytes() int { return 5*trailChunk*len(t.parents) + 48*len(t.far) }

func (t *trail) add(parent int32, k int) {
	if t.n%trailChunk == 0 {
		t.parents = append(t.parents, make([]int32, 0, trailChunk))
		t.steps = append(t.steps, make([]uint8, 0, trailChunk))
	}
	c := t.n / trailChunk
	t.parents[c] = append(t.parents[c], parent)
	if k >= 255 {
		if t.far == nil {
			t.far = map[int32]int{}
		}
		t.far[int32(t.n)], k = k, 255
	}
	t.steps[c] = append(t.steps[c], uint8(k))
	t.n++
}

// at returns state j's parent and its step's position.
func (t *trail) at(j int32) (int32, int) {
	c, i := j/trailChunk, j%trailChunk
	k := int(t.steps[c][i])
	if k == 255 {
		k = t.far[j]
	}
	return t.parents[c][i], k
}

// replayTrail reaches state j by replaying its steps from the start, and
// returns its path.
func (e *explorer) replayTrail(t *trail, j int32) (*run, []choice, error) {
	var ks []int
	for ; j > 0; j, _ = t.at(j) {
		_, k := t.at(j)
		ks = append(ks, k)
	}
	slices.Reverse(ks)
	r, err := e.cfg.newRun(e.h)
	if err != nil {
		return nil, nil, err
	}
	if e.forking {
		r.cp = e.cp // its steps are taken by save and restore too
	}
	path := make([]choice, 0, len(ks)+1)
	for _, k := range ks {
		e.buf = r.choices(e.buf)
		if k >= len(e.buf) {
			return nil, nil, fmt.Errorf("replaying a path: step %d of %d choices (an unstable state)", k, len(e.buf))
		}
		ch := e.buf[k]
		if err := r.apply(ch); err != nil {
			return nil, nil, err
		}
		e.res.Transitions++
		path = append(path, ch)
	}
	return r, path, nil
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

// partialTrace returns the kinds of events (a bit 1<<Kind each) that a
// depth-first search of cfg needs its runs to record, or 0 for all. A
// watched checker (watch.go) reads the events of each step as it is
// taken and asks for the whole trace only when a step may have broken
// it, which for an algorithm that keeps its property is never: the runs
// then record only what the watchers read (commit-consistency, the
// decisions; integrity and no-duplicates, the messages' events), not
// the sends, receipts and timers of every step, and judge rebuilds the
// trace by replaying the state's path (fullTrace). Breadth first, cycles
// and the checkers judged at terminal states, which read whole traces
// often, record them whole.
func partialTrace(cfg *Config) uint64 {
	if cfg.Strategy != DFS || cfg.Cycles || len(cfg.atEnd) > 0 || fullChecks || wholeTraces {
		return 0
	}
	kinds := uint64(1) // no event is of kind 0: a mask that records none
	for _, w := range cfg.watchers {
		switch {
		case w.decides:
			kinds |= 1 << trace.Output
		case w.msgs != 0:
			kinds |= 1<<trace.Send | 1<<trace.Recv | 1<<trace.Drop | 1<<trace.Dup
		default:
			return 0 // a watcher that reads more, or every state's trace
		}
	}
	return kinds
}

// wholeTraces makes every run record its whole trace (for tests that
// compare).
var wholeTraces = false

// fullTrace returns r's trace, reached by path, to be read at once and
// not kept: recorded again by replaying path if r records a partial one
// (Config.traceOnly), without counting transitions.
func (e *explorer) fullTrace(r *run, path []choice) (*trace.Trace, error) {
	if e.cfg.traceOnly == 0 {
		return r.rec.view(), nil
	}
	cfg := *e.cfg
	cfg.traceOnly = 0
	full, err := cfg.newRun(e.h)
	if err != nil {
		return nil, err
	}
	for _, ch := range path {
		if err := full.apply(ch); err != nil {
			return nil, err
		}
	}
	return full.rec.view(), nil
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
	tr, err := e.fullTrace(r, path)
	if err != nil {
		return false, err
	}
	results, err := check.Run(tr, names...)
	if err != nil {
		return false, err
	}
	for _, c := range results {
		switch c.Status {
		case check.Violated:
			sched, full, err := e.schedule(path)
			if err != nil {
				return false, err
			}
			if e.cfg.noLabels {
				// Judged without labels; shown, and judged again, with them.
				again, err := check.Run(full, c.Name)
				if err != nil {
					return false, err
				}
				if c = again[0]; c.Status != check.Violated {
					return false, fmt.Errorf("%s: violated without labels, %s with them", c.Name, c.Status)
				}
			}
			e.res.Violation = &Violation{Check: c, Schedule: sched, Trace: full, Terminal: terminal}
			return true, nil
		case check.Unknown:
			e.res.Unknown++
		}
	}
	return false, nil
}

// schedule describes a path as a Schedule, replaying it to name its
// steps, and returns the path's trace, with labels.
func (e *explorer) schedule(path []choice) (*Schedule, *trace.Trace, error) {
	cfg := *e.cfg
	cfg.noLabels, cfg.traceOnly = false, 0
	r, err := cfg.newRun(e.h)
	if err != nil {
		return nil, nil, err
	}
	s := e.cfg.schedule()
	for _, ch := range path {
		i := r.q.find(ch.seq)
		if i < 0 {
			return nil, nil, fmt.Errorf("replaying the counterexample: no pending event #%d", ch.seq)
		}
		s.Steps = append(s.Steps, Step{Act: ch.act, Seq: ch.seq, What: describe(r.s, r.q.keys[i], ch.act)})
		if err := r.apply(ch); err != nil {
			return nil, nil, err
		}
	}
	return s, r.rec.Trace(), nil
}

func (e *explorer) bfs() error {
	cfg := e.cfg
	root, err := e.replay(nil)
	if err != nil {
		return err
	}
	if e.forking {
		// A state's steps are taken from one run, saved and restored
		// (as depth first does); only a new state the search holds is
		// forked off.
		if err := root.copyable(e.cp, e.frame(0)); err != nil {
			if !errors.Is(err, sim.ErrNoFork) && !errors.Is(err, errNoClone) {
				return err
			}
			e.forking = false
			e.res.Engine = "replay (" + err.Error() + ")"
		} else {
			root.cp = e.cp
		}
	}
	rootFP := root.fingerprint()
	e.seen = newFPSet(false)
	e.seen.Add(rootFP)
	if cfg.Cycles {
		e.g = &graph{index: map[uint64]int32{}}
		e.g.node(rootFP, root.waiting)
	}
	var tr trail
	tr.add(-1, 0)
	held := map[int32]*run{0: root} // with forking, the runs of states not yet expanded
	root.w.dirty = 0
	if stop, err := e.judge(root, cfg.Safety, nil, false); stop || err != nil {
		return err
	}
	for i := 0; i < tr.Len(); i++ {
		var path []choice
		r := held[int32(i)]
		if r != nil {
			delete(held, int32(i))
			path, r.path = r.path, nil
		} else if r, path, err = e.replayTrail(&tr, int32(i)); err != nil {
			// (Past heldRuns, a state is reached again by replaying its
			// path; the replayed run copies on write as held runs do.)
			return err
		}
		e.res.MaxDepth = max(e.res.MaxDepth, len(path))
		chs := append([]choice(nil), r.choices(e.buf)...)
		if len(chs) == 0 {
			e.res.Terminal++
			if stop, err := e.judge(r, cfg.atEnd, path, true); stop || err != nil {
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
		var sv *saved
		for k, ch := range chs {
			// Forking, r is saved before its first step and restored
			// before each other; replaying, the last step takes r itself
			// and the others replay the path.
			child := r
			switch {
			case e.forking && k == 0 && len(chs) > 1:
				sv = e.frame(0)
				if err := r.save(sv); err != nil {
					return err
				}
			case e.forking && k > 0:
				r.restore(sv)
			case !e.forking && k < len(chs)-1:
				if child, err = e.replay(path); err != nil {
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
			tr.add(int32(i), k)
			if stop, err := e.judgeNew(child, append(path, ch)); stop || err != nil {
				return err
			}
			if e.forking && len(held) < heldRuns && e.roomToHold() {
				h := child
				if k < len(chs)-1 { // r goes on to the next step
					if h, err = child.fork(e.cp); err != nil {
						return err
					}
				}
				h.path = append(slices.Clip(path), ch)
				held[int32(tr.Len()-1)] = h
			}
			if e.seen.Len() >= cfg.MaxStates {
				e.res.Exhausted = false
				e.extra = tr.Bytes() + 48*len(held)
				return nil
			}
		}
	}
	e.extra = tr.Bytes() + 48*len(held)
	if e.g != nil {
		e.extra += e.g.bytes()
		if e.res.Exhausted {
			return e.judgeCycles(&tr)
		}
	}
	return nil
}
