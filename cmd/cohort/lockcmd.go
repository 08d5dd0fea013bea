package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/cohort-go/cohort/internal/httpapi"
	"github.com/cohort-go/cohort/lock"
	"github.com/cohort-go/cohort/node"
	"github.com/spf13/cobra"
)

func newLockCmd() *cobra.Command {
	var api apiFlags
	var ttl, timeout, margin time.Duration
	cmd := &cobra.Command{
		Use:   "lock NAME -- CMD [ARGS...]",
		Short: "Run a command while holding a cluster-wide lock",
		Long: `Take the lock NAME on a Cohort cluster, run CMD while holding it, and
release it when CMD exits; exit with CMD's status. CMD sees the grant's
fencing token in COHORT_FENCING_TOKEN (strictly increasing across grants:
pass it to the resource so it can refuse a stale holder) and the lock's
name in COHORT_LOCK_NAME.

On the replicated lock service (lock: raft, the default) the lock is held
by a session of --ttl, renewed every quarter of it. cohort counts on the
session until the send time of its last successful renewal plus the TTL
shortened by the clock drift bound — past that the cluster may give the
lock to someone else — and stops CMD before: SIGTERM --margin before that
deadline, SIGKILL at half the margin; then it exits with status 1. A
session the cluster says is over stops CMD at once.

On a textbook algorithm (lock: ricart-agrawala, ...) the lock is a lease
of --ttl renewed every third of it; if a renewal fails CMD is sent SIGTERM,
SIGKILL half the margin later, and cohort exits with status 1. A node that
crashes holding the lock for cohort lets nobody else in for --ttl after it
restarts (Ricart–Agrawala, central, central-failover), nor does
central-failover's coordinator take the lock back from a silent holder
sooner.`,
		Example: `  cohort lock db-migrations --endpoints 127.0.0.1:7101,127.0.0.1:7102 -- ./migrate up`,
		Args:    cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, argv := args[0], args[1:]
			if dash := cmd.ArgsLenAtDash(); dash != 1 {
				return usageErr("usage: cohort lock NAME -- CMD [ARGS...] (the command after --)")
			}
			endpoints, token, err := api.resolve()
			if err != nil {
				return err
			}
			if ttl < 100*time.Millisecond || ttl > lock.MaxTTL {
				return usageErr("--ttl %v: want between 100ms and %v", ttl, lock.MaxTTL)
			}
			if margin == 0 {
				margin = ttl / 5
			}
			if margin < 0 || margin >= ttl/2 {
				return usageErr("--margin %v: want a positive duration under half the ttl (%v)", margin, ttl/2)
			}
			client := &lock.Client{Endpoints: endpoints, Token: token}
			return runLocked(cmd, client, name, argv, ttl, timeout, margin)
		},
	}
	api.add(cmd)
	cmd.Flags().DurationVar(&ttl, "ttl", 10*time.Second, "session (or lease) length")
	cmd.Flags().DurationVar(&margin, "margin", 0, "stop CMD this long before the session could expire (default ttl/5)")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up waiting for the lock after this long (0: wait for ever)")
	return cmd
}

func runLocked(cmd *cobra.Command, client *lock.Client, name string, argv []string, ttl, timeout, margin time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	actx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	s, err := openSession(actx, cmd.ErrOrStderr(), client, ttl, fmt.Sprintf("lock %q", name))
	switch {
	case err == nil:
		acquire := func(ctx context.Context) ([]string, error) {
			token, err := s.Lock(ctx, name)
			return lockEnv(name, token), err
		}
		return runInSession(cmd, actx, stop, s, fmt.Sprintf("lock %q", name), acquire, argv, margin)
	case !errors.Is(err, lock.ErrNoSessions):
		return &exitError{1, fmt.Errorf("lock %q: %w", name, err)}
	}
	warnTextbook(actx, cmd.ErrOrStderr(), &httpapi.Client{Endpoints: client.Endpoints, Token: client.Token, HTTP: client.HTTP},
		"locks", func(h node.Health) string { return h.Lock })
	held, err := client.Acquire(actx, name, ttl)
	if err != nil {
		return &exitError{1, fmt.Errorf("lock %q: %w", name, err)}
	}
	stop() // from here on, signals go to the command

	child, sigs, exited, err := startLocked(cmd, argv, lockEnv(name, held.Token)...)
	if err != nil {
		_ = held.Release(context.Background())
		return err
	}
	defer signal.Stop(sigs)

	renew := time.NewTicker(ttl / 3)
	defer renew.Stop()
	lost := false
	var kill <-chan time.Time // after SIGTERM, SIGKILL at half the margin
	var waitErr error
loop:
	for {
		select {
		case waitErr = <-exited:
			break loop
		case s := <-sigs:
			_ = child.Process.Signal(s)
		case <-kill:
			_ = child.Process.Kill()
		case <-renew.C:
			kctx, cancel := context.WithTimeout(context.Background(), ttl/3)
			err := held.KeepAlive(kctx)
			cancel()
			if err != nil && !lost {
				lost = true
				fmt.Fprintf(cmd.ErrOrStderr(), "cohort: lock %q: renewing the lease failed (%v); stopping the command\n", name, err)
				_ = child.Process.Signal(syscall.SIGTERM)
				kill = time.After(margin / 2)
			}
		}
	}
	if !lost {
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := held.Release(rctx); err != nil && !errors.Is(err, lock.ErrLeaseLost) {
			fmt.Fprintf(cmd.ErrOrStderr(), "cohort: lock %q: release: %v (the lease expires by itself)\n", name, err)
		}
	}
	if lost {
		return &exitError{1, fmt.Errorf("lock %q was lost while the command ran", name)}
	}
	return commandStatus(waitErr)
}

