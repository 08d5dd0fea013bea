package check

import (
	"fmt"
	"slices"

	"github.com/cohort-go/cohort/trace"
)

// noDuplicates is the property that no message is received more often than
// the network delivers it: once, plus once more for every Dup event that
// announced a duplicate of it before the extra receipt. A violation cites
// the message's send and its receipts so far.
var noDuplicates = checker{
	name:  "no-duplicates",
	doc:   "no message is received twice unless the network duplicated it",
	check: checkNoDuplicates,
}

func init() { Register(noDuplicates) }

func checkNoDuplicates(t *trace.Trace) Result {
	var fs []finding
	sends := map[uint64]int{}   // message id → index of its send
	dups := map[uint64]int{}    // message id → Dup events so far
	recvs := map[uint64][]int{} // message id → its receipts so far
	for i := range t.Events {
		e := &t.Events[i]
		switch e.Kind {
		case trace.Send:
			if _, seen := sends[e.Msg]; !seen {
				sends[e.Msg] = i
			}
		case trace.Dup:
			dups[e.Msg]++
		case trace.Recv:
			recvs[e.Msg] = append(recvs[e.Msg], i)
			n, d := len(recvs[e.Msg]), dups[e.Msg]
			if n <= 1+d {
				continue
			}
			events := slices.Clone(recvs[e.Msg])
			if s, ok := sends[e.Msg]; ok {
				events = append(events, s)
			}
			fs = append(fs, finding{
				fmt.Sprintf("%s received %d times by p%d, %s", msgName(e.Msg), n, e.Node, duplicated(d)),
				events,
			})
		}
	}
	return verdict(fs)
}

func duplicated(d int) string {
	switch d {
	case 0:
		return "never duplicated"
	case 1:
		return "duplicated once"
	}
	return fmt.Sprintf("duplicated %d times", d)
}
