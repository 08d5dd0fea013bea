package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// The run of a broken Ricart–Agrawala (it replies from inside the critical
// section) whose observed interleaving is safe; globalstate's tests make it.
const eagerReply = "../../globalstate/testdata/eager-reply.jsonl"

func TestTracePossiblyAndDefinitely(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"possibly", eagerReply, "count(cs) >= 2"}, 0, []string{
			"possibly(count(cs) >= 2): yes", "2 processes, 18 events", "Garg & Waldecker", "⟨7,7⟩",
			"#11 t=4.500ms p0 send reply to p1", "#15 t=5.500ms p1 output enter", "14 events from the initial state",
			"#0 #1 #2 #3 #4 #5 #6 #7 #8 #9 #10 #11 #14 #15"}},
		{[]string{"possibly", eagerReply, "count(cs) >= 2", "--enumerate"}, 0, []string{"yes", "lexical order"}},
		{[]string{"possibly", eagerReply, "cs(p0) && cs(p1) && sent(p1) == 0"}, 1, []string{"no", "false in every consistent global state"}},
		{[]string{"definitely", eagerReply, "count(cs) >= 2"}, 1, []string{
			"definitely(count(cs) >= 2): no", "the observed run, itself a linearization, never passes through it",
			"a linearization of all 18 events"}},
		{[]string{"definitely", eagerReply, "outputs[exit](p1) == 1"}, 0, []string{"definitely(outputs[exit](p1) == 1): yes", "it holds in the final state"}},
		{[]string{"definitely", eagerReply, "cs(p1)"}, 0, []string{"definitely(cs(p1)): yes", "breadth-first", "within its first 16 events",
			"first passes through it at ⟨9,7⟩", "#13 t=5.000ms p0 output exit", "#15 t=5.500ms p1 output enter"}},
		{[]string{"definitely", eagerReply, "outputs[enter](p0) == 1 && outputs[enter](p1) == 0"}, 0, []string{"yes", "breadth-first"}},
		{[]string{"definitely", eagerReply, "true"}, 0, []string{"initial state", "within its first 0 events"}},
	} {
		code, out, errs := cli(t, append([]string{"trace"}, c.args...)...)
		if code != c.code {
			t.Errorf("trace %s: exit %d, want %d\n%s%s", strings.Join(c.args, " "), code, c.code, out, errs)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("trace %s: output lacks %q:\n%s", strings.Join(c.args, " "), w, out)
			}
		}
	}
}

func TestTracePossiblyJSON(t *testing.T) {
	code, out, errs := cli(t, "trace", "possibly", eagerReply, "count(cs) >= 2", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var a struct {
		Query, Predicate, Method string
		Holds                    bool
		States                   int64
		Cut, Frontier, Path      []int
		Nodes, Events            int
		Level                    *int
	}
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if a.Query != "possibly" || a.Predicate != "count(cs) >= 2" || !a.Holds || a.Method != "conjunctive" || a.States < 1 ||
		len(a.Cut) != 2 || a.Cut[0] != 7 || a.Cut[1] != 7 || a.Frontier[0] != 11 || a.Frontier[1] != 15 || len(a.Path) != 14 ||
		a.Nodes != 2 || a.Events != 18 || a.Level != nil {
		t.Errorf("JSON %s", out)
	}
	code, out, _ = cli(t, "trace", "definitely", eagerReply, "count(cs) >= 2", "--json")
	var d struct {
		Holds         bool
		Linearization []int
	}
	if code != 1 || json.Unmarshal([]byte(out), &d) != nil || d.Holds || len(d.Linearization) != 18 {
		t.Errorf("definitely --json: exit %d, %s", code, out)
	}
}

// Bad input exits 2, naming what is wrong.
func TestTracePredicateBadInput(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "ra.jsonl")
	if code, _, errs := cli(t, "sim", "mutex", "--algo", "ricart-agrawala", "--nodes", "5", "--trace", big); code != 0 {
		t.Fatalf("sim: exit %d: %s", code, errs)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"possibly", eagerReply, "count(cs) >= x"}, `predicate "count(cs) >= x": column 14: unknown variable "x"`},
		{[]string{"possibly", eagerReply, "count(cs) >"}, `column 12: unexpected the end of the predicate`},
		{[]string{"definitely", eagerReply, "cs(p1) & cs(p0)"}, `column 8: unexpected "&": want "&&"`},
		{[]string{"possibly", eagerReply, "cs(p2)"}, `"cs(p2)" names process p2, but the trace has p0..p1`},
		{[]string{"possibly", eagerReply, "count(cs)"}, "not a truth value"},
		{[]string{"possibly", eagerReply}, "accepts 2 arg(s)"},
		{[]string{"possibly", filepath.Join(dir, "missing.jsonl"), "true"}, "missing.jsonl"},
		{[]string{"possibly", eagerReply, "true", "--max-states", "0"}, "--max-states 0"},
		{[]string{"possibly", eagerReply, "true", "--service", "lock/x"}, `--service "lock/x": the trace has no such service (it has none)`},
		{[]string{"possibly", big, "sum(sent) < 0", "--max-states", "1000"}, "more than 1000 (the limit): raise --max-states"},
		{[]string{"definitely", big, "sum(sent) == 40", "--max-states", "1000", "--enumerate"}, "raise --max-states"},
		{[]string{"lattice", big, "--max-states", "1000"}, "too many consistent global states: more than 1000"},
		{[]string{"lattice", eagerReply, "--order", "dfs"}, `--order "dfs": want bfs or lex`},
	} {
		code, _, errs := cli(t, append([]string{"trace"}, c.args...)...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("trace %s: exit %d, %q; want 2 and %q", strings.Join(c.args, " "), code, errs, c.want)
		}
	}
}

func TestTraceLattice(t *testing.T) {
	var counts []string
	for _, order := range []string{"bfs", "lex"} {
		code, out, errs := cli(t, "trace", "lattice", eagerReply, "--order", order, "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var r struct {
			States int64
			Levels int
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		counts = append(counts, out[strings.Index(out, `"states"`):strings.Index(out, `,"seconds"`)])
		if r.States != 34 {
			t.Errorf("%s: %d states, want 34\n%s", order, r.States, out)
		}
	}
	code, out, _ := cli(t, "trace", "lattice", eagerReply, "--list", "--order", "lex")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != 35 || lines[0] != "⟨0,0⟩" || lines[33] != "⟨9,9⟩" ||
		!strings.Contains(lines[34], "34 consistent global states") {
		t.Errorf("--list: exit %d\n%s", code, out)
	}
	code, out, _ = cli(t, "trace", "lattice", eagerReply)
	if code != 0 || !strings.Contains(out, "34 consistent global states on 19 levels, at most 3 on one (breadth-first order") {
		t.Errorf("exit %d: %s", code, out)
	}
}

// check --lattice judges ME1 over every consistent global state too: the
// broken run passes ME1 and fails ME1-lattice.
func TestTraceCheckLattice(t *testing.T) {
	code, out, _ := cli(t, "trace", "check", eagerReply, "--checks", "ME1,ME2", "--lattice")
	for _, w := range []string{"ME1          ok", "ME1-lattice  violated", "ME2          ok",
		"p0 (entered at #7) and p1 (entered at #15) are in the critical section together in the consistent global state ⟨7,7⟩"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if code, out, _ := cli(t, "trace", "check", eagerReply, "--checks", "ME1,ME2"); code != 0 || strings.Contains(out, "lattice") {
		t.Errorf("without --lattice: exit %d\n%s", code, out)
	}
}
