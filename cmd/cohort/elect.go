package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cohort-go/cohort/internal/httpapi"
	"github.com/cohort-go/cohort/leader"
	"github.com/cohort-go/cohort/lock"
	"github.com/cohort-go/cohort/node"
	"github.com/cohort-go/cohort/proc"
	"github.com/spf13/cobra"
)

type electFlags struct {
	api           apiFlags
	campaign, get bool
	asJSON        bool
	ttl, timeout  time.Duration
	margin        time.Duration
}

func newElectCmd() *cobra.Command {
	var f electFlags
	cmd := &cobra.Command{
		Use:   "elect NAME [--campaign -- CMD [ARGS...]]",
		Short: "Watch a cluster's election, or run a command while leading it",
		Long: `Follow the election NAME on a Cohort cluster: print the leader now and at
every change (--get: print it once and exit).

With --campaign, stand as a candidate through the first node that answers,
wait until that node leads, run CMD, and resign when CMD exits; exit with
CMD's status. CMD sees COHORT_ELECTION, COHORT_LEADER (the node's id) and
COHORT_FENCING_TOKEN (the leadership's term, higher than every earlier
leadership's: pass it to resources so they can refuse a deposed leader).
On a replicated cluster (lock: raft, the default) the leadership is held
by a session of --ttl that cohort renews every quarter of it, through
whichever node answers; the term is the log index of the grant, so it
rises for ever. Candidates lead in the order they stood; a leadership ends
when its session does. cohort stops CMD --margin (ttl/5) before the session
could expire if it cannot renew it (SIGTERM, then SIGKILL at half the
margin), so two leaders' commands never run at once, and exits 1.

On the textbook backend (bully-fd) the candidacy is a lease of --ttl
renewed every third of it; if the node stops leading (a higher candidate
came back) or the lease is lost, CMD is sent SIGTERM and cohort exits with
status 1.

Nodes can also stand in elections from boot (campaign: in node.yaml),
holding them by a session of the election timeout (election.timeout,
300ms) — or, under bully-fd, the highest live node leads.`,
		Example: `  cohort elect scheduler --endpoints 127.0.0.1:7100
  cohort elect scheduler --get --json
  cohort elect scheduler --campaign --endpoints 127.0.0.1:7101 -- ./run-scheduler`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := leader.ValidName(name); err != nil {
				return usageErr("%v", err)
			}
			endpoints, token, err := f.api.resolve()
			if err != nil {
				return err
			}
			client := &leader.Client{Endpoints: endpoints, Token: token}
			dash := cmd.ArgsLenAtDash()
			switch {
			case f.campaign && (dash != 1 || len(args) < 2):
				return usageErr("usage: cohort elect NAME --campaign -- CMD [ARGS...] (the command after --)")
			case !f.campaign && len(args) > 1:
				return usageErr("a command (%q) needs --campaign", strings.Join(args[1:], " "))
			case f.campaign && (f.ttl < 100*time.Millisecond || f.ttl > leader.MaxTTL):
				return usageErr("--ttl %v: want between 100ms and %v", f.ttl, leader.MaxTTL)
			case f.campaign && (f.margin < 0 || f.margin >= f.ttl/2):
				return usageErr("--margin %v: want a positive duration under half the ttl (%v)", f.margin, f.ttl/2)
			case f.campaign:
				return runLeading(cmd, client, name, args[1:], f)
			case f.get:
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				v, err := client.Get(ctx, name)
				if err != nil {
					return &exitError{1, fmt.Errorf("election %q: %w", name, err)}
				}
				printView(cmd.OutOrStdout(), v, f.asJSON)
				return nil
			}
			return watchElection(cmd, client, name, f)
		},
	}
	f.api.add(cmd)
	fl := cmd.Flags()
	fl.BoolVar(&f.campaign, "campaign", false, "stand as a candidate and run the command after -- while leading")
	fl.BoolVar(&f.get, "get", false, "print the current leader once and exit")
	fl.BoolVar(&f.asJSON, "json", false, "print views as JSON, one per line")
	fl.DurationVar(&f.ttl, "ttl", 10*time.Second, "candidacy session (or lease) length")
	fl.DurationVar(&f.margin, "margin", 0, "stop CMD this long before the session could expire (default ttl/5; replicated clusters)")
	fl.DurationVar(&f.timeout, "timeout", 0, "give up waiting to lead (--campaign) or watching after this long (0: for ever)")
	return cmd
}

func printView(w io.Writer, v leader.View, asJSON bool) {
	if asJSON {
		b, _ := json.Marshal(v)
		fmt.Fprintln(w, string(b))
		return
	}
	who := "none (an election is under way, or nobody stands)"
	if v.Leader != proc.None {
		who = "node " + strconv.Itoa(int(v.Leader))
	}
	if v.Leader != proc.None {
		who += fmt.Sprintf(", term %d", v.Term)
	}
	fmt.Fprintf(w, "%s  election %s: leader %s (seen by node %d, change %d)\n",
		v.Since.Format("15:04:05.000"), v.Name, who, v.Node, v.Changes)
}

