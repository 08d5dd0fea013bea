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
