package epidemic

import "github.com/cohort-go/cohort/proc"

// SWIM's dissemination buffer (Das, Gupta & Motivala 2002, §4.1): the
// updates a member piggybacks on its pings and acks, each sent about
// λ·log n times, the least sent first. Its bookkeeping lives here so that
// swim.go reads as the protocol.

// bcast is an update in the dissemination buffer: sent so many times,
// id its order of arrival.
type bcast struct {
	u    Fact
	id   uint64
	sent int
}

// bqueue is the dissemination buffer as a binary heap, the least sent
// first and the newest first among equals: taking the next update, or
// replacing one, costs O(log q) for a buffer of q, which a cluster that a
// thousand members join at once fills. The updates are held by value, in
// one array: a member's buffer, usually a few updates, is a few cache
// lines. The update about a member is found by a scan of the array, or,
// in a buffer of more than aboutAbove updates, in the index at, which
// then follows every move.
type bqueue struct {
	q  []bcast
	at map[proc.ID]int
}

// aboutAbove is the buffer's size past which it keeps its index.
const aboutAbove = 64

// find is where the update about member is.
func (h *bqueue) find(member proc.ID) (int, bool) {
	if h.at != nil {
		i, ok := h.at[member]
		return i, ok
	}
	for i := range h.q {
		if h.q[i].u.Member == member {
			return i, true
		}
	}
	return 0, false
}

// put places b at i.
func (h *bqueue) put(i int, b bcast) {
	h.q[i] = b
	if h.at != nil {
		h.at[b.u.Member] = i
	}
}

// up moves the update at i towards the root to its place.
func (h *bqueue) up(i int) {
	b := h.q[i]
	for i > 0 {
		p := (i - 1) / 2
		if !b.before(&h.q[p]) {
			break
		}
		h.put(i, h.q[p])
		i = p
	}
	h.put(i, b)
}

// down moves the update at i towards the leaves to its place, and
// reports whether it moved.
func (h *bqueue) down(i int) bool {
	b, n, i0 := h.q[i], len(h.q), i
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h.q[r].before(&h.q[c]) {
			c = r
		}
		if !h.q[c].before(&b) {
			break
		}
		h.put(i, h.q[c])
		i = c
	}
	h.put(i, b)
	return i > i0
}

// fix restores the order after the update at i changed.
func (h *bqueue) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

// push adds b, and the index once the buffer outgrows the scan.
func (h *bqueue) push(b bcast) {
	h.q = append(h.q, b)
	if h.at == nil && len(h.q) > aboutAbove {
		h.at = make(map[proc.ID]int, 2*len(h.q))
		for i, x := range h.q {
			h.at[x.u.Member] = i
		}
	}
	h.up(len(h.q) - 1)
}

// pop takes the first update out.
func (h *bqueue) pop() bcast {
	b, n := h.q[0], len(h.q)-1
	if h.at != nil {
		delete(h.at, b.u.Member)
	}
	if n > 0 {
		h.q[0] = h.q[n]
		h.q = h.q[:n]
		h.down(0)
	} else {
		h.q = h.q[:0]
	}
	if h.at != nil && n < aboutAbove/2 {
		h.at = nil
	}
	return b
}

// reset empties the buffer.
func (h *bqueue) reset() {
	h.q, h.at = h.q[:0], nil
}
