package multicast

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/cohort-go/cohort/proc"
)

// valid checks a seen set's invariant: per origin, runs sorted, disjoint,
// not touching each other or the watermark.
func (s seen) valid() bool {
	for _, set := range s {
		last := set.w
		for _, r := range set.runs {
			if r.lo > r.hi || r.lo < last+2 {
				return false
			}
			last = r.hi
		}
	}
	return true
}

// The compact set answers every Add and Has exactly as a plain map of the
// identities added would, whatever the order of the numbers — with number
// 0, which names no message, counted as present.
func TestSeenMatchesAMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, model := seen{}, map[msgKey]bool{}
		key := func(label string) msgKey {
			return msgKey{
				Group:  rapid.SampledFrom([]string{"all", "g1"}).Draw(t, label+".group"),
				Origin: proc.ID(rapid.IntRange(0, 2).Draw(t, label+".origin")),
				Seq:    rapid.Uint64Range(0, 40).Draw(t, label+".seq"),
			}
		}
		ops := rapid.IntRange(1, 300).Draw(t, "ops")
		for range ops {
			k := key("k")
			want := k.Seq == 0 || model[k]
			if rapid.Bool().Draw(t, "add") {
				if got := s.Add(k); got != !want {
					t.Fatalf("Add(%v) = %v, want %v", k, got, !want)
				}
				if k.Seq != 0 {
					model[k] = true
				}
			} else if got := s.Has(k); got != want {
				t.Fatalf("Has(%v) = %v, want %v", k, got, want)
			}
			if !s.valid() {
				t.Fatalf("invariant broken after %v", k)
			}
		}
		for _, g := range []string{"all", "g1", "g2"} {
			for o := proc.ID(0); o <= 3; o++ {
				for seq := uint64(0); seq <= 42; seq++ {
					k := msgKey{g, o, seq}
					if s.Has(k) != (seq == 0 || model[k]) {
						t.Fatalf("Has(%v) = %v at the end", k, s.Has(k))
					}
				}
			}
		}
	})
}

// windowed returns 1..n in an order where no number arrives after one k or
// more above it: number i is placed at i + a random offset below k.
func windowed(r *rand.Rand, n, k int) []uint64 {
	type slot struct {
		at  float64
		seq uint64
	}
	s := make([]slot, n)
	for i := range s {
		s[i] = slot{float64(i) + float64(k)*r.Float64(), uint64(i + 1)}
	}
	slices.SortFunc(s, func(a, b slot) int {
		if a.at < b.at {
			return -1
		}
		return 1
	})
	out := make([]uint64, n)
	for i, x := range s {
		out[i] = x.seq
	}
	return out
}

// When every number arrives before any number k above it, an origin's
// numbers never take more than k/2 runs, and once the gaps fill the set is
// back to one watermark per origin — however many messages went by.
func TestSeenStaysSmallWithinAWindow(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := rapid.IntRange(1, 64).Draw(t, "window")
		n := rapid.IntRange(1, 3000).Draw(t, "messages")
		r := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 1))
		origins := []msgKey{{"all", 0, 0}, {"all", 1, 0}, {"g1", 1, 0}}
		streams := make([][]uint64, len(origins))
		for i := range streams {
			streams[i] = windowed(r, n, k)
		}
		s := seen{}
		for j := range n {
			for i, o := range origins {
				o.Seq = streams[i][j]
				if !s.Add(o) {
					t.Fatalf("window %d: %v added twice", k, o)
				}
			}
			for _, set := range s {
				if len(set.runs) > k/2 {
					t.Fatalf("window %d: %d runs after %d messages per origin: %v", k, len(set.runs), j+1, set.runs)
				}
			}
		}
		if s.size() != len(origins) {
			t.Fatalf("window %d: size %d after every gap filled, want %d", k, s.size(), len(origins))
		}
		for _, set := range s {
			if set.w != uint64(n) {
				t.Fatalf("watermark %d after 1..%d", set.w, n)
			}
		}
	})
}

// A number that never arrives costs one run, not one entry per later
// message; numbers near the top of the range do not wrap around.
func TestSeenHolesAndExtremes(t *testing.T) {
	s := seen{}
	for seq := uint64(1); seq <= 100_000; seq++ {
		if seq%25_000 != 0 { // 25000, 50000, 75000 and 100000 never come
			s.Add(msgKey{"all", 1, seq})
		}
	}
	if got := s.size(); got != 1+3 {
		t.Errorf("size %d with three holes below the top, want 4", got)
	}
	if s.Has(msgKey{"all", 1, 50_000}) || !s.Has(msgKey{"all", 1, 50_001}) || !s.Has(msgKey{"all", 1, 24_999}) {
		t.Error("holes misreported")
	}
	top := uint64(math.MaxUint64)
	for _, x := range []uint64{top, top - 2, top - 1} {
		if !s.Add(msgKey{"g2", 0, x}) {
			t.Errorf("Add(%d) not new", x)
		}
	}
	if s.Add(msgKey{"g2", 0, top}) || !s.Has(msgKey{"g2", 0, top - 1}) || s.Has(msgKey{"g2", 0, top - 3}) || !s.valid() {
		t.Errorf("extremes: %+v", s[source{"g2", 0}])
	}
	if s.Add(msgKey{"g2", 0, 0}) || !s.Has(msgKey{"g2", 0, 0}) {
		t.Error("number 0 must count as present")
	}
}
