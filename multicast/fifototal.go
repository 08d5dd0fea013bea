package multicast

import (
	"github.com/cohort-go/cohort/logical"
	"github.com/cohort-go/cohort/proc"
)

// FIFO-total order (one of Coulouris et al.'s hybrid orderings): a total
// order that is also FIFO. It is total-sequencer whose sequencer runs
// FO-multicast's rule before numbering: it numbers a sender's message S
// only once it has numbered the sender's S − 1, holding back what arrives
// early.
//
//	Sequencer, on B-deliver(⟨m, i⟩) with i = (q, S):
//	    place it among the waiting; while some waiting ⟨m, (q, S)⟩ has
//	    S = A_g[q] + 1: B-multicast(g, ⟨"order", i, s_g⟩);
//	    s_g := s_g + 1; A_g[q] := S
//
// Every member delivers in the sequencer's numbering, so every member
// delivers each sender's messages in the order they were sent, over
// channels that reorder too.
//
// Causal order comes free: a member that delivered m before multicasting
// m′ delivered it in the numbering, so m was numbered before m′ reached the
// sequencer. With the sender's own messages in FIFO order, every chain of
// the group's happened-before is numbered in order (causal-total costs a
// vector per message to get the same — see its comment).
//
// Assumptions, cost: those of total-sequencer.
func fifoAdmissible(numbered logical.Vector, d sData) bool {
	return d.Seq == numbered[d.Origin]+1
}

func init() {
	register(proc.Algorithm{
		Name:    "fifo-total",
		Summary: "FIFO-total order: a sequencer that numbers each sender's messages in the sender's order (2(N−1) messages)",
		Source:  "Coulouris et al. (hybrid orderings)",
		Assumes: proc.Assumptions{Reliable: true},
		Theory:  sequencerTheory,
		Notes: map[string]string{
			"latency_msgs": "as total-sequencer: (2N − 1)/N with the sequencer's own messages",
		},
		New:      newSequencer(inFIFOOrder),
		Messages: []proc.Message{sData{}, sOrder{}},
	})
}
