package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cohort-go/cohort/queue"
	"github.com/spf13/cobra"
)

// queueFlags are the flags every queue command takes.
type queueFlags struct {
	api     apiFlags
	timeout time.Duration
	json    bool
}

func (f *queueFlags) add(cmd *cobra.Command, timeout time.Duration, what string) {
	f.api.add(cmd)
	cmd.Flags().DurationVar(&f.timeout, "timeout", timeout, what)
	cmd.Flags().BoolVar(&f.json, "json", false, `print each message as JSON: {"queue","id","body"} (body in base64)`)
}

func (f *queueFlags) client(name string) (*queue.Client, context.Context, func(), error) {
	if err := queue.ValidName(name); err != nil {
		return nil, nil, nil, usageErr("%v", err)
	}
	endpoints, token, ctx, cancel, err := f.api.open(f.timeout)
	if err != nil {
		return nil, nil, nil, err
	}
	return &queue.Client{Endpoints: endpoints, Token: token}, ctx, cancel, nil
}

// print writes a message: its body and a newline, or a line of JSON.
func (f *queueFlags) print(w io.Writer, m queue.Message) error {
	if f.json {
		return json.NewEncoder(w).Encode(m)
	}
	_, err := fmt.Fprintf(w, "%s\n", m.Body)
	return err
}

func newQueueCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "queue put|get|poll|listen|list|tx",
		Short: "Put, get and listen to a cluster's message queues",
		Long: `Message queues on a cluster's nodes: persistent asynchronous communication,
where the sender and the receiver need not run at the same time. get waits
for messages, prints them and then acknowledges them, so a message is
printed at least once and, once acknowledged, never delivered again. The
commands use the first endpoint that answers.

On a cluster with lock: raft (cohort cluster up) the queues are replicated
on the cluster's log (queues: replicated, the default): a put is
acknowledged once a majority of the nodes has it on disk, and every node
serves every queue — a message put through one node can be got through
another, after any minority of nodes is lost, or all restarted.

With queues: local in node.yaml (or a textbook lock) the queues are each
node's own: a put is acknowledged once the message is on that node's disk
(fsync, shared by the puts that arrive meanwhile); a node without data_dir
keeps them in memory (transient).`,
	}
	cmd.AddCommand(newQueuePutCmd(), newQueueGetCmd(false), newQueueGetCmd(true), newQueueListenCmd(), newQueueListCmd(), newQueueTxCmd())
	return cmd
}

func newQueuePutCmd() *cobra.Command {
	var f queueFlags
	cmd := &cobra.Command{
		Use:   "put NAME TEXT|-",
		Short: "Append a message to a queue (-: one message per line of standard input)",
		Long: `Appends TEXT to queue NAME, or with - each line of standard input as a
message, over one stream of puts (POST /v1/queues/NAME/stream): each line
goes as soon as it is read, without waiting for those before it, and the
node syncs the lines that arrive together at once. With --json each line's
id is printed, in order, once it is on disk (replicated queues: once a
majority has it). If the node goes away, the lines not acknowledged go
again through another endpoint, each put once.

A put is numbered: if its reply is lost it goes again, under its number,
and the node stores it once — through another endpoint on replicated
queues, to the same node on a node's own (queues: local), since another
node's queue of the same name is another queue; if that node stays away,
the put fails as in doubt rather than be stored twice.`,
		Example: `  cohort queue put jobs "resize photo 17" --endpoints 127.0.0.1:7100
  seq 1 100 | cohort queue put jobs - --endpoints 127.0.0.1:7100`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[1] != "-" && len(args[1]) > queue.MaxMessage {
				return usageErr("TEXT of %d bytes: at most %d", len(args[1]), queue.MaxMessage)
			}
			c, ctx, done, err := f.client(args[0])
			if err != nil {
				return err
			}
			defer done()
			out := cmd.OutOrStdout()
			put := func(body string) error {
				id, err := c.Put(ctx, args[0], []byte(body))
				if err != nil {
					return failed(err)
				}
				if f.json {
					return json.NewEncoder(out).Encode(queue.PutReply{Queue: args[0], ID: id})
				}
				return nil
			}
			if args[1] != "-" {
				return put(args[1])
			}
			return putLines(ctx, c, args[0], cmd.InOrStdin(), f.json, out)
		},
	}
	f.add(cmd, 10*time.Second, "give up after this long (0: never)")
	return cmd
}

