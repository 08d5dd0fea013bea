package sim

import (
	"math/bits"
	"slices"
	"unsafe"
)

// event is a pending event with its contents: 64 bytes, one cache line.
// The default queue (calendar) stores events whole, so that the event that
// fires next is read from memory written in order, not fetched through a
// handle from wherever it was allocated.
type event struct {
	at  int64  // due time, virtual ns
	seq uint64 // schedule order; ties at equal at fire in seq order
	item
}

func (e *event) before(o *event) bool { return e.at < o.at || (e.at == o.at && e.seq < o.seq) }

// calendar is the simulator's default event queue (Brown, "Calendar
// queues", CACM 1988, with the two-level opening of Tang, Goh and Thng's
// ladder queue, 2005): it fires events in exactly the order of a heap — by
// at, then seq — at a cost that does not grow with the number of pending
// events.
//
// Time is cut into buckets of width 2^shift ns. A window of len(buckets)
// buckets starting at base holds the near future; the others are unsorted
// lists of fixed-size blocks (append is all a push costs; blocks are
// recycled, so a long run allocates nothing once warm), and events beyond
// the window wait in a heap (far). When the current bucket runs dry the
// window slides to the next occupied bucket, found through a bitmap, and
// far events that now fall inside the window move into their buckets.
//
// Opening a bucket distributes its events by a counting sort into
// sub-buckets of about four (staged). When a sub-bucket's turn comes it
// is sorted in place, once, and read front to back (run), so that popping
// costs a few comparisons whether a thousand or a hundred million events
// are pending, and an event is copied twice between its push and its pop
// (into its bucket's block, then into staged). An event scheduled into the
// open bucket goes into a small heap (cur) beside the run, and Pop takes
// the smaller of the two fronts; before either front fires, every
// sub-bucket that could hold an earlier event is loaded.
//
// Events that fall due at one instant — a round timer that every process
// of a gossip run sets to the same multiple of the period, the messages
// they send over a constant latency — share a sub-bucket that no counting
// sort can split, and they were scheduled, so lie, in the order they fire.
// A bucket remembers whether its events were added in the order they fire
// (each after the one before it); such a bucket is not staged when it
// opens but read in place, block after block (the chain), and each block
// is recycled once read: its events are copied once, not twice, and the
// opening reads none of them. At a million processes an instant holds
// 64 MB of events, which staging read twice and wrote once.
//
// It relies on the simulator never scheduling an event before the present,
// which holds for time order; a Queue that reorders (a model checker) is
// driven through slots instead (see Sim.push).
type calendar struct {
	shift    uint
	base     int64 // start of the current bucket
	idx      int   // index of the current bucket in buckets
	buckets  []bucket
	occupied []uint64 // bit i set: buckets[i] is not empty
	inWindow int      // events in buckets
	blocks   blockPool

	// The open bucket: its events by sub-bucket of width 2^subShift,
	// sub-bucket j in staged[bounds[j]:bounds[j+1]], those before sub
	// already loaded.
	staged   []event
	bounds   []int32
	fill     []int32
	subShift uint
	sub      int
	// The run, staged[pos:end]: the loaded sub-bucket, in order, popped
	// from the front.
	pos, end int
	// Or the run in place, when the open bucket's events were added in
	// order: chainLeft events from event chainK of block chain on, along
	// the bucket's list. spent is a block read to its end, recycled at the
	// next Pop (the event Pop returned last may lie in it); spentN, its
	// events.
	chain, spent      int32
	chainK, chainLeft int
	spentN            int

	cur eventHeap // events pushed into the open bucket
	far eventHeap
	n   int // pending events

	// The only pending event, when there is one alone: a run with a single
	// event in flight (a ping-pong) never touches the buckets.
	single    event
	hasSingle bool

	// The event Pop returned last: in the run (its message is let go at
	// the next Pop), or else copied to out.
	fromRun *event
	out     event

	// prefetch: ask the processor for the memory that pushes and
	// openings are about to touch (a large run's; see prefetch.go).
	prefetch bool
}

// A bucket is a list of blocks: events are appended to the tail block,
// and every block but the tail is full.
type bucket struct {
	head, tail int32  // block indexes; 0: empty (block 0 is never used)
	n          uint32 // events
	// mixed: some event was added before one that fires earlier. last
	// is the (at, seq) of the last event added.
	mixed   bool
	lastAt  int64
	lastSeq uint64
}

