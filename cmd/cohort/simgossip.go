package main

import (
	"strings"

	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/lab"
	"github.com/cohort-go/cohort/proc"
	"github.com/spf13/cobra"
)

// The gossip family's flags of `cohort sim`: the algorithms' parameters
// (epidemic.Params), which build the processes and the workload anew.
var gossipOnlyFlags = []string{"fanout", "k", "variant", "plane", "input"}

// gossipPlane is --plane: the discovery workload's network is a plane of
// cities (sim.Plane) instead of a transit-stub one.
var gossipPlane bool

// gossipInput is --input: the push-sum workload's values (lab.PushSumInput).
var gossipInput string

func addGossipFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.Int("fanout", 1, "gossip: peers each node contacts per round (f)")
	fl.Int("k", 1, "gossip rumor: a monger loses interest with probability 1/k (or after k contacts, with --variant counter)")
	fl.String("variant", "", `gossip: comma-separated variants — rumor: "blind" (no feedback), "counter" (instead of the coin), "pull" (instead of push), "cycles" (feedback as of the round's start), "backup" (anti-entropy beside); push-sum: "sum" or "count" (instead of the average); swim: "nolifeguard" (Das et al.'s SWIM), or one of Lifeguard's refinements off: "nolhm", "nodynamic", "nobuddy"`)
	fl.BoolVar(&gossipPlane, "plane", false, "gossip discovery: hosts in cities on a plane (Vivaldi's own model) instead of a transit-stub network (the default up to 1024 nodes)")
	fl.StringVar(&gossipInput, "input", "uniform", `gossip push-sum: the nodes' values — "uniform" (node i holds i+1) or "one" (node 0 holds n, the others 0: all the mass on one node, average 1)`)
	for _, name := range gossipOnlyFlags {
		familyOnlyFlags[name] = "gossip"
	}
}

// gossipParams reads the gossip flags: nil if none was given. For another
// family, any of them is a usage error.
func gossipParams(cmd *cobra.Command, family string) (*epidemic.Params, error) {
	fl := cmd.Flags()
	changed := false
	for _, name := range gossipOnlyFlags {
		if fl.Changed(name) {
			if family != "gossip" {
				return nil, usageErr("--%s is a flag of the gossip family, not of %s", name, family)
			}
			changed = true
		}
	}
	if !changed {
		return nil, nil
	}
	var p epidemic.Params
	p.Fanout, _ = fl.GetInt("fanout")
	p.K, _ = fl.GetInt("k")
	if p.Fanout < 1 {
		return nil, usageErr("--fanout %d: need at least 1", p.Fanout)
	}
	if p.K < 1 {
		return nil, usageErr("--k %d: need at least 1", p.K)
	}
	if _, err := lab.PushSumInput(gossipInput, 1); err != nil {
		return nil, usageErr("--input %q: want uniform or one", gossipInput)
	}
	variants, _ := fl.GetString("variant")
	for _, v := range strings.Split(variants, ",") {
		switch strings.TrimSpace(v) {
		case "":
		case "feedback", "coin", "push", "average":
			// the defaults
		case "blind":
			p.Blind = true
		case "counter":
			p.Counter = true
		case "pull":
			p.Pull = true
		case "backup":
			p.Backup = true
		case "cycles":
			p.Cycles = true
		case "sum", "count":
			p.Aggregate = strings.TrimSpace(v)
		case "lifeguard":
			// the default
		case "nolifeguard":
			p.NoLHM, p.NoDynamicSuspicion, p.NoBuddy = true, true, true
		case "nolhm":
			p.NoLHM = true
		case "nodynamic":
			p.NoDynamicSuspicion = true
		case "nobuddy":
			p.NoBuddy = true
		default:
			return nil, usageErr("--variant %q: want blind, counter, pull, cycles, backup, sum, count, nolifeguard, nolhm, nodynamic or nobuddy", v)
		}
	}
	return &p, nil
}

// configureGossip applies params p to the run of gossip algorithm a.
func configureGossip(fam lab.Family, a proc.Algorithm, p *epidemic.Params, o *lab.Options) error {
	c, err := lab.ConfigureGossip(fam, a, *p)
	if err != nil {
		return usageErr("%v", err)
	}
	o.Algo, o.Workload = c.Algo, c.Workload
	if w, ok := o.Workload.(*lab.DiscoveryLoad); ok {
		w.Plane = gossipPlane
	} else if gossipPlane {
		return usageErr("--plane is a flag of the discovery algorithm, not of %s", a.Name)
	}
	if w, ok := o.Workload.(*lab.PushSumLoad); ok {
		if err := w.SetInput(gossipInput); err != nil {
			return usageErr("--input %q: want uniform or one", gossipInput)
		}
	} else if gossipInput != "uniform" {
		return usageErr("--input is a flag of the push-sum algorithm, not of %s", a.Name)
	}
	return nil
}
