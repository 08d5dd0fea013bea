package overlay_test

import (
	"testing"

	"github.com/cohort-go/cohort/trace"
)

func TestDebugAdj(t *testing.T) {
	r := story{n: 120, seed: 1, lookups: 60, crash: adjacent(7)}.run(t)
	for i := range r.Trace.Events {
		e := &r.Trace.Events[i]
		if (e.Node == 4 && e.Peer == 14) || (e.Node == 14 && e.Peer == 4) || (e.Node == 14 && e.Kind != trace.Send && e.Kind != trace.Recv) {
			t.Log(e.Time, e.Node, e.Kind, e.Peer, e.Type, e.Label)
		}
	}
}