// newCalendar sizes buckets from the typical delay between an event and the
// events it causes (the mean latency): a few hundred buckets per mean
// latency and a window of about thirty mean latencies.
func newCalendar(typical int64) *calendar { return newCalendarOf(typical, 8192) }

// newCalendarOf has n buckets (a power of two, at least 64) of width
// typical/(n/32).
func newCalendarOf(typical int64, n int) *calendar {
	width := max(typical/int64(n/32), 1)
	return &calendar{
		shift:    uint(bits.Len64(uint64(width)) - 1),
		buckets:  make([]bucket, n),
		occupied: make([]uint64, n/64),
	}
}

func (c *calendar) Len() int { return c.n }

// Push adds a copy of *e. (Events are passed by pointer, here and in Pop:
// copying 64 bytes at every call on the way costs more than the queue's
// own work.)
func (c *calendar) Push(e *event) {
	c.n++
	if c.hasSingle {
		c.hasSingle = false
		c.push(&c.single)
	} else if c.n == 1 {
		c.single, c.hasSingle = *e, true
		return
	}
	c.push(e)
}

func (c *calendar) push(e *event) {
	d := (e.at - c.base) >> c.shift
	switch {
	case d <= 0:
		c.cur.Push(*e)
	case d < int64(len(c.buckets)):
		c.add((c.idx+int(d))&(len(c.buckets)-1), e)
	default:
		c.far.Push(*e)
	}
}

// slot returns the place in the window where an event due at at, of
// schedule order seq, is to be written, or nil if it goes elsewhere (Push
// then puts it there). The caller writes the whole event, with that at and
// seq; the place is counted as taken. Writing an event where it will wait, rather
// than building it and copying it there through Push, saves a send two
// copies of its 64 bytes and three calls.
func (c *calendar) slot(at int64, seq uint64) *event {
	if c.hasSingle {
		c.hasSingle = false
		c.push(&c.single)
		c.single = event{}
	}
	d := (at - c.base) >> c.shift
	if d <= 0 || d >= int64(len(c.buckets)) || c.n == 0 {
		return nil
	}
	c.n++
	return c.place((c.idx+int(d))&(len(c.buckets)-1), at, seq)
}

// add appends e to bucket i.
func (c *calendar) add(i int, e *event) { *c.place(i, e.at, e.seq) = *e }

// place takes the next free place in bucket i, for an event due at at of
// schedule order seq, and returns it.
func (c *calendar) place(i int, at int64, seq uint64) *event {
	b := &c.buckets[i]
	k := b.n % blockLen
	if b.n > 0 && (at < b.lastAt || at == b.lastAt && seq < b.lastSeq) {
		b.mixed = true
	}
	b.lastAt, b.lastSeq = at, seq
	if b.n == 0 {
		b.head = c.blocks.get()
		b.tail = b.head
		c.occupied[i>>6] |= 1 << (i & 63)
	} else if k == 0 {
		nb := c.blocks.get()
		*c.blocks.next(b.tail) = nb
		b.tail = nb
	}
	blk := c.blocks.at(b.tail)
	b.n++
	c.inWindow++
	if c.prefetch && k != blockLen-1 {
		// The next event for this bucket goes into the next line of its
		// block, a line written long ago or never: ask for it now, so
		// that writing it need not wait for memory.
		prefetch(unsafe.Pointer(&blk[k+1]))
	}
	return &blk[k]
}

