package globalstate

import (
	"fmt"
	"math/bits"

	"github.com/cohort-go/cohort/trace"
)

// A cut whose entries fit in 64 bits together — every run small enough
// for a breadth-first search of its lattice to finish — is packed into one
// word: entry p in bits shift[p] up from there, as wide as p's history
// length needs. Adding p's next event adds 1<<shift[p]; a level is a list
// of words and its set a table of words, without slices to hash and
// compare.
type packing struct {
	shift []uint
	mask  []uint64
}

// wideCuts makes the search use cuts of n entries even where they fit in
// a word: for the tests of the general code.
var wideCuts = false

func (l *Lattice) packing() (packing, bool) {
	if wideCuts {
		return packing{}, false
	}
	pk := packing{shift: make([]uint, l.n), mask: make([]uint64, l.n)}
	var total uint
	for p := range l.n {
		w := uint(bits.Len(uint(l.size[p])))
		pk.shift[p], pk.mask[p] = total, 1<<w-1
		total += w
		if total > 64 {
			return packing{}, false
		}
	}
	return pk, true
}

func (pk packing) get(k uint64, p int) int32 { return int32(k >> pk.shift[p] & pk.mask[p]) }

// enabledPacked is enabled for a packed cut.
func (l *Lattice) enabledPacked(pk packing, k uint64, p int) bool {
	v := int(pk.get(k, p))
	if v >= l.size[p] {
		return false
	}
	g := l.off[p] + v
	q := l.from[g]
	return q < 0 || pk.get(k, int(q)) >= l.fromPos[g]
}

// avoidPacked is avoid over packed cuts. A level is kept sorted, which
// makes it a set without a table: adding p's next event to every state of
// a sorted level adds the same word to each, so the states it reaches are
// sorted too, and the next level is the merge of the n sorted lists, one
// per process, in which a state reached from several predecessors comes
// out several times in a row. The merge reads the level in order and
// writes the next one in order, which keeps it in the cache.
func (l *Lattice) avoidPacked(b *bound, pk packing) (lin []int, avoided bool, level int, states int64, err error) {
	n := l.n
	buf := make(trace.Cut, n)
	load := func(k uint64) trace.Cut {
		for p := range buf {
			buf[p] = int(pk.get(k, p))
		}
		return buf
	}
	states = 1
	if b.eval(load(0)) {
		return nil, false, 0, states, nil
	}
	if l.events == 0 {
		return []int{}, true, 0, states, nil
	}
	type step struct{ parent, proc int32 }
	steps := [][]step{{{-1, -1}}}
	cur := []uint64{0}
	var next []uint64
	// A cursor is process p's list: the state at index i of the level with
	// p's next event added, key.
	type cursor struct {
		key  uint64
		i, p int
	}
	heap := make([]cursor, 0, n)
	down := func(i int) {
		for {
			m := i
			if c := 2*i + 1; c < len(heap) && heap[c].key < heap[m].key {
				m = c
			}
			if c := 2*i + 2; c < len(heap) && heap[c].key < heap[m].key {
				m = c
			}
			if m == i {
				return
			}
			heap[i], heap[m] = heap[m], heap[i]
			i = m
		}
	}
	// seek moves c to the first state, from its index on, where its
	// process's next event is enabled.
	seek := func(c *cursor) bool {
		for ; c.i < len(cur); c.i++ {
			if k := cur[c.i]; l.enabledPacked(pk, k, c.p) {
				c.key = k + 1<<pk.shift[c.p]
				return true
			}
		}
		return false
	}
	for level = 1; ; level++ {
		heap = heap[:0]
		for p := range n {
			if c := (cursor{p: p}); seek(&c) {
				heap = append(heap, c)
			}
		}
		for i := len(heap)/2 - 1; i >= 0; i-- {
			down(i)
		}
		next = next[:0]
		var here []step
		last, have := uint64(0), false
		for len(heap) > 0 {
			c := &heap[0]
			if k := c.key; !have || k != last {
				last, have = k, true
				if states >= l.opt.MaxStates {
					return nil, false, 0, states, l.tooMany()
				}
				states++
				if !b.eval(load(k)) {
					if int64(len(next)+1)*int64(n) > l.opt.MaxEntries {
						return nil, false, 0, states, fmt.Errorf("%w: level %d of the lattice holds more than %d states of %d processes (the memory allowed)",
							ErrTooLarge, level, len(next), n)
					}
					next = append(next, k)
					here = append(here, step{int32(c.i), int32(c.p)})
				}
			}
			c.i++
			if !seek(c) {
				heap[0] = heap[len(heap)-1]
				heap = heap[:len(heap)-1]
			}
			down(0)
		}
		if len(here) == 0 {
			return nil, false, level, states, nil
		}
		steps = append(steps, here)
		if level == l.events {
			return l.walkBack(level, func(lv, i int) (int, int) {
				st := steps[lv][i]
				return int(st.parent), int(st.proc)
			}), true, 0, states, nil
		}
		cur, next = next, cur
	}
}

// walkBack rebuilds the linearization that reached the final state, at
// level, from each level's step (the predecessor's index on the level
// below, the process advanced).
func (l *Lattice) walkBack(level int, step func(lv, i int) (parent, proc int)) []int {
	procs := make([]int, level)
	i := 0
	for lv := level; lv > 0; lv-- {
		var p int
		i, p = step(lv, i)
		procs[lv-1] = p
	}
	c := make([]int, l.n)
	lin := make([]int, level)
	for j, p := range procs {
		c[p]++
		lin[j] = l.Event(p, c[p])
	}
	return lin
}
