package check_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/trace"
)

// A fixture is a run that keeps or breaks a checker's property.
type fixture struct {
	name string
	// build returns the trace and, if it breaks the property, the events
	// the counterexample must cite (nil if the property holds).
	build func() (*trace.Trace, []int)
	// detail is a part of the Detail a violation must state.
	detail string
}

// runFixtures checks every fixture against the named checker: a run that
// holds gives OK; a run that breaks it gives Violated, cites exactly the
// expected events, and prints each of them in its counterexample.
func runFixtures(t *testing.T, name string, fixtures []fixture) {
	t.Helper()
	c, ok := check.Lookup(name)
	if !ok {
		t.Fatalf("checker %q is not registered", name)
	}
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			tr, want := f.build()
			r := c.Check(tr)
			if r.Name != name {
				t.Errorf("Name = %q, want %q", r.Name, name)
			}
			if want == nil {
				if !r.OK() || r.Events != nil || r.Detail != "" {
					t.Fatalf("got %s %v, want ok", r, r.Events)
				}
				return
			}
			if r.Status != check.Violated {
				t.Fatalf("got %s, want violated", r)
			}
			slices.Sort(want)
			if !slices.Equal(r.Events, want) {
				t.Errorf("Events = %v, want %v\n%s", r.Events, want, r.Counterexample(tr))
			}
			if !strings.Contains(r.Detail, f.detail) {
				t.Errorf("Detail = %q, want it to contain %q", r.Detail, f.detail)
			}
			cx := r.Counterexample(tr)
			for _, i := range want {
				if line := "\n  " + tr.Events[i].String(); !strings.Contains(cx, line) {
					t.Errorf("counterexample does not print event #%d:\n%s", i, cx)
				}
			}
		})
	}
}

// expectVerdict checks checker's result r for a table case: OK when want
// is nil, else Violated citing exactly want (in any order) with detail in
// its Detail.
func expectVerdict(t *testing.T, name, checker string, r check.Result, want []int, detail string) {
	t.Helper()
	if want == nil {
		if !r.OK() {
			t.Errorf("%s: %s says %s: %s", name, checker, r.Status, r.Detail)
		}
		return
	}
	want = slices.Sorted(slices.Values(want))
	if r.Status != check.Violated || !slices.Equal(r.Events, want) || !strings.Contains(r.Detail, detail) {
		t.Errorf("%s: %s = %s citing %v (%s); want violated citing %v with %q", name, checker, r.Status, r.Events, r.Detail, want, detail)
	}
}
