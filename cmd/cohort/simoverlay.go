package main

import (
	"github.com/cohort-go/cohort/lab"
	"github.com/spf13/cobra"
)

// The overlay family's flags of `cohort sim`: the workload's size.
func addOverlayFlags(cmd *cobra.Command) {
	cmd.Flags().Int("lookups", 1000, "overlay: lookups of random keys asked at random nodes once the joins have settled")
	familyOnlyFlags["lookups"] = "overlay"
}

// overlayLookups reads --lookups: 0 if not given. For another family it
// is a usage error.
func overlayLookups(cmd *cobra.Command, family string) (int, error) {
	fl := cmd.Flags()
	if !fl.Changed("lookups") {
		return 0, nil
	}
	if family != "overlay" {
		return 0, usageErr("--lookups is a flag of the overlay family, not of %s", family)
	}
	n, _ := fl.GetInt("lookups")
	if n < 1 {
		return 0, usageErr("--lookups %d: need at least 1", n)
	}
	return n, nil
}

// configureOverlay gives the run's workload its lookups.
func configureOverlay(lookups int, o *lab.Options) {
	if w, ok := o.Workload.(*lab.OverlayLoad); ok && lookups > 0 {
		w.Lookups = lookups
	}
}
