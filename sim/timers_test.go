package sim

import (
	"math/rand/v2"
	"testing"

	"github.com/cohort-go/cohort/proc"
)

// The timer set agrees with a map under random setting, firing and
// cancelling — of live timers, of timers already fired or cancelled, and
// of IDs never handed out — with long-lived timers that the window must
// spill, and it keeps nothing of a timer once it is gone.
func TestTimerSetIsASet(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		ts := timerSet{limit: 1 + int(seed%4)}
		want := map[proc.TimerID]bool{}
		var next proc.TimerID
		var live []proc.TimerID
		for range 20000 {
			switch r := rng.IntN(10); {
			case r < 5:
				next++
				ts.add(next)
				want[next] = true
				live = append(live, next)
			case r < 9 && len(live) > 0:
				// Fire or cancel a live timer; the newest ones most often,
				// so that a few stay live for long.
				i := len(live) - 1 - min(len(live)-1, int(rng.ExpFloat64()*4))
				ts.remove(live[i])
				delete(want, live[i])
				live = append(live[:i], live[i+1:]...)
			default:
				// Cancel something not live: fired, cancelled, or never set.
				id := proc.TimerID(rng.Uint64N(uint64(next) + 100))
				if !want[id] {
					ts.remove(id)
				}
			}
			if len(live) > 0 {
				id := live[rng.IntN(len(live))]
				if !ts.has(id) {
					t.Fatalf("seed %d: live timer %d not in the set", seed, id)
				}
			}
			if id := proc.TimerID(rng.Uint64N(uint64(next) + 100)); ts.has(id) != want[id] {
				t.Fatalf("seed %d: has(%d) = %v, want %v", seed, id, ts.has(id), want[id])
			}
		}
		for _, id := range live {
			ts.remove(id)
		}
		for id := range next + 100 {
			if ts.has(id) {
				t.Fatalf("seed %d: %d still in the emptied set", seed, id)
			}
		}
		if len(ts.old) != 0 || len(ts.words) > 1 {
			t.Errorf("seed %d: the emptied set keeps %d spilled timers and %d words", seed, len(ts.old), len(ts.words))
		}
	}
}

// A timer that outlives millions of later ones keeps the window bounded.
func TestTimerSetWindowIsBounded(t *testing.T) {
	ts := timerSet{limit: 4}
	ts.add(1) // long-lived
	for id := proc.TimerID(2); id < 100_000; id++ {
		ts.add(id)
		ts.remove(id)
	}
	if !ts.has(1) || len(ts.words) > 5 {
		t.Fatalf("live %v, %d words", ts.has(1), len(ts.words))
	}
	ts.remove(1)
	ts.remove(1)
	if ts.has(1) || len(ts.old) != 0 {
		t.Fatalf("after cancelling: live %v, %d spilled", ts.has(1), len(ts.old))
	}
}
