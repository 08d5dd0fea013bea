package overlay

import (
	"math"

	"github.com/cohort-go/cohort/proc"
)

// Pastry is Rowstron & Druschel's overlay (Middleware 2001; Coulouris et
// al. §10.5.1; Tanenbaum & van Steen §5.2): prefix routing with b = 4.
//
// State: the leaf set L (l nodes on each side) and a routing table R of
// Digits rows and Radix columns: R[p][d] is a node whose nodeId shares
// the first p digits with this node's and has d as digit p (the entry
// matching the node's own digit is the node itself, left empty). Rows
// are allocated as they fill: with N nodes only about ⌈log₁₆ N⌉ do.
//
// Routing a message with key D at a node A (the paper's Table 1):
//
//  1. if D lies within L's range, deliver to the node of L ∪ {A}
//     numerically closest to D (A itself: take delivery);
//  2. else let p = shl(D, A); if R[p][D[p]] is set, forward to it;
//  3. else (the rare case) forward to a node T of L ∪ R with
//     shl(T, D) ≥ p that is numerically closer to D than A — here the
//     closest such — or, if none shares p digits, the closest of all that
//     are closer (only on the ring's wraparound).
//
// Each step of 2 adds a digit to the shared prefix; 1 ends the route.
// Cost: ⌈log₁₆ N⌉ hops expected, state (2^b − 1)·⌈log₁₆ N⌉ + 2l entries.
// Join: see node.onJoin and node.onState; failures and their repair:
// repair.go. Assumes reliable delivery. Joins may overlap: a node that
// is itself joining holds the JOINs it is asked to route until it has
// its tables, and a joiner's announcement to its leaf set carries the
// leaf set, each leaf offering back the nodes missing from it — two
// nodes that joined at once through the same Z learn of each other
// through their common neighbours (node.onAnnounce).
type pastry struct {
	rows [][Radix]proc.ID
}

func init() {
	register(proc.Algorithm{
		Name:    "pastry",
		Summary: "Pastry: prefix routing with b = 4, a 16-entry leaf set, join through a contact",
		Source:  "Rowstron & Druschel 2001; Coulouris et al. §10.5; Tanenbaum & van Steen §5.2",
		Assumes: proc.Assumptions{Reliable: true, Failures: "crash-stop", Topology: "full", Joins: true},
		New:     func(id proc.ID, _ int) proc.Process { return NewPastry(id, Repairing) },
		Checks:  []string{"overlay-lookup", "overlay-tables", "dht-get"},
		Theory: func(n int) map[string]float64 {
			return map[string]float64{
				"hops_mean":              Log16(n),
				"state_entries_per_node": float64(Radix-1)*math.Ceil(Log16(n)) + 2*DefaultLeaves,
			}
		},
		Notes: map[string]string{
			"hops_mean":              "log₁₆ N: Rowstron & Druschel's expected route (⌈log₁₆ N⌉ at most with correct tables)",
			"state_entries_per_node": "(2^b − 1)·⌈log₁₆ N⌉ + 2l counts every row full; the last row is sparse, and a node in both halves of a small leaf set counts once",
		},
	})
}

// Log16 is log₁₆ n: Pastry's expected route length.
func Log16(n int) float64 { return math.Log(float64(max(n, 1))) / math.Log(Radix) }

// NewPastry is a Pastry node at address id.
func NewPastry(id proc.ID, cfg Config) proc.Process { return newPastryNode(id, cfg) }

// entry is R[p][d], proc.None if empty.
func (r *pastry) entry(p, d int) proc.ID {
	if p >= len(r.rows) {
		return proc.None
	}
	return r.rows[p][d]
}

// learn puts id in R[p][id[p]], p = shl(id, self), if that entry is
// empty, or, with proximity, if id is measured nearer than the entry's
// node (proximity.go); without it the first known stays.
// g is id's nodeId. The entry is found in O(1) from the shared prefix
// and the next digit.
func (r *pastry) learn(n *node, id proc.ID, g GUID) bool {
	p := SharedPrefix(g, n.self)
	if p >= Digits {
		return false
	}
	if len(r.rows) <= p {
		r.grow(p + 1)
	}
	d := g.Digit(p)
	if x := r.rows[p][d]; x == id || x != proc.None && !n.nearer(id, x) {
		return false
	}
	r.rows[p][d] = id
	return true
}

