package live

import (
	"errors"
	"maps"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/proc"
)

// Held messages. The algorithms assume reliable FIFO channels, and the
// transport queues what a service sends to a member up to a bound
// (transport.Config.QueueLen, QueueBytes); past it, Send refuses with
// ErrBackpressure. A message lost to a burst would stall an algorithm for
// good (a total order waits for ever for the one it lost), so a service
// keeps, in order, what the transport refused for a member (hold), and
// offers it again until the transport takes it (retryHeld); what the
// service sends the member meanwhile waits behind.
//
// A member that is dead, or cut off, takes nothing for as long as it
// stays away, and its senders go on sending (a Raft leader's heartbeats,
// fifty a second per log): what is held for it must be bounded in bytes,
// counted as what it costs in memory, and cost nothing more while it
// waits. So:
//
//   - Each held message is counted at its cost (heldCost): the copy's
//     allocation and its slice header, not only its length — a heartbeat
//     of 40 bytes costs 72.
//   - Past maxHeld for one service, maxMemberHeld for one member over all
//     the services of the node, or maxNodeHeld for the node, a message is
//     dropped, as a network drops one, and counted (ServiceStats.Dropped);
//     the WARN line that says so is written at most once a second for the
//     node. A dead member thus costs its senders at most
//     transport.Config.QueueBytes plus maxMemberHeld.
//   - A retry offers what is held in batches of at most heldBatch
//     messages, halved while the transport refuses them: the transport
//     takes a batch whole or not at all, and would refuse for ever one
//     that exceeds its bound. What it takes is released; what is left
//     stays where it is (it is not copied again).
//   - A retry that got nothing through waits twice as long as the last
//     before the next, from heldRetry up to heldRetryMax; one that got
//     something through starts again at heldRetry.
const (
	maxHeld       = 64 << 20
	maxMemberHeld = 64 << 20
	maxNodeHeld   = 256 << 20
	heldBatch     = 256
	heldRetry     = time.Millisecond
	heldRetryMax  = 64 * time.Millisecond
)

// heldCost is what a held copy costs in memory: its allocation (cap, a
// size class) and its slice header in the member's list.
func heldCost(p []byte) int {
	return cap(p) + int(unsafe.Sizeof(p))
}

// heldLedger counts what the services of a node hold, in all and for
// each member, within maxNodeHeld and maxMemberHeld.
type heldLedger struct {
	mu    sync.Mutex
	total int
	by    map[proc.ID]int
}

// reserve counts cost for member to and reports true, or reports false
// if that would pass a bound.
func (l *heldLedger) reserve(to proc.ID, cost int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total+cost > maxNodeHeld || l.by[to]+cost > maxMemberHeld {
		return false
	}
	if l.by == nil {
		l.by = map[proc.ID]int{}
	}
	l.total += cost
	l.by[to] += cost
	return true
}

// release uncounts cost for member to.
func (l *heldLedger) release(to proc.ID, cost int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total -= cost
	if l.by[to] -= cost; l.by[to] == 0 {
		delete(l.by, to)
	}
}

// bytes is what the node holds, in all (member -1) or for one member.
func (l *heldLedger) bytes(member proc.ID) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if member < 0 {
		return l.total
	}
	return l.by[member]
}

// hold keeps copies of payloads for member to, which the transport
// refused with err, to send them again in order once it takes them. If
// err is not ErrBackpressure (the node is closing), or past the bounds,
// they are dropped and counted: the first that does not fit and all
// after it, so that what is held stays a prefix. The caller holds turn.
func (s *Service) hold(to proc.ID, payloads [][]byte, err error) {
	if !errors.Is(err, transport.ErrBackpressure) {
		s.dropUnsent(to, len(payloads), err)
		return
	}
	for i, p := range payloads {
		c := append([]byte(nil), p...)
		cost := heldCost(c)
		if s.heldBytes+cost > maxHeld || !s.node.held.reserve(to, cost) {
			s.dropUnsent(to, len(payloads)-i, err)
			break
		}
		if s.held == nil {
			s.held = map[proc.ID][][]byte{}
		}
		s.held[to] = append(s.held[to], c)
		s.heldBytes += cost
	}
	if len(s.held) > 0 && !s.retrying {
		s.retryWait = max(s.retryWait, heldRetry)
		s.scheduleRetry()
	}
}

// retryHeld offers the transport again what hold keeps, member by member,
// in order, and schedules the next retry while anything is left.
func (s *Service) retryHeld() {
	progress := false
	for _, to := range slices.Sorted(maps.Keys(s.held)) {
		ps := s.held[to]
		sent, n := 0, heldBatch
		var err error
		for sent < len(ps) {
			b := min(n, len(ps)-sent)
			k := 0
			k, err = s.sendTo(to, ps[sent:sent+b])
			sent += k
			if err == nil {
				continue
			}
			if k > 0 || b == 1 || !errors.Is(err, transport.ErrBackpressure) {
				break
			}
			n = b / 2 // a whole batch refused: a smaller one may fit
		}
		for _, p := range ps[:sent] {
			s.releaseHeld(to, p)
		}
		progress = progress || sent > 0
		rest := ps[sent:]
		if len(rest) > 0 && err != nil && !errors.Is(err, transport.ErrBackpressure) {
			for _, p := range rest {
				s.releaseHeld(to, p)
			}
			s.dropUnsent(to, len(rest), err)
			rest = nil
		}
		switch {
		case len(rest) == 0:
			delete(s.held, to)
		case sent > 0:
			s.held[to] = slices.Clone(rest) // the sent copies go with the old array
		}
	}
	if len(s.held) == 0 {
		s.retryWait = 0
		return
	}
	if progress {
		s.retryWait = heldRetry
	} else {
		s.retryWait = min(2*s.retryWait, heldRetryMax)
	}
	s.scheduleRetry()
}

func (s *Service) scheduleRetry() {
	s.retrying = true
	time.AfterFunc(s.retryWait, func() { _ = s.post(event{kind: evRetry}) })
}

// releaseHeld uncounts held copy p for member to.
func (s *Service) releaseHeld(to proc.ID, p []byte) {
	cost := heldCost(p)
	s.heldBytes -= cost
	s.node.held.release(to, cost)
}

// dropHeld drops everything held (the service stops). The caller holds
// turn.
func (s *Service) dropHeld() {
	for to, ps := range s.held {
		for _, p := range ps {
			s.releaseHeld(to, p)
		}
	}
	s.held, s.heldBytes = nil, 0
}

// dropUnsent counts n messages to member to as dropped, and says so
// (at most once a second for the node).
func (s *Service) dropUnsent(to proc.ID, n int, err error) {
	s.dropped.Add(int64(n))
	s.node.warnDrop("messages not sent", "service", s.name, "to", int(to), "count", n, "err", err)
}