// putLines puts each line of in as a message, over one stream of puts
// (queue.Publisher): a line goes as soon as it is read, without waiting
// for those before it, and is acknowledged (its id printed, with asJSON)
// once the node has it on disk, in the order of the lines. A lost
// stream is replaced through another endpoint, and the lines not
// acknowledged sent again, each put once.
func putLines(ctx context.Context, c *queue.Client, name string, in io.Reader, asJSON bool, out io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), queue.MaxMessage+1)
	acks := make(chan *queue.PutAck, queue.DefaultMaxPending)
	var scanErr error
	if sc.Scan() { // no stream for no line
		p, err := c.Publish(ctx, name)
		if err != nil {
			return failed(fmt.Errorf("line 1: %w", err))
		}
		defer p.Close(ctx)
		go func() {
			defer close(acks)
			for ok := true; ok; ok = sc.Scan() {
				a := p.PutAsync(slices.Clone(sc.Bytes()))
				select {
				case acks <- a:
				case <-ctx.Done():
					return
				}
			}
			scanErr = sc.Err() // read after acks is closed
		}()
	} else {
		close(acks)
		scanErr = sc.Err()
	}
	enc := json.NewEncoder(out)
	n := 0
	for a := range acks {
		id, err := a.Wait(ctx)
		if err != nil {
			return failed(fmt.Errorf("line %d: %w (lines before it were put)", n+1, err))
		}
		n++
		if asJSON {
			if err := enc.Encode(queue.PutReply{Queue: name, ID: id}); err != nil {
				return err
			}
		}
	}
	if errors.Is(scanErr, bufio.ErrTooLong) {
		return usageErr("line %d of standard input: longer than %d bytes (lines before it were put)", n+1, queue.MaxMessage)
	}
	if scanErr == nil && ctx.Err() != nil {
		return failed(fmt.Errorf("line %d: %w (lines before it were put)", n+1, ctx.Err()))
	}
	return scanErr
}

func newQueueGetCmd(poll bool) *cobra.Command {
	var f queueFlags
	var count int
	var visibility time.Duration
	var noAck bool
	use, short := "get NAME", "Wait for messages, print them and acknowledge them"
	example := `  cohort queue get jobs --endpoints 127.0.0.1:7100
  cohort queue get jobs --count 10 --timeout 30s --endpoints 127.0.0.1:7100`
	timeout, what := time.Duration(0), "give up after this long (0: wait for ever)"
	if poll {
		use, short = "poll NAME", "Take the messages waiting, without blocking: print and acknowledge them"
		example = `  cohort queue poll jobs --endpoints 127.0.0.1:7100
  cohort queue poll jobs --count 100 --json --endpoints 127.0.0.1:7100`
		timeout, what = 10*time.Second, "give up after this long (0: never)"
	}
	cmd := &cobra.Command{
		Use: use, Short: short, Example: example,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if count < 1 || count > queue.MaxCount {
				return usageErr("--count %d: want 1 to %d", count, queue.MaxCount)
			}
			if visibility < time.Millisecond || visibility > queue.MaxVisibility {
				return usageErr("--visibility %v: want 1ms to %v", visibility, queue.MaxVisibility)
			}
			c, ctx, done, err := f.client(args[0])
			if err != nil {
				return err
			}
			defer done()
			got := 0
			for got < count {
				o := queue.GetOptions{Count: count - got, Visibility: visibility, NoWait: poll, Wait: 30 * time.Second}
				if dl, ok := ctx.Deadline(); ok {
					o.Wait = min(o.Wait, max(time.Until(dl), time.Millisecond))
				}
				msgs, err := c.Get(ctx, args[0], o)
				if err != nil {
					if ctx.Err() != nil && !poll {
						return &exitError{1, fmt.Errorf("got %d of %d message(s) before the timeout", got, count)}
					}
					return failed(err)
				}
				var leases []uint64 // in the order got
				ids := map[uint64][]uint64{}
				for _, m := range msgs {
					if err := f.print(cmd.OutOrStdout(), m); err != nil {
						return err
					}
					if ids[m.Lease] == nil {
						leases = append(leases, m.Lease)
					}
					ids[m.Lease] = append(ids[m.Lease], m.ID)
				}
				// A get's messages share one lease (0 from a node's own
				// queues); were there more, each is acknowledged on its own.
				for _, lease := range leases {
					if noAck {
						break
					}
					if err := c.AckLease(ctx, args[0], lease, ids[lease]...); err != nil {
						return fmt.Errorf("acknowledging (the messages will be delivered again): %w", err)
					}
				}
				got += len(msgs)
				if poll {
					break
				}
			}
			return nil
		},
	}
	f.add(cmd, timeout, what)
	cmd.Flags().IntVar(&count, "count", 1, fmt.Sprintf("how many messages to take (1 to %d)", queue.MaxCount))
	cmd.Flags().DurationVar(&visibility, "visibility", 30*time.Second, "lease of the messages until their acknowledgement")
	cmd.Flags().BoolVar(&noAck, "no-ack", false, "leave the messages leased, unacknowledged (for cohort queue tx --ack, or delivered again after --visibility)")
	return cmd
}

