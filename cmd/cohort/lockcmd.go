package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cohort-go/cohort/lock"
	"github.com/spf13/cobra"
)

func endpointsFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "endpoints", os.Getenv("COHORT_ENDPOINTS"), "nodes' API addresses, host:port[,host:port...] (or COHORT_ENDPOINTS)")
}

func newLockCmd() *cobra.Command {
	var endpoints, token string
	var ttl, timeout time.Duration
	cmd := &cobra.Command{
		Use:   "lock NAME -- CMD [ARGS...]",
		Short: "Run a command while holding a cluster-wide lock",
		Long: `Take the lock NAME on a Cohort cluster, run CMD while holding it, and
release it when CMD exits; exit with CMD's status. CMD sees the grant's
fencing token in COHORT_FENCING_TOKEN (strictly increasing across grants:
pass it to the resource so it can refuse a stale holder) and the lock's
name in COHORT_LOCK_NAME.

The lock is a lease of --ttl, renewed every third of it while CMD runs.
If a renewal fails (the node is gone, or the lease expired), the lock may
be someone else's: CMD is sent SIGTERM and cohort exits with status 1.`,
		Example: `  cohort lock db-migrations --endpoints 127.0.0.1:7101,127.0.0.1:7102 -- ./migrate up`,
		Args:    cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, argv := args[0], args[1:]
			if dash := cmd.ArgsLenAtDash(); dash != 1 {
				return usageErr("usage: cohort lock NAME -- CMD [ARGS...] (the command after --)")
			}
			if endpoints == "" {
				return usageErr("--endpoints: none given (or set COHORT_ENDPOINTS)")
			}
			if ttl < 100*time.Millisecond || ttl > lock.MaxTTL {
				return usageErr("--ttl %v: want between 100ms and %v", ttl, lock.MaxTTL)
			}
			if token == "" {
				token = os.Getenv("COHORT_TOKEN")
			}
			client := &lock.Client{Endpoints: strings.Split(endpoints, ","), Token: token}
			return runLocked(cmd, client, name, argv, ttl, timeout)
		},
	}
	endpointsFlag(cmd, &endpoints)
	cmd.Flags().StringVar(&token, "token", "", "API bearer token (or COHORT_TOKEN)")
	cmd.Flags().DurationVar(&ttl, "ttl", 10*time.Second, "lease length; renewed every ttl/3")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up waiting for the lock after this long (0: wait for ever)")
	return cmd
}

func runLocked(cmd *cobra.Command, client *lock.Client, name string, argv []string, ttl, timeout time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	actx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	held, err := client.Acquire(actx, name, ttl)
	if err != nil {
		return &exitError{1, fmt.Errorf("lock %q: %w", name, err)}
	}
	stop() // from here on, signals go to the command

	child := exec.Command(argv[0], argv[1:]...)
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, cmd.OutOrStdout(), cmd.ErrOrStderr()
	child.Env = append(os.Environ(),
		"COHORT_FENCING_TOKEN="+strconv.FormatUint(held.Token, 10),
		"COHORT_LOCK_NAME="+name)
	if err := child.Start(); err != nil {
		_ = held.Release(context.Background())
		return usageErr("%s: %v", argv[0], err)
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()

	renew := time.NewTicker(ttl / 3)
	defer renew.Stop()
	lost := false
	var waitErr error
loop:
	for {
		select {
		case waitErr = <-exited:
			break loop
		case s := <-sigs:
			_ = child.Process.Signal(s)
		case <-renew.C:
			kctx, cancel := context.WithTimeout(context.Background(), ttl/3)
			err := held.KeepAlive(kctx)
			cancel()
			if err != nil && !lost {
				lost = true
				fmt.Fprintf(cmd.ErrOrStderr(), "cohort: lock %q: renewing the lease failed (%v); stopping the command\n", name, err)
				_ = child.Process.Signal(syscall.SIGTERM)
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