// Pop removes the next event and returns it. It stays valid until the
// next Pop (Push does not move it): read in place in the run, or else
// copied aside.
func (c *calendar) Pop() *event {
	if c.fromRun != nil {
		c.fromRun.val = nil // let the message be collected
		c.fromRun = nil
	}
	if c.spent != 0 {
		c.blocks.put(c.spent, c.spentN)
		c.spent = 0
	}
	c.n--
	if c.hasSingle {
		// Nothing else is pending: move the window to the present, which
		// costs nothing over empty buckets.
		c.hasSingle = false
		c.out = c.single
		c.single = event{}
		e := &c.out
		if d := (e.at - c.base) >> c.shift; d > 0 {
			c.base = e.at >> c.shift << c.shift
			c.idx = (c.idx + int(d&int64(len(c.buckets)-1))) & (len(c.buckets) - 1)
		}
		return e
	}
	for {
		if c.chainLeft > 0 {
			// As the run below, read in place.
			e := &c.blocks.at(c.chain)[c.chainK]
			if c.cur.Len() > 0 && !e.before(&c.cur.h[0]) {
				c.out = c.cur.Pop()
				return &c.out
			}
			c.chainK++
			c.chainLeft--
			if c.chainK == blockLen || c.chainLeft == 0 {
				c.spent, c.spentN = c.chain, c.chainK
				c.chain, c.chainK = *c.blocks.next(c.chain), 0
				if c.prefetch && c.chain != 0 {
					// The blocks lie wherever the pool had one free:
					// ask for the one after next as this one is begun.
					if ahead := *c.blocks.next(c.chain); ahead != 0 {
						prefetchLines(unsafe.Pointer(c.blocks.at(ahead)), blockLen)
					}
				}
			}
			c.fromRun = e
			return e
		}
		if c.pos < c.end {
			// The run's events all come before the sub-buckets not yet
			// loaded: only cur can hold an earlier one.
			e := &c.staged[c.pos]
			if c.cur.Len() == 0 || e.before(&c.cur.h[0]) {
				c.pos++
				c.fromRun = e
				return e
			}
			c.out = c.cur.Pop()
			return &c.out
		}
		if c.sub < len(c.bounds)-1 {
			// Sub-buckets remain: load the next one unless cur's minimum
			// comes before anything it could hold.
			start := c.base + int64(c.sub)<<c.subShift
			if c.cur.Len() == 0 || c.cur.h[0].at >= start {
				c.load()
				continue
			}
		}
		if c.cur.Len() > 0 {
			c.out = c.cur.Pop()
			return &c.out
		}
		c.advance()
	}
}

// upcoming returns the event k places after the next one of the open
// bucket in the order of its sub-buckets, or nil: a hint for prefetching
// (in a sub-bucket not yet loaded, the events are not yet in order).
func (c *calendar) upcoming(k int) *event {
	if c.chainLeft > 0 {
		if k >= c.chainLeft {
			return nil
		}
		blk, i := c.chain, c.chainK+k
		for ; i >= blockLen; i -= blockLen {
			blk = *c.blocks.next(blk)
		}
		return &c.blocks.at(blk)[i]
	}
	if i := c.pos + k; i < len(c.staged) {
		return &c.staged[i]
	}
	return nil
}

// load makes the next sub-bucket the run, sorted in place: a sub-bucket
// holds a few events, so sorting it once costs less than passing each
// event through a heap. The run is empty then (its events came before the
// sub-bucket's start).
func (c *calendar) load() {
	lo, hi := int(c.bounds[c.sub]), int(c.bounds[c.sub+1])
	c.sub++
	sortEvents(c.staged[lo:hi])
	c.pos, c.end = lo, hi
}

// sortEvents sorts evs by (at, seq): by insertion when they are few or
// already in order (a burst at one instant was scheduled in the order it
// fires), by pattern-defeating quicksort otherwise. Seq is unique, so the
// order is total and any sort gives the same one.
func sortEvents(evs []event) {
	if len(evs) > 16 && !sorted(evs) {
		slices.SortFunc(evs, func(a, b event) int {
			if a.before(&b) {
				return -1
			}
			return 1
		})
		return
	}
	for i := 1; i < len(evs); i++ {
		if evs[i-1].before(&evs[i]) {
			continue
		}
		e := evs[i]
		j := i
		for j > 0 && e.before(&evs[j-1]) {
			evs[j] = evs[j-1]
			j--
		}
		evs[j] = e
	}
}

// sorted reports whether evs are sorted by (at, seq).
func sorted(evs []event) bool {
	for i := 1; i < len(evs); i++ {
		if !evs[i-1].before(&evs[i]) {
			return false
		}
	}
	return true
}

// advance slides the window to the next non-empty bucket and opens it, or
// jumps to the earliest far event when the window is empty. It is called
// only when cur, the run (staged or in place) and staged are empty.
func (c *calendar) advance() {
	if c.inWindow == 0 {
		c.base = c.far.h[0].at >> c.shift << c.shift
	} else {
		next := c.nextOccupied()
		c.base += int64((next-c.idx)&(len(c.buckets)-1)) << c.shift
		c.idx = next
		c.open(next)
	}
	// Far events that the slide brought inside the window.
	end := c.base + int64(len(c.buckets))<<c.shift
	for c.far.Len() > 0 && c.far.h[0].at < end {
		e := c.far.Pop()
		c.push(&e)
	}
}

