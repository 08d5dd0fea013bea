package overlay

import (
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/cohort-go/cohort/proc"
)

func TestDigitsAndSharedPrefix(t *testing.T) {
	g := GUID{0x0123456789abcdef, 0xfedcba9876543210}
	for i, want := range []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0} {
		if d := g.Digit(i); d != want {
			t.Errorf("digit %d of %s = %d, want %d", i, g, d, want)
		}
	}
	for _, c := range []struct {
		a, b GUID
		want int
	}{
		{GUID{0, 0}, GUID{0, 0}, 32},
		{GUID{0x1000000000000000, 0}, GUID{0x2000000000000000, 0}, 0},
		{GUID{0x1200000000000000, 0}, GUID{0x1300000000000000, 0}, 1},
		{GUID{0x1200000000000000, 0}, GUID{0x1208000000000000, 0}, 3},
		{GUID{5, 0}, GUID{5, 0x1000000000000000}, 16},
		{GUID{5, 0xabc}, GUID{5, 0xabd}, 31},
		{GUID{0x8000000000000000, 0}, GUID{0x7fffffffffffffff, 0xffffffffffffffff}, 0},
	} {
		if got := SharedPrefix(c.a, c.b); got != c.want {
			t.Errorf("shl(%s, %s) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := SharedPrefix(c.b, c.a); got != c.want {
			t.Errorf("shl(%s, %s) = %d, want %d (symmetry)", c.b, c.a, got, c.want)
		}
	}
}

func TestRingArithmetic(t *testing.T) {
	max := GUID{^uint64(0), ^uint64(0)}
	for _, c := range []struct {
		name     string
		a, b     GUID
		cw, dist GUID
	}{
		{"up", GUID{0, 1}, GUID{0, 5}, GUID{0, 4}, GUID{0, 4}},
		{"down", GUID{0, 5}, GUID{0, 1}, GUID{^uint64(0), ^uint64(0) - 3}, GUID{0, 4}},
		{"borrow", GUID{0, ^uint64(0)}, GUID{1, 0}, GUID{0, 1}, GUID{0, 1}},
		{"wraparound", max, GUID{0, 2}, GUID{0, 3}, GUID{0, 3}},
		{"wraparound back", GUID{0, 2}, max, GUID{^uint64(0), ^uint64(0) - 2}, GUID{0, 3}},
		{"half", GUID{0, 0}, GUID{1 << 63, 0}, GUID{1 << 63, 0}, GUID{1 << 63, 0}},
	} {
		if got := Clockwise(c.a, c.b); got != c.cw {
			t.Errorf("%s: clockwise(%s, %s) = %s, want %s", c.name, c.a, c.b, got, c.cw)
		}
		if got := Distance(c.a, c.b); got != c.dist {
			t.Errorf("%s: distance(%s, %s) = %s, want %s", c.name, c.a, c.b, got, c.dist)
		}
	}
	// Closer: across the wraparound, and a tie to the smaller nodeId.
	key := GUID{0, 1}
	if !Closer(key, max, GUID{0, 4}) {
		t.Error("2^128−1 is 2 from key 1 across zero, closer than 4 (3 away)")
	}
	if !Closer(GUID{0, 5}, GUID{0, 3}, GUID{0, 7}) || Closer(GUID{0, 5}, GUID{0, 7}, GUID{0, 3}) {
		t.Error("a tie goes to the smaller nodeId")
	}
	var g GUID
	if err := g.UnmarshalText([]byte(GUID{0x0123, 0xabcdef}.String())); err != nil || g != (GUID{0x0123, 0xabcdef}) {
		t.Errorf("text round trip: %s, %v", g, err)
	}
}

// static builds the nodes 0..n−1 of algorithm mk, each knowing all the
// others, as after joins that do not overlap.
func static(n int, mk func(proc.ID) proc.Process) []*node {
	nodes := make([]*node, n)
	for i := range nodes {
		nodes[i] = mk(proc.ID(i)).(*node)
		for j := range n {
			nodes[i].learn(nil, proc.ID(j)) // no proximity, no groups: no env needed
		}
	}
	return nodes
}

// walk routes key from node from by the routing rule alone.
func walk(t *testing.T, nodes []*node, from proc.ID, key GUID) (proc.ID, int) {
	t.Helper()
	at, hops := from, 0
	for {
		nx := nodes[at].next(key, hops)
		if nx == at {
			return at, hops
		}
		// Each hop makes progress: a longer shared prefix, or closer.
		if SharedPrefix(NodeID(nx), key) <= SharedPrefix(NodeID(at), key) && !Closer(key, NodeID(nx), NodeID(at)) {
			t.Fatalf("hop %v → %v toward %s makes no progress", at, nx, key)
		}
		at, hops = nx, hops+1
		if hops > len(nodes) {
			t.Fatalf("route to %s loops", key)
		}
	}
}

