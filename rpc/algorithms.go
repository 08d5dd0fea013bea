package rpc

import (
	"fmt"

	"github.com/cohort-go/cohort/proc"
)

// Algorithms lists the family's algorithms: the stubs with each remedy
// against orphans — none, extermination, reincarnation, expiration. The
// semantics is not an algorithm but an option of each call (Call.Sem):
// every entry runs all three.
var Algorithms = []proc.Algorithm{
	stubs("plain", None, "client and server stubs, no remedy against orphans: a client crash leaves its calls running at the server to their end"),
	stubs("extermination", Extermination, "the client logs each call on stable storage before sending it; after a reboot it has the server kill every logged call that did not return"),
	stubs("reincarnation", Reincarnation, "after a reboot the client announces a new epoch; the server kills every call of the client's older epochs"),
	stubs("expiration", Expiration, "each call has a lease the waiting client renews; the server kills a call whose lease lapsed"),
}

// Checks are the checkers of every run: executions per call, by
// semantics.
var Checks = []string{"rpc-maybe", "rpc-at-least-once", "rpc-at-most-once"}

func stubs(name string, o Orphans, summary string) proc.Algorithm {
	cfg := DefaultConfig()
	cfg.Orphans = o
	return proc.Algorithm{
		Family:  "rpc",
		Name:    name,
		Summary: summary,
		Source:  "Birrell & Nelson 1984; Nelson 1981 (orphans); Tanenbaum & van Steen §4.2, §8.3.2; gRPC retry policy (gRFC A6)",
		Assumes: proc.Assumptions{Failures: "crash-recover"},
		New:     New(cfg),
		Validate: func(n int) error {
			if n < 2 {
				return fmt.Errorf("%d processes: need a server and at least one client", n)
			}
			return nil
		},
		Checks:   Checks,
		Messages: Messages,
		Inputs:   Inputs,
		Theory: func(int) map[string]float64 {
			return map[string]float64{"messages_per_call": 2}
		},
		Notes: map[string]string{
			"messages_per_call": "a request and a reply without failures; retries, renewals, kills and epochs add to it",
		},
		Scenario: "nodes: 4\nnetwork:\n  latency: uniform:500us,2ms\n",
	}
}

// Inputs builds the family's inputs: "call [maybe|at-least-once|at-most-once]".
func Inputs(name string, args []string) (proc.Input, error) {
	if name != "call" {
		return nil, fmt.Errorf("unknown rpc input %q (known: call)", name)
	}
	switch len(args) {
	case 0:
		return Call{}, nil
	case 1:
		s, err := ParseSemantics(args[0])
		if err != nil {
			return nil, err
		}
		return Call{Sem: s}, nil
	}
	return nil, fmt.Errorf("call: at most one argument (the semantics), got %q", args)
}

// WithConfig returns a, one of Algorithms, with its stubs' configuration
// changed by edit (the remedy stays the algorithm's).
func WithConfig(a proc.Algorithm, edit func(*Config)) proc.Algorithm {
	cfg := DefaultConfig()
	for i, b := range Algorithms {
		if b.Name == a.Name {
			cfg.Orphans = Orphans(i)
		}
	}
	edit(&cfg)
	a.New = New(cfg)
	return a
}