func newQueueListenCmd() *cobra.Command {
	var f queueFlags
	cmd := &cobra.Command{
		Use:   "listen NAME",
		Short: "Print each message put on a queue as it arrives (notify: the messages stay queued)",
		Example: `  cohort queue listen jobs --endpoints 127.0.0.1:7100
  cohort queue listen jobs --timeout 1m --json --endpoints 127.0.0.1:7100`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ctx, done, err := f.client(args[0])
			if err != nil {
				return err
			}
			defer done()
			var perr error
			err = c.Listen(ctx, args[0], func(m queue.Message) {
				if perr == nil {
					perr = f.print(cmd.OutOrStdout(), m)
				}
			})
			return failed(errors.Join(err, perr))
		},
	}
	f.add(cmd, 0, "stop listening after this long (0: never)")
	return cmd
}

func newQueueListCmd() *cobra.Command {
	var f queueFlags
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List a node's queues: messages ready and leased, bytes",
		Example: `  cohort queue list --endpoints 127.0.0.1:7100`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ctx, done, err := f.client("list")
			if err != nil {
				return err
			}
			defer done()
			qs, err := c.Queues(ctx)
			if err != nil {
				return failed(err)
			}
			if f.json {
				return printJSON(cmd.OutOrStdout(), qs)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "QUEUE\tREADY\tLEASED\tBYTES\tKIND")
			for _, q := range qs {
				kind := "persistent"
				if q.Replicated {
					kind = "replicated"
				}
				if q.Transient {
					kind = "transient"
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", q.Name, q.Ready, q.Leased, q.Bytes, kind)
			}
			return tw.Flush()
		},
	}
	f.add(cmd, 10*time.Second, "give up after this long (0: never)")
	return cmd
}

