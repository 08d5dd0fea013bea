package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cohort-go/cohort/node"
	"github.com/spf13/cobra"
)

// votersFlags are the flags of cluster add, remove and voters.
type votersFlags struct {
	api     apiFlags
	timeout time.Duration
	json    bool
}

func (f *votersFlags) add(cmd *cobra.Command) {
	f.api.add(cmd)
	cmd.Flags().DurationVar(&f.timeout, "timeout", 30*time.Second, "give up after this long")
	cmd.Flags().BoolVar(&f.json, "json", false, "print JSON")
}

const votersLong = `The replicated logs behind the locks, the elections, and (with group: raft
and queues: replicated, the defaults) the groups and the queues are voted
by the founding members at first. A node that joined
the running cluster (cohort node --join) serves them once an operator adds
it to the voters: "cluster add ID" asks the logs' leaders, through any node,
to add it — it first catches up as a learner, then votes — and "cluster
remove ID" takes a node out (a removed leader hands over to another). One
change at a time, as etcd's "member add" and "member remove": never
silently. The configuration is an entry of each log, so a node restarted
from its config file follows its log's, not the file's peers.`

func newClusterVoterCmd(use string) *cobra.Command {
	var f votersFlags
	add := use == "add"
	short := "Add a node that joined the running cluster to the voters of its replicated logs"
	if !add {
		short = "Remove a node from the voters of the cluster's replicated logs"
	}
	cmd := &cobra.Command{
		Use:   use + " ID",
		Short: short,
		Long:  votersLong,
		Example: fmt.Sprintf(`  cohort cluster %s 3 --endpoints 127.0.0.1:7100
  cohort cluster voters --endpoints 127.0.0.1:7100`, use),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErr("cluster %s: want one node id, got %d arguments", use, len(args))
			}
			id, err := node.ParseID(args[0])
			if err != nil {
				return usageErr("cluster %s: %v", use, err)
			}
			if f.timeout <= 0 {
				return usageErr("--timeout %v: want more than 0", f.timeout)
			}
			endpoints, token, ctx, cancel, err := f.api.open(f.timeout)
			if err != nil {
				return err
			}
			defer cancel()
			c := &node.Client{Endpoints: endpoints, Token: token}
			var vs node.Voters
			if add {
				vs, err = c.Add(ctx, id)
			} else {
				vs, err = c.Remove(ctx, id)
			}
			if err != nil {
				return failed(fmt.Errorf("cluster %s %d: %w", use, id, err))
			}
			return printVoters(cmd.OutOrStdout(), vs, f.json)
		},
	}
	f.add(cmd)
	return cmd
}

func newClusterVotersCmd() *cobra.Command {
	var f votersFlags
	cmd := &cobra.Command{
		Use:     "voters",
		Short:   "List the voters of the cluster's replicated logs, as the first node that answers holds them",
		Long:    votersLong,
		Example: `  cohort cluster voters --endpoints 127.0.0.1:7100 --json`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			endpoints, token, ctx, cancel, err := f.api.open(f.timeout)
			if err != nil {
				return err
			}
			defer cancel()
			vs, err := (&node.Client{Endpoints: endpoints, Token: token}).Voters(ctx)
			if err != nil {
				return failed(err)
			}
			return printVoters(cmd.OutOrStdout(), vs, f.json)
		},
	}
	f.add(cmd)
	return cmd
}

func printVoters(w io.Writer, vs node.Voters, asJSON bool) error {
	if asJSON {
		return printJSON(w, vs)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LOG\tVOTERS\tCOMMITTED\tLEADER\tTERM")
	for _, l := range vs.Logs {
		ids := make([]string, len(l.Voters))
		for i, v := range l.Voters {
			ids[i] = fmt.Sprint(v)
		}
		lead := "none known"
		if l.Leader >= 0 {
			lead = fmt.Sprint(l.Leader)
		}
		fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%d\n", l.Service, strings.Join(ids, ","), l.Committed, lead, l.Term)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "(as node %d holds them)\n", vs.Node)
	return nil
}
