package multicast

import (
	"github.com/cohort-go/cohort/logical"
	"github.com/cohort-go/cohort/proc"
)

// Causal-total order (one of Coulouris et al.'s hybrid orderings): a total
// order that is also causal. It is total-sequencer whose sequencer runs
// CO-multicast's rule before numbering. Every sender stamps its message
// with its vector V_g (its own entry: messages it has sent; entry k:
// messages of p_k it has delivered), and the sequencer numbers a message
// only when it has numbered everything the vector names:
//
//	Sequencer, on B-deliver(⟨m, i, V⟩) from origin q:
//	    place it among the waiting; while some waiting message satisfies
//	    V[q] = A_g[q] + 1 and V[k] ≤ A_g[k] (k ≠ q):
//	        B-multicast(g, ⟨"order", i, s_g⟩); s_g := s_g + 1; A_g[q] := A_g[q] + 1
//
// where A_g counts the messages numbered per origin (logical.Deliverable).
//
// What the vector buys over fifo-total: nothing, with one sequencer. A
// member delivers in the numbering, so whatever a sender had delivered
// when it sent m was numbered before m could reach the sequencer: only the
// sender's own entry can ever make the sequencer wait, and that is the
// FIFO rule. Coulouris et al. name the hybrid, so it is here, with its cost
// of N integers per message measured; the causal-order checker holds for
// both.
//
// Assumptions, cost: those of total-sequencer, and N integers per data
// message.
func causalAdmissible(numbered logical.Vector, d sData) bool {
	return logical.Deliverable(numbered, d.V, d.Origin)
}

func init() {
	register(proc.Algorithm{
		Name:    "causal-total",
		Summary: "causal-total order: a sequencer that numbers messages in causal order, by vector timestamps (2(N−1) messages)",
		Source:  "Coulouris et al. (hybrid orderings)",
		Assumes: proc.Assumptions{Reliable: true},
		Theory:  sequencerTheory,
		Notes: map[string]string{
			"latency_msgs": "as total-sequencer: (2N − 1)/N with the sequencer's own messages",
		},
		New:      newSequencer(inCausalOrder),
		Messages: []proc.Message{sData{}, sOrder{}},
	})
}
