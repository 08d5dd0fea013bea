package sim

import (
	"errors"
	"maps"
	"math/rand/v2"
	"unsafe"

	"github.com/cohort-go/cohort/proc"
)

// Saved is a run's state as Save took it, for Restore to bring back: a
// depth-first model checker saves a state once, takes one step from it,
// explores on, and restores it before the next step instead of forking a
// copy of the whole run per step (backtracking, as SPIN does with its
// undo of a transition). Its storage is reused from one Save to the next.
//
// Processes are kept by reference, not copied: a process is copy-on-write.
// Whoever steps the run after a Save or a Restore must give the process
// that steps a copy of its own first (SetProcess), so that the saved one
// is never changed; likewise a payload handed to a process (SetPayload).
type Saved struct {
	ok              bool
	now             int64
	seq             uint64
	slots           uint32
	nextTimer       proc.TimerID
	nextMsg         uint64
	evIndex         int
	st              Result
	stop            StopReason
	begun           bool
	items           []item
	free            []uint32
	nodes           []node
	pcgs            []rand.PCG // each node's random source's state
	lamports        []uint64
	netRand, wlRand rand.PCG
	timerBase       proc.TimerID
	timerWords      []uint64
	timerOld        map[proc.TimerID]struct{}
	fifo            map[uint64]int64
	armed           map[proc.ID]bool
	kinds           int
	sent            []int64
	disks           map[proc.ID]*disk
	diskRand        rand.PCG
}

// Save records the run's state in sv. The runs Fork refuses are refused
// (ErrNoFork), and so are runs whose slots span more than one chunk.
func (s *Sim) Save(sv *Saved) error {
	if err := s.forkable(); err != nil {
		return err
	}
	if len(s.items) > 1 {
		return errors.Join(ErrNoFork, errors.New("more events in flight than one chunk holds"))
	}
	sv.ok = true
	sv.now, sv.seq, sv.slots, sv.nextTimer, sv.nextMsg = s.now, s.seq, s.slots, s.nextTimer, s.nextMsg
	sv.evIndex, sv.st, sv.stop, sv.begun = s.evIndex, s.st, s.stop, s.begun
	sv.items = sv.items[:0]
	if len(s.items) > 0 {
		sv.items = append(sv.items, s.items[0]...)
	}
	sv.free = append(sv.free[:0], s.free...)
	sv.nodes = append(sv.nodes[:0], s.nodes...)
	sv.pcgs = sv.pcgs[:0]
	for i := range s.nodes {
		var p rand.PCG
		if r := s.nodes[i].rng; r != nil {
			p = pcgOf(r)
		}
		sv.pcgs = append(sv.pcgs, p)
	}
	sv.lamports = append(sv.lamports[:0], s.lamports...)
	sv.netRand, sv.wlRand = pcgOf(s.netRand), pcgOf(s.wlRand)
	sv.timerBase = s.timers.base
	sv.timerWords = append(sv.timerWords[:0], s.timers.words...)
	sv.timerOld = cloneInto(sv.timerOld, s.timers.old)
	sv.fifo = cloneInto(sv.fifo, s.fifo)
	sv.armed = cloneInto(sv.armed, s.armed)
	sv.kinds = len(s.kinds)
	sv.sent = append(sv.sent[:0], s.sent...)
	// Disks are copied on write, as processes are (ownDisk), and so is
	// the map of them (setDisk).
	sv.disks, s.disksShared = s.disks, true
	sv.diskRand = rand.PCG{}
	if s.diskRand != nil {
		sv.diskRand = pcgOf(s.diskRand)
	}
	s.shareDisks()
	return nil
}

