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

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

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
			fmt.Fprintln(stderr, "cohort:", ee.err)
		}
		return ee.code
	}
	// Errors from cobra itself are usage errors: unknown flag, command or
	// argument count.
	fmt.Fprintln(stderr, "cohort:", err)
	return 2
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "cohort",
		Short: "Classic distributed-coordination algorithms: simulated, checked, measured",
		Long: `Cohort runs the classic coordination algorithms of distributed systems —
clocks, mutual exclusion, election, ordered multicast — as deterministic
state machines in a seeded simulator, checks every run against the
properties the algorithms promise, and shows each run as a space-time
diagram.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newSimCmd(), newCompareCmd(), newTheoryCmd(), newLockCmd(), newElectCmd(), newMulticastCmd(), newNodeCmd(), newClusterCmd(), newCertsCmd(), newListCmd(), newTraceCmd(), newBenchCmd(), newNTPCmd(), newVersionCmd())
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print Cohort's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), "cohort", version)
			return nil
		},
	}
}
