package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/lab"
	"github.com/spf13/cobra"
)

type listEntry struct {
	Family  string   `json:"family"`
	Name    string   `json:"name"`
	Summary string   `json:"summary"`
	Source  string   `json:"source"`
	Assumes string   `json:"assumes"`
	Checks  []string `json:"checks"`
	Breaks  []string `json:"breaks,omitempty"`
}

func newListCmd() *cobra.Command {
	var asJSON, checkers bool
	cmd := &cobra.Command{
		Use:   "list [FAMILY]",
		Short: "List the algorithms (and with --checkers, the property checkers)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			if checkers {
				tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "CHECKER\tPROPERTY")
				for _, c := range check.All() {
					fmt.Fprintf(tw, "%s\t%s\n", c.Name(), c.Doc())
				}
				return tw.Flush()
			}
			fams := lab.Families()
			if len(args) == 1 {
				f, err := lab.Lookup(args[0])
				if err != nil {
					return usageErr("%v", err)
				}
				fams = []lab.Family{f}
			}
			var entries []listEntry
			for _, f := range fams {
				for _, a := range f.Algorithms {
					entries = append(entries, listEntry{a.Family, a.Name, a.Summary, a.Source, a.Assumes.String(), a.Checks, a.Breaks})
				}
			}
			if len(args) == 0 {
				entries = append(entries, positionListEntries()...) // position.go
			}
			if asJSON {
				return json.NewEncoder(out).Encode(map[string]any{"algorithms": entries})
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "FAMILY\tALGORITHM\tASSUMES\tDESCRIPTION")
			for _, e := range entries {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Family, e.Name, e.Assumes, e.Summary)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(out, "\nRun one with: cohort sim FAMILY --algo NAME   (checkers: cohort list --checkers; families: %s)\n", strings.Join(familyNames(), ", "))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&checkers, "checkers", false, "list the property checkers instead")
	return cmd
}
