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
	occupied []uint64 // bit i set: buckets[i] is not empty
	inWindow int      // keys in buckets (not counting cur)
	cur      timeQueue
	far      timeQueue
}

// newCalendar sizes buckets from the typical delay between an event and the
// events it causes (the mean latency): a few hundred buckets per mean
// latency and a window of about thirty mean latencies.
func newCalendar(typical int64) *calendar {
	const n = 8192
	width := max(typical/256, 1)
	return &calendar{
		shift:    uint(bits.Len64(uint64(width)) - 1),
		buckets:  make([][]Key, n),
		occupied: make([]uint64, n/64),
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
		c.occupied[i>>6] |= 1 << (i & 63)
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

// advance slides the window to the next non-empty bucket, skipping empty
// ones through the occupancy bitmap, or jumps to the earliest far event
// when the window is empty.
func (c *calendar) advance() {
	if c.inWindow == 0 {
		c.base = c.far.h[0].At >> c.shift << c.shift
	} else {
		next := c.nextOccupied()
		c.base += int64((next-c.idx+len(c.buckets))%len(c.buckets)) << c.shift
		c.idx = next
	}
	b := c.buckets[c.idx]
	c.inWindow -= len(b)
	for _, k := range b {
		c.cur.Push(k)
	}
	c.buckets[c.idx] = b[:0]
	c.occupied[c.idx>>6] &^= 1 << (c.idx & 63)
	// Far events that the slide brought inside the window.
	end := c.base + int64(len(c.buckets))<<c.shift
	for c.far.Len() > 0 && c.far.h[0].At < end {
		c.Push(c.far.Pop())
	}
}

// nextOccupied returns the index of the first non-empty bucket after the
// current one, going round the ring. It must only be called when some
// bucket is occupied.
func (c *calendar) nextOccupied() int {
	n := len(c.buckets)
	start := (c.idx + 1) % n
	w := start >> 6
	word := c.occupied[w] &^ (1<<(start&63) - 1) // bits at or after start
	for range len(c.occupied) + 1 {
		if word != 0 {
			return w<<6 + bits.TrailingZeros64(word)
		}
		w = (w + 1) % len(c.occupied)
		word = c.occupied[w]
	}
	panic("calendar: no occupied bucket")
}
