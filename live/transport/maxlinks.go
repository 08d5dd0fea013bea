package transport

import (
	"sync"
)

// linkCap bounds the connections a member holds at once (Config.MaxLinks),
// as a cache of connections bounded in size: when one more comes up than
// the bound allows, the least recently used of the others is closed
// (LRU replacement, as an operating system's page cache or a connection
// pool does). Closing a connection loses nothing: the link outlives its
// connections (ack.go), and whatever either side has left to send dials
// again and resumes where it stopped. The one closed is, if there is one,
// a connection with everything on it acknowledged both ways, so that
// neither side needs it back at once; else the least recently used of
// all, which costs its frames a reconnection but keeps the bound.
//
// A connection counts from when it becomes the pair's connection
// (peer.install) until it ends: the descriptors of the process are those
// links, plus connections still in their handshake.
type linkCap struct {
	max  int
	mu   sync.Mutex
	up   map[*link]*peer // the connections counted
	peak int             // the most counted at once
}

func newLinkCap(max int) *linkCap {
	if max <= 0 {
		return nil
	}
	return &linkCap{max: max, up: make(map[*link]*peer, max+1)}
}

// admit counts l, the pair's new connection to p, which replaces old (if
// not nil; it is being closed), and, if that makes more than max, closes
// the connection to evict.
func (c *linkCap) admit(p *peer, l, old *link) {
	if c == nil {
		return
	}
	c.mu.Lock()
	delete(c.up, old)
	var victim *link
	var vp *peer
	if len(c.up) >= c.max {
		victim, vp = c.evict()
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
// with everything acknowledged both ways, or of all if none is. mu is
// held, and up is not empty.
func (c *linkCap) evict() (*link, *peer) {
	var best, bestQuiet *link
	var bp, bqp *peer
	var used, usedQuiet int64
	for l, p := range c.up {
		u := max(l.admitted, p.lastUsed())
		if best == nil || u < used {
			best, bp, used = l, p, u
		}
		if (bestQuiet == nil || u < usedQuiet) && p.quiet() {
			bestQuiet, bqp, usedQuiet = l, p, u
		}
	}
	if bestQuiet != nil {
		return bestQuiet, bqp
	}
	return best, bp
}

// stats is how many connections are counted, and the most that were.
func (c *linkCap) stats() (now, peak int) {
	if c == nil {
		return 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.up), c.peak
}

// lastUsed is when a data frame last passed to or from the member (mono).
func (p *peer) lastUsed() int64 { return max(p.q.lastData.Load(), p.lastRecv.Load()) }

// quiet reports whether everything sent either way between this member
// and p has been acknowledged.
func (p *peer) quiet() bool { return p.rx.next.Load() == p.rx.ackedFrames.Load() && p.q.quiet() }
