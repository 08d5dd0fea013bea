// Package backoff paces the proposals of an operation that a replicated
// service has not answered: the clients of the replicated queues, locks
// and groups propose it again, under the same number (the log applies it
// once), after a wait that doubles each time, up to Max, with jitter.
//
// Why not a fixed interval. An operation unanswered for the first wait is
// not known to be lost — the log may take longer to commit it on a busy
// machine, or have no leader for a while — and each copy proposed is one
// more input for the node, one more entry for the log to replicate and
// apply, or one more forward to a leader that cannot be reached. At a
// fixed interval, copies grow with the time the operation goes
// unanswered: linearly over a partition, and, on a log slower to commit
// than the interval, until it carries mostly copies (a retransmission
// storm). Doubling the wait, as TCP backs off its retransmission timer
// (RFC 6298, 5.5; Jacobson, "Congestion Avoidance and Control", 1988),
// keeps the copies to the logarithm of the wait, plus one per Max. The
// jitter keeps operations that went unanswered together (every client of
// a node cut off) from being proposed again together for ever (Floyd and
// Jacobson, "The Synchronization of Periodic Routing Messages", 1994).
//
// The price of a long wait is a slow recovery: an operation proposed just
// before its node regains the leader would wait up to Max for its next
// copy. So the lock and group clients start over (Reset, and propose at
// once) when they see progress: the log applying entries at their node
// again after a quiet spell (Progress). (A replicated queue's operation
// fails with its ErrNoLeader after 2 s without a leader instead.)
//
// A queue's relay paces its puts to a destination that is away the same
// way (NewUpTo: its bound is configured): relays cut off from one
// destination together do not all try it again at the same instants.
package backoff

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Max bounds the wait between two proposals of an operation, unless the
// first wait is longer.
const Max = 5 * time.Second

// Backoff is the waits between the proposals of one operation. The zero
// value is not ready: use New. A Backoff is used by one goroutine at a
// time.
//
//	b := backoff.New(retry, seed, op)  // propose; wait b.Next(); propose; wait b.Next(); …
//	b.Reset()                          // progress: the next wait is the first again
type Backoff struct {
	first time.Duration
	limit time.Duration // max(Max, first), or NewUpTo's
	next  time.Duration // the longest the next wait may be
	rng   rand.PCG
}

// New returns the waits of an operation whose first wait is first, with
// jitter drawn from the stream (seed, op): a client seeds it once, and
// numbers its operations, so that a run replays with the same waits.
func New(first time.Duration, seed, op uint64) Backoff {
	return NewUpTo(first, Max, seed, op)
}

// NewUpTo is New with waits bounded by limit instead of Max (by first,
// if limit is shorter): for a client whose bound is configured.
func NewUpTo(first, limit time.Duration, seed, op uint64) Backoff {
	b := Backoff{first: first, limit: max(limit, first), next: first}
	b.rng.Seed(seed, op)
	return b
}

// Next returns the wait before the next proposal: drawn uniformly from
// (¾w, w], w the first wait doubled once for every earlier call since New
// or Reset, up to max(Max, first). The jitter only shortens a wait, so the
// waits of one operation add up to at least ¾ of the undisturbed
// doubling's: over a span T, at most 2 + log₂(4T/3first) + 4T/3Max
// proposals.
func (b *Backoff) Next() time.Duration {
	w := b.next
	b.next = min(2*w, b.limit)
	jitter := time.Duration(float64(w/4) * float64(b.rng.Uint64()>>11) / (1 << 53))
	return w - jitter
}

// Reset starts the waits over from the first: the client saw progress.
func (b *Backoff) Reset() { b.next = b.first }

// Progress tells a client's waiting operations when the log moves again
// at its node after a quiet spell — a partition healed, a leader elected
// after none — so that they are proposed again at once, their waits
// started over, rather than after up to Max. A log that keeps moving
// wakes nobody: a copy proposed then would only add to its load.
type Progress struct {
	quiet time.Duration
	last  atomic.Int64 // when the log last moved, in Unix nanoseconds

	mu      sync.Mutex
	resumed chan struct{} // closed when the log moves after a quiet spell
}

// NewProgress returns a Progress that counts a spell of quiet or longer
// without the log moving as quiet (a client's first wait suits).
func NewProgress(quiet time.Duration) *Progress {
	p := &Progress{quiet: quiet, resumed: make(chan struct{})}
	p.last.Store(time.Now().UnixNano())
	return p
}

// Moved records that the log moved at the node (it applied an entry, or
// a snapshot): if it had not for quiet, the operations waiting on
// Resumed are woken.
func (p *Progress) Moved() {
	now := time.Now().UnixNano()
	if now-p.last.Swap(now) < int64(p.quiet) {
		return
	}
	p.mu.Lock()
	close(p.resumed)
	p.resumed = make(chan struct{})
	p.mu.Unlock()
}

// Resumed returns a channel closed the next time the log moves after a
// quiet spell.
func (p *Progress) Resumed() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.resumed
}

// Most is the most proposals an operation whose first wait is first
// makes over span: the first, and one after each wait while they add up
// to no more than span, each wait the shortest the jitter draws.
func Most(span, first time.Duration) int {
	n, t, w := 1, time.Duration(0), first
	for {
		t += w - w/4
		if t > span {
			return n
		}
		n++
		w = min(2*w, max(Max, first))
	}
}
