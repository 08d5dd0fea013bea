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
		{[]string{"theory", "nope"}, `cohort theory: unknown subcommand "nope" (want mutex-decentralized)`},
		{[]string{"trace", "nope"}, `cohort trace: unknown subcommand "nope" (want check, merge, render)`},
		{[]string{"bench", "nope"}, `cohort bench: unknown subcommand "nope"`},
		{[]string{"bench", "simm"}, `did you mean "sim"?`},
		{[]string{"cluster"}, `cohort cluster: missing subcommand (want up; see cohort cluster --help)`},
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
