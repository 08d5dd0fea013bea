// Package multicast holds Cohort's multicast algorithms as state machines:
// basic multicast (B-multicast) with acknowledgements, reliable multicast
// (R-multicast, and a negative-acknowledgement variant for lossy
// channels), and the ordered multicasts of the textbooks — FIFO
// (FO-multicast), causal (CO-multicast with vector timestamps), total (by a
// sequencer, by ISIS-style distributed agreement, by Lamport timestamps and
// acknowledgements) and the hybrids FIFO-total and causal-total.
//
// The algorithms follow Coulouris et al.'s treatment of group communication
// (groups, B-multicast, FIFO, total and causal order, the hybrid orders,
// and the remark that ordered multicast does not imply reliability) and
// Tanenbaum & van Steen §6.2 (totally ordered multicast with Lamport
// timestamps and acknowledgements; the replicated bank account).
//
// # The contract every algorithm keeps
//
// The application asks a process to multicast with the Multicast input
// ({group, body}). The process answers with one output:
//
//   - Sent names the message it multicast: its origin, the origin's
//     sequence number for the group (1, 2, 3 ...), the group and the
//     group's members — a message's identity is (origin, seq, group);
//   - Refused says it did not, and why (a closed group refuses outsiders).
//
// Every process that delivers the message outputs Delivered with the same
// identity and body, once. A process may also output Holdback when its
// hold-back queue (messages received but not yet deliverable) reaches a new
// largest length, for the holdback_max metric.
//
// The checkers in package check judge a run by these outputs alone:
// mc-integrity, mc-validity, mc-agreement, fifo-order, causal-order and
// total-order (see check/multicast.go for their exact statements).
//
// # Groups
//
// Group membership follows a fixed rule over the run's n processes
// (Groups): "all" is every process, closed; "g1" is p0..p⌊n/2⌋, closed;
// "g2" is p(⌊n/2⌋−1)..p(n−1), open. g1 and g2 overlap in two processes
// when n ≥ 4. A process outside a closed group that is asked to multicast
// to it refuses (Refused); any process may multicast to an open group,
// and only members deliver. The Lamport-timestamp total order treats every
// group as closed: its delivery rule must hear from every process that may
// send to the group.
//
// Each algorithm keeps its state per group (sequence numbers, vectors,
// sequencers, queues), so every order it promises holds within each group.
// Across overlapping groups nothing is promised: with one sequencer per
// group, say, two processes in both groups may deliver a message of g1 and
// one of g2 in opposite orders. The tests show it.
//
// # Memory in a long run
//
// A live group may carry millions of messages, so no algorithm keeps
// anything per message once every process is done with it. The sets of
// messages a process has delivered, received or numbered (basic,
// reliable, total-sequencer and its hybrids, total-isis) are seen sets: a
// watermark per origin and the numbers above it, which compact as the
// gaps fill, because every origin numbers its messages to a group 1, 2,
// 3 .... Hold-back queues, proposals being collected and unacknowledged
// copies are deleted when their message is delivered, agreed or
// acknowledged; reliable-nack's retransmission buffer is trimmed by the
// receivers' reports (see its comment). What a process holds is then set
// by the messages in flight, not by the messages carried.
//
// # Delivery is local
//
// A member that multicasts delivers its own message without sending it to
// itself (where the order allows: a total order puts its own message in
// its own hold-back queue like any other), so message counts are those of
// the textbooks' formulas with N − 1 copies per multicast.
package multicast
