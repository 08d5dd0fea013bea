package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/lab"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// familyNames lists every family `cohort sim` runs, in the registry's order,
// position last.
func familyNames() []string {
	var names []string
	for _, f := range lab.Families() {
		names = append(names, f.Name)
	}
	return append(names, positionFamily)
}

// familyOnlyFlags are the sim flags that apply to one family alone (or to
// a few, their names joined by commas).
var familyOnlyFlags = map[string]string{
	"order": "multicast", "demo": "multicast",
	"plot":        "clocks,gossip,overlay",
	"clock-error": positionFamily,
}

// simFlagApplies reports whether sim's flag name applies to runs of family.
func simFlagApplies(family, name string) bool {
	if family == positionFamily {
		return slices.Contains(positionFlags, name) || name == "help"
	}
	only, ok := familyOnlyFlags[name]
	return !ok || slices.Contains(strings.Split(only, ","), family)
}

// familyHelp replaces `cohort sim --help` when a family is named: what the
// family is, its algorithms with their summaries and assumptions, the
// checkers that judge them, and only the flags that apply.
func familyHelp(cmd *cobra.Command, family string, w io.Writer) error {
	fmt.Fprintf(w, "cohort sim %s", family)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if family == positionFamily {
		fmt.Fprintf(w, ": positioning, computed (no messages)\n\nAlgorithms (--algo NAME):\n")
		for _, a := range positionAlgos {
			fmt.Fprintf(tw, "  %s\t%s\n", a.name, a.summary)
		}
	} else {
		f, err := lab.Lookup(family)
		if err != nil {
			return usageErr("%v", err)
		}
		fmt.Fprintf(w, ": %s\n\nAlgorithms (--algo NAME; without it, every one runs with its default scenario):\n", f.Summary)
		var checks []string
		for _, a := range f.Algorithms {
			fmt.Fprintf(tw, "  %s\t%s\n", a.Name, a.Summary)
			fmt.Fprintf(tw, "  \tassumes %s\n", a.Assumes)
			for _, c := range a.Checks {
				if !slices.Contains(checks, c) {
					checks = append(checks, c)
				}
			}
		}
		tw.Flush()
		fmt.Fprintf(w, "\nCheckers: %s (cohort list --checkers says what each checks)\n", strings.Join(checks, ", "))
	}
	tw.Flush()
	fs := pflag.NewFlagSet(family, pflag.ContinueOnError)
	cmd.Flags().VisitAll(func(fl *pflag.Flag) {
		if simFlagApplies(family, fl.Name) {
			fs.AddFlag(fl)
		}
	})
	fmt.Fprintf(w, "\nUsage:\n  cohort sim %s [flags]\n\nFlags:\n%s", family, fs.FlagUsages())
	return nil
}

// installSimHelp makes `cohort sim FAMILY --help` print familyHelp.
func installSimHelp(cmd *cobra.Command) {
	def := cmd.HelpFunc()
	cmd.SetHelpFunc(func(c *cobra.Command, args []string) {
		family := ""
		if pos := c.Flags().Args(); len(pos) > 0 { // what remains once flags are parsed
			family = pos[0]
		}
		if c != cmd || family == "" || !slices.Contains(familyNames(), family) {
			def(c, args)
			return
		}
		if err := familyHelp(c, family, c.OutOrStdout()); err != nil {
			def(c, args)
		}
	})
}

// Shell completion: families as the argument, a family's algorithms for
// --algo, checker names for --checks.
func completeFamilies(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return familyNames(), cobra.ShellCompDirectiveNoFileComp
}

func completeAlgos(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	if args[0] == positionFamily {
		var names []string
		for _, a := range positionAlgos {
			names = append(names, a.name)
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
	f, err := lab.Lookup(args[0])
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, a := range f.Algorithms {
		out = append(out, a.Name+"\t"+a.Summary)
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

func completeCheckers(_ *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	var out []string
	for _, c := range check.All() {
		out = append(out, c.Name())
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
