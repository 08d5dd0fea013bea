package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// randomOrder is a Queue that fires a random pending event instead of the
// earliest: the kind of scheduler a model checker or a fuzzer of delivery
// orders plugs into the simulator. It proves the interface suffices: the
// simulator advances time to max(now, At) of whatever it is handed.
type randomOrder struct {
	keys []Key
	r    *rand.Rand
}

func (q *randomOrder) Push(k Key) { q.keys = append(q.keys, k) }
func (q *randomOrder) Len() int   { return len(q.keys) }
func (q *randomOrder) Pop() Key {
	i := q.r.IntN(len(q.keys))
	k := q.keys[i]
	q.keys[i] = q.keys[len(q.keys)-1]
	q.keys = q.keys[:len(q.keys)-1]
	return k
}

func TestAnotherQueueCanDriveTheSimulator(t *testing.T) {
	orders := map[string]bool{}
	for seed := uint64(1); seed <= 20; seed++ {
		q := &randomOrder{r: rand.New(rand.NewPCG(seed, 1))}
		s, res := run(t, Config{Nodes: 2, Seed: 1, New: counters(2, 6), Queue: q})
		got := received(s, 1)
		if len(got) != 6 || res.Delivered != 6 {
			t.Fatalf("seed %d: delivered %v", seed, got)
		}
		sorted := slices.Clone(got)
		slices.Sort(sorted)
		if !slices.Equal(sorted, []int{0, 1, 2, 3, 4, 5}) {
			t.Fatalf("seed %d: delivered %v, want a permutation of 0..5", seed, got)
		}
		orders[fmtInts(got)] = true
	}
	if len(orders) < 5 {
		t.Errorf("20 random schedules produced only %d delivery orders", len(orders))
	}
}

func fmtInts(xs []int) string {
	b := []byte{}
	for _, x := range xs {
		b = append(b, byte('0'+x))
	}
	return string(b)
}

func TestDescribeNamesPendingEvents(t *testing.T) {
	var seen []Pending
	var s *Sim
	q := &spy{timeQueue: &timeQueue{}, onPop: func(k Key) { seen = append(seen, s.Describe(k.Slot)) }}
	s, err := New(Config{Nodes: 2, New: counters(2, 1), Queue: q,
		Faults: []Fault{{Kind: Crash, Node: 0, At: 5 * time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(); err != nil {
		t.Fatal(err)
	}
	want := []Pending{
		{Kind: "fault", Node: 0, From: proc.None, What: "crash"}, // popped and pushed back by the time-0 pass
		{Kind: "deliver", Node: 1, From: 0, What: "num"},
		{Kind: "fault", Node: 0, From: proc.None, What: "crash"},
	}
	if !slices.Equal(seen, want) {
		t.Errorf("pending events %+v, want %+v", seen, want)
	}
}

type spy struct {
	*timeQueue
	onPop func(Key)
}

func (s *spy) Pop() Key { k := s.timeQueue.Pop(); s.onPop(k); return k }

func TestChaosIsSeededAndInRange(t *testing.T) {
	c := Chaos{Horizon: time.Second, Crashes: 3, Recover: true, KeepOne: true, Partitions: 2, Pauses: 2}
	for seed := uint64(1); seed <= 50; seed++ {
		f1, p1 := c.Faults(5, seed)
		f2, p2 := c.Faults(5, seed)
		if !slices.Equal(f1, f2) || len(p1) != len(p2) {
			t.Fatalf("seed %d: two different schedules", seed)
		}
		cfg := Config{Nodes: 5, New: counters(5, 0), Faults: f1, Network: Network{Partitions: p1}}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("seed %d: invalid schedule: %v", seed, err)
		}
		crashes := 0
		for _, f := range f1 {
			if f.Kind == Crash {
				crashes++
				if f.Node == 0 {
					t.Fatalf("seed %d: KeepOne, yet process 0 crashes", seed)
				}
			}
		}
		if crashes != 3 || len(p1) != 2 {
			t.Fatalf("seed %d: %d crashes and %d partitions, want 3 and 2", seed, crashes, len(p1))
		}
	}
}