// open stages bucket i's events by sub-bucket, a counting sort on their
// time, and recycles its blocks.
func (c *calendar) open(i int) {
	b := c.buckets[i]
	c.buckets[i] = bucket{}
	c.occupied[i>>6] &^= 1 << (i & 63)
	c.inWindow -= int(b.n)
	c.sub, c.pos, c.end = 0, 0, 0
	if !b.mixed && b.n > blockLen {
		// In order already: the run is the bucket's list, read in place.
		c.staged, c.bounds = c.staged[:0], append(c.bounds[:0], 0)
		c.chain, c.chainK, c.chainLeft = b.head, 0, int(b.n)
		if c.prefetch {
			prefetchLines(unsafe.Pointer(c.blocks.at(b.head)), blockLen)
			if ahead := *c.blocks.next(b.head); ahead != 0 {
				prefetchLines(unsafe.Pointer(c.blocks.at(ahead)), blockLen)
			}
		}
		return
	}
	if b.n <= blockLen {
		// One block: one sub-bucket, the whole bucket.
		c.staged = append(c.staged[:0], c.blocks.at(b.head)[:b.n]...)
		c.blocks.put(b.head, int(b.n))
		c.bounds = append(c.bounds[:0], 0, int32(b.n))
		c.subShift = c.shift
		return
	}
	// About subEvents events per sub-bucket, and no sub-bucket finer than
	// 1 ns.
	k := min(c.shift, uint(bits.Len32(b.n/subEvents)))
	m := 1 << k
	c.subShift = c.shift - k
	c.bounds = append(c.bounds[:0], make([]int32, m+1)...)
	// The blocks were written long ago, and lie wherever the pool had
	// one free: in a large run, each is read from memory. The count
	// fetches the block after next while it reads one, so that reading
	// waits for memory once a block, not once a line; the second pass
	// finds them in cache.
	var ahead int32
	if c.prefetch {
		ahead = b.head
		prefetchLines(unsafe.Pointer(c.blocks.at(ahead)), blockLen)
		if ahead = *c.blocks.next(ahead); ahead != 0 {
			prefetchLines(unsafe.Pointer(c.blocks.at(ahead)), blockLen)
		}
	}
	base, sh, bounds := c.base, c.subShift, c.bounds[1:]
	for blk, left := b.head, b.n; blk != 0; blk, left = *c.blocks.next(blk), left-blockLen {
		if ahead != 0 {
			if ahead = *c.blocks.next(ahead); ahead != 0 {
				prefetchLines(unsafe.Pointer(c.blocks.at(ahead)), blockLen)
			}
		}
		x := c.blocks.at(blk)[:min(left, blockLen)]
		for k := range x {
			bounds[uint64(x[k].at-base)>>sh]++
		}
	}
	for j := 1; j <= m; j++ {
		c.bounds[j] += c.bounds[j-1]
	}
	if cap(c.staged) < int(b.n) {
		c.staged = make([]event, b.n)
		adviseHuge(c.staged)
	}
	c.staged = c.staged[:b.n]
	c.fill = append(c.fill[:0], c.bounds[:m]...) // next free place in each sub-bucket
	fill, staged := c.fill, c.staged
	for blk, left := b.head, b.n; blk != 0; left -= blockLen {
		x := c.blocks.at(blk)[:min(left, blockLen)]
		for k := range x {
			s := uint64(x[k].at-base) >> sh
			staged[fill[s]] = x[k]
			fill[s]++
		}
		next := *c.blocks.next(blk)
		c.blocks.put(blk, int(min(left, blockLen)))
		blk = next
	}
}

// nextOccupied returns the index of the first non-empty bucket after the
// current one, going round the ring. It must only be called when some
// bucket is occupied.
func (c *calendar) nextOccupied() int {
	n := len(c.buckets)
	start := (c.idx + 1) & (n - 1)
	w := start >> 6
	word := c.occupied[w] &^ (1<<(start&63) - 1) // bits at or after start
	for range len(c.occupied) + 1 {
		if word != 0 {
			return w<<6 + bits.TrailingZeros64(word)
		}
		w = (w + 1) & (len(c.occupied) - 1) // a power of two
		word = c.occupied[w]
	}
	panic("calendar: no occupied bucket")
}

