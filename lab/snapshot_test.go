package lab

import (
	"testing"
	"time"
)

// TestSnapshotFamily: the snapshot family's default runs are checked and
// measured — every snapshot complete, one marker per channel — and its
// comparison gives, with a constant delay, diameter + 1 delays on a ring
// (where every process's eccentricity is the diameter) and 2 on the
// complete graph.
func TestSnapshotFamily(t *testing.T) {
	f, err := Lookup("snapshot")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range f.Algorithms {
		o := f.Options(a)
		w := o.Workload.(*SnapshotLoad)
		w.Snapshots, w.Initiators, w.Every = 3, 3, 2*time.Millisecond
		seed := uint64(4)
		o.Nodes, o.Seed = 6, &seed
		r, _, err := Sim(o)
		if err != nil {
			t.Fatal(err)
		}
		if r.Failed() || len(r.Checks) != 3 {
			t.Errorf("%s: checks %+v", a.Name, r.Checks)
		}
		for m, want := range map[string]float64{"snapshots": 9, "complete_fraction": 1, "markers_per_channel": 1, "diameter": 1} {
			if got := r.Metrics[m]; got != want {
				t.Errorf("%s: %s = %v, want %v", a.Name, m, got, want)
			}
		}
	}
	rows, runs, err := Compare("snapshot", []int{8}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range runs {
		if len(run.Failed) > 0 {
			t.Errorf("%s %s: failed %v", run.Algo, run.Case, run.Failed)
		}
	}
	want := map[string]float64{"full": 2, "ring": 5}
	for _, row := range rows {
		if w, ok := want[row.Case]; ok && row.Metric == "complete_delays" && (row.Measured == nil || *row.Measured != w || row.Theory == nil || *row.Theory != w) {
			t.Errorf("%s on a %s of 8: complete in %v delays (theory %v), want %v", row.Algo, row.Case, row.Measured, row.Theory, w)
		}
	}
}
