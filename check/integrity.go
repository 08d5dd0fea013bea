package check

import (
	"fmt"

	"github.com/cohort-go/cohort/trace"
)

// integrity is the property that a trace's messages are real: every message
// received was sent earlier, by the receiver's peer to the receiver, with the
// type it was received as; every message the network dropped or duplicated
// was sent earlier between the same processes; and no message id is sent
// twice. A violation cites the offending event and, if there is one, the send
// it disagrees with.
var integrity = checker{
	name:  "integrity",
	doc:   "every message received, dropped or duplicated was sent earlier, between the same processes, with the same type",
	check: checkIntegrity,
}

func init() { Register(integrity) }

func checkIntegrity(t *trace.Trace) Result {
	var fs []finding
	sends := map[uint64]int{} // message id → index of its send
	for i := range t.Events {
		e := &t.Events[i]
		switch e.Kind {
		case trace.Send:
			if s, dup := sends[e.Msg]; dup {
				fs = append(fs, finding{
					fmt.Sprintf("%s sent twice: at #%d and at #%d", msgName(e.Msg), s, i),
					[]int{s, i},
				})
				continue
			}
			sends[e.Msg] = i
		case trace.Recv, trace.Drop, trace.Dup:
			from, to := ends(e)
			what := fmt.Sprintf("%s from p%d to p%d", verb(e.Kind), from, to)
			s, ok := sends[e.Msg]
			if !ok {
				fs = append(fs, finding{fmt.Sprintf("%s: %s, never sent before", msgName(e.Msg), what), []int{i}})
				continue
			}
			send := &t.Events[s]
			switch {
			case send.Node != from || send.Peer != to:
				fs = append(fs, finding{
					fmt.Sprintf("%s: sent from p%d to p%d, %s", msgName(e.Msg), send.Node, send.Peer, what),
					[]int{s, i},
				})
			case e.Kind == trace.Recv && send.Type != e.Type:
				fs = append(fs, finding{
					fmt.Sprintf("%s: sent as %q, received as %q", msgName(e.Msg), send.Type, e.Type),
					[]int{s, i},
				})
			}
		}
	}
	return verdict(fs)
}

// ends returns the sender and the receiver of the message that e, a
// message or network event, names.
func ends(e *trace.Event) (from, to int32) {
	if e.Kind == trace.Send || e.Kind == trace.Dup {
		return e.Node, e.Peer
	}
	return e.Peer, e.Node
}

// verb says what an event of kind k did to a message: "received" ...
func verb(k trace.Kind) string {
	switch k {
	case trace.Recv:
		return "received"
	case trace.Drop:
		return "dropped"
	case trace.Dup:
		return "duplicated"
	}
	return k.String()
}
