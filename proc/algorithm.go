package proc

import (
	"fmt"
	"strings"
)

// Assumptions are what an algorithm needs from its environment. A host or a
// scenario that breaks one of them may break the algorithm; the checkers
// then show how.
type Assumptions struct {
	// FIFO: messages between a pair of processes arrive in the order sent.
	FIFO bool
	// Reliable: every message sent to a live process arrives exactly once.
	Reliable bool
	// Synchronous: message delays and clock drift are bounded and known.
	Synchronous bool
	// Failures is the failure model tolerated: "none", "crash-stop" or
	// "crash-recover".
	Failures string
	// Topology the algorithm runs on: "full", "ring", "graph" ...
	Topology string
	// Joins: processes may join the running system (proc.Joiner), even
	// where Failures is "none" (an overlay built by joins that never
	// loses a node). Leaves still count as failures.
	Joins bool
	// Reconfigures: the processes' configuration changes through the
	// algorithm itself (Raft's AddServer and RemoveServer): a process may
	// have any ID of the running system's, and one outside the
	// configuration waits, silent, until the configuration adds it.
	Reconfigures bool
}

// String renders the assumptions compactly: "reliable fifo, failures=none".
func (a Assumptions) String() string {
	var parts []string
	if a.Reliable {
		parts = append(parts, "reliable")
	}
	if a.FIFO {
		parts = append(parts, "fifo")
	}
	if a.Synchronous {
		parts = append(parts, "synchronous")
	}
	s := strings.Join(parts, " ")
	if s == "" {
		s = "asynchronous"
	}
	f := a.Failures
	if f == "" {
		f = "none"
	}
	if a.Joins {
		f += ", joins"
	}
	t := a.Topology
	if t == "" {
		t = "full"
	}
	return fmt.Sprintf("%s; failures=%s; topology=%s", s, f, t)
}

// Algorithm describes one registered algorithm. Each family package exports
// one entry per algorithm, so the CLI, `cohort list`, the benchmarks and the
// comparison tables are generated from one table.
type Algorithm struct {
	Family  string // "clocks", "mutex", "election" ...
	Name    string // CLI name: "ricart-agrawala"
	Summary string // one line
	Source  string // where it comes from: "Ricart & Agrawala 1981; Tanenbaum & van Steen §6.3"
	Assumes Assumptions
	// New builds process id of an n-process run. It must not fail for
	// 0 <= id < n, n >= 1; an algorithm that needs more (a square n, say)
	// reports it through Validate.
	New func(id ID, n int) Process
	// Validate reports whether the algorithm can run with n processes; nil
	// means any n >= 1.
	Validate func(n int) error
	// Checks names the property checkers that apply to every run.
	Checks []string
	// Breaks names the checkers whose property this algorithm does not
	// guarantee: the textbooks say so (the central server and ME3), or it is a
	// demonstration of what goes wrong (uncorrected clocks, a deadlocking
	// variant). Their violations are reported but do not fail a run, and a
	// test shows that each one does happen.
	Breaks []string
	// Messages lists a value of every message type the algorithm sends, in
	// a fixed order: a type's position (from 1) is its tag on the wire, so
	// the list is append-only. Hosts that serialize messages (the live
	// runtime) need it; the simulator does not.
	Messages []Message
	// Inputs builds the algorithm's application inputs by name for scripted
	// runs ("acquire", "multicast hello"); nil means it takes none.
	Inputs func(name string, args []string) (Input, error)
	// Theory is what the algorithm's source says a run of n processes
	// costs, by metric ("messages_per_entry", "client_delay_msgs",
	// "latency_msgs" ...): the figures measured runs are compared with. A
	// metric it leaves out has no single figure in the source (a range,
	// O(log N), or none). nil: no figures.
	Theory func(n int) map[string]float64
	// Notes explain, by metric, where a measured figure departs from the
	// source's and why; comparisons print them beside the figures.
	Notes map[string]string
	// Scenario is the run's default setting, in the scenario file format
	// (nodes, network, faults, inputs), used unless the user gives one; ""
	// means the host's defaults.
	Scenario string
}
