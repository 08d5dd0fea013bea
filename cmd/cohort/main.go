// Command cohort runs Cohort's distributed-coordination algorithms: in the
// deterministic simulator (sim, compare, bench), over recorded traces
// (trace), and — as the project grows — as a real cluster.
//
// Exit status: 0 when every check holds, 1 when a check fails (its
// counterexample is printed), 2 for bad usage or bad input.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/cohort-go/cohort/internal/httpapi"
	"github.com/spf13/cobra"
)

// version may be set at build time with -ldflags "-X main.version=...";
// otherwise it comes from the build information Go records in the binary.
var version = ""

// exitError carries an exit status out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageErr is a bad flag, argument or input file: exit status 2.
func usageErr(format string, args ...any) error {
	return &exitError{2, fmt.Errorf(format, args...)}
}

// errChecksFailed ends a run whose checks failed: exit status 1. The
// details are already printed.
var errChecksFailed = &exitError{1, errors.New("a check failed")}

func main() {
	os.Exit(execute(os.Args[1:], os.Stdout, os.Stderr))
}

// execute runs the CLI with args and returns the exit status.
func execute(args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee != errChecksFailed && ee.err != errSilent {
			fmt.Fprintln(stderr, "cohort:", httpapi.Clip(ee.err.Error()))
		}
		return ee.code
	}
	// Errors from cobra itself are usage errors: unknown flag, command or
	// argument count.
	fmt.Fprintln(stderr, "cohort:", httpapi.Clip(err.Error()))
	return 2
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "cohort",
		Short: "Classic distributed-coordination algorithms: simulated, checked, measured",
		Long: `Cohort runs the classic coordination algorithms of distributed systems —
clocks, mutual exclusion, election, ordered multicast, a replicated log,
epidemic protocols, overlays — as deterministic state machines in a seeded simulator,
checks every run against the properties the algorithms promise, shows each
run as a space-time diagram, and runs the lock, leader and group services
on a live cluster.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newSimCmd(), newExploreCmd(), newCompareCmd(), newTheoryCmd(), newLockCmd(), newElectCmd(), newMulticastCmd(), newMembersCmd(), newKVCmd(), newDHTCmd(), newScribeCmd(), newAggregateCmd(), newDiscoverCmd(), newQueueCmd(), newRPCCmd(), newNodeCmd(), newClusterCmd(), newCertsCmd(), newListCmd(), newTraceCmd(), newViewCmd(), newBenchCmd(), newNTPCmd(), newVersionCmd())
	for _, c := range root.Commands() {
		requireSubcommand(c)
	}
	return root
}

// requireSubcommand makes every command that only groups others (cluster,
// trace, bench ...) reject a missing or unknown subcommand with exit
// status 2, naming it, instead of printing its help and succeeding.
func requireSubcommand(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		requireSubcommand(c)
	}
	if !cmd.HasSubCommands() || cmd.Runnable() {
		return
	}
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		var names []string
		for _, c := range cmd.Commands() {
			if c.IsAvailableCommand() {
				names = append(names, c.Name())
			}
		}
		want := strings.Join(names, ", ")
		if len(args) == 0 {
			return usageErr("%s: missing subcommand (want %s; see %s --help)", cmd.CommandPath(), want, cmd.CommandPath())
		}
		msg := fmt.Sprintf("%s: unknown subcommand %q (want %s)", cmd.CommandPath(), args[0], want)
		if cmd.SuggestionsMinimumDistance <= 0 {
			cmd.SuggestionsMinimumDistance = 2
		}
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += fmt.Sprintf("; did you mean %q?", s[0])
		}
		return usageErr("%s", msg)
	}
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print Cohort's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), "cohort", versionString(version, readBuildInfo()))
			return nil
		},
	}
}

func readBuildInfo() *debug.BuildInfo {
	bi, _ := debug.ReadBuildInfo()
	return bi
}

// versionString is the version to print: the one set at link time if any;
// else the module's version (set by go install module@version), then the
// VCS revision and time Go stamps into a build from a checkout, with
// "+dirty" when the tree had uncommitted changes; "devel" when the binary
// says nothing (go run, go test).
func versionString(linked string, bi *debug.BuildInfo) string {
	if linked != "" {
		return linked
	}
	if bi == nil {
		return "devel"
	}
	v := bi.Main.Version
	if v == "(devel)" {
		v = ""
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		rev = rev[:min(len(rev), 12)]
		if settings["vcs.modified"] == "true" {
			rev += "+dirty"
		}
		if t := settings["vcs.time"]; t != "" {
			rev += " " + t
		}
		if v == "" {
			v = "devel"
		}
		v += " (" + rev + ")"
	}
	if v == "" {
		v = "devel"
	}
	return v + " " + bi.GoVersion
}
