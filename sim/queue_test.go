package sim

import (
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"
)

// The calendar queue must fire events in exactly the heap's order, for any
// mix of pushes (through Push or written in place) and pops in which nothing is scheduled before the present:
// bursts at one instant, spreads wide and narrow, far futures, and enough
// events to make it refine its grain and coarsen it again.
func TestCalendarMatchesHeapOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		typical := rapid.Int64Range(1, 1<<20).Draw(t, "typical")
		spread := rapid.Int64Range(1, 1<<24).Draw(t, "spread")
		cal, heap := newCalendarOf(typical, 64<<rapid.IntRange(0, 3).Draw(t, "size")), &timeQueue{}
		if rapid.Bool().Draw(t, "prefetch") {
			cal.prefetch = true // the path of a large run (prefetch.go)
		}
		var now int64
		var seq uint64
		check := func(op int) {
			a, b := cal.Pop(), heap.Pop()
			if a.at != b.At || a.seq != b.Seq || a.id != uint64(b.Slot) {
				t.Fatalf("op %d: calendar popped at=%d seq=%d, heap %+v", op, a.at, a.seq, b)
			}
			now = a.at
		}
		ops := rapid.IntRange(1, 3000).Draw(t, "ops")
		for i := 0; i < ops; i++ {
			if heap.Len() > 0 && rapid.IntRange(0, 2).Draw(t, "pop") == 0 {
				check(i)
				continue
			}
			var at int64
			switch rapid.IntRange(0, 3).Draw(t, "shape") {
			case 0: // a burst: many events at one instant
				at = now + spread/2
			case 1:
				at = now + rapid.Int64Range(0, spread).Draw(t, "delay")
			case 2:
				at = now + rapid.Int64Range(0, 64).Draw(t, "near")
			default:
				at = now + rapid.Int64Range(0, 1<<40).Draw(t, "far")
			}
			seq++
			e := event{at: at, seq: seq, item: item{id: seq}}
			if rapid.Bool().Draw(t, "in place") {
				// As a send writes it (Sim.send): where the calendar
				// says, or through Push if it has no place.
				if p := cal.slot(at, seq); p != nil {
					*p = e
				} else {
					cal.Push(&e)
				}
			} else {
				cal.Push(&e)
			}
			heap.Push(Key{At: at, Seq: seq, Slot: uint32(seq)})
			if cal.Len() != heap.Len() {
				t.Fatalf("op %d: calendar holds %d events, heap %d", i, cal.Len(), heap.Len())
			}
		}
		for i := 0; heap.Len() > 0; i++ {
			check(ops + i)
		}
		if cal.Len() != 0 {
			t.Fatalf("calendar has %d events left", cal.Len())
		}
	})
}

// Opening a crowded bucket stages its events by sub-bucket, so that the
// heap that orders them stays small however many events are pending.
func TestCalendarKeepsItsHeapSmall(t *testing.T) {
	cal := newCalendar(1e6)
	r := rand.New(rand.NewPCG(1, 2))
	var seq uint64
	for range 1 << 20 {
		seq++
		cal.Push(&event{at: int64(r.ExpFloat64() * 1e6), seq: seq})
	}
	first := cal.cur.Len() // the present's bucket, filled before any opening
	biggest := 0
	for i := range 1 << 20 {
		e := cal.Pop()
		if i > first {
			biggest = max(biggest, cal.cur.Len())
		}
		seq++
		cal.Push(&event{at: e.at + int64(r.ExpFloat64()*1e6), seq: seq})
	}
	if biggest > 100 {
		t.Errorf("heap of the open bucket grew to %d events, want at most 100", biggest)
	}
}

func BenchmarkQueues(b *testing.B) {
	const depth = 1 << 20
	b.Run("heap", func(b *testing.B) {
		r := rand.New(rand.NewPCG(1, 2))
		q := &timeQueue{}
		var seq uint64
		for range depth {
			seq++
			q.Push(Key{At: int64(r.ExpFloat64() * 1e6), Seq: seq})
		}
		b.ResetTimer()
		for range b.N {
			k := q.Pop()
			seq++
			q.Push(Key{At: k.At + int64(r.ExpFloat64()*1e6), Seq: seq})
		}
	})
	b.Run("calendar", func(b *testing.B) {
		r := rand.New(rand.NewPCG(1, 2))
		q := newCalendar(1e6)
		var seq uint64
		for range depth {
			seq++
			q.Push(&event{at: int64(r.ExpFloat64() * 1e6), seq: seq})
		}
		b.ResetTimer()
		for range b.N {
			e := q.Pop()
			seq++
			q.Push(&event{at: e.at + int64(r.ExpFloat64()*1e6), seq: seq})
		}
	})
}

// Events due at one instant, scheduled in the order they fire (a round
// timer every process sets to the same time), are read in place, not
// sifted through the heap, which holds only the events scheduled for the
// same instant as they fire.
func TestCalendarReadsAnInstantInPlace(t *testing.T) {
	cal := newCalendar(1e6)
	var seq uint64
	for range 1 << 16 {
		seq++
		cal.Push(&event{at: 5e6, seq: seq})
	}
	biggest, added := 0, 0
	var last uint64
	for i := 0; cal.Len() > 0; i++ {
		e := cal.Pop()
		if e.seq <= last || e.at != 5e6 {
			t.Fatalf("pop %d: at=%d seq=%d after seq %d", i, e.at, e.seq, last)
		}
		last = e.seq
		biggest = max(biggest, cal.cur.Len())
		if i%1000 == 0 { // an event scheduled for the present
			seq++
			added++
			cal.Push(&event{at: 5e6, seq: seq})
		}
	}
	if last != seq || biggest > added {
		t.Errorf("last popped seq %d of %d; the heap held up to %d events", last, seq, biggest)
	}
}

// A bucket whose events were added in the order they fire (each after the
// one before it) is read where they lie, block after block, and never
// copied into the staging area; one added out of order is staged and
// sorted. Both fire in the heap's order (TestCalendarMatchesHeapOrder).
func TestCalendarReadsAnOrderedBucketWithoutStaging(t *testing.T) {
	for _, c := range []struct {
		name    string
		ordered bool
	}{{"in order", true}, {"out of order", false}} {
		t.Run(c.name, func(t *testing.T) {
			cal := newCalendar(1e6)
			const n = 1000
			for i := range n {
				seq := uint64(i + 1)
				if !c.ordered && i == n/2 {
					seq = n + 1 // one event late in schedule order, added early
				} else if !c.ordered && i == n-1 {
					seq = uint64(n/2 + 1)
				}
				cal.Push(&event{at: 5e6, seq: seq})
			}
			var last uint64
			for i := 0; cal.Len() > 0; i++ {
				e := cal.Pop()
				if e.seq <= last {
					t.Fatalf("pop %d: seq %d after %d", i, e.seq, last)
				}
				last = e.seq
				if i == 0 && (len(cal.staged) == 0) != c.ordered {
					t.Fatalf("%d events staged of %d", len(cal.staged), n)
				}
			}
		})
	}
}
