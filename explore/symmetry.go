package explore

import (
	"slices"

	"github.com/cohort-go/cohort/proc"
)

// Permuter is implemented by a process whose state refers to other
// processes other than through proc.ID values (a slice indexed by process,
// say): it returns a copy of its state as it would be with every process
// i renamed perm[i]. proc.ID values anywhere in a state or a message are
// renamed by the explorer itself.
type Permuter interface {
	PermuteIDs(perm []proc.ID) proc.Process
}

// Symmetric returns the processes of family's algo with n processes
// that are interchangeable — renaming them among themselves maps every
// run to a run — or nil if none are known to be: two-phase commit's
// resource managers (not the transaction manager). In the other families
// processes break ties by their ids (timestamps, elections), so they are
// not interchangeable.
func Symmetric(family, algo string, n int) []proc.ID {
	if family != "commit" {
		return nil
	}
	var ids []proc.ID
	for id := 1; id < n; id++ {
		ids = append(ids, proc.ID(id))
	}
	return ids
}

// maxRenamings bounds the renamings tried per state; past it, one is
// taken (a representative that is sound but may not be canonical).
const maxRenamings = 5040

// symmetricFingerprint fingerprints the state's canonical representative
// under renamings of the interchangeable processes: the least fingerprint
// of the state renamed, over the renamings that put the processes in the
// order of their signatures. A process's signature hashes its own state,
// whether it is up, and the events in flight to or from it, with every
// interchangeable process's id hashed alike, so it does not change when
// they are renamed; only processes with equal signatures are permuted
// among themselves. Two states get the same fingerprint exactly when a
// renaming maps one to the other (up to hash collisions): the count is
// the number of orbits, whatever the order of the search. It leaves in
// r.perm the renaming that maps the state to its representative.
func (r *run) symmetricFingerprint() uint64 {
	ids := r.cfg.Symmetric
	n := r.cfg.Nodes
	anon := make([]bool, n)
	for _, id := range ids {
		anon[id] = true
	}
	r.h.anon = anon
	type key struct {
		h  uint64
		id proc.ID
	}
	keys := make([]key, len(ids))
	at := make(map[proc.ID]int, len(ids))
	for i, id := range ids {
		up := uint64(0)
		if r.s.Up(id) {
			up = 1
		}
		keys[i] = key{add(r.h.of(r.s.Process(id)), up), id}
		at[id] = i
	}
	for _, k := range r.q.keys {
		p := r.s.Describe(k.Slot)
		if isCrash(p) {
			continue
		}
		e := add(hashString(p.Kind), r.h.of(r.s.Payload(k.Slot)))
		if i, ok := at[p.Node]; ok {
			keys[i].h += mix64(add(e, 1))
		}
		if i, ok := at[p.From]; ok {
			keys[i].h += mix64(add(e, 2))
		}
	}
	r.h.anon = nil
	slices.SortStableFunc(keys, func(a, b key) int {
		switch {
		case a.h < b.h:
			return -1
		case a.h > b.h:
			return 1
		}
		return 0
	})
	var groups [][2]int // runs of equal signatures
	total := 1
	for a := 0; a < len(keys); {
		b := a + 1
		for b < len(keys) && keys[b].h == keys[a].h {
			b++
		}
		groups = append(groups, [2]int{a, b})
		for f := 2; f <= b-a && total <= maxRenamings; f++ {
			total *= f
		}
		a = b
	}
	order := make([]proc.ID, len(keys))
	for i, k := range keys {
		order[i] = k.id
	}
	perm := make([]proc.ID, n)
	for i := range perm {
		perm[i] = proc.ID(i)
	}
	best := ^uint64(0)
	try := func() {
		for k, id := range order {
			perm[id] = ids[k]
		}
		if fp := r.fingerprintWith(perm); fp < best || r.perm == nil {
			best, r.perm = fp, slices.Clone(perm)
		}
	}
	r.perm = nil
	if total > maxRenamings {
		try()
		return best
	}
	var rec func(g, i int)
	rec = func(g, i int) { // every order of group g's positions from i on
		if g == len(groups) {
			try()
			return
		}
		if b := groups[g][1]; i < b-1 {
			for j := i; j < b; j++ {
				order[i], order[j] = order[j], order[i]
				rec(g, i+1)
				order[i], order[j] = order[j], order[i]
			}
			return
		}
		next := 0
		if g+1 < len(groups) {
			next = groups[g+1][0]
		}
		rec(g+1, next)
	}
	if len(groups) > 0 {
		rec(0, 0)
	} else {
		try()
	}
	return best
}

// canonical appends to out, for each of labels (those of the steps chs
// enabled now, in their order), the label of the same step in the
// state's representative: its event renamed by r.perm, the renaming the
// last fingerprint chose. Two members of an orbit, renamed to their one
// representative, enable the same canonical labels, so a sleep set kept
// as bits over them (dfs.go) names the same steps whichever member stored
// it and whichever reads it.
func (r *run) canonical(chs []choice, labels []label, out []label) []label {
	n := r.cfg.Nodes
	perm := r.perm
	rename := func(id proc.ID) proc.ID {
		if id >= 0 && int(id) < n {
			return perm[id]
		}
		return id
	}
	r.h.perm = perm
	defer func() { r.h.perm = nil }()
	renamed := make([]uint64, len(r.q.keys)) // the events' hashes renamed
	done := make([]bool, len(r.q.keys))
	for k, ch := range chs {
		i := r.q.find(ch.seq)
		if !done[i] {
			p := r.s.Describe(r.q.keys[i].Slot)
			renamed[i], done[i] = eventHash(p, r.h.of(r.s.Payload(r.q.keys[i].Slot)), rename), true
		}
		c := label{id: actID(renamed[i], ch.act), node: labels[k].node}
		if c.node >= 0 {
			c.node = int32(rename(proc.ID(c.node)))
		}
		out = append(out, c)
	}
	return out
}
