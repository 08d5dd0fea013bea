package epidemic

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cohort-go/cohort/proc"
)

// refBuffer is the dissemination buffer's order written plainly: every
// update with its sends and arrival, sorted afresh for every take.
type refBuffer struct {
	bs   []bcast
	made uint64
}

func (r *refBuffer) enqueue(u Fact) {
	r.made++
	r.bs = slices.DeleteFunc(r.bs, func(b bcast) bool { return b.u.Member == u.Member })
	r.bs = append(r.bs, bcast{u: u, id: r.made})
}

func (r *refBuffer) take(first *Fact, most, limit int) []Fact {
	slices.SortFunc(r.bs, func(x, y bcast) int {
		if x.before(&y) {
			return -1
		}
		return 1
	})
	var out []Fact
	if first != nil {
		out = append(out, *first)
	}
	keep := r.bs[:0]
	for _, b := range r.bs {
		switch {
		case b.sent >= limit:
			continue
		case len(out) < most && (first == nil || b.u.Member != first.Member):
			out = append(out, b.u)
			b.sent++
			if b.sent >= limit {
				continue
			}
		}
		keep = append(keep, b)
	}
	r.bs = keep
	return out
}

// TestSwimBufferOrder: the dissemination buffer piggybacks the same
// updates in the same order as the plain sort of refBuffer, through
// buffers small and large — past aboutAbove, where the buffer finds a
// member's update by its index rather than a scan — with replacements,
// updates put first, and updates that reach the retransmission limit.
func TestSwimBufferOrder(t *testing.T) {
	for _, members := range []int{10, 300} {
		p := Params{}.withDefaults()
		s := newSwim(&p, 0, 1000)
		var ref refBuffer
		rng := rand.New(rand.NewPCG(uint64(members), 7))
		limit := s.retransmits()
		for step := range 20000 {
			if rng.IntN(3) > 0 {
				u := Fact{State: StateSuspect, Member: proc.ID(1 + rng.IntN(members)), Inc: uint32(step), From: proc.ID(rng.IntN(1000))}
				s.enqueue(u)
				ref.enqueue(u)
				continue
			}
			var first *Fact
			if rng.IntN(4) == 0 {
				first = &Fact{State: StateDead, Member: proc.ID(1 + rng.IntN(members))}
			}
			most := maxPiggyback
			if rng.IntN(4) == 0 {
				most = maxGossip
			}
			got, want := s.take(first, most), ref.take(first, most, limit)
			if !slices.Equal(got, want) {
				t.Fatalf("%d members, step %d: took %v, want %v", members, step, got, want)
			}
		}
		if members > aboutAbove && s.queue.at == nil && len(s.queue.q) <= aboutAbove {
			t.Logf("%d members: the buffer ended at %d updates", members, len(s.queue.q))
		}
	}
}

// TestSwimConfirmationsBeyondFour: with SuspicionMult 9 Lifeguard counts
// up to K = 7 confirmations of a suspicion, more than the four suspecters
// a suspicion record holds in itself; each new suspecter, and only a new
// one, sets the suspicion's timer anew and is disseminated, however often
// the suspicions are heard again, and the first suspecter is the one a
// suspicion travels with.
func TestSwimConfirmationsBeyondFour(t *testing.T) {
	p := Params{SuspicionMult: 9}.withDefaults()
	s := newSwim(&p, 0, 1000)
	env := &stormEnv{rng: rand.New(rand.NewPCG(1, 2))}
	const target = proc.ID(500)
	suspect := func(from proc.ID) {
		s.apply(env, Fact{State: StateSuspect, Member: target, Inc: 0, From: from})
	}
	// Six suspecters, heard thrice each before any seventh: the first
	// suspicion and 5 confirmations, 6 timers.
	for range 3 {
		for from := proc.ID(1); from <= 6; from++ {
			suspect(from)
		}
	}
	if env.timers != 6 {
		t.Fatalf("%d suspicion timers set by 6 suspecters, want 6", env.timers)
	}
	// Four more: K = 7 confirmations in all, 8 timers.
	for from := proc.ID(1); from <= 10; from++ {
		suspect(from)
	}
	if env.timers != 8 {
		t.Fatalf("%d suspicion timers set by 10 suspecters, want 8", env.timers)
	}
	if f := s.suspicionFact(target); f == nil || f.From != 1 {
		t.Fatalf("the suspicion travels as %v, want it suspected by p1", f)
	}
	if got := s.made; got != 8 {
		t.Errorf("%d updates queued, want 8 (the suspicion and its 7 confirmations)", got)
	}
}