// commandStatus passes a child command's exit on: its status, or 128 +
// the signal that killed it, with no message of cohort's own.
func commandStatus(waitErr error) error {
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		code := ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
		return &exitError{code, errSilent}
	}
	if waitErr != nil {
		return &exitError{1, waitErr}
	}
	return nil
}

// errSilent ends the CLI with a status and no message of its own (the
// command has spoken).
var errSilent = errors.New("")

// runInSession runs argv while session s holds lock name. A goroutine
// renews the session every quarter of its TTL, from before the lock is
// asked for; the command is stopped margin before the session's
// reckoning runs out (SIGTERM, then SIGKILL at margin/2), or at once if
// the session is over.
//
// what names the hold in messages (`lock "x"`); acquire takes it under the
// session and returns the command's environment.
func runInSession(cmd *cobra.Command, actx context.Context, stopSignals func(), s *lock.ClientSession, what string,
	acquire func(context.Context) ([]string, error), argv []string, margin time.Duration) error {
	errw := cmd.ErrOrStderr()
	rctx, stopRenewing := context.WithCancel(context.Background())
	defer stopRenewing()
	renewed := make(chan error, 1)
	go func() {
		t := time.NewTicker(s.TTL / 4)
		defer t.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case <-t.C:
				kctx, cancel := context.WithTimeout(rctx, s.TTL/4)
				_, err := s.KeepAlive(kctx)
				cancel()
				if errors.Is(err, lock.ErrLeaseLost) || err == nil {
					select {
					case renewed <- err:
					default:
					}
				}
				if err != nil && rctx.Err() == nil && !errors.Is(err, lock.ErrLeaseLost) {
					fmt.Fprintf(errw, "cohort: %s: renewing the session: %v (counting on it until %s)\n", what, err, s.Until().Format(time.TimeOnly))
				}
			}
		}
	}()
	closeSession := func() {
		stopRenewing()
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Close(cctx); err != nil && !errors.Is(err, lock.ErrLeaseLost) {
			fmt.Fprintf(errw, "cohort: %s: closing the session: %v (it expires by itself)\n", what, err)
		}
	}
	env, err := acquire(actx)
	if err != nil {
		closeSession()
		return &exitError{1, fmt.Errorf("%s: %w", what, err)}
	}
	if time.Until(s.Until()) <= margin {
		closeSession()
		return &exitError{1, fmt.Errorf("%s: granted, but the session could not be renewed in time to use it", what)}
	}
	stopSignals() // from here on, signals go to the command

	child, sigs, exited, err := startLocked(cmd, argv, env...)
	if err != nil {
		closeSession()
		return err
	}
	defer signal.Stop(sigs)

	deadline := time.NewTimer(time.Until(s.Until()) - margin)
	defer deadline.Stop()
	var lost string
	var kill <-chan time.Time
	var waitErr error
