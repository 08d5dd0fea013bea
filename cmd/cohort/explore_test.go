package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func TestExploreExitsAndReplays(t *testing.T) {
	dir := t.TempDir()
	sched := filepath.Join(dir, "jr.sched")
	code, out, errs := cli(t, "explore", "mutex", "--algo", "ricart-agrawala-jr", "--inputs", "0:acquire,1:acquire,0:acquire",
		"--check", "ME3", "--schedule", sched, "--json")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (ME3 broken)\n%s%s", code, out, errs)
	}
	var rep struct {
		States    int64 `json:"states"`
		Violation struct {
			Name     string `json:"name"`
			Steps    int    `json:"steps"`
			TraceSHA string `json:"trace_sha256"`
		} `json:"violation"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.States == 0 || rep.Violation.Name != "ME3" || rep.Violation.Steps != 8 {
		t.Fatalf("report %s: %v", out, err)
	}
	code, out, errs = cli(t, "sim", "mutex", "--schedule", sched, "--json")
	if code != 1 || !strings.Contains(out, rep.Violation.TraceSHA) || !strings.Contains(out, `"name":"ME3","status":"violated"`) {
		t.Fatalf("replay: exit %d, want 1 (the schedule's ME3 violated again) and trace sha256 %s\n%s%s", code, rep.Violation.TraceSHA, out, errs)
	}
	if code, out, errs := cli(t, "explore", "commit", "--algo", "two-phase-commit", "--nodes", "4", "--json"); code != 0 || !strings.Contains(out, `"states":288`) {
		t.Errorf("two-phase commit: exit %d\n%s%s", code, out, errs)
	}
	// Symmetry: 5 RMs' 8,832 states fall into 314 orbits; both engines
	// report their speed and memory.
	for _, replay := range []string{"--replay=false", "--replay=true"} {
		code, out, errs := cli(t, "explore", "commit", "--algo", "two-phase-commit", "--nodes", "6", "--symmetry", "--strategy", "dfs", replay, "--json")
		var r struct {
			States        int64   `json:"states"`
			Engine        string  `json:"engine"`
			StatesPerS    float64 `json:"states_per_s"`
			BytesPerState float64 `json:"bytes_per_state"`
		}
		if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil || r.States != 314 || r.StatesPerS <= 0 || r.BytesPerState <= 0 ||
			r.Engine != map[string]string{"--replay=false": "undo", "--replay=true": "replay"}[replay] {
			t.Errorf("symmetry %s: exit %d, %+v\n%s%s", replay, code, r, out, errs)
		}
	}
	if code, out, errs := cli(t, "explore", "mutex", "--algo", "ricart-agrawala", "--nodes", "2", "--cycles", "--json"); code != 0 || !strings.Contains(out, `"cycles":true`) || !strings.Contains(out, `"exhausted":true`) {
		t.Errorf("cycles: exit %d\n%s%s", code, out, errs)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"explore", "mutex"}, "--algo: required"},
		{[]string{"explore", "mutex", "--algo", "nope"}, `"nope"`},
		{[]string{"explore", "mutex", "--algo", "central", "--nodes", "99"}, "--nodes 99"},
		{[]string{"explore", "mutex", "--algo", "central", "--faults", "crash=x"}, `"crash=x"`},
		{[]string{"explore", "mutex", "--algo", "central", "--timing", "soon"}, `"soon"`},
		{[]string{"explore", "mutex", "--algo", "central", "--inputs", "7:acquire"}, `7:acquire`},
		{[]string{"explore", "mutex", "--algo", "central", "--check", "ME9"}, `"ME9"`},
		{[]string{"sim", "election", "--schedule", sched}, "mutex family"},
		{[]string{"explore", "mutex", "--algo", "central", "--symmetry"}, "--symmetry"},
		{[]string{"explore", "election", "--algo", "bully", "--cycles"}, "--cycles"},
	} {
		if code, _, errs := cli(t, c.args...); code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("cohort %s: exit %d, %q; want 2 naming %s", strings.Join(c.args, " "), code, errs, c.want)
		}
	}
}
