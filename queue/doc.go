// Package queue is message-oriented middleware: persistent asynchronous
// communication, where neither the sender nor the receiver need be
// running while a message is on its way (Tanenbaum and van Steen,
// Distributed Systems, §4.3, "Message-oriented persistent
// communication").
//
// A Manager holds a node's queues, with the four calls of the
// message-queuing model:
//
//	Put     append a message to a queue
//	Get     block until the queue is non-empty, remove the head
//	Poll    the same without blocking
//	Notify  install a handler called when a message arrives
//
// Kinds of queues:
//   - persistent: a put returns once the message is on disk (fdatasync);
//     the manager keeps them in one segment log (see log.go) with group
//     commit — the puts that arrive while one sync runs share the next;
//   - transient: in memory, lost at a restart (DeclareTransient, or every
//     queue of a manager without a directory);
//   - transactional: a Tx gets messages and puts others, and they commit
//     together, as one record of the log, or not at all; over the API a
//     transaction acks messages got before and puts others (Transact,
//     POST /v1/queues:tx);
//   - local and remote, source and destination: a Relay (the queue
//     manager's relay of the model) moves a source queue on one node —
//     its own, or a replicated one — to a destination queue on another,
//     storing while the destination is away and forwarding when it is
//     back, idempotently (PutFrom).
//
// Over HTTP a put is a round trip; a Publisher (Client.Publish) sends
// many puts on one long-lived request (POST /v1/queues/{name}/stream, see
// stream.go) without waiting for earlier ones, and each is acknowledged
// once synced — the pipelining of JetStream's asynchronous publish,
// without its acknowledgement before the disk has the message. Its puts
// are numbered, and the node applies each number once (at-most-once
// RPC's duplicate table): a Publisher that loses its stream opens another
// and sends again the puts not acknowledged, so that a node's death loses
// none and stores none twice — through any node on replicated queues,
// whose numbers are the log's; through the same node, once it is back,
// on a node's own queues, whose numbers are on its disk alone (the
// Publisher does not send them to another node, and fails with
// ErrInDoubt if that node stays away). A Client's single puts and
// batches (Put, PutBatch) are numbered the same way and sent again by
// the same rule after a lost reply (numbered.go).
//
// In the process that holds the queues, a Pipeline (NewPipeline, on a
// Manager or a Replicated) is the same pipelining through the Go API: one
// publisher keeps a window of puts under way, each acknowledged once
// durable, in order, and its puts share syncs as many publishers' do
// (pipeline.go).
//
// A get leases the head rather than remove it at once: the consumer
// acknowledges it (Ack) when done, and a message not acknowledged within
// its visibility timeout is delivered again — at-least-once delivery, as
// in SQS and JetStream's explicit acks. An acknowledgement is durable
// when Ack returns: a message acknowledged is never delivered again,
// across crashes. Leases are not durable: after a restart every message
// not acknowledged is ready again.
//
// A manager's queues live and die with its node's disk. Replicated is
// the same calls on queues kept on the cluster's Raft log
// (consensus.Queues; what JetStream calls R3): a put is acknowledged once
// a majority of the nodes has it on disk, a get's lease runs on the
// leader's clock, an ack is committed, and every node serves every
// queue. Handler serves either (Backend). Replicated queues are bounded
// in what they hold in all (consensus.QueueLimits.State), so that a
// snapshot of them always fits a record of the node's log: a put past
// the bound is refused (ErrFull, 507 over HTTP) rather than accepted
// into a state the node could no longer compact. A node whose replica
// meets a committed entry it cannot apply (written by a newer version,
// or damaged) halts there rather than skip it and hold other queues than
// the others: it refuses every request with ErrHalted (503 over HTTP,
// so that clients go on to another node), logs it once and shows it in
// its metrics (cohort_rqueue_halted), until it is restarted. A node
// removed from the voters of the queues' log is sent no more of it: told
// so (Replicated.Left), it fails every operation under way or to come
// with ErrRemoved (503 over HTTP), rather than leave each to wait out
// its caller's timeout, until it is added back (Rejoined).
package queue
