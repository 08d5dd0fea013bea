package main

import (
	"github.com/cohort-go/cohort/lab"
	"github.com/cohort-go/cohort/synchronizer"
	"github.com/spf13/cobra"
)

// The synchronizer family's flags of `cohort sim` (beside --topology,
// shared with the snapshot family): γ's partition parameter k (--gamma-k:
// gossip has --k), and the least degree of a random graph.
var synchronizerOnlyFlags = []string{"gamma-k", "degree"}

var synchronizerTopologies = []string{"full", "ring", "line", "grid", "random"}

// maxDegree bounds --degree: a random graph keeps N·degree edges.
const maxDegree = 64

func addSynchronizerFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.Int("gamma-k", synchronizer.DefaultK, "synchronizer: γ's partition parameter k (clusters grow while a layer multiplies their size by more than k): O(kN) messages, O(log_k N) time per round")
	fl.Int("degree", 3, "synchronizer: the least degree of --topology random")
	for _, name := range synchronizerOnlyFlags {
		familyOnlyFlags[name] = "synchronizer"
	}
}

// synchronizerSettings reads --gamma-k (0 if not given) and --degree (0 if not
// given), bounded; for another family either is a usage error.
func synchronizerSettings(cmd *cobra.Command, family, algo, topology string) (k, degree int, err error) {
	fl := cmd.Flags()
	for _, name := range synchronizerOnlyFlags {
		if fl.Changed(name) && family != "synchronizer" {
			return 0, 0, usageErr("--%s is a flag of %s, not of %s", name, flagFamilies(name), family)
		}
	}
	if fl.Changed("gamma-k") {
		k, _ = fl.GetInt("gamma-k")
		if k < 2 || k > synchronizer.MaxNodes {
			return 0, 0, usageErr("--gamma-k %d: want 2..%d", k, synchronizer.MaxNodes)
		}
		if algo != "gamma" {
			return 0, 0, usageErr("--gamma-k is γ's parameter: use it with --algo gamma")
		}
	}
	if fl.Changed("degree") {
		degree, _ = fl.GetInt("degree")
		if degree < 1 || degree > maxDegree {
			return 0, 0, usageErr("--degree %d: want 1..%d", degree, maxDegree)
		}
		if topology != "random" {
			return 0, 0, usageErr("--degree is the least degree of a random graph: use it with --topology random")
		}
	}
	return k, degree, nil
}

// configureSynchronizer gives the run γ's parameter and the random
// graph's degree.
func configureSynchronizer(k, degree int, o *lab.Options) {
	if k > 0 && o.Algo.Name == "gamma" {
		o.Algo = synchronizer.GammaAlgorithm(k)
	}
	o.Degree = degree
}
