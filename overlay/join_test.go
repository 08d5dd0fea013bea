package overlay_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/cohort-go/cohort/overlay"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
	"github.com/cohort-go/cohort/trace"
)

// TestLeanJoinRoutesAsWell: a join that announces the joiner to its leaf
// set and the rows where it is new, and sends it only the rows it can
// use, builds tables that route as well as Rowstron & Druschel's full
// exchange (FullJoin): every lookup at the key's home (overlay-lookup),
// leaf sets exact (overlay-tables), mean hops within noise — with well
// under half the announcements.
func TestLeanJoinRoutesAsWell(t *testing.T) {
	seeds := simtest.Seeds(3, 1)
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			const n = 1000
			run := func(cfg overlay.Config) (*simtest.Recorded, float64, int) {
				fs, s := joins(n, 1000, 10*time.Millisecond, seed)
				show := time.Duration(n)*10*time.Millisecond + time.Second
				for i := range n {
					s = append(s, sim.TimedInput{At: show, Node: proc.ID(i), Input: overlay.ShowTables{}})
				}
				r := simtest.Run(t, "overlay", sim.Config{Nodes: n, Seed: seed, Faults: fs, Workload: s,
					New: overlay.Build("pastry", cfg)})
				return r, mean(hops(r.Trace)), r.Trace.Count(trace.Send, "announce")
			}
			full := overlay.FailureFree
			full.FullJoin = true
			fr, fh, fa := run(full)
			lr, lh, la := run(overlay.FailureFree)
			fr.Hold(t, "overlay-lookup", "overlay-tables")
			lr.Hold(t, "overlay-lookup", "overlay-tables")
			t.Logf("%d nodes: hops %.3f full, %.3f lean; announcements %d full, %d lean", n, fh, lh, fa, la)
			if lh > fh*1.02 {
				t.Errorf("hops %.3f with the lean join, %.3f with the full one", lh, fh)
			}
			if 2*la > fa {
				t.Errorf("%d announcements with the lean join, %d with the full one: want under half", la, fa)
			}
		})
	}
}
