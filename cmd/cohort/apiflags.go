package main

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// apiFlags are the flags of every command that talks to a cluster's API:
// where (--endpoints, or COHORT_ENDPOINTS) and with which bearer token
// (--token, or COHORT_TOKEN).
type apiFlags struct{ endpoints, token string }

func (a *apiFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&a.endpoints, "endpoints", os.Getenv("COHORT_ENDPOINTS"), "nodes' API addresses, host:port[,host:port...] (or COHORT_ENDPOINTS)")
	cmd.Flags().StringVar(&a.token, "token", "", "API bearer token (or COHORT_TOKEN)")
}

// resolve returns the endpoints and the token, from the environment if no
// flag gave it; no endpoints at all is a usage error.
func (a *apiFlags) resolve() (endpoints []string, token string, err error) {
	if a.endpoints == "" {
		return nil, "", usageErr("--endpoints: none given (or set COHORT_ENDPOINTS)")
	}
	token = a.token
	if token == "" {
		token = os.Getenv("COHORT_TOKEN")
	}
	return strings.Split(a.endpoints, ","), token, nil
}

// interruptible is a context that ends on SIGINT or SIGTERM, or after
// timeout (0: no limit).
func interruptible(timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if timeout <= 0 {
		return ctx, stop
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	return ctx, func() { cancel(); stop() }
}

// open resolves the flags and returns a context that ends after timeout
// (0: never) or on SIGINT/SIGTERM; a negative timeout is a usage error.
func (a *apiFlags) open(timeout time.Duration) (endpoints []string, token string, ctx context.Context, cancel context.CancelFunc, err error) {
	if endpoints, token, err = a.resolve(); err != nil {
		return nil, "", nil, nil, err
	}
	if timeout < 0 {
		return nil, "", nil, nil, usageErr("--timeout %v: want 0 (none) or more", timeout)
	}
	ctx, cancel = interruptible(timeout)
	return endpoints, token, ctx, cancel, nil
}
