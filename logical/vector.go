package logical

import (
	"slices"
	"strconv"
	"strings"

	"github.com/cohort-go/cohort/proc"
)

// Vector is a vector clock or a vector timestamp: entry i counts the events
// of process i that its owner knows of. The rules (Fidge 1988, Mattern
// 1989; Tanenbaum & van Steen §6.2), for process i holding v, are
//
//  1. before each event: v.Increment(i)
//  2. on send: v.Increment(i), then the message carries ts := v.Copy()
//  3. on receipt of ts: v.Merge(ts), then v.Increment(i), then deliver
//
// A vector shorter than another is read as if padded with zeros: missing
// entries are 0. Increment and Merge grow the vector when they need to,
// which is why they take a pointer receiver.
type Vector []uint64

// New returns the zero vector for n processes. n <= 0 gives an empty vector.
func New(n int) Vector {
	return make(Vector, max(n, 0))
}

// Copy returns a copy of v that shares no memory with it. A timestamp put on
// a message must be a copy, or later events would change it.
func (v Vector) Copy() Vector {
	return slices.Clone(v)
}

// at returns entry i of v, or 0 if v has no such entry.
func (v Vector) at(i int) uint64 {
	if i < len(v) {
		return v[i]
	}
	return 0
}

// Increment adds 1 to entry i: process i's own count, advanced before each
// of its events. The vector grows if it is shorter than i+1. A negative i is
// not a process and leaves v unchanged.
func (v *Vector) Increment(i proc.ID) {
	if i < 0 {
		return
	}
	v.grow(int(i) + 1)
	(*v)[i]++
}

// Merge sets every entry of v to the larger of it and the matching entry of
// o: v[k] = max(v[k], o[k]) for all k. v grows to o's length if shorter.
// Afterwards v is the least upper bound of the two.
func (v *Vector) Merge(o Vector) {
	v.grow(len(o))
	MergeInto(*v, o)
}

// MergeInto is Merge for vectors of a fixed size, as hosts keep them:
// dst[k] = max(dst[k], src[k]) for every entry of src. dst must be at
// least as long as src. Every vector merge in Cohort — the simulator's, the
// live runtime's, the trace's happened-before relation, the checkers' test
// traces — is this one.
func MergeInto(dst, src []uint64) {
	dst = dst[:len(src)] // one bounds check, and a clear panic if dst is short
	for k, x := range src {
		dst[k] = max(dst[k], x)
	}
}

func (v *Vector) grow(n int) {
	if n > len(*v) {
		*v = append(*v, make([]uint64, n-len(*v))...)
	}
}

// String returns the entries in parentheses: "(2,1,0)".
func (v Vector) String() string {
	var b strings.Builder
	b.WriteByte('(')
	for k, x := range v {
		if k > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatUint(x, 10))
	}
	b.WriteByte(')')
	return b.String()
}

// Order is how two vector timestamps compare.
type Order uint8

// The four outcomes of Compare.
const (
	Equal      Order = iota + 1 // the same entries: the same event
	Before                      // a < b: a happened before b
	After                       // b < a: b happened before a
	Concurrent                  // incomparable: a and b are concurrent
)

var orderNames = [...]string{"", "equal", "before", "after", "concurrent"}

// String returns "equal", "before", "after" or "concurrent".
func (o Order) String() string {
	if o != 0 && int(o) < len(orderNames) {
		return orderNames[o]
	}
	return "order(" + strconv.Itoa(int(o)) + ")"
}

// Compare compares vector timestamps a and b: Before if a < b, that is every
// a[k] <= b[k] and at least one a[k] < b[k]; After if b < a; Equal if all
// entries match; Concurrent otherwise. Missing entries are read as 0.
func Compare(a, b Vector) Order {
	less, greater := false, false // some a[k] < b[k]; some a[k] > b[k]
	n := min(len(a), len(b))
	for k := range n {
		less = less || a[k] < b[k]
		greater = greater || a[k] > b[k]
	}
	for _, x := range a[n:] { // b[k] is 0
		greater = greater || x > 0
	}
	for _, y := range b[n:] { // a[k] is 0
		less = less || y > 0
	}
	switch {
	case less && greater:
		return Concurrent
	case less:
		return Before
	case greater:
		return After
	}
	return Equal
}

// Before reports whether v < w, that is whether the event stamped v happened
// before the event stamped w.
func (v Vector) Before(w Vector) bool { return Compare(v, w) == Before }

// Concurrent reports whether v and w are incomparable, that is whether the
// events they stamp are concurrent.
func (v Vector) Concurrent(w Vector) bool { return Compare(v, w) == Concurrent }

// Deliverable is the delivery condition of causal multicast, where entry k of
// a vector counts the messages sent by process k. A process whose vector is
// local may deliver a message from sender stamped msg when
//
//	msg[sender] == local[sender]+1     (the next message from sender), and
//	msg[k] <= local[k] for k != sender (every message the sender had
//	                                    delivered when it sent, it has too).
//
// Missing entries are read as 0; a negative sender gives false.
func Deliverable(local, msg Vector, sender proc.ID) bool {
	if sender < 0 {
		return false
	}
	s := int(sender)
	if msg.at(s) != local.at(s)+1 {
		return false
	}
	for k := range max(len(local), len(msg)) {
		if k != s && msg.at(k) > local.at(k) {
			return false
		}
	}
	return true
}