// grow makes the table k rows long, the new rows empty. A node's table
// begins in the tableRows rows held in the node itself (node.tbuf): a
// table of 10⁶ nodes fills 5 or 6 rows, so a table rarely moves to an
// allocation of its own; one without them (or that outgrows them) is
// given room for at least tableRows rows at once, so that a joining
// node, which learns rows 0, 1, 2, … one after another from the nodes
// on its JOIN's route, does not copy its table at every row.
func (r *pastry) grow(k int) {
	if k > cap(r.rows) {
		rows := make([][Radix]proc.ID, len(r.rows), max(k, tableRows))
		copy(rows, r.rows)
		r.rows = rows
	}
	for len(r.rows) < k {
		var row [Radix]proc.ID
		for d := range row {
			row[d] = proc.None
		}
		r.rows = append(r.rows, row)
	}
}

// tableRows is the rows a table is first given room for: ⌈log₁₆ N⌉ + 1
// for N up to 10⁶, the rows that overlay fills.
const tableRows = 6

// forget empties the entry that holds id, if one does.
func (r *pastry) forget(n *node, id proc.ID) (p, d int, held bool) {
	g := NodeID(id)
	p = SharedPrefix(g, n.self)
	if p >= len(r.rows) {
		return 0, 0, false
	}
	d = g.Digit(p)
	if r.rows[p][d] != id {
		return 0, 0, false
	}
	r.rows[p][d] = proc.None
	return p, d, true
}

// row appends row p's entries to dst.
func (r *pastry) row(dst []proc.ID, p int) []proc.ID {
	if p >= len(r.rows) {
		return dst
	}
	for _, id := range r.rows[p] {
		if id != proc.None {
			dst = append(dst, id)
		}
	}
	return dst
}

func (r *pastry) nodes(n *node) []proc.ID {
	// (room for the leaf set too: known appends it)
	ids := make([]proc.ID, 0, len(r.rows)*Radix+len(n.leaves.left)+len(n.leaves.right))
	for _, row := range r.rows {
		for _, id := range row {
			if id != proc.None {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// next is the routing rule above.
func (r *pastry) next(n *node, key GUID) proc.ID {
	if n.leaves.covers(key) {
		return n.leaves.closest(n.id, key)
	}
	p := SharedPrefix(key, n.self)
	if p == Digits {
		return n.id
	}
	if t := r.entry(p, key.Digit(p)); t != proc.None {
		return t
	}
	return rareCase(n, key, p, r.rows)
}

// rareCase is step 3: the node of L ∪ R numerically closer to key than
// this one, sharing at least p digits with it, closest first; failing
// that, the closest that is closer at all; failing that, this node.
// (Closer is a total order: the choice is the same whatever the order
// the candidates are looked at.)
func rareCase(n *node, key GUID, p int, rows [][Radix]proc.ID) proc.ID {
	c := rare{key: key, p: p, best: proc.None, any: n.id, ag: n.self}
	for _, side := range [2][]proc.ID{n.leaves.left, n.leaves.right} {
		for _, id := range side {
			c.consider(n, id)
		}
	}
	for i := range rows {
		for _, id := range rows[i] {
			if id != proc.None {
				c.consider(n, id)
			}
		}
	}
	if c.best != proc.None {
		return c.best
	}
	return c.any
}

// rare is rareCase's search: the best candidate sharing p digits with
// key, and the closest of any.
type rare struct {
	key  GUID
	p    int
	best proc.ID
	bg   GUID
	any  proc.ID
	ag   GUID
}

func (c *rare) consider(n *node, id proc.ID) {
	g := NodeID(id)
	if !Closer(c.key, g, n.self) {
		return
	}
	if SharedPrefix(g, c.key) >= c.p && (c.best == proc.None || Closer(c.key, g, c.bg)) {
		c.best, c.bg = id, g
	}
	if Closer(c.key, g, c.ag) {
		c.any, c.ag = id, g
	}
}
