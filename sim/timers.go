package sim

import (
	"math/bits"

	"github.com/cohort-go/cohort/proc"
)

// timerSet is the set of live timers: set, and neither fired nor cancelled.
// A cancelled timer stays in the event queue and is skipped when it comes
// up, so the set is asked once per timer event and changed twice per timer:
// in a gossip run, where every process re-arms a round timer, it is among
// the simulator's hottest paths, and a hash map spent a fifth of the run
// on it.
//
// Timer IDs are handed out in increasing order (1, 2, 3 ...), and most
// timers die soon after later ones are set, so the live ones are nearly
// all in a short, recent range of IDs: the set is a bitmap over the window
// [base, base+64·len(words)), which slides forward as its oldest word
// empties. A timer still live when the window has grown past maxWindow
// words (it outlives millions of later timers: a long timeout) moves to
// the map old, so the window's size stays bounded however long such a
// timer lives. Asking about an ID that was never handed out, or whose
// timer already fired or was cancelled, finds nothing and changes
// nothing: cancelling a timer twice or after it fired is harmless.
type timerSet struct {
	base  proc.TimerID // the ID of bit 0 of words[0]; a multiple of 64
	words []uint64
	old   map[proc.TimerID]struct{} // live timers below base
	limit int                       // the window's most words; 0: maxWindow
}

// maxWindow bounds the bitmap: 32 Ki words, 256 KiB, two million IDs.
const maxWindow = 1 << 15

// add puts id in the set; id must be above every ID added before.
func (t *timerSet) add(id proc.TimerID) {
	w := int((id - t.base) / 64)
	for w >= len(t.words) {
		t.words = append(t.words, 0)
	}
	t.words[w] |= 1 << (id % 64)
	limit := t.limit
	if limit == 0 {
		limit = maxWindow
	}
	for len(t.words) > limit {
		// Spill the oldest word's live timers and slide past it.
		for b := t.words[0]; b != 0; b &= b - 1 {
			if t.old == nil {
				t.old = map[proc.TimerID]struct{}{}
			}
			t.old[t.base+proc.TimerID(bits.TrailingZeros64(b))] = struct{}{}
		}
		t.words[0] = 0
		t.trim()
	}
}

// has reports whether id is live.
func (t *timerSet) has(id proc.TimerID) bool {
	if id < t.base {
		_, ok := t.old[id]
		return ok
	}
	w := (id - t.base) / 64
	return w < proc.TimerID(len(t.words)) && t.words[w]&(1<<(id%64)) != 0
}

// remove takes id out of the set, if it is there.
func (t *timerSet) remove(id proc.TimerID) {
	if id < t.base {
		delete(t.old, id)
		return
	}
	w := (id - t.base) / 64
	if w < proc.TimerID(len(t.words)) {
		t.words[w] &^= 1 << (id % 64)
		t.trim()
	}
}

// trim slides the window past its empty oldest words. The newest word
// stays: the next ID goes there or after it.
func (t *timerSet) trim() {
	for len(t.words) > 1 && t.words[0] == 0 {
		t.words = t.words[1:] // append copies the live words when it must grow
		t.base += 64
	}
}