// TestRoutingRule routes random keys over full tables: every route ends
// at the key's home, every hop makes progress; Pastry's within
// ⌈log₁₆ N⌉ + 1 hops, the circular baseline's within N/l (half the ring,
// l nodes a hop, with room for the nodeIds' uneven spread).
func TestRoutingRule(t *testing.T) {
	for _, c := range []struct {
		name    string
		n       int
		mk      func(proc.ID) proc.Process
		maxHops int
	}{
		{"pastry/1", 1, func(id proc.ID) proc.Process { return NewPastry(id, leaves(8)) }, 0},
		{"pastry/5", 5, func(id proc.ID) proc.Process { return NewPastry(id, leaves(8)) }, 1},
		{"pastry/17", 17, func(id proc.ID) proc.Process { return NewPastry(id, leaves(8)) }, 2},
		{"pastry/500", 500, func(id proc.ID) proc.Process { return NewPastry(id, leaves(8)) }, 4},
		{"pastry/500,l=1", 500, func(id proc.ID) proc.Process { return NewPastry(id, leaves(1)) }, 5},
		{"circular/500", 500, func(id proc.ID) proc.Process { return NewCircular(id, leaves(8)) }, 500 / 8},
		{"circular/500,l=2", 500, func(id proc.ID) proc.Process { return NewCircular(id, leaves(2)) }, 500 / 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			nodes := static(c.n, c.mk)
			ids := make([]proc.ID, c.n)
			for i := range ids {
				ids[i] = proc.ID(i)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for range 300 {
				key := GUID{rng.Uint64(), rng.Uint64()}
				if rng.IntN(4) == 0 { // a key next to a node: at either side of it
					key = NodeID(proc.ID(rng.IntN(c.n)))
					key.Lo += uint64(rng.IntN(5)) - 2
				}
				from := proc.ID(rng.IntN(c.n))
				at, hops := walk(t, nodes, from, key)
				if home := Home(key, ids); at != home {
					t.Fatalf("key %s from %v: delivered at %v, home is %v", key, from, at, home)
				}
				if hops > c.maxHops {
					t.Errorf("key %s from %v: %d hops, want at most %d", key, from, hops, c.maxHops)
				}
			}
		})
	}
}

// TestLeafSetWraparound: a leaf set whose sides cross zero covers the keys
// between its extremes and no others.
func TestLeafSetWraparound(t *testing.T) {
	var ids []proc.ID
	for i := range proc.ID(200) {
		ids = append(ids, i)
	}
	// The node with the largest nodeId: its right side wraps past zero.
	top := ids[0]
	for _, id := range ids {
		if Cmp(NodeID(id), NodeID(top)) > 0 {
			top = id
		}
	}
	s := leafSet{self: NodeID(top), l: 2}
	for _, id := range ids {
		s.add(id)
	}
	if len(s.left) != 2 || len(s.right) != 2 {
		t.Fatalf("leaf set of the top node: %v %v", s.left, s.right)
	}
	far := NodeID(s.right[1])
	if Cmp(far, NodeID(top)) >= 0 {
		t.Fatalf("the right side of the top node should wrap past zero: %s", far)
	}
	for _, c := range []struct {
		key  GUID
		want bool
	}{
		{GUID{0, 0}, true},                                // just past zero
		{far, true},                                       // the rightmost leaf itself
		{GUID{far.Hi, far.Lo + 1}, false},                 // just beyond it
		{GUID{1 << 62, 0}, false},                         // a quarter of the way round
		{NodeID(s.left[1]), true},                         // the leftmost leaf
		{Clockwise(GUID{0, 1}, NodeID(s.left[1])), false}, // just below it
	} {
		if got := s.covers(c.key); got != c.want {
			t.Errorf("covers(%s) = %t, want %t", c.key, got, c.want)
		}
	}
}

