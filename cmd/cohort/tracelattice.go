package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/globalstate"
	"github.com/cohort-go/cohort/trace"
	"github.com/spf13/cobra"
)

// latticeFlags are the flags of the commands over the lattice of
// consistent global states.
type latticeFlags struct {
	asJSON    bool
	maxStates int64
	service   string
}

func (f *latticeFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print JSON")
	cmd.Flags().Int64Var(&f.maxStates, "max-states", globalstate.DefaultMaxStates, "give up (exit 2) rather than visit more consistent global states than this")
	cmd.Flags().StringVar(&f.service, "service", "", "judge only this live service's inputs and outputs (a trace of a node that runs several)")
}

// lattice reads the trace at path and builds its lattice.
func (f *latticeFlags) lattice(path string, enumerate bool) (*globalstate.Lattice, error) {
	if f.maxStates < 1 {
		return nil, usageErr("--max-states %d: want at least 1", f.maxStates)
	}
	t, err := readTrace(path)
	if err != nil {
		return nil, err
	}
	if f.service != "" {
		if !containsString(check.Services(t), f.service) {
			return nil, usageErr("--service %q: the trace has no such service (it has %s)", f.service, orNone(check.Services(t)))
		}
		t = check.Only(t, f.service)
	}
	l, err := globalstate.New(t, globalstate.Options{MaxStates: f.maxStates, Enumerate: enumerate})
	if err != nil {
		return nil, usageErr("%s: %v", path, err)
	}
	return l, nil
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}

// latticeErr is a search that hit a bound: exit 2, saying which flag
// raises it.
func latticeErr(err error) error {
	switch {
	case errors.Is(err, globalstate.ErrTooManyStates):
		return usageErr("%v: raise --max-states to search further", err)
	case errors.Is(err, globalstate.ErrTooLarge):
		return usageErr("%v", err)
	}
	return usageErr("%v", err)
}

func newTracePredicateCmd(query string) *cobra.Command {
	var f latticeFlags
	var enumerate bool
	short := map[string]string{
		"possibly":   "Is a predicate true in some consistent global state of a run? (Cooper & Marzullo)",
		"definitely": "Does every linearization of a run pass through a state where a predicate is true? (Cooper & Marzullo)",
	}[query]
	long := map[string]string{
		"possibly": `possibly(φ): is φ true in some consistent global state of the run — does
some linearization (an order of the run's events that keeps
happened-before), not necessarily the observed one, pass through a state
where φ holds? "Nothing bad can happen in this run", safety over every
state the run could have passed through, is "possibly(bad) is false".

A conjunctive predicate (cs(p0) && cs(p1)) and a disjunction of them
(count(cs) >= 2) are decided without enumerating the lattice (Garg &
Waldecker); any other predicate by enumerating it in lexical order. The
witness is a consistent cut where φ holds and a path to it from the
initial state.`,
		"definitely": `definitely(φ): does every linearization of the run (every order of its
events that keeps happened-before) pass through a state where φ holds?
It holds if φ holds in the initial or the final state; it does not if the
observed run avoids φ; otherwise a breadth-first search of the lattice
decides it (Cooper & Marzullo). The witness of "no" is a linearization
that never passes through φ.`,
	}[query]
	cmd := &cobra.Command{
		Use:   query + " FILE PREDICATE",
		Short: short,
		Long: long + `

Exit status 0 if the answer is yes, 1 if it is no, 2 for a bad trace or
predicate, or a search beyond --max-states. FILE may be - for standard
input.

` + predicateHelp,
		Example: map[string]string{
			"possibly": `  cohort trace possibly run.jsonl 'count(cs) >= 2'
  cohort trace possibly run.jsonl 'wanting(p0) && wanting(p1) && wanting(p2)' --json`,
			"definitely": `  cohort trace definitely run.jsonl 'cs(p1)'
  cohort trace definitely run.jsonl 'outputs[enter](p0) >= 1 && outputs[enter](p1) >= 1'`,
		}[query],
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			pred, err := globalstate.Parse(args[1])
			if err != nil {
				return usageErr("%v", err)
			}
			l, err := f.lattice(args[0], enumerate)
			if err != nil {
				return err
			}
			start := time.Now()
			var a *globalstate.Answer
			if query == "possibly" {
				a, err = l.Possibly(pred)
			} else {
				a, err = l.Definitely(pred)
			}
			took := time.Since(start)
			var pe *globalstate.PredicateError
			if errors.As(err, &pe) {
				return usageErr("%v", err)
			}
			if err != nil {
				return latticeErr(err)
			}
			out := cmd.OutOrStdout()
			if f.asJSON {
				enc := json.NewEncoder(out)
				enc.SetEscapeHTML(false)
				err = enc.Encode(struct {
					File   string `json:"file"`
					Nodes  int    `json:"nodes"`
					Events int    `json:"events"`
					*globalstate.Answer
					Seconds float64 `json:"seconds"`
				}{args[0], l.Nodes(), l.Events(), a, took.Seconds()})
				if err != nil {
					return err
				}
			} else {
				printAnswer(out, args[0], l, a, took)
			}
			if !a.Holds {
				return &exitError{1, errSilent}
			}
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&enumerate, "enumerate", false, "enumerate the lattice even where a cheaper way decides (for measurements)")
	return cmd
}

