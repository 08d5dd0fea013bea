package check_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/check/checktest"
	"github.com/cohort-go/cohort/trace"
)

var generic = []string{"clock-condition", "integrity", "no-duplicates"}

func TestStatus(t *testing.T) {
	for _, tc := range []struct {
		s    check.Status
		name string
	}{{check.OK, "ok"}, {check.Violated, "violated"}, {check.Unknown, "unknown"}} {
		if got := tc.s.String(); got != tc.name {
			t.Errorf("String() = %q, want %q", got, tc.name)
		}
		b, err := json.Marshal(tc.s)
		if err != nil || string(b) != `"`+tc.name+`"` {
			t.Errorf("Marshal(%v) = %s, %v", tc.s, b, err)
		}
		var back check.Status
		if err := json.Unmarshal(b, &back); err != nil || back != tc.s {
			t.Errorf("Unmarshal(%s) = %v, %v", b, back, err)
		}
	}
	if got := check.Status(7).String(); got != "status(7)" {
		t.Errorf("Status(7).String() = %q", got)
	}
	var s check.Status
	for _, bad := range []string{`"fine"`, `1`, `nope`} {
		if err := json.Unmarshal([]byte(bad), &s); err == nil {
			t.Errorf("Unmarshal(%s) succeeded", bad)
		}
	}
}

func TestResult(t *testing.T) {
	b := checktest.New(2)
	s := b.Send(0, 1, "req")
	b.Recv(s)
	r := check.Result{Name: "integrity", Status: check.Violated, Detail: "m1: bad", Events: []int{0, 9}}
	if r.OK() || (check.Result{}).OK() || !(check.Result{Status: check.OK}).OK() {
		t.Error("OK() is wrong")
	}
	want := "integrity: violated: m1: bad\n  " + b.Trace.Events[0].String() + "\n  #9 (not in the trace)"
	if got := r.Counterexample(&b.Trace); got != want {
		t.Errorf("Counterexample:\n%s\nwant\n%s", got, want)
	}
	if got := (check.Result{Name: "integrity", Status: check.OK}).Counterexample(&b.Trace); got != "integrity: ok" {
		t.Errorf("Counterexample of ok = %q", got)
	}
	j, err := json.Marshal(r)
	if err != nil || string(j) != `{"name":"integrity","status":"violated","detail":"m1: bad","events":[0,9]}` {
		t.Errorf("Marshal = %s, %v", j, err)
	}
}

func TestRegistry(t *testing.T) {
	var names []string
	for _, c := range check.All() {
		names = append(names, c.Name())
		if c.Doc() == "" {
			t.Errorf("%s has no Doc", c.Name())
		}
	}
	if !slices.IsSorted(names) {
		t.Errorf("All() is not sorted by name: %v", names)
	}
	for _, name := range generic {
		if !slices.Contains(names, name) {
			t.Errorf("All() lacks %q", name)
		}
		if c, ok := check.Lookup(name); !ok || c.Name() != name {
			t.Errorf("Lookup(%q) = %v, %v", name, c, ok)
		}
	}
	if _, ok := check.Lookup("no-such-checker"); ok {
		t.Error("Lookup found an unregistered name")
	}
	c, _ := check.Lookup("integrity")
	for name, c := range map[string]check.Checker{"twice": c, "no name": noName{}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register (%s) did not panic", name)
				}
			}()
			check.Register(c)
		}()
	}
}

type noName struct{}

func (noName) Name() string                    { return "" }
func (noName) Doc() string                     { return "" }
func (noName) Check(*trace.Trace) check.Result { return check.Result{} }

func TestRun(t *testing.T) {
	b := checktest.New(2)
	s := b.Send(0, 1, "req")
	b.Recv(s)
	b.Recv(s)
	rs, err := check.Run(&b.Trace, "no-duplicates", "integrity")
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Name != "no-duplicates" || rs[0].Status != check.Violated || rs[1].Name != "integrity" || !rs[1].OK() {
		t.Errorf("Run = %v", rs)
	}
	if rs, err := check.Run(&b.Trace); len(rs) != 0 || err != nil {
		t.Errorf("Run with no names = %v, %v", rs, err)
	}
	rs, err = check.Run(&b.Trace, "integrity", "ME9", "fifo")
	if !errors.Is(err, check.ErrUnknownChecker) || rs != nil {
		t.Fatalf("Run with unknown names = %v, %v; want ErrUnknownChecker", rs, err)
	}
	if !strings.Contains(err.Error(), `"ME9", "fifo"`) {
		t.Errorf("error %q does not name the unknown checkers", err)
	}
}

// TestMalformedTraces runs every checker on traces that no host would write:
// none may panic, and clock-condition, which needs the trace's structure,
// must not call one OK.
func TestMalformedTraces(t *testing.T) {
	broken := map[string]func(*trace.Trace){
		"no nodes":      func(tr *trace.Trace) { tr.Header.Nodes = 0 },
		"node too big":  func(tr *trace.Trace) { tr.Events[1].Node = 9 },
		"negative node": func(tr *trace.Trace) { tr.Events[3].Node = -2 },
		"bad index":     func(tr *trace.Trace) { tr.Events[2].Index = 0 },
		"no kind":       func(tr *trace.Trace) { tr.Events[2].Kind = 0 },
		"short vector":  func(tr *trace.Trace) { tr.Events[3].VC = trace.DenseVC(tr.Events[3].VC.Dense()[:1]) },
		"no data":       func(tr *trace.Trace) { tr.Events[4].Data = nil },
	}
	for name, edit := range broken {
		b := checktest.New(2).WithVC()
		s := b.Send(0, 1, "req")
		b.Dup(s)
		b.Recv(s)
		b.Recv(s)
		b.Stamp(1, 4)
		edit(&b.Trace)
		for _, c := range check.All() {
			if r := c.Check(&b.Trace); c.Name() == "clock-condition" && r.OK() {
				t.Errorf("%s: %s", name, r)
			}
		}
	}
}
