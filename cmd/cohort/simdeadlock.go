package main

import (
	"time"

	"github.com/cohort-go/cohort/deadlock"
	"github.com/cohort-go/cohort/lab"
	"github.com/spf13/cobra"
)

// The deadlock family's flags of `cohort sim`: the workload's contention,
// its transactions and the resources each wants, and the detector's wait.
var deadlockOnlyFlags = []string{"contention", "want", "txns", "wait"}

// Bounds of the deadlock flags and of its runs: the checkers keep a
// vector per event (happened-before) for the causal cuts.
const (
	maxDeadlockTxns  = 1000
	maxDeadlockNodes = 64
	maxDeadlockWait  = time.Minute
)

func addDeadlockFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.Float64("contention", lab.DefaultDeadlockContention, "deadlock: how busy the processes are, in (0,1]: the share of time a process spends in transactions (1: it asks again at once)")
	fl.Int("want", 2, "deadlock: resources each transaction wants (AND model); processes each wait is for any one of (OR model, cmh-or)")
	fl.Int("txns", 10, "deadlock: transactions each process commits (AND model); waits each process has answered (OR model)")
	fl.Duration("wait", 0, "deadlock: the detector's wait — CMH's first wait between probe (query) computations, backing off to 8× it (default 2ms), the timeout's T (default 5ms)")
	for _, name := range deadlockOnlyFlags {
		familyOnlyFlags[name] = "deadlock"
	}
}

// deadlockSettings checks the deadlock flags (for another family, any of
// them is a usage error) and returns what to apply to each run.
func deadlockSettings(cmd *cobra.Command, family string, nodes int) (func(*lab.Options) error, error) {
	fl := cmd.Flags()
	for _, name := range deadlockOnlyFlags {
		if fl.Changed(name) && family != "deadlock" {
			return nil, usageErr("--%s is a flag of the deadlock family, not of %s", name, family)
		}
	}
	if family != "deadlock" {
		return func(*lab.Options) error { return nil }, nil
	}
	if nodes > maxDeadlockNodes {
		return nil, usageErr("--nodes %d: the deadlock family runs at most %d processes", nodes, maxDeadlockNodes)
	}
	c, _ := fl.GetFloat64("contention")
	want, _ := fl.GetInt("want")
	txns, _ := fl.GetInt("txns")
	wait, _ := fl.GetDuration("wait")
	if !(c > 0 && c <= 1) {
		return nil, usageErr("--contention %v: want a number in (0,1]", c)
	}
	if want < 1 || want > maxDeadlockNodes {
		return nil, usageErr("--want %d: want 1..%d", want, maxDeadlockNodes)
	}
	if txns < 1 || txns > maxDeadlockTxns {
		return nil, usageErr("--txns %d: want 1..%d", txns, maxDeadlockTxns)
	}
	if fl.Changed("wait") && (wait <= 0 || wait > maxDeadlockWait) {
		return nil, usageErr("--wait %v: want a positive duration up to %v", wait, maxDeadlockWait)
	}
	return func(o *lab.Options) error {
		switch w := o.Workload.(type) {
		case *lab.DeadlockLoad:
			w.Contention, w.Want, w.Txns = c, want, txns
		case *lab.DeadlockORLoad:
			w.Contention, w.Want, w.Waits = c, want, txns
		}
		if fl.Changed("wait") {
			a, err := deadlock.WithWait(o.Algo, wait)
			if err != nil {
				return usageErr("--wait: %v", err)
			}
			o.Algo = a
		}
		return nil
	}, nil
}