const predicateHelp = `A predicate reads the local state of each process, derived from its
history in the trace:

  cs           in the critical section (after an enter output, until exit,
               a crash or a leave)
  wanting      asked (after an acquire input, until it enters)
  up           not crashed or left
  events, sent, received          how many so far
  inputs[TYPE], outputs[TYPE]     how many inputs, outputs of a type so far

at one process, cs(p1), or over all: count(cs), sum(sent), any(cs), all(up).
Numbers compare (== != < <= > >=) and add (+ -); truth values combine with
! && || and parentheses.`

var methodText = map[globalstate.Method]string{
	globalstate.MethodConjunctive:  "as a disjunction of conjunctive predicates (Garg & Waldecker 1994), without enumerating the lattice: %s",
	globalstate.MethodLexical:      "by enumerating the lattice in lexical order: %s",
	globalstate.MethodBreadthFirst: "by a breadth-first search of the lattice (Cooper & Marzullo 1991): %s",
	globalstate.MethodInitial:      "it holds in the initial state, which every linearization passes through (%s evaluated)",
	globalstate.MethodFinal:        "it holds in the final state, which every linearization passes through (%s evaluated)",
	globalstate.MethodObserved:     "the observed run, itself a linearization, never passes through it (%s evaluated)",
}

func plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func printAnswer(w io.Writer, file string, l *globalstate.Lattice, a *globalstate.Answer, took time.Duration) {
	yes := "no"
	if a.Holds {
		yes = "yes"
	}
	t := l.Trace()
	fmt.Fprintf(w, "%s(%s): %s\n", a.Query, a.Predicate, yes)
	fmt.Fprintf(w, "  run        %s: %d processes, %d events\n", file, l.Nodes(), l.Events())
	what := "state"
	if a.Method == globalstate.MethodConjunctive {
		what = "candidate cut"
	}
	fmt.Fprintf(w, "  decided    "+methodText[a.Method]+", in %s\n", plural(a.States, what), took.Round(time.Microsecond))
	switch {
	case a.Query == "possibly" && a.Holds:
		fmt.Fprintf(w, "  cut        %s, a consistent global state where it holds; its frontier:\n", cutText(a.Cut))
		printFrontier(w, t, a.Frontier)
		fmt.Fprintf(w, "  path       %d events from the initial state, keeping happened-before:\n             %s\n", len(a.Path), eventList(a.Path))
	case a.Query == "possibly":
		fmt.Fprintf(w, "  it is false in every consistent global state of the run\n")
	case a.Holds:
		if a.Level != nil {
			fmt.Fprintf(w, "  level      every linearization passes through it within its first %d events\n", *a.Level)
		}
		if a.Cut != nil {
			fmt.Fprintf(w, "  observed   the observed run first passes through it at %s; frontier:\n", cutText(a.Cut))
			printFrontier(w, t, a.Frontier)
		}
	default:
		fmt.Fprintf(w, "  avoided by a linearization of all %d events that never passes through it:\n             %s\n", len(a.Linearization), eventList(a.Linearization))
	}
}

