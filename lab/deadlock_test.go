package lab

import "testing"

// TestDeadlockFamily: the family's default runs hold their guaranteed
// checks and are measured; the comparison runs every detector in every
// case with no failed check.
func TestDeadlockFamily(t *testing.T) {
	f, err := Lookup("deadlock")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range f.Algorithms {
		o := f.Options(a)
		seed := uint64(1)
		o.Seed = &seed
		r, _, err := Sim(o)
		if err != nil {
			t.Fatal(err)
		}
		done := r.Metrics["commits"]
		if a.Name == "cmh-or" {
			done = r.Metrics["answered_waits"]
		}
		if r.Failed() || len(r.Checks) != 2 || done != 50 {
			t.Errorf("%s: checks %+v, transactions committed or waits answered %v", a.Name, r.Checks, done)
		}
	}
	if testing.Short() {
		return
	}
	_, runs, err := Compare("deadlock", []int{4}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 10 {
		t.Errorf("%d comparison runs, want 10", len(runs))
	}
	for _, run := range runs {
		if len(run.Failed) > 0 {
			t.Errorf("%s %s: failed %v", run.Algo, run.Case, run.Failed)
		}
	}
}