// TestPastryRuleCases takes a Pastry node that knows 300 others (l = 2)
// through each case of the routing rule, with keys built for each.
func TestPastryRuleCases(t *testing.T) {
	nodes := static(300, func(id proc.ID) proc.Process { return NewPastry(id, leaves(2)) })
	n := nodes[0]
	r := n.rt.(*pastry)
	leaves := append(append([]proc.ID{0}, n.leaves.left...), n.leaves.right...)
	// A node of the table in another row-0 column: far away.
	var far proc.ID = proc.None
	for _, id := range r.rows[0] {
		if id != proc.None && !n.leaves.covers(NodeID(id)) {
			far = id
			break
		}
	}
	if far == proc.None {
		t.Fatal("no entry of row 0 outside the leaf set's range")
	}
	nearKey := NodeID(n.leaves.right[0])
	nearKey.Lo-- // just below the nearest right leaf: within range
	farKey := NodeID(far)
	farKey.Lo ^= 1 // next to a node of another row-0 column
	for _, c := range []struct {
		name string
		key  GUID
		want proc.ID
	}{
		{"1: within the leaf set, to the closest leaf", nearKey, Home(nearKey, leaves)},
		{"1: the node's own id: take delivery", n.self, 0},
		{"2: R[p][D[p]]", farKey, r.rows[0][farKey.Digit(0)]},
	} {
		if got := r.next(n, c.key); got != c.want {
			t.Errorf("%s: key %s: next %v, want %v", c.name, c.key, got, c.want)
		}
	}
	// 3: the rare case. Empty R[0][D[0]]: the node sends the key to
	// the table's or leaf set's node closest to it among those closer
	// than itself (none shares a digit with it but that column's).
	d := farKey.Digit(0)
	saved := r.rows[0][d]
	r.rows[0][d] = proc.None
	want := proc.None
	for _, id := range n.known() {
		g := NodeID(id)
		if Closer(farKey, g, n.self) && (want == proc.None || Closer(farKey, g, NodeID(want))) {
			want = id
		}
	}
	if got := r.next(n, farKey); got != want || want == proc.None {
		t.Errorf("3: key %s with R[0][%x] empty: next %v, want %v", farKey, d, got, want)
	}
	r.rows[0][d] = saved
}

// leaves is the failure-free configuration with l leaves on each side.
func leaves(l int) Config {
	c := FailureFree
	c.Leaves = l
	return c
}

// TestLeafSetClosest: the leaf set's closest, which looks only at key's
// neighbours on each side, agrees with a scan of every entry — for sides
// full and short, keys anywhere (the entries themselves, their exact
// midpoints, past zero) and nodes at the top and bottom of the ring.
func TestLeafSetClosest(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	scan := func(s *leafSet, self proc.ID, key GUID) proc.ID {
		best := self
		for _, id := range slices.Concat(s.left, s.right) {
			if Closer(key, NodeID(id), NodeID(best)) {
				best = id
			}
		}
		return best
	}
	for trial := range 2000 {
		n := 1 + rng.IntN(40)
		self := proc.ID(rng.IntN(1000))
		s := leafSet{self: NodeID(self), l: 1 + rng.IntN(8)}
		var members []proc.ID
		for range n {
			id := proc.ID(rng.IntN(1000))
			s.add(id)
			members = append(members, id)
		}
		keys := []GUID{{rng.Uint64(), rng.Uint64()}, {0, 0}, {^uint64(0), ^uint64(0)}, NodeID(self)}
		for _, id := range slices.Concat(s.left, s.right) {
			g := NodeID(id)
			// halfway from the node clockwise to this entry
			cw := Clockwise(s.self, g)
			lo, c := bits.Add64(s.self.Lo, cw.Lo>>1|cw.Hi<<63, 0)
			hi, _ := bits.Add64(s.self.Hi, cw.Hi>>1, c)
			mid := GUID{hi, lo}
			keys = append(keys, g, mid, Clockwise(GUID{0, 1}, g), GUID{g.Hi, g.Lo + 1})
		}
		for _, key := range keys {
			if got, want := s.closest(self, key), scan(&s, self, key); got != want {
				t.Fatalf("trial %d (l=%d, %d offered): closest(%s) = %d, the scan says %d", trial, s.l, len(members), key, got, want)
			}
		}
	}
}

// TestNodeLines: the lines a node tells the simulator to prefetch cover
// its state up to the end of the table's rows, and no more than one line
// beyond; a Pastry node's first rows are those (no allocation of their
// own).
func TestNodeLines(t *testing.T) {
	var n node
	end := int(unsafe.Offsetof(n.tbuf) + unsafe.Sizeof(n.tbuf))
	if nodeLines*64 < end || (nodeLines-1)*64 >= end {
		t.Errorf("a node's rows end at byte %d: %d lines, not nodeLines = %d", end, (end+63)/64, nodeLines)
	}
	p := newPastryNode(1, FailureFree)
	p.table.grow(tableRows)
	if &p.table.rows[0] != &p.tbuf[0] {
		t.Errorf("a Pastry node's table is not its inline rows")
	}
}
