package explore

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/commit"
	"github.com/cohort-go/cohort/lab"
	"github.com/cohort-go/cohort/mutex"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/trace"
)

// Families are the families the explorer knows how to drive: every
// family of the simulator, and commit (two-phase commit, a model for
// comparing state counts with other model checkers).
func Families() []string {
	var names []string
	for _, f := range lab.Families() {
		names = append(names, f.Name)
	}
	return append(names, "commit")
}

// Algorithms returns the algorithms of family, as the simulator runs
// them.
func Algorithms(family string) ([]proc.Algorithm, error) {
	if family == "commit" {
		return commit.Algorithms, nil
	}
	f, err := lab.Lookup(family)
	if err != nil {
		return nil, fmt.Errorf("unknown family %q (known: %s)", family, strings.Join(Families(), ", "))
	}
	return f.Algorithms, nil
}

// Setup is the exploration of algorithm algo of family with n processes
// and the inputs given ("node:input args"; nil: the family's usual input
// once at every process — one Acquire each for mutual exclusion, an Elect
// at p0 for elections). It checks the properties the algorithm guarantees
// (its Checks less its Breaks); the caller may change that, and the
// bounds, before Explore.
func Setup(family, algo string, n int, inputs []string) (Config, error) {
	algos, err := Algorithms(family)
	if err != nil {
		return Config{}, err
	}
	i := slices.IndexFunc(algos, func(a proc.Algorithm) bool { return a.Name == algo })
	if i < 0 {
		var names []string
		for _, a := range algos {
			names = append(names, a.Name)
		}
		return Config{}, fmt.Errorf("unknown %s algorithm %q (known: %s)", family, algo, strings.Join(names, ", "))
	}
	a := algos[i]
	if n < 1 || n > MaxNodes {
		return Config{}, fmt.Errorf("nodes %d: want 1 to %d (the state space grows exponentially)", n, MaxNodes)
	}
	c := Config{Family: family, Algo: a, Nodes: n, FIFO: a.Assumes.FIFO}
	if a.Assumes.Synchronous || family == "deadlock" {
		// A deadlock detector promises to declare within a time, which
		// means nothing where a timer may wait while messages and other
		// timers go on for ever (Async).
		c.Timing = Sync
	}
	if family == "commit" {
		c.SetNetwork = true
	}
	c.Symmetric = Symmetric(family, algo, n)
	if family == "mutex" {
		c.Gate = "exit"
		c.Answer = func(o proc.Output) proc.Input {
			if _, ok := o.(mutex.Enter); ok {
				return mutex.Release{}
			}
			return nil
		}
	}
	if inputs == nil {
		inputs = defaultInputs(family, algo, n)
	}
	for _, text := range inputs {
		in, err := parseInput(a, n, text)
		if err != nil {
			return Config{}, err
		}
		c.Inputs = append(c.Inputs, in)
	}
	for _, name := range a.Checks {
		if !slices.Contains(a.Breaks, name) {
			c.Checks = append(c.Checks, name)
		}
	}
	c.Safety = SafetyOf(c.Checks)
	return c, nil
}

// SafetyOf picks, from names, the checkers that judge every prefix of a
// run (their property is stated as safety, not as liveness or of the end
// of a run): the explorer checks them on every state it finds.
func SafetyOf(names []string) []string {
	var out []string
	for _, name := range names {
		c, ok := check.Lookup(name)
		if !ok {
			continue
		}
		doc := strings.ToLower(c.Doc())
		if strings.Contains(doc, "liveness") || strings.Contains(doc, "end") || strings.Contains(doc, "eventually") {
			continue
		}
		out = append(out, name)
	}
	return out
}

// defaultInputs are the family's usual inputs: one acquire each for
// mutual exclusion, an elect at p0 for elections, and for the OR model of
// deadlocks a knot of the two highest processes, p(n−1) waiting for
// p(n−2) and p(n−2) for p(n−1), with every other process waiting on it:
// deadlocked, but outside the knot.
func defaultInputs(family, algo string, n int) []string {
	var out []string
	switch {
	case family == "deadlock" && algo == "cmh-or" && n >= 2:
		for id := 0; id < n-1; id++ {
			out = append(out, fmt.Sprintf("%d:await %d", id, n-1))
		}
		out = append(out, fmt.Sprintf("%d:await %d", n-1, n-2))
	}
	switch family {
	case "mutex":
		for id := 0; id < n; id++ {
			out = append(out, fmt.Sprintf("%d:acquire", id))
		}
	case "election":
		out = append(out, "0:elect")
	}
	return out
}

func parseInput(a proc.Algorithm, n int, text string) (Input, error) {
	node, rest, ok := strings.Cut(strings.TrimSpace(text), ":")
	id, err := strconv.Atoi(node)
	if !ok || err != nil {
		return Input{}, fmt.Errorf("input %q: want node:input, as 0:acquire", text)
	}
	if id < 0 || id >= n {
		return Input{}, fmt.Errorf("input %q: no process %d (nodes %d)", text, id, n)
	}
	if a.Inputs == nil {
		return Input{}, fmt.Errorf("input %q: %s takes no inputs", text, a.Name)
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return Input{}, fmt.Errorf("input %q: no input named", text)
	}
	in, err := a.Inputs(f[0], f[1:])
	if err != nil {
		return Input{}, fmt.Errorf("input %q: %v", text, err)
	}
	return Input{Node: proc.ID(id), In: in, Text: fmt.Sprintf("%d:%s", id, strings.Join(f, " "))}, nil
}

// schedule is the settings of the exploration as a schedule with no steps.
func (c *Config) schedule() *Schedule {
	s := &Schedule{Family: c.Family, Algo: c.Algo.Name, Nodes: c.Nodes, Timing: c.Timing, FIFO: c.FIFO,
		SetNetwork: c.SetNetwork, Crashes: c.Crashes, Losses: c.Losses, Dups: c.Dups, Checks: c.Checks}
	for _, in := range c.Inputs {
		s.Inputs = append(s.Inputs, in.Text)
	}
	return s
}

// Config is the exploration a schedule came from.
func (s *Schedule) Config() (Config, error) {
	inputs := s.Inputs
	if inputs == nil {
		inputs = []string{}
	}
	c, err := Setup(s.Family, s.Algo, s.Nodes, inputs)
	if err != nil {
		return Config{}, err
	}
	c.Timing, c.FIFO, c.SetNetwork = s.Timing, s.FIFO, s.SetNetwork
	c.Crashes, c.Losses, c.Dups = s.Crashes, s.Losses, s.Dups
	if len(s.Checks) > 0 {
		c.Checks = s.Checks
	}
	return c, c.Validate()
}

// Replay runs a schedule's steps and returns the trace: the same, event
// for event, as the exploration's run that the schedule records.
func Replay(s *Schedule) (*trace.Trace, error) {
	c, err := s.Config()
	if err != nil {
		return nil, err
	}
	r, err := c.newRun(newHasher())
	if err != nil {
		return nil, err
	}
	for i, st := range s.Steps {
		if err := r.apply(choice{seq: st.Seq, act: st.Act}); err != nil {
			return r.rec.Trace(), fmt.Errorf("step %d (%s %d): %w", i+1, st.Act, st.Seq, err)
		}
	}
	return r.rec.Trace(), nil
}
