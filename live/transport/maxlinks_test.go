package transport

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// TestMaxLinks: members with MaxLinks = k that each talk to more than k
// others at once — a star (the hub talks to every leaf, every leaf to the
// hub) and a ring (every member to its two neighbours on each side) —
// never hold more than k connections each; the cap closes connections
// (LinkIdle is far longer than the test), and every payload still
// arrives exactly once and in order, over the connections that replace
// them.
func TestMaxLinks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n, k  int
		peers func(i, n int) []int // whom member i sends to
	}{
		{"star", 9, 3, func(i, n int) []int {
			if i > 0 {
				return []int{0}
			}
			var all []int
			for j := 1; j < n; j++ {
				all = append(all, j)
			}
			return all
		}},
		{"ring", 8, 2, func(i, n int) []int {
			return []int{(i + 1) % n, (i + 2) % n, (i + n - 1) % n, (i + n - 2) % n}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const payloads = 60
			trs := newTCPCluster(t, tc.n, func(c *Config) { c.LinkIdle, c.MaxLinks = time.Minute, tc.k })
			boxes := make([]*inbox, tc.n)
			for i, tr := range trs {
				boxes[i] = newInbox()
				tr.Start(boxes[i].handle)
			}
			var done []<-chan struct{}
			for i := range trs {
				for _, j := range tc.peers(i, tc.n) {
					done = append(done, boxes[j].expect(proc.ID(i), payloads))
				}
			}
			var wg sync.WaitGroup
			errs := make(chan error, tc.n)
			for i, tr := range trs {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(i), 2))
					to := tc.peers(i, tc.n)
					for seq := range uint64(payloads) {
						// Each payload to the members in a random order,
						// with pauses up to 2 ms between them.
						for _, k := range rng.Perm(len(to)) {
							time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
							if err := sendAll(tr, proc.ID(to[k]), seq, seq+1, 32, 10*time.Second); err != nil {
								errs <- err
								return
							}
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			for _, ch := range done {
				waitClosed(t, ch, 20*time.Second, "every payload")
			}
			var evicted, refused uint64
			for i, tr := range trs {
				boxes[i].check(t)
				s := tr.Stats()
				refused += s.LinksRefused
				if s.PeakLinks > tc.k {
					t.Errorf("member %d held %d connections at once, more than MaxLinks = %d", i, s.PeakLinks, tc.k)
				}
				for _, p := range s.Peers {
					evicted += p.Evicted
					if p.IdleClosed != 0 {
						t.Errorf("member %d: %d connections closed as idle: LinkIdle is a minute", i, p.IdleClosed)
					}
				}
			}
			if evicted == 0 {
				t.Error("no connection was closed for the cap: the test did not exercise it")
			}
			t.Logf("%d connections closed for the cap, %d refused", evicted, refused)
		})
	}
}
