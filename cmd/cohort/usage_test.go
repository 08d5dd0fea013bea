package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

// A command that only groups others rejects a missing or unknown
// subcommand: exit 2, naming what was wrong and what is known.
func TestGroupCommandsRejectMissingAndUnknownSubcommands(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"theory", "nope"}, `cohort theory: unknown subcommand "nope" (want mutex-decentralized, pool)`},
		{[]string{"trace", "nope"}, `cohort trace: unknown subcommand "nope" (want check, definitely, lattice, merge, possibly, render)`},
		{[]string{"bench", "nope"}, `cohort bench: unknown subcommand "nope"`},
		{[]string{"bench", "simm"}, `did you mean "sim"?`},
		{[]string{"cluster"}, `cohort cluster: missing subcommand (want add, remove, up, voters; see cohort cluster --help)`},
		{[]string{"trace"}, `cohort trace: missing subcommand`},
		{[]string{"nope"}, `unknown command "nope"`},
	} {
		code, _, errs := cli(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("cohort %s: exit %d, %q; want exit 2 and %q", strings.Join(c.args, " "), code, errs, c.want)
		}
	}
	// Help still works, and succeeds.
	if code, out, _ := cli(t, "trace", "--help"); code != 0 || !strings.Contains(out, "render") {
		t.Errorf("trace --help: exit %d\n%s", code, out)
	}
}

func TestVersionComesFromTheBuild(t *testing.T) {
	bi := func(v string, kv ...string) *debug.BuildInfo {
		b := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/cohort-go/cohort", Version: v}}
		for i := 0; i+1 < len(kv); i += 2 {
			b.Settings = append(b.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return b
	}
	for _, c := range []struct {
		linked string
		bi     *debug.BuildInfo
		want   string
	}{
		{"v1.2.3", bi("v0.0.1"), "v1.2.3"},
		{"", bi("v0.4.0"), "v0.4.0 go1.26.8"}, // go install module@v0.4.0
		{"", bi("(devel)", "vcs.revision", "0123456789abcdef0123", "vcs.time", "2026-11-24T10:00:00Z", "vcs.modified", "false"),
			"devel (0123456789ab 2026-11-24T10:00:00Z) go1.26.8"},
		{"", bi("(devel)", "vcs.revision", "0123456789abcdef0123", "vcs.modified", "true"), "devel (0123456789ab+dirty) go1.26.8"},
		{"", bi("v0.4.1-0.20261124100000-0123456789ab"), "v0.4.1-0.20261124100000-0123456789ab go1.26.8"},
		{"", nil, "devel"},
	} {
		if got := versionString(c.linked, c.bi); got != c.want {
			t.Errorf("versionString(%q, %+v) = %q, want %q", c.linked, c.bi, got, c.want)
		}
	}
}

// cohort sim FAMILY --help is the family's: its algorithms with summaries
// and assumptions, and only the flags that apply.
func TestPerFamilyHelp(t *testing.T) {
	_, general, _ := cli(t, "sim", "--help")
	for _, c := range []struct {
		family       string
		want, absent []string
	}{
		{"mutex", []string{"ricart-agrawala", "assumes reliable fifo; failures=none", "Checkers: integrity, no-duplicates, ME1, ME2, ME3", "--scenario", "--loss"},
			[]string{"--order", "--demo", "--plot", "--clock-error"}},
		{"multicast", []string{"total-isis", "--order", "--demo"}, []string{"--plot", "--clock-error"}},
		{"clocks", []string{"lamport-figure", "--plot"}, []string{"--order", "--clock-error"}},
		{"position", []string{"vivaldi", "--clock-error", "--nodes"}, []string{"--scenario", "--loss", "--order"}},
	} {
		code, out, _ := cli(t, "sim", c.family, "--help")
		if code != 0 || out == general {
			t.Errorf("sim %s --help: exit %d, or the general help", c.family, code)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("sim %s --help lacks %q", c.family, w)
			}
		}
		for _, a := range c.absent {
			if strings.Contains(out, a) {
				t.Errorf("sim %s --help shows %s, which does not apply", c.family, a)
			}
		}
	}
}

// Shell completion knows the families, each family's algorithms and the
// checkers.
func TestCompletion(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"__complete", "sim", ""}, "election"},
		{[]string{"__complete", "compare", ""}, "multicast"},
		{[]string{"__complete", "sim", "mutex", "--algo", ""}, "ricart-agrawala\t"},
		{[]string{"__complete", "sim", "multicast", "--order", ""}, "total-isis"},
		{[]string{"__complete", "trace", "check", "x.jsonl", "--checks", ""}, "clock-condition"},
	} {
		code, out, _ := cli(t, c.args...)
		if code != 0 || !strings.Contains(out, c.want) {
			t.Errorf("cohort %s: exit %d\n%s\nwant %q among the completions", strings.Join(c.args, " "), code, out, c.want)
		}
	}
	if code, out, _ := cli(t, "completion", "bash"); code != 0 || !strings.Contains(out, "bash completion") {
		t.Errorf("completion bash: exit %d", code)
	}
}