loop:
	for {
		select {
		case waitErr = <-exited:
			break loop
		case sig := <-sigs:
			_ = child.Process.Signal(sig)
		case err := <-renewed:
			if err != nil && lost == "" {
				lost = "the cluster ended the session"
				_ = child.Process.Signal(syscall.SIGTERM)
				kill = time.After(margin / 2)
			}
			if err == nil && lost == "" {
				deadline.Reset(time.Until(s.Until()) - margin)
			}
		case <-deadline.C:
			if lost == "" {
				lost = fmt.Sprintf("the session could not be renewed; it may expire at %s", s.Until().Format("15:04:05.000"))
				_ = child.Process.Signal(syscall.SIGTERM)
				kill = time.After(margin / 2)
			}
		case <-kill:
			_ = child.Process.Kill()
			kill = nil
		}
	}
	closeSession()
	if lost != "" {
		fmt.Fprintf(errw, "cohort: %s: %s; the command was stopped before anyone else could be granted it\n", what, lost)
		return &exitError{1, fmt.Errorf("%s was lost while the command ran", what)}
	}
	return commandStatus(waitErr)
}

// lockEnv is the environment of a command that holds lock name.
func lockEnv(name string, token uint64) []string {
	return []string{"COHORT_FENCING_TOKEN=" + strconv.FormatUint(token, 10), "COHORT_LOCK_NAME=" + name}
}

// startLocked starts argv, with env added to its environment, and from
// then on catches SIGINT and SIGTERM (sigs) for it; exited yields its end.
func startLocked(cmd *cobra.Command, argv []string, env ...string) (*exec.Cmd, chan os.Signal, chan error, error) {
	child := exec.Command(argv[0], argv[1:]...)
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, cmd.OutOrStdout(), cmd.ErrOrStderr()
	child.Env = append(os.Environ(), env...)
	if err := child.Start(); err != nil {
		return nil, nil, nil, usageErr("%s: %v", argv[0], err)
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	return child, sigs, exited, nil
}

// warnTextbook tells the user, before it acts, that service (lock,
// elections, group) of the cluster at api runs a textbook algorithm:
// which one, and which faults it does not survive (textbookFaults). It
// asks a node's /v1/health; if none answers it says nothing more than
// that the algorithm is a textbook one.
func warnTextbook(ctx context.Context, w io.Writer, api *httpapi.Client, service string, name func(node.Health) string) {
	var h node.Health
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	algo, faults := "a textbook algorithm", textbookFaults[""]
	if api.First(ctx, func(base string) (int, string, error) {
		return api.Call(ctx, http.MethodGet, base+"/v1/health", nil, &h)
	}) == nil && name(h) != "" {
		algo = name(h) + ", a textbook algorithm"
		if f, ok := textbookFaults[name(h)]; ok {
			faults = f
		}
	}
	fmt.Fprintf(w, "cohort: warning: the cluster's %s run on %s: %s (see the guarantees table in the README); "+
		"the replicated log (raft in node.yaml) survives them\n", service, algo, faults)
}

// textbookFaults says what each textbook algorithm behind a service does
// not survive, as the README's guarantees table does; "" for the others.
var textbookFaults = map[string]string{
	"":                 "a node that crashes, restarts or stalls can block it or break it",
	"ricart-agrawala":  "a restarted node rejoins, but while a node is down or cut off the lock waits for it, and a holder's lease can lapse while its command runs",
	"lamport":          "a restarted node rejoins, but while a node is down or cut off the lock waits for it, and a holder's lease can lapse while its command runs",
	"central":          "a restart is survived, but while the coordinator (node 0) is down or cut off the lock waits for it",
	"central-failover": "the coordinator's crash and restarts are survived, but a partition can make two coordinators, each granting the lock",
	"bully-fd":         "a stalled leader's command can run beside the next leader's, and after a restart two leaderships can carry one term",
	"total-sequencer":  "a dead sequencer stops every delivery (sends get 504), and a restarted member holds messages back for ever",
}

// slowOpen is how long openSession waits in silence.
const slowOpen = 2 * time.Second

// openSession opens the client's session (lock.Client.OpenSession: it
// waits while the nodes are up without a leader — a cluster just
// started — until ctx ends) and says on w, once, if that takes longer
// than slowOpen, so that a command waiting on a cluster that lost its
// majority does not wait in silence. what names the hold (`lock "x"`).
func openSession(ctx context.Context, w io.Writer, client *lock.Client, ttl time.Duration, what string) (*lock.ClientSession, error) {
	type opened struct {
		s   *lock.ClientSession
		err error
	}
	done := make(chan opened, 1)
	go func() {
		s, err := client.OpenSession(ctx, ttl)
		done <- opened{s, err}
	}()
	slow := time.NewTimer(slowOpen)
	defer slow.Stop()
	for {
		select {
		case o := <-done:
			return o.s, o.err
		case <-slow.C:
			fmt.Fprintf(w, "%s: waiting for the cluster to open a session: its nodes can be reached, but none has opened it yet (a new cluster elects a leader first; a majority must be up and connected)\n", what)
		}
	}
}
