package main

import (
	"cmp"
	"time"

	"github.com/cohort-go/cohort/overlay"

	"github.com/cohort-go/cohort/lab"
	"github.com/spf13/cobra"
)

// The overlay family's flags of `cohort sim`: the workload's size, and
// the failure experiment.
func addOverlayFlags(cmd *cobra.Command) {
	cmd.Flags().Int("lookups", 1000, "overlay: lookups of random keys asked at random nodes once the joins have settled (with --fail: in each of the three phases)")
	cmd.Flags().Float64("fail", 0, "overlay: fraction of the nodes that fail at once after the first lookups; lookups are asked again right after and once repair has settled (Rowstron & Druschel 2001 §3.3)")
	cmd.Flags().String("proximity", "", "overlay pastry, scribe: on: Pastry's tables chosen by measured round trips (a join through a nearby node, the nearest candidate for each entry: Rowstron & Druschel 2001 §2.5); off: the first candidate heard of. Either way Pastry's lookups run on a transit-stub network (up to 1024 nodes) and report their delay penalty, rdp_mean (Scribe's trees always do)")
	familyOnlyFlags["lookups"] = "overlay"
	familyOnlyFlags["fail"] = "overlay"
	cmd.Flags().String("parent", "", "overlay esm: how a joining host chooses its parent among the members it probes: bandwidth (the most bandwidth, then the least delay; a host takes no more children than its upload can send the whole stream to: the default) or latency (the least delay; every host takes 4 children)")
	cmd.Flags().Duration("improve", overlay.ESMImprove, "overlay esm: the period of each member's search for a better parent (probing random members, switching for one clearly better, by ESMMargin); 0: none, a member changes its parent only when it loses it")
	cmd.Flags().Int("settle", 0, "overlay esm: improvement periods (--improve) the tree runs after the joins before the stream, whose tree is measured")
	familyOnlyFlags["proximity"] = "overlay"
	familyOnlyFlags["parent"] = "overlay"
	familyOnlyFlags["improve"] = "overlay"
	familyOnlyFlags["settle"] = "overlay"
}

// overlayParams are the overlay flags given: 0 where not given.
type overlayParams struct {
	lookups   int
	fail      float64
	proximity string // "on", "off", or "" (not given)
	parent    string // "bandwidth", "latency", or "" (not given)
	improve   *time.Duration
	settle    int
}

// overlayFlags reads --lookups and --fail. For another family they are a
// usage error.
func overlayFlags(cmd *cobra.Command, family, algo string) (overlayParams, error) {
	fl := cmd.Flags()
	var p overlayParams
	for _, name := range []string{"lookups", "fail"} {
		if fl.Changed(name) && family != "overlay" {
			return p, usageErr("--%s is a flag of the overlay family, not of %s", name, family)
		}
		if fl.Changed(name) && (algo == "scribe" || algo == "esm") {
			return p, usageErr("--%s is a flag of the lookup overlays (pastry, circular), not of %s: its runs are multicasts (give faults with --fault)", name, algo)
		}
	}
	if fl.Changed("lookups") {
		p.lookups, _ = fl.GetInt("lookups")
		if p.lookups < 1 {
			return p, usageErr("--lookups %d: need at least 1", p.lookups)
		}
		if p.lookups > maxLookups {
			return p, usageErr("--lookups %d: at most %d", p.lookups, maxLookups)
		}
	}
	if fl.Changed("fail") {
		p.fail, _ = fl.GetFloat64("fail")
		if !(p.fail > 0 && p.fail < 1) {
			return p, usageErr("--fail %v: want a fraction of the nodes, above 0 and below 1", p.fail)
		}
	}
	if fl.Changed("proximity") {
		if family != "overlay" {
			return p, usageErr("--proximity is a flag of the overlay family, not of %s", family)
		}
		p.proximity, _ = fl.GetString("proximity")
		if p.proximity != "on" && p.proximity != "off" {
			return p, usageErr("--proximity %q: want on or off", p.proximity)
		}
		if algo == "circular" || algo == "esm" {
			return p, usageErr("--proximity is a flag of the overlays with Pastry's routing tables (pastry, scribe), not of %s", algo)
		}
	}
	if fl.Changed("parent") {
		p.parent, _ = fl.GetString("parent")
		if family != "overlay" || algo != "esm" {
			return p, usageErr("--parent is a flag of End System Multicast (--algo esm), not of %s", cmp.Or(algo, family))
		}
		if p.parent != "bandwidth" && p.parent != "latency" {
			return p, usageErr("--parent %q: want bandwidth or latency", p.parent)
		}
	}
	for _, name := range []string{"improve", "settle"} {
		if fl.Changed(name) && (family != "overlay" || algo != "esm") {
			return p, usageErr("--%s is a flag of End System Multicast (--algo esm), not of %s", name, cmp.Or(algo, family))
		}
	}
	if fl.Changed("improve") {
		d, _ := fl.GetDuration("improve")
		if d < 0 {
			return p, usageErr("--improve %v: want a period, or 0 for none", d)
		}
		p.improve = &d
	}
	if fl.Changed("settle") {
		p.settle, _ = fl.GetInt("settle")
		if p.settle < 0 || p.settle > 1000 {
			return p, usageErr("--settle %d: want 0 to 1000 periods", p.settle)
		}
	}
	return p, nil
}

// maxLookups bounds --lookups (each lookup's delivery is recorded).
const maxLookups = 10_000_000

// configureOverlay gives the run's workload its lookups, failures and
// tables (--proximity);
// faults given on the command line or by a scenario turn the nodes'
// failure detection and repair on.
func configureOverlay(p overlayParams, o *lab.Options) {
	if sw, ok := o.Workload.(*lab.ScribeLoad); ok {
		sw.Repair = len(o.Faults) > 0 || o.Scenario != nil
		sw.Proximity = p.proximity == "on"
	}
	if ew, ok := o.Workload.(*lab.ESMLoad); ok {
		ew.LatencyOnly = p.parent == "latency"
		ew.Settle = p.settle
		if p.improve != nil {
			ew.Improve = cmp.Or(*p.improve, -1)
		}
	}
	w, ok := o.Workload.(*lab.OverlayLoad)
	if !ok {
		return
	}
	if p.proximity != "" && o.Algo.Name == "pastry" {
		w.Network, w.Proximity = true, p.proximity == "on"
	}
	if p.lookups > 0 {
		w.Lookups = p.lookups
	}
	w.Fail = p.fail
	w.Repair = len(o.Faults) > 0 || o.Scenario != nil
}