func cutText(c trace.Cut) string {
	parts := make([]string, len(c))
	for i, v := range c {
		parts[i] = fmt.Sprint(v)
	}
	return "⟨" + strings.Join(parts, ",") + "⟩"
}

func printFrontier(w io.Writer, t *trace.Trace, f []int) {
	for p, i := range f {
		if i < 0 {
			fmt.Fprintf(w, "             p%d: no event yet\n", p)
			continue
		}
		fmt.Fprintf(w, "             %s\n", t.Events[i].String())
	}
}

// eventList renders trace indexes "#3 #4 #7", the first 40 of them.
func eventList(idx []int) string {
	const show = 40
	var b strings.Builder
	for j, i := range idx {
		if j == show {
			fmt.Fprintf(&b, "… and %d more (--json lists them all)", len(idx)-show)
			break
		}
		if j > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "#%d", i)
	}
	if len(idx) == 0 {
		return "(no events)"
	}
	return b.String()
}

func newTraceLatticeCmd() *cobra.Command {
	var f latticeFlags
	var order string
	var list bool
	cmd := &cobra.Command{
		Use:   "lattice FILE",
		Short: "Count the consistent global states of a run, breadth-first or in lexical order",
		Long: `Enumerate the lattice of consistent global states of a run: breadth-first,
level by level (the level of a state is the number of events it follows;
Cooper & Marzullo), or in lexical order, which needs memory for the
processes' n×n lower bounds only (Garg). Print the number of states, and
breadth-first the number of levels and the widest; --list prints every
state's cut (how many events of each process it holds). FILE may be - for
standard input.`,
		Example: `  cohort trace lattice run.jsonl
  cohort trace lattice run.jsonl --order lex --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if order != "bfs" && order != "lex" {
				return usageErr("--order %q: want bfs or lex", order)
			}
			l, err := f.lattice(args[0], false)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			visit := func(trace.Cut) bool { return true }
			if list && !f.asJSON {
				visit = func(c trace.Cut) bool { fmt.Fprintln(out, cutText(c)); return true }
			}
			start := time.Now()
			var st globalstate.Stats
			if order == "bfs" {
				st, err = l.BFS(visit)
			} else {
				st, err = l.Lex(visit)
			}
			took := time.Since(start)
			if err != nil {
				return latticeErr(err)
			}
			rate := float64(st.States) / max(took.Seconds(), 1e-9)
			if f.asJSON {
				return json.NewEncoder(out).Encode(struct {
					File   string `json:"file"`
					Nodes  int    `json:"nodes"`
					Events int    `json:"events"`
					Order  string `json:"order"`
					globalstate.Stats
					Seconds      float64 `json:"seconds"`
					StatesPerSec float64 `json:"states_per_second"`
				}{args[0], l.Nodes(), l.Events(), order, st, took.Seconds(), rate})
			}
			fmt.Fprintf(out, "%s: %d processes, %d events: %d consistent global states", args[0], l.Nodes(), l.Events(), st.States)
			if order == "bfs" {
				fmt.Fprintf(out, " on %d levels, at most %d on one", st.Levels, st.MaxWidth)
			}
			fmt.Fprintf(out, " (%s order, %s, %.3g states/s)\n", map[string]string{"bfs": "breadth-first", "lex": "lexical"}[order], took.Round(time.Microsecond), rate)
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&order, "order", "bfs", "bfs (breadth-first, level by level) or lex (lexical, O(n²) memory)")
	cmd.Flags().BoolVar(&list, "list", false, "print every state's cut")
	return cmd
}
