package sim

import "math/bits"

// calendar is the default Queue: a calendar queue that fires events in
// exactly the order of timeQueue — by At, then Seq — at a cost that does
// not grow with the number of pending events.
//
// Time is cut into buckets of width 2^shift ns. A window of len(buckets)
// buckets starting at base holds the near future; the bucket that contains
// the present is kept in a small heap (cur), the others are unsorted lists
// (append is all a push costs), and events beyond the window wait in a heap
// (far). When cur runs dry the window slides one bucket: the next bucket
// is heapified into cur and far events that now fall inside the window are
// moved into their buckets. With a million events in flight, a pop touches
// a heap of a few thousand keys instead of one of millions.
//
// It relies on the simulator never scheduling an event before the present,
// which holds for time order; a Queue that reorders (a model checker) brings
// its own structure.
type calendar struct {
	shift    uint
	base     int64 // start of the current bucket
	idx      int   // index of the current bucket in buckets
	buckets  [][]Key
	inWindow int // keys in buckets (not counting cur)
	cur      timeQueue
	far      timeQueue
}

// newCalendar sizes buckets from the typical delay between an event and the
// events it causes (the mean latency): a few hundred buckets per mean
// latency and a window of about thirty mean latencies.
func newCalendar(typical int64) *calendar {
	width := max(typical/256, 1)
	return &calendar{
		shift:   uint(bits.Len64(uint64(width)) - 1),
		buckets: make([][]Key, 8192),
	}
}

func (c *calendar) Len() int { return c.cur.Len() + c.inWindow + c.far.Len() }

func (c *calendar) Push(k Key) {
	d := (k.At - c.base) >> c.shift
	switch {
	case d <= 0:
		c.cur.Push(k)
	case d < int64(len(c.buckets)):
		i := (c.idx + int(d)) % len(c.buckets)
		c.buckets[i] = append(c.buckets[i], k)
		c.inWindow++
	default:
		c.far.Push(k)
	}
}

func (c *calendar) Pop() Key {
	for c.cur.Len() == 0 {
		c.advance()
	}
	return c.cur.Pop()
}

// advance slides the window to the next non-empty bucket.
func (c *calendar) advance() {
	if c.inWindow == 0 {
		// Nothing near: jump to the bucket of the earliest far event.
		c.base = c.far.h[0].At >> c.shift << c.shift
	} else {
		c.base += 1 << c.shift
		c.idx = (c.idx + 1) % len(c.buckets)
	}
	b := c.buckets[c.idx]
	c.inWindow -= len(b)
	for _, k := range b {
		c.cur.Push(k)
	}
	c.buckets[c.idx] = b[:0]
	// Far events that the slide brought inside the window.
	end := c.base + int64(len(c.buckets))<<c.shift
	for c.far.Len() > 0 && c.far.h[0].At < end {
		c.Push(c.far.Pop())
	}
}
