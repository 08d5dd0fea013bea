package overlay

import (
	"slices"

	"github.com/cohort-go/cohort/proc"
)

// Hop is an overlay hop of a multicast: a message sent From one node To
// another. (The lab prices hops on a physical network: sim.TransitStub.)
type Hop struct{ From, To proc.ID }

// ScribeTree is the overlay hops a multicast from src to group g takes,
// read from the nodes' state (procs[i] is node i, a Scribe node): the
// route to the root, then every edge of the tree; with the members
// reached and their depths below the root.
func ScribeTree(procs []proc.Process, src proc.ID, g GUID) (hops []Hop, members []proc.ID, depths []int) {
	at := func(id proc.ID) *node {
		if int(id) < 0 || int(id) >= len(procs) {
			return nil
		}
		n, _ := procs[id].(*node)
		return n
	}
	hops, x := scribeRoute(at, src, g)
	if x == proc.None {
		return nil, nil, nil
	}
	return treeHops(hops, x, func(id proc.ID) ([]proc.ID, bool) {
		n := at(id)
		if n == nil || n.groups[g] == nil {
			return nil, false
		}
		return n.groups[g].children, n.groups[g].member
	})
}

// ScribeRoot is the root of group g's tree, where a multicast from src
// is routed (proc.None if the route leaves the processes given).
func ScribeRoot(procs []proc.Process, src proc.ID, g GUID) proc.ID {
	_, root := scribeRoute(func(id proc.ID) *node {
		if int(id) < 0 || int(id) >= len(procs) {
			return nil
		}
		n, _ := procs[id].(*node)
		return n
	}, src, g)
	return root
}

// scribeRoute is the route from src toward g, and its end.
func scribeRoute(at func(proc.ID) *node, src proc.ID, g GUID) ([]Hop, proc.ID) {
	var hops []Hop
	x := src
	for range Digits * 4 {
		n := at(x)
		if n == nil {
			return nil, proc.None
		}
		next := n.next(g, 0)
		if next == x {
			break
		}
		hops = append(hops, Hop{x, next})
		x = next
	}
	return hops, x
}

// ESMTree is the overlay hops a packet from the source takes down the
// ESM tree (procs[i] is node i, an ESM node), the members reached and
// their depths.
func ESMTree(procs []proc.Process) (hops []Hop, members []proc.ID, depths []int) {
	return treeHops(nil, ESMSource, func(id proc.ID) ([]proc.ID, bool) {
		if int(id) < 0 || int(id) >= len(procs) {
			return nil, false
		}
		n, ok := procs[id].(*esm)
		if !ok || n.gone {
			return nil, false
		}
		return esmChildren(procs, n), n.member && id != ESMSource
	})
}

// esmChildren is n's children whose parent n is: a node that switched
// parents is still the old one's child until the overlap ends.
func esmChildren(procs []proc.Process, n *esm) []proc.ID {
	return slices.DeleteFunc(slices.Clone(n.children), func(c proc.ID) bool {
		if int(c) < 0 || int(c) >= len(procs) {
			return true
		}
		x, ok := procs[c].(*esm)
		return !ok || x.parent != n.id
	})
}

// treeHops walks a tree down from root, breadth first.
func treeHops(hops []Hop, root proc.ID, down func(proc.ID) ([]proc.ID, bool)) ([]Hop, []proc.ID, []int) {
	var members []proc.ID
	var depths []int
	type at struct {
		id    proc.ID
		depth int
	}
	seen := map[proc.ID]bool{root: true}
	q := []at{{root, 0}}
	for len(q) > 0 {
		x := q[0]
		q = q[1:]
		children, member := down(x.id)
		if member {
			members, depths = append(members, x.id), append(depths, x.depth)
		}
		for _, c := range children {
			if !seen[c] {
				seen[c] = true
				hops = append(hops, Hop{x.id, c})
				q = append(q, at{c, x.depth + 1})
			}
		}
	}
	return hops, members, depths
}

// ESMRates is the stream's rate (Mbit/s) each member receives down the
// ESM tree (procs[i] is node i, an ESM node), computed from the tree
// itself: the source sends at its configured rate, and each child of a
// node receives the smaller of the node's rate and its upload over its
// children (Share). Members off the tree are absent.
func ESMRates(procs []proc.Process) map[proc.ID]float64 {
	at := func(id proc.ID) *esm {
		if int(id) < 0 || int(id) >= len(procs) {
			return nil
		}
		n, _ := procs[id].(*esm)
		if n == nil || n.gone {
			return nil
		}
		return n
	}
	src := at(ESMSource)
	if src == nil {
		return nil
	}
	rates := map[proc.ID]float64{}
	seen := map[proc.ID]bool{ESMSource: true}
	type at2 struct {
		id   proc.ID
		rate float64
	}
	q := []at2{{ESMSource, src.cfg.stream()}}
	for len(q) > 0 {
		x := q[0]
		q = q[1:]
		n := at(x.id)
		if n == nil {
			continue
		}
		if n.member && x.id != ESMSource {
			rates[x.id] = x.rate
		}
		share := Share(x.rate, n.cfg.Upload, len(n.children))
		for _, c := range esmChildren(procs, n) {
			if !seen[c] {
				seen[c] = true
				q = append(q, at2{c, share})
			}
		}
	}
	return rates
}
