package check

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cohort-go/cohort/globalstate"
	"github.com/cohort-go/cohort/trace"
)

// ME1 judges the observed interleaving: the order in which the trace
// recorded the events. Other linearizations of the same run — the same
// events, in any order that keeps happened-before — are just as possible
// on a network whose delays differ, and ME1-lattice judges them all: no
// consistent global state of the run has two processes in the critical
// section, that is possibly(count(cs) >= 2) is false (package globalstate;
// decided pair by pair with Garg & Waldecker's algorithm, without
// enumerating the lattice).

var me1Lattice = checker{
	name:  "ME1-lattice",
	doc:   "mutual exclusion in every consistent global state of the run, not only the observed interleaving: possibly(two processes in the critical section) is false",
	check: checkME1Lattice,
}

func init() { Register(me1Lattice) }

// EveryState names the checker that judges the property of checker name
// over every consistent global state of a run, if there is one ("ME1" →
// "ME1-lattice").
func EveryState(name string) (string, bool) {
	if name == "ME1" {
		return me1Lattice.name, true
	}
	return "", false
}

var twoInside = globalstate.MustParse("count(cs) >= 2")

func checkME1Lattice(t *trace.Trace) Result {
	l, err := globalstate.New(t, globalstate.Options{})
	if err != nil {
		return unknown(err)
	}
	a, err := l.Possibly(twoInside)
	if errors.Is(err, globalstate.ErrTooManyStates) || errors.Is(err, globalstate.ErrTooLarge) {
		return Result{Status: Unknown, Detail: "the run is too large to judge every consistent global state: " + err.Error()}
	}
	if err != nil {
		return unknown(err)
	}
	if !a.Holds {
		return Result{Status: OK}
	}
	// Who is inside at the witness, and since which enter.
	var inside []string
	var events []int
	for p := range l.Nodes() {
		enter, in := -1, false
		for k := 1; k <= a.Cut[p]; k++ {
			e := &t.Events[l.Event(p, k)]
			switch {
			case e.Kind == trace.Output && e.Type == "enter":
				enter, in = e.Index, true
			case e.Kind == trace.Output && e.Type == "exit", e.Kind.Stops(), e.Kind.Begins():
				in = false
			}
		}
		if in {
			inside = append(inside, fmt.Sprintf("p%d (entered at #%d)", p, enter))
			events = append(events, enter)
		}
	}
	slices.Sort(events)
	observed := "a linearization other than the observed one"
	if checkME1(t).Status == Violated {
		observed = "the observed run too"
	}
	return Result{
		Status: Violated,
		Detail: fmt.Sprintf("%s are in the critical section together in the consistent global state %s (frontier %s): %s passes through it",
			strings.Join(inside, " and "), cutString(a.Cut), frontierString(a.Frontier), observed),
		Events: events,
	}
}

func cutString(c trace.Cut) string {
	parts := make([]string, len(c))
	for i, v := range c {
		parts[i] = fmt.Sprint(v)
	}
	return "⟨" + strings.Join(parts, ",") + "⟩"
}

func frontierString(f []int) string {
	parts := make([]string, len(f))
	for i, v := range f {
		if v < 0 {
			parts[i] = "-"
		} else {
			parts[i] = fmt.Sprintf("#%d", v)
		}
	}
	return strings.Join(parts, " ")
}