func watchElection(cmd *cobra.Command, client *leader.Client, name string, f electFlags) error {
	ctx, cancel := interruptible(f.timeout)
	defer cancel()
	views, wait, err := client.Watch(ctx, name)
	if err != nil {
		return &exitError{1, fmt.Errorf("election %q: %w", name, err)}
	}
	for v := range views {
		printView(cmd.OutOrStdout(), v, f.asJSON)
	}
	if err := wait(); err != nil {
		return &exitError{1, fmt.Errorf("election %q: the stream broke: %w", name, err)}
	}
	return nil
}

func runLeading(cmd *cobra.Command, client *leader.Client, name string, argv []string, f electFlags) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cctx := ctx
	if f.timeout > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
	}
	// On a replicated cluster the candidacy is a session this command
	// renews itself (see runInSession); else a lease the node keeps.
	ls, err := openSession(cctx, cmd.ErrOrStderr(), &lock.Client{Endpoints: client.Endpoints, Token: client.Token, HTTP: client.HTTP}, f.ttl, fmt.Sprintf("election %q", name))
	switch {
	case err == nil:
		margin := f.margin
		if margin == 0 {
			margin = f.ttl / 5
		}
		acquire := func(ctx context.Context) ([]string, error) {
			var out struct {
				Leader int    `json:"leader"`
				Term   uint64 `json:"term"`
			}
			path := fmt.Sprintf("/v1/elections/%s/campaign?session=%d&seq=%d", url.PathEscape(name), ls.ID, ls.Next())
			if err := ls.Poll(ctx, http.MethodPost, path, &out); err != nil {
				return nil, err
			}
			return []string{"COHORT_ELECTION=" + name, "COHORT_LEADER=" + strconv.Itoa(out.Leader),
				"COHORT_FENCING_TOKEN=" + strconv.FormatUint(out.Term, 10)}, nil
		}
		return runInSession(cmd, cctx, stop, ls, fmt.Sprintf("election %q", name), acquire, argv, margin)
	case !errors.Is(err, lock.ErrNoSessions):
		return &exitError{1, fmt.Errorf("election %q: %w", name, err)}
	}
	warnTextbook(cctx, cmd.ErrOrStderr(), &httpapi.Client{Endpoints: client.Endpoints, Token: client.Token, HTTP: client.HTTP},
		"elections", func(h node.Health) string { return h.Elections })
	term, err := client.Campaign(cctx, name, f.ttl)
	if err != nil {
		return &exitError{1, fmt.Errorf("election %q: %w", name, err)}
	}
	stop() // from here on, signals go to the command

	// Follow the view of the node that leads for us: losing the lead shows
	// there first, before the next renewal.
	wctx, wcancel := context.WithCancel(context.Background())
	defer wcancel()
	follower := &leader.Client{Endpoints: []string{term.Endpoint()}, Token: client.Token, HTTP: client.HTTP}
	views, _, werr := follower.Watch(wctx, name)
	if werr != nil {
		views = nil
	}

	child := exec.Command(argv[0], argv[1:]...)
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, cmd.OutOrStdout(), cmd.ErrOrStderr()
	child.Env = append(os.Environ(), "COHORT_ELECTION="+name, "COHORT_LEADER="+strconv.Itoa(term.Node),
		"COHORT_FENCING_TOKEN="+strconv.FormatUint(term.Term, 10))
	if err := child.Start(); err != nil {
		_ = term.Resign(context.Background())
		return usageErr("%s: %v", argv[0], err)
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()

	renew := time.NewTicker(f.ttl / 3)
	defer renew.Stop()
	var lostWhy error
	lose := func(why error) {
		if lostWhy == nil {
			lostWhy = why
			fmt.Fprintf(cmd.ErrOrStderr(), "cohort: election %q: %v; stopping the command\n", name, why)
			_ = child.Process.Signal(syscall.SIGTERM)
		}
	}
	var waitErr error
loop:
	for {
		select {
		case waitErr = <-exited:
			break loop
		case s := <-sigs:
			_ = child.Process.Signal(s)
		case v, ok := <-views:
			if !ok {
				views = nil // the stream broke: the renewals still guard us
				continue
			}
			if v.Leader != proc.ID(term.Node) || v.Term != term.Term {
				lose(fmt.Errorf("node %d no longer leads under term %d (leader now %d, term %d)", term.Node, term.Term, v.Leader, v.Term))
			}
		case <-renew.C:
			kctx, cancel := context.WithTimeout(context.Background(), f.ttl/3)
			err := term.KeepAlive(kctx)
			cancel()
			if err != nil {
				lose(fmt.Errorf("renewing the candidacy failed: %w", err))
			}
		}
	}
	rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := term.Resign(rctx); err != nil && !errors.Is(err, leader.ErrLeaseLost) {
		fmt.Fprintf(cmd.ErrOrStderr(), "cohort: election %q: resign: %v (the lease expires by itself)\n", name, err)
	}
	if lostWhy != nil {
		return &exitError{1, fmt.Errorf("election %q was lost while the command ran", name)}
	}
	return commandStatus(waitErr)
}
