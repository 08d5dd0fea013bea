package sim

// Key is a pending event as a Queue sees it: when it is due, the order in
// which it was scheduled (unique; ties at equal At fire in Seq order), and a
// slot that the simulator uses to find the event's contents (see
// Sim.Describe).
type Key struct {
	At   int64  // due time, virtual ns
	Seq  uint64 // schedule order
	Slot uint32 // the simulator's handle on the event
}

// Queue holds the pending events and decides which fires next. The default
// (nil in Config) fires the earliest, breaking ties by Seq. A model checker
// can drive the same simulator through every delivery order by supplying a
// Queue whose Pop follows a schedule; the simulator then advances virtual
// time to max(now, At) of whatever it is given.
type Queue interface {
	Push(k Key)
	Pop() Key // only called when Len() > 0
	Len() int
}

// timeQueue is a 4-ary min-heap on (At, Seq). Four children per node halve
// the depth of a binary heap, and sifting moves 24-byte keys, not events.
type timeQueue struct{ h []Key }

func less(a, b Key) bool { return a.At < b.At || (a.At == b.At && a.Seq < b.Seq) }

func (q *timeQueue) Len() int { return len(q.h) }

func (q *timeQueue) Push(k Key) {
	q.h = append(q.h, k)
	i := len(q.h) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !less(k, q.h[p]) {
			break
		}
		q.h[i] = q.h[p]
		i = p
	}
	q.h[i] = k
}

func (q *timeQueue) Pop() Key {
	top := q.h[0]
	n := len(q.h) - 1
	last := q.h[n]
	q.h = q.h[:n]
	if n == 0 {
		return top
	}
	i := 0
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		best := c
		for j := c + 1; j < c+4 && j < n; j++ {
			if less(q.h[j], q.h[best]) {
				best = j
			}
		}
		if !less(q.h[best], last) {
			break
		}
		q.h[i] = q.h[best]
		i = best
	}
	q.h[i] = last
	return top
}
