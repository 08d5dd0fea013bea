package sim

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/trace"
)

// walker exercises what a step can change: its own state, its random
// source, timers, stable storage and messages.
type walker struct {
	n     int
	steps int
	seen  []int
}

type hop struct{ N int }

func (hop) Kind() string { return "hop" }

func (w *walker) Clone() *walker { c := *w; c.seen = slices.Clone(w.seen); return &c }
func (w *walker) Start(env proc.Env) {
	env.SetTimer(time.Millisecond, "tick")
}
func (w *walker) Timeout(env proc.Env, _ any) {
	w.steps++
	env.Storage().Append([]byte{byte(w.steps)})
	if w.steps%2 == 0 {
		env.Storage().Sync()
	}
	env.Send(proc.ID(env.Rand().IntN(w.n)), hop{w.steps})
	if w.steps < 6 {
		env.SetTimer(time.Millisecond, "tick")
	}
}
func (w *walker) Receive(env proc.Env, from proc.ID, m proc.Message) {
	w.seen = append(w.seen, m.(hop).N)
	if len(w.seen)%3 == 0 {
		env.Send(from, hop{-len(w.seen)})
	}
}
func (w *walker) Input(proc.Env, proc.Input) {}

// pickQueue pops the pending event a test picks: the i-th in Seq order.
type pickQueue struct {
	keys []Key
	next int
}

func (q *pickQueue) Push(k Key) {
	i, _ := slices.BinarySearchFunc(q.keys, k, func(a, b Key) int { return int(a.Seq) - int(b.Seq) })
	q.keys = slices.Insert(q.keys, i, k)
}
func (q *pickQueue) Len() int { return len(q.keys) }
func (q *pickQueue) Pop() Key {
	k := q.keys[q.next]
	q.keys = slices.Delete(q.keys, q.next, q.next+1)
	return k
}

type eventLog struct{ evs []trace.Event }

func (l *eventLog) Record(e *trace.Event) { l.evs = append(l.evs, *e) }

// A run restored to a saved state goes on exactly as it did from there:
// the same events, the same process states, the same disks, over random
// choices of the next event, with processes copied before they step
// (copy on write, as Saved asks) and a crash among the choices.
func TestSaveRestoreReplaysTheSameSteps(t *testing.T) {
	const n = 3
	for seed := uint64(1); seed <= 30; seed++ {
		q, log := &pickQueue{}, &eventLog{}
		s, err := New(Config{Nodes: n, Seed: seed, Queue: q, Trace: log,
			New:    func(proc.ID, int) proc.Process { return &walker{n: n} },
			Faults: []Fault{{Kind: Crash, Node: 2, At: 3 * time.Millisecond}}})
		if err != nil {
			t.Fatal(err)
		}
		s.Begin()
		rng := rand.New(rand.NewPCG(seed, 9))
		step := func() (picks []int) {
			for len(picks) < 40 && q.Len() > 0 {
				q.next = rng.IntN(q.Len())
				picks = append(picks, q.next)
				id := s.item(q.keys[q.next].Slot).node
				if p, ok := s.Process(proc.ID(id)).(*walker); ok {
					s.SetProcess(proc.ID(id), p.Clone())
				}
				s.Step()
			}
			return picks
		}
		for i := 0; i < 5 && q.Len() > 0; i++ {
			q.next = rng.IntN(q.Len())
			s.Step()
		}
		var sv Saved
		if err := s.Save(&sv); err != nil {
			t.Fatal(err)
		}
		keys, mark := slices.Clone(q.keys), len(log.evs)
		states := func() []any {
			var out []any
			for id := 0; id < n; id++ {
				if p := s.Process(proc.ID(id)); p != nil {
					out = append(out, *p.(*walker))
				} else {
					out = append(out, nil)
				}
				out = append(out, s.Durable(proc.ID(id)))
			}
			return out
		}
		before := states()
		picks := step()
		first, firstStates, firstRes := slices.Clone(log.evs[mark:]), states(), s.Result()

		s.Restore(&sv)
		q.keys, log.evs = slices.Clone(keys), log.evs[:mark]
		if got := states(); !reflect.DeepEqual(got, before) {
			t.Fatalf("seed %d: restored processes and disks %v, saved %v", seed, got, before)
		}
		for _, pick := range picks {
			q.next = pick
			id := s.item(q.keys[pick].Slot).node
			if p, ok := s.Process(proc.ID(id)).(*walker); ok {
				s.SetProcess(proc.ID(id), p.Clone())
			}
			s.Step()
		}
		if !reflect.DeepEqual(log.evs[mark:], first) {
			t.Fatalf("seed %d: after the restore, %d events differ from the %d first taken", seed, len(log.evs)-mark, len(first))
		}
		if got := states(); !reflect.DeepEqual(got, firstStates) || !reflect.DeepEqual(s.Result(), firstRes) {
			t.Fatalf("seed %d: after the restore, processes, disks or counts differ", seed)
		}
	}
}
