package main

import (
	"slices"
	"strings"

	"github.com/cohort-go/cohort/lab"
	"github.com/spf13/cobra"
)

// The snapshot family's flags of `cohort sim`: the graph the markers
// cross, and how many snapshots are begun, by how many processes at once.
// (--topology applies to the synchronizer family too: simsynchronizer.go.)
var snapshotOnlyFlags = []string{"topology", "snapshots", "initiators"}

// Bounds of the snapshot flags: each snapshot keeps a recording per
// process.
const (
	maxSnapshots  = 1000
	maxInitiators = 1000
)

var snapshotTopologies = []string{"full", "ring", "line", "grid"}

func addSnapshotFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.String("topology", "", "snapshot, synchronizer: the graph of channels — full, ring, line or grid, or for the synchronizers random (default: the scenario's)")
	fl.Int("snapshots", 2, "snapshot: rounds of snapshots, 5ms apart")
	fl.Int("initiators", 1, "snapshot: processes that begin a snapshot at once in each round (concurrent snapshots)")
	for _, name := range snapshotOnlyFlags {
		familyOnlyFlags[name] = "snapshot"
	}
	familyOnlyFlags["topology"] = "snapshot,synchronizer"
}

// snapshotSettings reads the snapshot flags: the topology ("" if not
// given) and the snapshots to take (nil if neither count was given). For
// another family, any of them is a usage error.
func snapshotSettings(cmd *cobra.Command, family string) (string, *lab.SnapshotTakes, error) {
	fl := cmd.Flags()
	for _, name := range snapshotOnlyFlags {
		if fl.Changed(name) && !simFlagApplies(family, name) {
			return "", nil, usageErr("--%s is a flag of %s, not of %s", name, flagFamilies(name), family)
		}
	}
	topo, _ := fl.GetString("topology")
	if family == "synchronizer" {
		if fl.Changed("topology") && !slices.Contains(synchronizerTopologies, topo) {
			return "", nil, usageErr("--topology %q: want full, ring, line, grid or random", topo)
		}
		return topo, nil, nil
	}
	if fl.Changed("topology") && !slices.Contains(snapshotTopologies, topo) {
		return "", nil, usageErr("--topology %q: want full, ring, line or grid", topo)
	}
	if !fl.Changed("snapshots") && !fl.Changed("initiators") {
		return topo, nil, nil
	}
	var takes lab.SnapshotTakes
	takes.Snapshots, _ = fl.GetInt("snapshots")
	takes.Initiators, _ = fl.GetInt("initiators")
	if takes.Snapshots < 1 || takes.Snapshots > maxSnapshots {
		return "", nil, usageErr("--snapshots %d: want 1..%d", takes.Snapshots, maxSnapshots)
	}
	if takes.Initiators < 1 || takes.Initiators > maxInitiators {
		return "", nil, usageErr("--initiators %d: want 1..%d", takes.Initiators, maxInitiators)
	}
	return topo, &takes, nil
}

// configureSnapshot gives the run its topology and its snapshots.
func configureSnapshot(topo string, takes *lab.SnapshotTakes, o *lab.Options) {
	o.Topology = topo
	if w, ok := o.Workload.(*lab.SnapshotLoad); ok && takes != nil {
		w.SnapshotTakes = *takes
	}
}

// flagFamilies names the families a family-only flag applies to: "the
// snapshot family", "the snapshot and synchronizer families".
func flagFamilies(flag string) string {
	fams := strings.Split(familyOnlyFlags[flag], ",")
	if len(fams) == 1 {
		return "the " + fams[0] + " family"
	}
	return "the " + strings.Join(fams, " and ") + " families"
}
