package lab

import (
	"fmt"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
)

// Outside lists the ways a run's setting breaks what algorithm a assumes
// (its proc.Assumptions): lossy or duplicating channels where it assumes
// reliable ones, reordering where it assumes FIFO, crashes where it
// assumes none, recoveries where it assumes crash-stop, pauses where it
// assumes bounded delays, joins and leaves where it assumes a fixed group.
// Outside its assumptions an algorithm promises nothing: its checkers'
// violations are expected there, not bugs.
func Outside(as proc.Assumptions, cfg *sim.Config) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	n := &cfg.Network
	if as.Reliable {
		if n.Loss > 0 {
			add("it assumes reliable channels; this run loses messages (loss %g)", n.Loss)
		}
		for _, l := range n.Links {
			if l.Loss != nil && *l.Loss > 0 {
				add("it assumes reliable channels; this run loses messages on link %d→%d (loss %g)", l.From, l.To, *l.Loss)
				break
			}
		}
		if n.Duplicate > 0 {
			add("it assumes reliable channels (each message once); this run duplicates messages (duplicate %g)", n.Duplicate)
		}
		if len(n.Partitions) > 0 {
			add("it assumes reliable channels; this run cuts the network (%d partition(s))", len(n.Partitions))
		}
	}
	if as.FIFO {
		if n.Reorder > 0 {
			add("it assumes FIFO channels; this run reorders messages (reorder %g)", n.Reorder)
		} else if !n.FIFO && !constantLatency(n) {
			add("it assumes FIFO channels; this run's channels are not FIFO (variable latency without fifo)")
		}
	}
	var crashes, recovers, pauses, members int
	for _, f := range cfg.Faults {
		switch f.Kind {
		case sim.Crash:
			crashes++
		case sim.Recover:
			recovers++
		case sim.Pause, sim.Slow:
			pauses++
		case sim.Join:
			if !as.Joins {
				members++
			}
		case sim.Leave:
			members++
		}
	}
	for _, c := range cfg.Churn {
		if c.Fail > 0 {
			crashes++
		}
		if c.Join > 0 && !as.Joins || c.Leave > 0 {
			members++
		}
	}
	if cfg.Initial > 0 && cfg.Initial < cfg.Nodes && !as.Joins {
		members++
	}
	switch as.Failures {
	case "", "none":
		if crashes > 0 {
			add("it assumes no process fails; this run crashes processes")
		}
	case "crash-stop":
		if recovers > 0 {
			add("it assumes crash-stop failures; this run recovers crashed processes")
		}
	}
	if members > 0 && (as.Failures == "" || as.Failures == "none") {
		add("it assumes a fixed group of processes; in this run processes join or leave")
	}
	if as.Synchronous && pauses > 0 {
		add("it assumes bounded delays (a synchronous system); this run pauses or slows processes")
	}
	return out
}

func constantLatency(n *sim.Network) bool {
	if _, ok := n.Latency.(sim.Constant); !ok && n.Latency != nil {
		return false
	}
	for _, l := range n.Links {
		if _, ok := l.Latency.(sim.Constant); !ok && l.Latency != nil {
			return false
		}
	}
	return true
}
