package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/cohort-go/cohort/dht"
	"github.com/cohort-go/cohort/internal/httpapi"
	"github.com/spf13/cobra"
)

// dhtFlags are the flags every dht and scribe command takes.
type dhtFlags struct {
	api     apiFlags
	timeout time.Duration
	json    bool
}

func (f *dhtFlags) add(cmd *cobra.Command, timeout time.Duration, what string) {
	f.api.add(cmd)
	cmd.Flags().DurationVar(&f.timeout, "timeout", timeout, what)
	cmd.Flags().BoolVar(&f.json, "json", false, "print JSON")
}

func newDHTCmd() *cobra.Command {
	var f dhtFlags
	cmd := &cobra.Command{
		Use:   "dht put KEY VALUE|- | get KEY",
		Short: "Store and read values in a cluster's Pastry DHT (dht: true in node.yaml)",
		Long: `Store and read values in the distributed hash table that a cluster's nodes
run with dht: true in node.yaml (cohort cluster up --dht): Pastry routes a
key (its SHA-256, read as a 128-bit identifier) to its home, the node whose
identifier is numerically closest, in about log₁₆ N hops; the home keeps the
value and sends copies to the two next-closest nodes of its leaf set (PAST's
replicas), which keep it through the crash of the home. A put is
acknowledged once the home holds the value. Values are PAST's, immutable:
put a key once.

put - reads the value from standard input. get prints the value, or fails
(exit status 1) if there is none. --json prints the answer: the value, the
home that answered and the route's hops.

Keys: 1 to 256 printable ASCII bytes without spaces, /, ?, # or %; values
at most 64 KiB.`,
		Example: `  cohort dht put color blue --endpoints 127.0.0.1:7100
  cohort dht get color --endpoints 127.0.0.1:7101 --json
  cohort dht put config.yaml - --endpoints 127.0.0.1:7100 < config.yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			want := map[string]int{"put": 3, "get": 2}
			n, ok := want[args[0]]
			if !ok {
				return usageErr("dht %q: want put or get", clipValue(args[0]))
			}
			if len(args) != n {
				return usageErr("dht %s: want %d argument(s), got %d", args[0], n-1, len(args)-1)
			}
			if err := dht.ValidKey(args[1]); err != nil {
				return usageErr("%v", err)
			}
			value := ""
			if args[0] == "put" {
				value = args[2]
				if value == "-" {
					b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), dht.MaxValue+1))
					if err != nil {
						return err
					}
					value = string(b)
				}
				if len(value) > dht.MaxValue {
					return usageErr("value of %d bytes or more: at most %d", len(value), dht.MaxValue)
				}
			}
			endpoints, token, ctx, done, err := f.api.open(f.timeout)
			if err != nil {
				return err
			}
			defer done()
			c := &dht.Client{Endpoints: endpoints, Token: token}
			out := cmd.OutOrStdout()
			var r dht.Result
			if args[0] == "put" {
				r, err = c.Put(ctx, args[1], value)
			} else {
				r, err = c.Get(ctx, args[1])
			}
			if err != nil {
				return &exitError{1, err}
			}
			if f.json {
				return printJSON(out, r)
			}
			if args[0] == "put" {
				fmt.Fprintf(out, "%s stored at node %d (%d hops)\n", r.Key, r.Home, r.Hops)
				return nil
			}
			if !r.Found {
				return &exitError{1, fmt.Errorf("%s: no value under this key", args[1])}
			}
			fmt.Fprintln(out, r.Value)
			return nil
		},
	}
	f.add(cmd, 10*time.Second, "give up after this long (0: never)")
	return cmd
}

func newScribeCmd() *cobra.Command {
	var f dhtFlags
	var count int
	cmd := &cobra.Command{
		Use:   "scribe join|leave|listen GROUP | publish GROUP MESSAGE|-",
		Short: "Multicast to a group over Scribe trees on Pastry (dht: true in node.yaml)",
		Long: `Application-level multicast over the Pastry overlay of a cluster's nodes
(dht: true in node.yaml): a group's root is the node closest to the group's
identifier; members join its tree by routing toward it, and a multicast goes
to the root and down the tree (Scribe, Castro et al. 2002). A member
delivers each multicast at most once, and, while the tree is intact, once;
when a node of the tree crashes, the members below it rejoin around it
within a few seconds, and multicasts sent meanwhile may miss them.

join makes the first node of --endpoints a member of GROUP, leave undoes it;
listen joins and prints each multicast as it is delivered there (its body,
or with --json its id, body and depth in the tree) until --count messages,
the timeout or an interrupt; publish multicasts MESSAGE (-: one multicast
per line of standard input).

Groups: 1 to 128 of A-Z a-z 0-9 . _ -; messages at most 64 KiB.`,
		Example: `  cohort scribe listen news --endpoints 127.0.0.1:7101 --timeout 0
  cohort scribe publish news "hello" --endpoints 127.0.0.1:7100
  cohort scribe join news --endpoints 127.0.0.1:7102`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			want := map[string]int{"join": 2, "leave": 2, "listen": 2, "publish": 3}
			n, ok := want[args[0]]
			if !ok {
				return usageErr("scribe %q: want join, leave, listen or publish", clipValue(args[0]))
			}
			if len(args) != n {
				return usageErr("scribe %s: want %d argument(s), got %d", args[0], n-1, len(args)-1)
			}
			if err := httpapi.ValidName("group", args[1]); err != nil {
				return usageErr("%v", err)
			}
			if args[0] == "publish" && args[2] != "-" && len(args[2]) > dht.MaxMessage {
				return usageErr("message of %d bytes: at most %d", len(args[2]), dht.MaxMessage)
			}
			if count < 0 {
				return usageErr("--count %d: want 0 (no limit) or more", count)
			}
			timeout := f.timeout
			if args[0] == "listen" && !cmd.Flags().Changed("timeout") {
				timeout = 0
			}
			endpoints, token, ctx, done, err := f.api.open(timeout)
			if err != nil {
				return err
			}
			defer done()
			c := &dht.Client{Endpoints: endpoints, Token: token}
			out := cmd.OutOrStdout()
			group := args[1]
			switch args[0] {
			case "join", "leave":
				if args[0] == "join" {
					err = c.JoinGroup(ctx, group)
				} else {
					err = c.LeaveGroup(ctx, group)
				}
				if err != nil {
					return &exitError{1, err}
				}
				return nil
			case "listen":
				enc := json.NewEncoder(out)
				seen := 0
				lctx, stop := context.WithCancel(ctx)
				defer stop()
				err := c.Listen(lctx, group, func(m dht.Message) {
					if f.json {
						_ = enc.Encode(m)
					} else {
						fmt.Fprintln(out, m.Body)
					}
					if seen++; count > 0 && seen >= count {
						stop()
					}
				})
				if lctx.Err() != nil {
					return nil // the count, the timeout or a signal: listening is over
				}
				return &exitError{1, err}
			}
			publish := func(body string) error {
				id, err := c.Publish(ctx, group, body)
				if err != nil {
					return &exitError{1, err}
				}
				if f.json {
					return json.NewEncoder(out).Encode(dht.Published{ID: id})
				}
				return nil
			}
			if args[2] != "-" {
				return publish(args[2])
			}
			sc := bufio.NewScanner(cmd.InOrStdin())
			sc.Buffer(make([]byte, 64<<10), dht.MaxMessage+1)
			lines := 0
			for sc.Scan() {
				lines++
				if err := publish(sc.Text()); err != nil {
					return &exitError{1, fmt.Errorf("line %d: %w (lines before it were published)", lines, err)}
				}
			}
			if errors.Is(sc.Err(), bufio.ErrTooLong) {
				return usageErr("line %d of standard input: longer than %d bytes (lines before it were published)", lines+1, dht.MaxMessage)
			}
			return sc.Err()
		},
	}
	f.add(cmd, 10*time.Second, "give up after this long (0: never; listen: never unless given)")
	cmd.Flags().IntVar(&count, "count", 0, "listen: stop after this many multicasts (0: no limit)")
	return cmd
}
