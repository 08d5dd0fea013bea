package transport

import (
	"errors"
	"sync"
)

// linkCap bounds the connections a member holds at once (Config.MaxLinks),
// as a cache of connections bounded in size: when a connection comes up
// and the bound is reached, the least recently used of those with
// everything on them acknowledged both ways is closed (LRU replacement,
// as a connection pool does), so that neither side needs it back at once.
// Closing one loses nothing: the link outlives its connections (ack.go),
// and whatever either side later sends dials again and resumes.
//
// If every connection still carries frames not yet acknowledged, the new
// one is refused instead (errLinkBusy) and its dialer backs off: closing
// a busy connection would only have its frames dial again and close
// another, and a member whose working set exceeds the bound would spend
// its time in handshakes (thrashing, as a paging system whose resident
// set is too small; Denning, "The working set model", 1968). A dialer
// also takes a slot before it dials (reserve), and waits while there is
// none, so that a busy member does not open connections it must refuse.
//
// A connection counts from when it becomes the pair's connection
// (peer.install) until it ends: the descriptors of the process are those
// connections, plus those still in their handshake.
type linkCap struct {
	max     int
	mu      sync.Mutex
	up      map[*link]*peer // the connections counted
	dialing int             // slots reserved by dialers
	peak    int             // the most counted at once
	refused uint64
}

// errLinkBusy: the connection came up when MaxLinks were up, each with
// frames not yet acknowledged.
var errLinkBusy = errors.New("MaxLinks connections up, none of them quiet")

func newLinkCap(max int) *linkCap {
	if max <= 0 {
		return nil
	}
	return &linkCap{max: max, up: make(map[*link]*peer, max+1)}
}

// admit counts l, the pair's new connection to p, which replaces old (if
// not nil; it is being closed), closing the connection to evict if that
// makes more than max. It reports false, counting nothing, if none may
// be evicted.
func (c *linkCap) admit(p *peer, l, old *link) bool {
	if c == nil {
		return true
	}
	c.mu.Lock()
	if l.reserved {
		l.reserved = false
		c.dialing--
	}
	delete(c.up, old)
	var victim *link
	var vp *peer
	if len(c.up) >= c.max {
		if victim, vp = c.evict(); victim == nil {
			c.refused++
			c.mu.Unlock()
			return false
		}
		delete(c.up, victim)
	}
	l.admitted = mono()
	c.up[l] = p
	c.peak = max(c.peak, len(c.up))
	c.mu.Unlock()
	if victim != nil {
		victim.evicted.Store(true)
		vp.evicted.Add(1)
		victim.conn.Close()
	}
	return true
}

// reserve takes a slot for a dial, reporting false if there is none: the
// connections counted and the dials under way, less those that may be
// evicted, are max already. admit uses the slot; unreserve returns it if
// the connection never got that far.
func (c *linkCap) reserve() bool {
	if c == nil {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	busy := len(c.up) + c.dialing
	if busy >= c.max {
		for _, p := range c.up {
			if p.quiet() {
				busy--
			}
		}
	}
	if busy >= c.max {
		return false
	}
	c.dialing++
	return true
}

// unreserve returns the slot reserved for l's dial (l nil: the dial
// failed) unless admit used it.
func (c *linkCap) unreserve(l *link) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if l == nil || l.reserved {
		c.dialing--
	}
	if l != nil {
		l.reserved = false
	}
}

// release stops counting l, which has ended.
func (c *linkCap) release(l *link) {
	if c == nil {
		return
	}
	c.mu.Lock()
	delete(c.up, l)
	c.mu.Unlock()
}

// evict picks the connection to close: the least recently used of those
// with everything acknowledged both ways; nil if there is none. mu is
// held.
func (c *linkCap) evict() (*link, *peer) {
	var best *link
	var bp *peer
	var used int64
	for l, p := range c.up {
		if u := max(l.admitted, p.lastUsed()); (best == nil || u < used) && p.quiet() {
			best, bp, used = l, p, u
		}
	}
	return best, bp
}

// stats is how many connections are counted, the most that were, and how
// many were refused.
func (c *linkCap) stats() (now, peak int, refused uint64) {
	if c == nil {
		return 0, 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.up), c.peak, c.refused
}

// lastUsed is when a data frame last passed to or from the member (mono).
func (p *peer) lastUsed() int64 { return max(p.q.lastData.Load(), p.lastRecv.Load()) }

// quiet reports whether everything sent either way between this member
// and p has been acknowledged.
func (p *peer) quiet() bool { return p.rx.next.Load() == p.rx.ackedFrames.Load() && p.q.quiet() }
