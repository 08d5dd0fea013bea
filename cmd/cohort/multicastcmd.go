package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/cohort-go/cohort/group"
	"github.com/spf13/cobra"
)

func newMulticastCmd() *cobra.Command {
	var api apiFlags
	var send string
	var listen, asJSON bool
	var count int
	var from uint64
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "multicast NAME (--send TEXT | --send - | --listen)",
		Short: "Multicast to a cluster's group, or print what a node delivers",
		Long: `Send to the group NAME on a Cohort cluster, or follow it. Every node of the
cluster is a member; the node's configuration chooses the ordering
algorithm (group: in node.yaml), so listeners on different nodes print the
same messages in the same order. On the replicated log (group: raft, the
default) a send returns once the message is committed — it will reach
every member — and every message has a position in its group.

--send TEXT multicasts TEXT; --send - multicasts each line of standard
input. Each message's identity (origin node and its number, and its
position) is printed. --listen prints every message the first answering
node delivers from now on — or, with --from N, from position N on —:
"p2#7 TEXT" (with the position, "@12 p2#7 TEXT"), or JSON with --json;
--count N stops after N. A node numbers its messages from 1 again after
a restart: the position names a message for ever, and so does the origin
with its number and, in --json, the sending incarnation ("inc").`,
		Example: `  cohort multicast accounts --listen --endpoints 127.0.0.1:7100
  cohort multicast accounts --listen --from 1 --endpoints 127.0.0.1:7100
  cohort multicast accounts --send "deposit 100" --endpoints 127.0.0.1:7101
  seq 1 100 | cohort multicast numbers --send - --endpoints 127.0.0.1:7102`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := group.ValidName(name); err != nil {
				return usageErr("%v", err)
			}
			endpoints, token, err := api.resolve()
			if err != nil {
				return err
			}
			if (send != "") == listen {
				return usageErr("give one of --send TEXT, --send - and --listen")
			}
			if count < 0 {
				return usageErr("--count %d: want 0 (no limit) or more", count)
			}
			client := &group.Client{Endpoints: endpoints, Token: token}
			ctx, cancel := interruptible(timeout)
			defer cancel()
			out := cmd.OutOrStdout()
			if from > 0 && !listen {
				return usageErr("--from %d: a position to listen from, with --listen", from)
			}
			if listen {
				return listenGroup(ctx, out, client, name, count, from, asJSON)
			}
			if send != "-" {
				return sendOne(ctx, out, client, name, []byte(send), asJSON)
			}
			sc := bufio.NewScanner(cmd.InOrStdin())
			sc.Buffer(make([]byte, 64<<10), group.MaxBody)
			for sc.Scan() {
				if err := sendOne(ctx, out, client, name, sc.Bytes(), asJSON); err != nil {
					return err
				}
			}
			if err := sc.Err(); err != nil {
				return usageErr("standard input: %v", err)
			}
			return nil
		},
	}
	api.add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&send, "send", "", `multicast this text ("-": each line of standard input)`)
	fl.BoolVar(&listen, "listen", false, "print what the node delivers")
	fl.IntVar(&count, "count", 0, "with --listen: stop after this many messages (0: no limit)")
	fl.Uint64Var(&from, "from", 0, "with --listen: from this position of the group on (replicated groups; 0: from now on)")
	fl.DurationVar(&timeout, "timeout", 0, "stop after this long (0: no limit)")
	fl.BoolVar(&asJSON, "json", false, "print JSON, one object per line")
	return cmd
}

func sendOne(ctx context.Context, out io.Writer, c *group.Client, name string, body []byte, asJSON bool) error {
	id, pos, err := c.Send(ctx, name, body)
	if err != nil {
		return &exitError{1, fmt.Errorf("group %q: %w", name, err)}
	}
	if asJSON {
		return json.NewEncoder(out).Encode(struct {
			group.ID
			Pos uint64 `json:"pos,omitempty"`
		}{id, pos})
	}
	if pos > 0 {
		fmt.Fprintf(out, "sent p%d#%d at @%d\n", id.Origin, id.Seq, pos)
		return nil
	}
	fmt.Fprintf(out, "sent p%d#%d\n", id.Origin, id.Seq)
	return nil
}

func listenGroup(ctx context.Context, out io.Writer, c *group.Client, name string, count int, from uint64, asJSON bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ds, wait, err := c.DeliveriesFrom(ctx, name, from)
	if err != nil {
		return &exitError{1, fmt.Errorf("group %q: %w", name, err)}
	}
	n := 0
	for d := range ds {
		if asJSON {
			b, _ := json.Marshal(struct {
				Origin int    `json:"origin"`
				Inc    uint64 `json:"inc,omitempty"`
				Seq    uint64 `json:"seq"`
				Pos    uint64 `json:"pos,omitempty"`
				Body   string `json:"body"`
			}{int(d.Origin), d.Inc, d.Seq, d.Pos, string(d.Body)})
			fmt.Fprintln(out, string(b))
		} else if d.Pos > 0 {
			fmt.Fprintf(out, "@%d p%d#%d %s\n", d.Pos, d.Origin, d.Seq, d.Body)
		} else {
			fmt.Fprintf(out, "p%d#%d %s\n", d.Origin, d.Seq, d.Body)
		}
		if n++; count > 0 && n == count {
			cancel()
			break
		}
	}
	if err := wait(); err != nil {
		return &exitError{1, fmt.Errorf("group %q: %w", name, err)}
	}
	return nil
}
