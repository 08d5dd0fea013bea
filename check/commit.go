package check

import (
	"fmt"

	"github.com/cohort-go/cohort/trace"
)

var commitConsistency = checker{
	name:  "commit-consistency",
	doc:   "atomic commitment (safety): no process outputs committed while another outputs aborted",
	check: checkCommitConsistency,
}

func init() { Register(commitConsistency) }

// checkCommitConsistency reads "committed" and "aborted" outputs: the first
// of each kind, if both occur, are the counterexample.
func checkCommitConsistency(t *trace.Trace) Result {
	committed, aborted := -1, -1
	for i := range t.Events {
		e := &t.Events[i]
		if e.Kind != trace.Output {
			continue
		}
		switch {
		case e.Type == "committed" && committed < 0:
			committed = i
		case e.Type == "aborted" && aborted < 0:
			aborted = i
		}
		if committed >= 0 && aborted >= 0 {
			c, a := &t.Events[committed], &t.Events[aborted]
			return Result{Status: Violated, Events: []int{min(committed, aborted), max(committed, aborted)},
				Detail: fmt.Sprintf("p%d committed (#%d) and p%d aborted (#%d)", c.Node, committed, a.Node, aborted)}
		}
	}
	return Result{Status: OK}
}