func newQueueTxCmd() *cobra.Command {
	var f queueFlags
	var acks, puts []string
	var origin string
	var seq uint64
	cmd := &cobra.Command{
		Use:   "tx [--ack QUEUE:ID[:LEASE]]... [--put QUEUE=TEXT]...",
		Short: "Acknowledge messages and put others in one transaction: all of it or none",
		Long: `A transaction: the messages named by --ack (got before and not
acknowledged: cohort queue get --no-ack --json prints each with its id
and lease) are acknowledged and the --put messages put, together or not
at all — if one of the acked messages is no longer held (or no longer
under the lease given), or a queue is full, nothing of it is applied
(exit 1). It prints the ids put, one a line. --origin and --seq number
the transaction (replicated queues): sent again with the same numbers,
through any node, it is applied once.`,
		Example: `  cohort queue tx --ack jobs:17:4242 --put results="photo 17 resized" --endpoints 127.0.0.1:7100
  cohort queue tx --put a=1 --put b=2 --origin worker-3 --seq 12 --endpoints 127.0.0.1:7100`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req := queue.TxRequest{Origin: origin, Seq: seq}
			for _, a := range acks {
				parts := strings.Split(a, ":")
				if len(parts) < 2 || len(parts) > 3 {
					return usageErr("--ack %q: want QUEUE:ID or QUEUE:ID:LEASE", clipValue(a))
				}
				if err := queue.ValidName(parts[0]); err != nil {
					return usageErr("--ack %q: %v", clipValue(a), err)
				}
				id, err := strconv.ParseUint(parts[1], 10, 64)
				if err != nil || id == 0 {
					return usageErr("--ack %q: id %q: want a message id (1 or more)", clipValue(a), clipValue(parts[1]))
				}
				ack := queue.TxAck{Queue: parts[0], ID: id}
				if len(parts) == 3 {
					if ack.Lease, err = strconv.ParseUint(parts[2], 10, 64); err != nil || ack.Lease == 0 {
						return usageErr("--ack %q: lease %q: want a lease number (1 or more)", clipValue(a), clipValue(parts[2]))
					}
				}
				req.Acks = append(req.Acks, ack)
			}
			for _, p := range puts {
				name, text, ok := strings.Cut(p, "=")
				if !ok {
					return usageErr("--put %q: want QUEUE=TEXT", clipValue(p))
				}
				if err := queue.ValidName(name); err != nil {
					return usageErr("--put %q: %v", clipValue(p), err)
				}
				req.Puts = append(req.Puts, queue.TxPut{Queue: name, Body: []byte(text)})
			}
			switch {
			case len(req.Acks)+len(req.Puts) == 0:
				return usageErr("nothing to do: give --ack or --put (up to %d in all)", queue.MaxTxOps)
			case len(req.Acks)+len(req.Puts) > queue.MaxTxOps:
				return usageErr("%d --ack and --put: want at most %d", len(req.Acks)+len(req.Puts), queue.MaxTxOps)
			case origin == "" && seq != 0:
				return usageErr("--seq %d without --origin", seq)
			case origin != "" && seq == 0:
				return usageErr("--origin %q without --seq (1 or more)", clipValue(origin))
			}
			c, ctx, done, err := f.client("tx")
			if err != nil {
				return err
			}
			defer done()
			reply, err := c.Transact(ctx, req)
			if errors.Is(err, queue.ErrTooBig) || errors.Is(err, queue.ErrName) || errors.Is(err, queue.ErrInvalid) {
				return usageErr("%v", err)
			}
			if err != nil {
				// Refused (or not answered): nothing of it applied — or, not
				// answered, unknown: send it again numbered (--origin, --seq).
				return &exitError{1, err}
			}
			if f.json {
				return printJSON(cmd.OutOrStdout(), reply)
			}
			for _, id := range reply.IDs {
				fmt.Fprintln(cmd.OutOrStdout(), id)
			}
			if reply.Duplicate {
				fmt.Fprintf(cmd.ErrOrStderr(), "transaction %s/%d was applied before: nothing done again\n", origin, seq)
			}
			return nil
		},
	}
	f.add(cmd, 10*time.Second, "give up after this long (0: never)")
	cmd.Flags().Lookup("json").Usage = `print the reply as JSON: {"ids":[...],"duplicate":true|absent}`
	cmd.Flags().StringArrayVar(&acks, "ack", nil, "a message to acknowledge: QUEUE:ID, or QUEUE:ID:LEASE (only while under that lease)")
	cmd.Flags().StringArrayVar(&puts, "put", nil, "a message to put: QUEUE=TEXT")
	cmd.Flags().StringVar(&origin, "origin", "", "number the transaction: the client's name (with --seq)")
	cmd.Flags().Uint64Var(&seq, "seq", 0, "number the transaction: its number from --origin (1 or more)")
	return cmd
}