// blockLen events make a block: 1 KiB, cache-line aligned (blocks live in
// page-aligned chunks), so that no event straddles two lines.
const blockLen = 16

type block [blockLen]event

// blockPool hands out blocks by index, in chunks that are never moved (a
// run with a hundred million pending events never copies them), and
// recycles freed blocks last-in first-out, so that a reused block is
// likely still in cache. The links of the bucket lists and of the free
// list are kept beside the blocks, in nexts.
type blockPool struct {
	chunks [][]block
	nexts  [][]int32
	used   int32 // blocks ever handed out, counting the unused block 0
	free   int32 // head of the free list; 0: empty
}

const blockChunkBits = 12 // 4096 blocks (4 MiB) per chunk

func (p *blockPool) at(i int32) *block {
	return &p.chunks[i>>blockChunkBits][i&(1<<blockChunkBits-1)]
}

func (p *blockPool) next(i int32) *int32 {
	return &p.nexts[i>>blockChunkBits][i&(1<<blockChunkBits-1)]
}

func (p *blockPool) get() int32 {
	if i := p.free; i != 0 {
		n := p.next(i)
		p.free, *n = *n, 0
		return i
	}
	if p.used == 0 {
		p.used = 1 // block 0 stands for "none"
	}
	i := p.used
	p.used++
	c, j := int(i>>blockChunkBits), int(i&(1<<blockChunkBits-1))
	if c == len(p.chunks) {
		p.chunks = append(p.chunks, nil)
		p.nexts = append(p.nexts, nil)
	}
	if j >= cap(p.chunks[c]) {
		// The first chunk grows by doubling, so that small runs stay
		// small; the others are made whole.
		size := 1 << blockChunkBits
		if c == 0 {
			size = min(max(16, 2*cap(p.chunks[0])), size)
		}
		p.chunks[c] = append(make([]block, 0, size), p.chunks[c]...)
		adviseHuge(p.chunks[c])
		p.nexts[c] = append(make([]int32, 0, size), p.nexts[c]...)
	}
	p.chunks[c] = p.chunks[c][:j+1]
	p.nexts[c] = p.nexts[c][:j+1]
	return i
}

// put returns block i, whose first n events were in use, to the free
// list. Those events are cleared so that the messages they refer to can
// be collected.
func (p *blockPool) put(i int32, n int) {
	clear(p.at(i)[:n])
	*p.next(i) = p.free
	p.free = i
}

// eventHeap is a 4-ary min-heap of events on (at, seq). Four children per
// node halve the depth of a binary heap.
type eventHeap struct{ h []event }

func (q *eventHeap) Len() int { return len(q.h) }

func (q *eventHeap) Push(e event) {
	q.h = append(q.h, e)
	q.up(len(q.h) - 1)
}

func (q *eventHeap) up(i int) {
	e := q.h[i]
	for i > 0 {
		p := (i - 1) / 4
		if !e.before(&q.h[p]) {
			break
		}
		q.h[i] = q.h[p]
		i = p
	}
	q.h[i] = e
}

func (q *eventHeap) Pop() event {
	top := q.h[0]
	n := len(q.h) - 1
	q.h[0] = q.h[n]
	q.h[n] = event{} // let the message be collected
	q.h = q.h[:n]
	if n > 1 {
		q.down(0)
	}
	return top
}

func (q *eventHeap) down(i int) {
	n := len(q.h)
	e := q.h[i]
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		best := c
		for j := c + 1; j < c+4 && j < n; j++ {
			if q.h[j].before(&q.h[best]) {
				best = j
			}
		}
		if !q.h[best].before(&e) {
			break
		}
		q.h[i] = q.h[best]
		i = best
	}
	q.h[i] = e
}

// subEvents is about the number of events in a sub-bucket of a bucket
// opened: a sub-bucket is sorted by insertion, which moves whole events,
// and each costs Pop a load; four costs fewer instructions a delivery
// than two or eight (PHOLD at 10⁵ processes).
const subEvents = 4
