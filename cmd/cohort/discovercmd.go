package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/members"
	"github.com/spf13/cobra"
)

func newDiscoverCmd() *cobra.Command {
	var (
		f     membersFlags
		attrs []string
		k     int
	)
	cmd := &cobra.Command{
		Use:   "discover advertise NAME [--attr K=V ...] | find NAME [-k K] | withdraw NAME",
		Short: "Advertise a resource on a cluster's gossiped map, or find its nearest holders (members: true in node.yaml)",
		Long: `Resource discovery on the map that a cluster's membership service
replicates. "advertise NAME" makes the first node of --endpoints a holder of
resource NAME, with attributes (--attr key=value, repeatable); the
advertisement spreads to every member like any write of the map. "find
NAME" asks the first node that answers for the -k holders nearest it
(0: all), nearest first by the round-trip time their Vivaldi coordinates
predict (Dabek et al. 2004) — each member measures its own coordinate
from the membership's pings (every ack carries the answering member's
coordinate), and a holder's travels with its advertisement, so nothing
is probed at find time.
"withdraw NAME" ends the node's advertisement. A holder the membership
declares dead is no longer found; one that stops rewriting its
advertisement (every ten periods) is dropped after sixty.

Names: 1 to 128 printable ASCII bytes without spaces, /, ?, #, % or @;
at most 16 attributes, each key without = and at most 256 bytes with its
value.`,
		Example: `  cohort discover advertise db --attr port=5432 --attr zone=a --endpoints 127.0.0.1:7100
  cohort discover find db -k 3 --endpoints 127.0.0.1:7101
  cohort discover withdraw db --endpoints 127.0.0.1:7100`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			op, name := args[0], args[1]
			if !slices.Contains([]string{"advertise", "find", "withdraw"}, op) {
				return usageErr("discover %q: want advertise, find or withdraw", clipValue(op))
			}
			if op != "advertise" && cmd.Flags().Changed("attr") {
				return usageErr("--attr: only advertise takes attributes")
			}
			if op != "find" && cmd.Flags().Changed("k") {
				return usageErr("-k: only find takes it")
			}
			if k < 0 || k > members.MaxFind {
				return usageErr("-k %d: want 0 (all) to %d", k, members.MaxFind)
			}
			as := map[string]string{}
			var list []epidemic.Attr
			for _, a := range attrs {
				key, v, ok := strings.Cut(a, "=")
				if !ok || key == "" {
					return usageErr("--attr %q: want KEY=VALUE", clipValue(a))
				}
				if _, dup := as[key]; dup {
					return usageErr("--attr %q: key %s given twice", clipValue(a), clipValue(key))
				}
				as[key] = v
				list = append(list, epidemic.Attr{Key: key, Value: v})
			}
			if msg := epidemic.ValidResource(name, list); msg != "" {
				return usageErr("%s", msg)
			}
			c, ctx, done, err := f.client()
			if err != nil {
				return err
			}
			defer done()
			out := cmd.OutOrStdout()
			switch op {
			case "advertise":
				if err := c.Advertise(ctx, name, as); err != nil {
					return failed(err)
				}
				fmt.Fprintf(out, "advertised %s\n", name)
			case "withdraw":
				if err := c.Withdraw(ctx, name); err != nil {
					return failed(err)
				}
				fmt.Fprintf(out, "withdrew %s\n", name)
			case "find":
				hs, err := c.Find(ctx, name, k)
				if err != nil {
					return failed(err)
				}
				if f.json {
					return printJSON(out, hs)
				}
				if len(hs) == 0 {
					return failed(fmt.Errorf("%s: no holder known at the node that answered", name))
				}
				for _, h := range hs {
					keys := make([]string, 0, len(h.Attrs))
					for key := range h.Attrs {
						keys = append(keys, key)
					}
					slices.Sort(keys)
					line := fmt.Sprintf("p%d\t%s\t%s ms", h.ID, h.Addr, strconv.FormatFloat(h.RTT, 'f', 1, 64))
					for _, key := range keys {
						line += "\t" + key + "=" + h.Attrs[key]
					}
					fmt.Fprintln(out, line)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&attrs, "attr", nil, "advertise: an attribute KEY=VALUE (repeatable)")
	cmd.Flags().IntVarP(&k, "k", "k", 3, "find: how many holders, nearest first (0: all)")
	f.add(cmd)
	return cmd
}
