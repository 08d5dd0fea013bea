package sim

import (
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"
)

// The calendar queue must fire keys in exactly the heap's order, for any
// mix of pushes and pops in which nothing is scheduled before the present.
func TestCalendarMatchesHeapOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		typical := rapid.Int64Range(1, 1<<20).Draw(t, "typical")
		spread := rapid.Int64Range(1, 1<<24).Draw(t, "spread")
		cal, heap := newCalendar(typical), &timeQueue{}
		var now int64
		var seq uint64
		ops := rapid.IntRange(1, 400).Draw(t, "ops")
		for i := 0; i < ops; i++ {
			if heap.Len() > 0 && rapid.Bool().Draw(t, "pop") {
				a, b := cal.Pop(), heap.Pop()
				if a != b {
					t.Fatalf("op %d: calendar popped %+v, heap %+v", i, a, b)
				}
				now = a.At
				continue
			}
			seq++
			k := Key{At: now + rapid.Int64Range(0, spread).Draw(t, "delay"), Seq: seq, Slot: uint32(seq)}
			cal.Push(k)
			heap.Push(k)
		}
		for heap.Len() > 0 {
			if a, b := cal.Pop(), heap.Pop(); a != b {
				t.Fatalf("drain: calendar popped %+v, heap %+v", a, b)
			}
		}
		if cal.Len() != 0 {
			t.Fatalf("calendar has %d keys left", cal.Len())
		}
	})
}

func BenchmarkQueues(b *testing.B) {
	for _, q := range []struct {
		name string
		mk   func() Queue
	}{{"heap", func() Queue { return &timeQueue{} }}, {"calendar", func() Queue { return newCalendar(1e6) }}} {
		b.Run(q.name, func(b *testing.B) {
			const depth = 1 << 20
			r := rand.New(rand.NewPCG(1, 2))
			qu := q.mk()
			var seq uint64
			for i := 0; i < depth; i++ {
				seq++
				qu.Push(Key{At: int64(r.ExpFloat64() * 1e6), Seq: seq})
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k := qu.Pop()
				seq++
				qu.Push(Key{At: k.At + int64(r.ExpFloat64()*1e6), Seq: seq})
			}
		})
	}
}
