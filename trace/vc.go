package trace

import (
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strconv"

	"github.com/cohort-go/cohort/logical"
)

// VC is a vector timestamp as a trace holds it in memory (Fidge 1988,
// Mattern 1989): entry p is the number of events of process p that
// happened before the event or are it; an entry it does not hold is 0.
// The zero VC is "none recorded".
//
// It is held in one of two forms. Dense: an entry per process 0 ..
// Len()−1, as every simulated run records it and as a trace of Nodes
// processes writes it (an array). Sparse: its nonzero entries by process
// ID, for a trace whose processes join (Header.IDs) and may have high
// IDs. A vector that knows of founders 0..2 and of a member that joined
// as 60000 is then four pairs of words, not the 60001 words of an array
// indexed by ID. Read chooses the form (CompactVC); both read alike
// through Len, At, Entries and Compare.
type VC struct {
	ids []int32  // nil: dense, entry p is c[p]; else c[k] is entry ids[k] (ascending, c[k] > 0)
	c   []uint64 // the entries
}

// DenseVC returns the vector whose entry p is entries[p]; it keeps the
// slice, which the caller must not change afterwards. nil or empty: none.
func DenseVC(entries []uint64) VC {
	if len(entries) == 0 {
		return VC{}
	}
	return VC{c: entries}
}

// denseLimit is the longest array CompactVC keeps dense however few of
// its entries are nonzero (as long as the vectors a simulation records
// by default, up to 64 processes).
const denseLimit = 64

// CompactVC returns the vector whose entry p is entries[p], without its
// trailing zeros, in the smaller form: dense while it has at most 64
// entries or a quarter of them are nonzero, else sparse. It keeps the
// slice if it stays dense.
func CompactVC(entries []uint64) VC {
	for len(entries) > 0 && entries[len(entries)-1] == 0 {
		entries = entries[:len(entries)-1]
	}
	nonzero := 0
	for _, x := range entries {
		if x != 0 {
			nonzero++
		}
	}
	if len(entries) <= max(denseLimit, 4*nonzero) {
		return DenseVC(entries)
	}
	v := VC{ids: make([]int32, 0, nonzero), c: make([]uint64, 0, nonzero)}
	for p, x := range entries {
		if x != 0 {
			v.ids, v.c = append(v.ids, int32(p)), append(v.c, x)
		}
	}
	return v
}

// SparseVC returns the vector of entries c[k] of processes ids[k] (in
// any order; zeros allowed), in the form CompactVC would choose; it
// keeps neither slice. A live node whose cluster members join keeps its
// clock this way, one entry per process it has heard of.
func SparseVC(ids []int, c []uint64) VC { return sparseVC(ids, c) }

// sparseVC returns the vector of entries c[k] of processes ids[k] (in any
// order; a process given twice: the last holds, as encoding/json reads a
// repeated key), in the form CompactVC would choose. It keeps neither
// slice.
func sparseVC(ids []int, c []uint64) VC {
	type entry struct {
		p int
		x uint64
	}
	es := make([]entry, len(ids))
	for k := range ids {
		es[k] = entry{ids[k], c[k]}
	}
	slices.SortStableFunc(es, func(a, b entry) int { return a.p - b.p })
	v := VC{ids: make([]int32, 0, len(es)), c: make([]uint64, 0, len(es))}
	for k, e := range es {
		if k+1 < len(es) && es[k+1].p == e.p || e.x == 0 {
			continue // overridden by a later one, or 0
		}
		v.ids, v.c = append(v.ids, int32(e.p)), append(v.c, e.x)
	}
	switch n := v.Len(); {
	case n == 0:
		return VC{}
	case n <= max(denseLimit, 4*len(v.c)):
		return DenseVC(v.Dense())
	}
	return v
}

// IsZero reports whether no vector is recorded.
func (v VC) IsZero() bool { return len(v.c) == 0 }

// Sparse reports whether v is held by process ID (see VC).
func (v VC) Sparse() bool { return v.ids != nil }

// Len is one more than the highest process v has an entry for: a dense
// vector's length, with any trailing zeros; 0 if none is recorded.
func (v VC) Len() int {
	if v.ids == nil {
		return len(v.c)
	}
	if len(v.ids) == 0 {
		return 0
	}
	return int(v.ids[len(v.ids)-1]) + 1
}

// At returns entry p: 0 for a process v holds no entry for.
func (v VC) At(p int) uint64 {
	if v.ids == nil {
		if p >= 0 && p < len(v.c) {
			return v.c[p]
		}
		return 0
	}
	if k, ok := slices.BinarySearch(v.ids, int32(p)); ok {
		return v.c[k]
	}
	return 0
}

// Entries yields v's nonzero entries, by process in ascending order.
func (v VC) Entries() iter.Seq2[int, uint64] {
	return func(yield func(int, uint64) bool) {
		for k, x := range v.c {
			if x == 0 {
				continue
			}
			p := k
			if v.ids != nil {
				p = int(v.ids[k])
			}
			if !yield(p, x) {
				return
			}
		}
	}
}

// Dense returns v as an array indexed by process, Len() entries: a dense
// vector's own slice (not to be changed), a sparse one's in a new one.
func (v VC) Dense() []uint64 {
	if v.ids == nil {
		return v.c
	}
	d := make([]uint64, v.Len())
	for k, p := range v.ids {
		d[p] = v.c[k]
	}
	return d
}

// Compare compares v and w as logical.Compare does, an absent entry 0:
// Before if v < w, After if w < v, Equal or Concurrent.
func (v VC) Compare(w VC) logical.Order {
	if v.ids == nil && w.ids == nil {
		return logical.Compare(v.c, w.c)
	}
	less, greater := false, false // some v[p] < w[p]; some v[p] > w[p]
	for p, x := range v.Entries() {
		y := w.At(p)
		less, greater = less || x < y, greater || x > y
	}
	for p, y := range w.Entries() {
		less = less || v.At(p) < y // (x > y was seen above)
	}
	switch {
	case less && greater:
		return logical.Concurrent
	case less:
		return logical.Before
	case greater:
		return logical.After
	}
	return logical.Equal
}

// String renders v as the CLI writes it: a dense vector as "[2,1,0]", a
// sparse one by process as "{p0:3,p60000:1}".
func (v VC) String() string {
	if v.ids == nil {
		return FormatVC(v.c)
	}
	b := []byte{'{'}
	for k, p := range v.ids {
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, 'p')
		b = strconv.AppendInt(b, int64(p), 10)
		b = append(b, ':')
		b = strconv.AppendUint(b, v.c[k], 10)
	}
	return string(append(b, '}'))
}

// MarshalJSON implements json.Marshaler: a dense vector as an array, a
// sparse one as an object keyed by process ID, as a trace writes them;
// null if none.
func (v VC) MarshalJSON() ([]byte, error) {
	switch {
	case v.IsZero():
		return []byte("null"), nil
	case v.ids == nil:
		return json.Marshal(v.c)
	}
	return appendSparseVC(nil, v), nil
}

// UnmarshalJSON implements json.Unmarshaler: an array reads as a dense
// vector, an object keyed by process ID as CompactVC holds it, null as
// none.
func (v *VC) UnmarshalJSON(b []byte) error {
	var r rawVC
	if err := r.parse(b); err != nil {
		return fmt.Errorf("vector timestamp: %w", err)
	}
	switch {
	case !r.set:
		*v = VC{}
	case r.object:
		*v = sparseVC(r.keys, r.vals)
	default:
		*v = DenseVC(r.vals)
	}
	return nil
}