// Restore brings the run back to the state sv holds, taken from this run
// by Save.
func (s *Sim) Restore(sv *Saved) {
	if !sv.ok {
		panic("sim: Restore of a state never saved")
	}
	s.now, s.seq, s.slots, s.nextTimer, s.nextMsg = sv.now, sv.seq, sv.slots, sv.nextTimer, sv.nextMsg
	s.evIndex, s.st, s.stop, s.begun = sv.evIndex, sv.st, sv.stop, sv.begun
	if len(s.items) > 0 {
		s.items[0] = append(s.items[0][:0], sv.items...)
	}
	s.free = append(s.free[:0], sv.free...)
	copy(s.nodes, sv.nodes)
	for i := range s.nodes {
		if r := s.nodes[i].rng; r != nil {
			setPCG(r, sv.pcgs[i])
		}
	}
	copy(s.lamports, sv.lamports)
	setPCG(s.netRand, sv.netRand)
	setPCG(s.wlRand, sv.wlRand)
	s.timers.base = sv.timerBase
	s.timers.words = append(s.timers.words[:0], sv.timerWords...)
	s.timers.old = cloneInto(s.timers.old, sv.timerOld)
	s.fifo = cloneInto(s.fifo, sv.fifo)
	s.armed = cloneInto(s.armed, sv.armed)
	if len(s.kinds) > sv.kinds {
		if s.kindShared {
			s.kindIdx, s.kindShared = maps.Clone(s.kindIdx), false
		}
		for _, k := range s.kinds[sv.kinds:] {
			delete(s.kindIdx, k)
		}
		s.kinds = s.kinds[:sv.kinds]
	}
	s.sent = append(s.sent[:0], sv.sent...)
	s.disks, s.disksShared = sv.disks, true
	if s.diskRand != nil {
		if sv.diskRand == (rand.PCG{}) {
			s.diskRand = nil // first drawn from since the save
		} else {
			setPCG(s.diskRand, sv.diskRand)
		}
	}
	s.shareDisks()
}

// shareDisks marks every disk as shared with a saved state.
func (s *Sim) shareDisks() {
	if s.diskOwn == nil {
		s.diskOwn = map[proc.ID]bool{}
	}
	clear(s.diskOwn)
}

// ownDisk makes process id's disk the run's own, copying it if a saved
// state shares it, before it is changed.
func (s *Sim) ownDisk(id proc.ID) {
	if s.diskOwn == nil || s.diskOwn[id] {
		return
	}
	if d := s.disks[id]; d != nil {
		s.setDisk(id, d.clone())
	}
	s.diskOwn[id] = true
}

// setDisk makes d process id's disk, copying the map of disks first if a
// saved state shares it.
func (s *Sim) setDisk(id proc.ID, d *disk) {
	if s.disksShared || s.disks == nil {
		c := make(map[proc.ID]*disk, len(s.disks)+1)
		maps.Copy(c, s.disks)
		s.disks, s.disksShared = c, false
	}
	s.disks[id] = d
}

// SetProcess replaces process id's state machine (a copy of its own, for
// a step after Save or Restore).
func (s *Sim) SetProcess(id proc.ID, p proc.Process) { s.nodes[id].p = p }

// SetPayload replaces the message, input or timer tag of the pending
// event in slot (a copy of its own, for the process it is handed to).
func (s *Sim) SetPayload(slot uint32, v any) {
	if it := s.item(slot); it.kind != evFault && it.kind != evFaultEnd && it.kind != evCall {
		it.val = v
	}
}

// cloneInto makes dst a copy of src (nil for nil), reusing dst's storage.
func cloneInto[K comparable, V any](dst, src map[K]V) map[K]V {
	if src == nil {
		return nil
	}
	if len(src) == 0 && len(dst) == 0 && dst != nil {
		return dst
	}
	if dst == nil {
		return maps.Clone(src)
	}
	clear(dst)
	maps.Copy(dst, src)
	return dst
}

// pcgOf and setPCG read and write the generator's state of a random source
// made by newProcRand.
func pcgOf(r *rand.Rand) rand.PCG { return (*procRand)(unsafe.Pointer(r)).pcg }
func setPCG(r *rand.Rand, p rand.PCG) {
	(*procRand)(unsafe.Pointer(r)).pcg = p
}
